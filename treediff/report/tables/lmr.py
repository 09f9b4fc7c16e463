"""The ``lmr`` and ``lmr_hist`` tables: how often an engine reduces, and by how much.

Per group:

* ``moves``: MOVE records; ``real_moves``: MOVE records that are not null-move
  records (``null_move`` false), i.e. moves from the move list.
* ``lmr``: MOVE records of kind REDUCE (``act=LMR``).
* ``admission_pct`` = 100 · lmr / moves; ``admission_pct_real`` = 100 · lmr / real_moves.
* ``mean_red``, ``median_red``, ``p90_red``: reduction of LMR decisions in
  plies (``red`` / unit); median and 90th percentile interpolate linearly
  between order statistics (numpy's default).  LMR records without ``red``
  are left out of these and counted in ``red_missing``.
* ``research``: MOVE records of kind RESEARCH (``act=LMR-RESEARCH``);
  ``research_pct`` = 100 · research / lmr.

``lmr_hist``: LMR decisions per reduction rounded to the nearest quarter ply
(``reduction_plies``), with ``pct_of_lmr`` = share of the group's LMR records
that have a reduction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from typing import Sequence

from treediff.report.grouped import cell_counts, group_rows
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat

TITLES = {
    "lmr": "LMR admission, magnitude (plies) and re-search rate",
    "lmr_hist": "LMR reductions, quarter-ply histogram",
}


@dataclass
class LmrStats:
    """Mergeable per-group LMR figures: counts, and the reductions (plies) of LMR records that carry one.

    ``red_weight`` is None when ``red_group``/``red`` list every record (one
    batch's cells), else the number of records with that (group, value):
    value counts merged from batches (exact: reductions are few distinct
    values, multiples of a quarter ply in practice).  The frames are built
    from merged stats only.
    """

    moves: np.ndarray
    real_moves: np.ndarray
    lmr: np.ndarray
    research: np.ndarray
    red_group: np.ndarray
    red: np.ndarray
    red_weight: np.ndarray | None = None


def lmr_stats(batch: Batch) -> LmrStats:
    """The :class:`LmrStats` of a batch's records, per (srow, iter) cell (one record per reduction)."""
    n = batch.record_groups.n
    rg = batch.record_groups.record_group
    move = batch.is_move
    null = batch.flag("null_move")
    lmr = move & batch.kind_mask("REDUCE")
    red_all = np.asarray(batch.records["reduction"], dtype=np.float64)
    has = lmr & ~np.isnan(red_all)
    research = move & batch.kind_mask("RESEARCH")

    def count(mask: np.ndarray) -> np.ndarray:
        return cell_counts(n, [(rg, 0, 1)], mask=mask)

    return LmrStats(count(move), count(move & ~null), count(lmr), count(research), rg[has], red_all[has])


@dataclass
class LmrPartial:
    """One batch's LMR figures per (srow, iter) cell: counts, and reductions as value counts."""

    counts: pd.DataFrame  #: srow, iter, moves, real, lmr, research
    red: pd.DataFrame     #: srow, iter, red (plies), count


def lmr_partial(batch: Batch) -> LmrPartial:
    st = lmr_stats(batch)
    cells = np.arange(batch.n_cells)
    counts = batch.cell_frame(cells, moves=st.moves, real=st.real_moves, lmr=st.lmr, research=st.research)
    if len(st.red):
        by_red = group_rows(st.red_group, st.red)
        red = batch.cell_frame(by_red.take(st.red_group), red=by_red.take(st.red).astype(np.float64),
                               count=by_red.sizes())
    else:
        red = batch.cell_frame(np.zeros(0, dtype=np.int64), red=np.zeros(0), count=np.zeros(0, dtype=np.int64))
    return LmrPartial(counts, red)


def merge_lmr(partials: Sequence[LmrPartial], grouping: Grouping) -> LmrStats:
    """Per-group :class:`LmrStats` (reductions as value counts) from every batch's partial."""
    counts = concat([p.counts for p in partials], ["srow", "iter", "moves", "real", "lmr", "research"])
    red = concat([p.red for p in partials], ["srow", "iter", "red", "count"])
    return LmrStats(
        moves=grouping.total(counts, "moves"), real_moves=grouping.total(counts, "real"),
        lmr=grouping.total(counts, "lmr"), research=grouping.total(counts, "research"),
        red_group=grouping.group_of(red).astype(np.int64), red=red["red"].to_numpy(dtype=np.float64),
        red_weight=red["count"].to_numpy(dtype=np.int64))


def weighted_quantiles(group: np.ndarray, values: np.ndarray, weights: np.ndarray, n: int,
                       qs: tuple[float, ...]) -> np.ndarray:
    """[n, len(qs)] quantiles per group from (group, value, count) rows; NaN for empty groups.

    The same linear interpolation between order statistics as pandas'
    ``groupby().quantile()`` (position q · (N − 1)), computed on value counts:
    identical numbers, memory in distinct values instead of records.
    """
    out = np.full((n, len(qs)), np.nan)
    if len(values) == 0:
        return out
    order = np.lexsort((values, group))
    group, values, weights = group[order], values[order], np.asarray(weights, dtype=np.int64)[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], len(group)]
    cum = np.cumsum(weights)
    before = np.r_[0, cum[:-1]][starts]          # records of earlier groups
    total = cum[ends - 1] - before
    for j, q in enumerate(qs):
        idx_val = q * (total - 1).astype(np.float64)
        idx = idx_val.astype(np.int64)
        frac = idx_val % 1
        # Value holding the idx-th record (0-based) of each group: the first row whose cumulative count exceeds it.
        at = np.searchsorted(cum, before + idx, side="right")
        nxt = np.searchsorted(cum, before + np.minimum(idx + 1, total - 1), side="right")
        val, next_val = values[at], values[nxt]
        out[group[starts], j] = np.where(frac == 0.0, val, val + (next_val - val) * frac)
    return out


def lmr_frame(groups: pd.DataFrame, st: LmrStats) -> pd.DataFrame:
    """Admission (both denominators), magnitude and re-search rate per group; see the module docstring."""
    n = len(groups)
    g_red, red = st.red_group, st.red
    weight = st.red_weight
    moves, real, n_lmr, n_res = st.moves, st.real_moves, st.lmr, st.research
    n_red = np.bincount(g_red, weights=weight, minlength=n).astype(np.int64)
    sums = np.bincount(g_red, weights=red * weight, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame(
            {
                "moves": moves,
                "real_moves": real,
                "lmr": n_lmr,
                "admission_pct": 100.0 * n_lmr / np.where(moves > 0, moves, np.nan),
                "admission_pct_real": 100.0 * n_lmr / np.where(real > 0, real, np.nan),
                "mean_red": sums / np.where(n_red > 0, n_red, np.nan),
                "median_red": np.nan,
                "p90_red": np.nan,
                "red_missing": n_lmr - n_red,
                "research": n_res,
                "research_pct": 100.0 * n_res / np.where(n_lmr > 0, n_lmr, np.nan),
            }
        )
    if len(red):
        assert weight is not None, "merged LMR stats carry value counts"
        q = weighted_quantiles(g_red, red, weight, n, (0.5, 0.9))
        frame["median_red"], frame["p90_red"] = q[:, 0], q[:, 1]
    return pd.concat([groups.reset_index(drop=True), frame], axis=1)


def lmr_hist_frame(groups: pd.DataFrame, st: LmrStats) -> pd.DataFrame:
    """LMR decisions per reduction in quarter plies (rounded to the nearest quarter)."""
    g_red, red = st.red_group, st.red
    weight = st.red_weight
    n = len(groups)
    if len(red) == 0:
        cols: dict[str, list[object]] = {k: [] for k in groups.columns}
        return pd.DataFrame({**cols, "reduction_plies": [], "count": [], "pct_of_lmr": []})
    quarters = np.rint(red * 4).astype(np.int64)
    lo = int(quarters.min())
    width = int(quarters.max()) - lo + 1
    flat = np.bincount(g_red * width + (quarters - lo), weights=weight, minlength=n * width).astype(np.int64)
    per_group = np.bincount(g_red, weights=weight, minlength=n).astype(np.int64)
    cells = np.flatnonzero(flat)
    group_of_cell = cells // width
    body = pd.DataFrame(
        {
            "reduction_plies": (cells % width + lo) / 4.0,
            "count": flat[cells].astype(np.int64),
            "pct_of_lmr": 100.0 * flat[cells] / per_group[group_of_cell],
        }
    )
    return pd.concat([key_frame(groups, group_of_cell), body], axis=1)


class LmrTable:
    """``--table lmr``: the ``lmr`` and ``lmr_hist`` sections."""

    name = "lmr"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.09
    columns = ("tag", "kind", "null_move", "reduction")

    def partial(self, batch: Batch) -> LmrPartial:
        return lmr_partial(batch)

    def finish(self, partials: Sequence[LmrPartial], grouping: Grouping) -> list[Section]:
        st = merge_lmr(partials, grouping)
        keys = tuple(grouping.keys)
        return [Section("lmr", TITLES["lmr"], lmr_frame(grouping.groups, st), keys),
                Section("lmr_hist", TITLES["lmr_hist"], lmr_hist_frame(grouping.groups, st), keys)]


LMR = LmrTable()

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

from treediff.report.context import Context
from treediff.report.grouping import key_frame


@dataclass
class LmrStats:
    """Mergeable per-group LMR figures: counts, and the reductions (plies) of LMR records that carry one.

    ``red_weight`` is None when ``red_group``/``red`` list every record
    (in-memory), else the number of records with that (group, value): value
    counts merged from partitions (exact: reductions are few distinct values,
    multiples of a quarter ply in practice).
    """

    moves: np.ndarray
    real_moves: np.ndarray
    lmr: np.ndarray
    research: np.ndarray
    red_group: np.ndarray
    red: np.ndarray
    red_weight: np.ndarray | None = None


def _reductions(ctx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group, reduction (plies) of LMR records with a reduction; and the LMR mask."""
    lmr = ctx.is_move & ctx.kind_mask("REDUCE")
    red_all = np.asarray(ctx.records["reduction"], dtype=np.float64)
    has = lmr & ~np.isnan(red_all)
    return ctx.record_groups.record_group[has], red_all[has], lmr


def lmr_stats(ctx: Context) -> LmrStats:
    """The :class:`LmrStats` of ``ctx``'s records (cached; a partitioned report pre-fills the cache)."""
    if "lmr_stats" in ctx._cache:
        return ctx._cache["lmr_stats"]
    n = ctx.record_groups.n
    rg = ctx.record_groups.record_group
    move = ctx.is_move
    null = np.asarray(ctx.records["null_move"].fillna(False), dtype=bool)
    g_red, red, lmr = _reductions(ctx)
    research = move & ctx.kind_mask("RESEARCH")

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(rg[mask], minlength=n).astype(np.int64)

    stats = LmrStats(count(move), count(move & ~null), count(lmr), count(research), g_red, red)
    ctx._cache["lmr_stats"] = stats
    return stats


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


def lmr_table(ctx: Context) -> pd.DataFrame:
    """Admission (both denominators), magnitude and re-search rate per group; see the module docstring."""
    n = ctx.record_groups.n
    st = lmr_stats(ctx)
    g_red, red = st.red_group, st.red
    weight = st.red_weight
    moves, real, n_lmr, n_res = st.moves, st.real_moves, st.lmr, st.research
    if weight is None:
        n_red = np.bincount(g_red, minlength=n).astype(np.int64)
        sums = np.bincount(g_red, weights=red, minlength=n)
    else:
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
    if len(red) and weight is None:
        q = pd.DataFrame({"g": g_red, "r": red}).groupby("g")["r"].quantile([0.5, 0.9]).unstack()
        frame.loc[q.index, "median_red"] = q[0.5].to_numpy()
        frame.loc[q.index, "p90_red"] = q[0.9].to_numpy()
    elif len(red):
        q = weighted_quantiles(g_red, red, weight, n, (0.5, 0.9))
        frame["median_red"], frame["p90_red"] = q[:, 0], q[:, 1]
    return pd.concat([ctx.record_groups.groups.reset_index(drop=True), frame], axis=1)


def lmr_hist_table(ctx: Context) -> pd.DataFrame:
    """LMR decisions per reduction in quarter plies (rounded to the nearest quarter)."""
    st = lmr_stats(ctx)
    g_red, red = st.red_group, st.red
    weight = st.red_weight
    n = ctx.record_groups.n
    if len(red) == 0:
        cols = {k: [] for k in ctx.record_groups.groups.columns}
        return pd.DataFrame({**cols, "reduction_plies": [], "count": [], "pct_of_lmr": []})
    quarters = np.rint(red * 4).astype(np.int64)
    lo = int(quarters.min())
    width = int(quarters.max()) - lo + 1
    if weight is None:
        flat = np.bincount(g_red * width + (quarters - lo), minlength=n * width)
        per_group = np.bincount(g_red, minlength=n)
    else:
        flat = np.bincount(g_red * width + (quarters - lo), weights=weight, minlength=n * width).astype(np.int64)
        per_group = np.bincount(g_red, weights=weight, minlength=n).astype(np.int64)
    cells = np.flatnonzero(flat)
    groups = cells // width
    body = pd.DataFrame(
        {
            "reduction_plies": (cells % width + lo) / 4.0,
            "count": flat[cells].astype(np.int64),
            "pct_of_lmr": 100.0 * flat[cells] / per_group[groups],
        }
    )
    return pd.concat([key_frame(ctx.record_groups.groups, groups), body], axis=1)

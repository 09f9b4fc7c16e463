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

import numpy as np
import pandas as pd

from treediff.report.context import Context
from treediff.report.grouping import key_frame


def _reductions(ctx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group, reduction (plies) of LMR records with a reduction; and the LMR mask."""
    lmr = ctx.is_move & ctx.kind_mask("REDUCE")
    red_all = np.asarray(ctx.records["reduction"], dtype=np.float64)
    has = lmr & ~np.isnan(red_all)
    return ctx.record_groups.record_group[has], red_all[has], lmr


def lmr_table(ctx: Context) -> pd.DataFrame:
    """Admission (both denominators), magnitude and re-search rate per group; see the module docstring."""
    n = ctx.record_groups.n
    rg = ctx.record_groups.record_group
    move = ctx.is_move
    null = np.asarray(ctx.records["null_move"].fillna(False), dtype=bool)
    g_red, red, lmr = _reductions(ctx)
    research = move & ctx.kind_mask("RESEARCH")

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(rg[mask], minlength=n).astype(np.int64)

    moves, real, n_lmr, n_res = count(move), count(move & ~null), count(lmr), count(research)
    n_red = np.bincount(g_red, minlength=n).astype(np.int64)
    sums = np.bincount(g_red, weights=red, minlength=n)
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
        q = pd.DataFrame({"g": g_red, "r": red}).groupby("g")["r"].quantile([0.5, 0.9]).unstack()
        frame.loc[q.index, "median_red"] = q[0.5].to_numpy()
        frame.loc[q.index, "p90_red"] = q[0.9].to_numpy()
    return pd.concat([ctx.record_groups.groups.reset_index(drop=True), frame], axis=1)


def lmr_hist_table(ctx: Context) -> pd.DataFrame:
    """LMR decisions per reduction in quarter plies (rounded to the nearest quarter)."""
    g_red, red, _ = _reductions(ctx)
    n = ctx.record_groups.n
    if len(red) == 0:
        cols = {k: [] for k in ctx.record_groups.groups.columns}
        return pd.DataFrame({**cols, "reduction_plies": [], "count": [], "pct_of_lmr": []})
    quarters = np.rint(red * 4).astype(np.int64)
    lo = int(quarters.min())
    width = int(quarters.max()) - lo + 1
    flat = np.bincount(g_red * width + (quarters - lo), minlength=n * width)
    cells = np.flatnonzero(flat)
    groups = cells // width
    per_group = np.bincount(g_red, minlength=n)
    body = pd.DataFrame(
        {
            "reduction_plies": (cells % width + lo) / 4.0,
            "count": flat[cells].astype(np.int64),
            "pct_of_lmr": 100.0 * flat[cells] / per_group[groups],
        }
    )
    return pd.concat([key_frame(ctx.record_groups.groups, groups), body], axis=1)

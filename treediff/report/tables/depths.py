"""The ``depths`` table: how far each act moves a search's depth, and the LMR reduction schedule grid.

Definitions (``docs/REPORTS.md``, "depths"):

* ``depths`` section, per group and act (with its kind): over the MOVE
  records carrying both ``d`` and ``nd``, the distribution of
  ``depth − new_depth`` in plies: ``count``, ``mean``, ``median``, ``p90``
  (linear interpolation between order statistics, numpy's default).  For a
  null move it is the null-move depth step (R + 1 in the usual convention), for
  LMR the reduction plus the ply, for an extension ≤ 0, for ProbCut its
  reduction.
* ``lmr_grid`` section: the reduction schedule, mean LMR reduction
  (``red``, plies) of kind-REDUCE records per node depth (whole plies,
  ``floor(d)``) × ``mn`` band (1, 2, 3-4, 5-8, 9-16, 17+): ``lmr`` (records
  with a ``red``), ``mean_red``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.grouped import group_rows
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan
from treediff.report.tables.lmr import weighted_quantiles
from treediff.report.tries import mn_band, mn_band_order

TITLES = {"depths": "depth − new depth per act (plies): null-move R, LMR reduction, extension, ProbCut",
          "lmr_grid": "LMR reduction schedule: mean reduction (plies) by depth × mn band"}


@dataclass
class DepthsPartial:
    steps: pd.DataFrame  #: srow, iter, key, act, kind, step (plies), count
    grid: pd.DataFrame   #: srow, iter, key, depth (whole plies), mn, lmr, red_sum


def depths_partial(batch: Batch) -> DepthsPartial:
    rec = batch.records
    move = batch.is_move
    d = np.asarray(rec["depth"].to_numpy(dtype=np.float64, na_value=np.nan))
    nd = np.asarray(rec["new_depth"].to_numpy(dtype=np.float64, na_value=np.nan))
    sel = np.flatnonzero(move & ~np.isnan(d) & ~np.isnan(nd))
    cell = batch.record_groups.record_group
    a_codes, a_cats = batch.codes("act")
    k_codes, k_cats = batch.codes("kind")
    acts = np.concatenate([a_cats.astype(object), [None]])
    kinds = np.concatenate([k_cats.astype(object), [None]])
    g, a, k, step = cell[sel], a_codes[sel], k_codes[sel], (d - nd)[sel]
    by_step = group_rows(g, a, k, step)
    steps_frame = batch.cell_frame(by_step.take(g), act=acts[by_step.take(a)], kind=kinds[by_step.take(k)],
                                   step=by_step.take(step).astype(np.float64), count=by_step.sizes())
    red = np.asarray(rec["reduction"].to_numpy(dtype=np.float64, na_value=np.nan))
    lmr = np.flatnonzero(move & batch.kind_mask("REDUCE") & ~np.isnan(red) & ~np.isnan(d))
    mn = np.asarray(rec["mn"].to_numpy(dtype=np.float64, na_value=np.nan))[lmr]
    g, depth, band = cell[lmr], np.floor(d[lmr]), mn_band(mn)
    by_cell = group_rows(g, depth, band)  # (dropna=False: a missing mn band is a band of its own)
    bands = by_cell.take(band)
    grid_frame = batch.cell_frame(by_cell.take(g), depth=by_cell.take(depth),
                                  mn=np.where(pd.isna(bands), np.nan, bands).astype(object),  # (NaN, as pandas' key)
                                  lmr=by_cell.sizes(), red_sum=by_cell.sums(red[lmr]))
    return DepthsPartial(steps_frame, grid_frame)


def steps_frame(groups: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    cols = ["act", "kind", "count", "mean", "median", "p90"]
    if not len(steps):
        return pd.concat([groups.iloc[:0].reset_index(drop=True), pd.DataFrame({c: [] for c in cols})], axis=1)
    keys = steps.groupby(["_group", "act", "kind"], sort=True, dropna=False).ngroup().to_numpy()
    first = pd.Series(np.arange(len(keys))).groupby(keys).first().to_numpy()
    n = int(keys.max()) + 1
    w = steps["count"].to_numpy(dtype=np.int64)
    v = steps["step"].to_numpy(dtype=np.float64)
    count = np.bincount(keys, weights=w, minlength=n).astype(np.int64)
    mean = np.bincount(keys, weights=w * v, minlength=n) / count
    q = weighted_quantiles(keys, v, w, n, (0.5, 0.9))
    body = pd.DataFrame({"_group": steps["_group"].to_numpy()[first], "act": none_for_nan(steps["act"].to_numpy()[first]),
                         "kind": none_for_nan(steps["kind"].to_numpy()[first]), "count": count, "mean": mean,
                         "median": q[:, 0], "p90": q[:, 1]})
    body = body.sort_values(["_group", "count", "act"], ascending=[True, False, True], kind="stable")
    return pd.concat([key_frame(groups, body["_group"].to_numpy()), body[cols].reset_index(drop=True)], axis=1)


def grid_frame(groups: pd.DataFrame, grid: pd.DataFrame) -> pd.DataFrame:
    cols = ["depth", "mn", "lmr", "mean_red"]
    if not len(grid):
        return pd.concat([groups.iloc[:0].reset_index(drop=True), pd.DataFrame({c: [] for c in cols})], axis=1)
    g = grid.assign(_mn_order=[mn_band_order(x) for x in grid["mn"].tolist()])
    g = g.groupby(["_group", "depth", "_mn_order"], sort=True, dropna=False).agg(
        mn=("mn", "first"), lmr=("lmr", "sum"), red_sum=("red_sum", "sum")).reset_index()
    g["mean_red"] = g["red_sum"] / g["lmr"]
    g["depth"] = g["depth"].astype(np.int64)
    g["mn"] = none_for_nan(g["mn"].to_numpy())
    return pd.concat([key_frame(groups, g["_group"].to_numpy(dtype=np.int64)), g[cols].reset_index(drop=True)], axis=1)


class DepthsTable:
    """``--table depths``: the ``depths`` and ``lmr_grid`` sections."""

    name = "depths"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.23
    columns = ("tag", "act", "kind", "mn", "depth", "new_depth", "reduction")

    def partial(self, batch: Batch) -> DepthsPartial:
        return depths_partial(batch)

    def finish(self, partials: Sequence[DepthsPartial], grouping: Grouping) -> list[Section]:
        steps = concat([p.steps for p in partials], ["srow", "iter", "key", "act", "kind", "step", "count"])
        grid = concat([p.grid for p in partials], ["srow", "iter", "key", "depth", "mn", "lmr", "red_sum"])
        steps = steps.assign(_group=grouping.group_of(steps)) if len(steps) else steps
        grid = grid.assign(_group=grouping.group_of(grid)) if len(grid) else grid
        keys = tuple(grouping.keys)
        return [Section("depths", TITLES["depths"], steps_frame(grouping.groups, steps), keys),
                Section("lmr_grid", TITLES["lmr_grid"], grid_frame(grouping.groups, grid), keys)]


DEPTHS = DepthsTable()

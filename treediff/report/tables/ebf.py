"""The ``ebf``, ``ebf_iter`` and ``ebf_ply`` tables: nodes and effective branching factor.

Node counts
    A search's node count is its number of RESULT records (``result_nodes``;
    quiescence nodes never write RESULT, so they are excluded).  Searches the
    runner recorded from an engine without TREEDUMP (``node_source`` =
    ``engine``) use the engine's own count (``end_nodes``), which usually
    includes quiescence; the ``node_source`` column says which was used.

Depth
    A search's depth ``D`` is its deepest ITER ``d`` (``max_iter``, plies).  A
    search without ITER markers uses the deepest ``d`` of its root RESULT
    records (ply 0), in plies.  Engine-sourced searches use their deepest
    reported depth.

``ebf`` (one row per group)
    * ``mean_nodes``: mean node count per search;
    * ``ebf`` = mean_nodes ^ (1 / D): the user's definition; defined only when
      every search of the group has the same ``D`` (else NaN, see ``ebf_geo``);
    * ``ebf_geo``: geometric mean over searches of nodes ^ (1 / D);
    * ``ebf_iter`` = sqrt(Σ N_s(D_s) / Σ N_s(D_s − 2)) over the searches that
      have both iterations, N_s(d) being the nodes of iteration d;
    * ``ebf_fanout``: geometric mean of the per-ply fanouts of ``ebf_ply`` over
      plies 0 … D_min − 2 (D_min: the group's smallest final depth), i.e.
      (n(D_min − 1) / n(0)) ^ (1 / (D_min − 1)).

``ebf_iter`` (one row per group and iteration d)
    ``searches``: searches with nodes in iteration d; ``mean_nodes``: their
    mean N(d); ``pairs``: searches with nodes in both d and d − 2;
    ``ebf_iter`` = sqrt(Σ N(d) / Σ N(d − 2)) over those pairs.

``ebf_ply`` (one row per group and ply, final iterations only)
    Over all visits: ``nodes``: RESULT records at that ply in each search's final iteration,
    summed over the group's searches (a node visited twice, e.g. the root searched again after an
    aspiration fail high, counts twice); ``fanout`` = nodes(p + 1) / nodes(p), NaN at the group's deepest
    ply (never 0, also when another group of the report goes deeper).  Over main visits:
    ``nodes_main``: the RESULT records at that ply that close their node's main visit (docs/ALIGN.md,
    "Node visits": one root per iteration, each node at most once), ``fanout_main`` =
    nodes_main(p + 1) / nodes_main(p), undefined the same way; both null when the records carry no node
    visits (``visit`` / ``parent_visit``: files written before the parser numbered them).

Engine-sourced per-iteration counts come from the searches column
``iter_nodes``: a JSON list of ``[depth, nodes]`` pairs holding the engine's
*cumulative* node count at the end of each depth (``info depth d nodes n``);
N(d) = C(d) − C(d − 1) when depth d − 1 is listed (C(0) = 0), otherwise unknown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from typing import Sequence

from treediff.model.errors import InputError
from treediff.parse.visits import main_visit_flags
from treediff.report import floats
from treediff.report.grouped import cell_counts
from treediff.report.grouping import RECORD_KEYS, key_frame
from treediff.report.table import Batch, Grouping, Section, concat

TITLES = {
    "ebf": "Effective branching factor",
    "ebf_iter": "EBF per iteration: sqrt(N(d)/N(d-2))",
    "ebf_ply": "Final-iteration nodes per ply and fanout",
}


@dataclass
class SearchNodes:
    """Per-search node data, rows aligned with the searches table."""

    nodes: np.ndarray        #: float, node count used (RESULT count or engine count)
    source: np.ndarray       #: object, ``result`` or ``engine``
    depth: np.ndarray        #: int, D in plies (0 when unknown)
    per_iter: np.ndarray     #: float [searches, depth+1]: N(d), 0 when absent
    final_iter: np.ndarray   #: int, the iteration whose RESULT records make the per-ply profile


def _parse_iter_nodes(text, where: str) -> dict[int, float]:
    """Per-iteration node counts from the cumulative ``[[d, nodes], ...]`` JSON of one search."""
    if text is None or (isinstance(text, float) and np.isnan(text)) or text is pd.NA:
        return {}
    try:
        pairs = json.loads(text)
        cumulative = {int(d): float(n) for d, n in pairs}
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}: iter_nodes is not a JSON list of [depth, nodes] pairs: {text!r}") from exc
    per_iter = {}
    for d, c in cumulative.items():
        if d == 1:
            per_iter[d] = c
        elif d - 1 in cumulative:
            per_iter[d] = c - cumulative[d - 1]
    return per_iter


@dataclass
class ResultCounts:
    """RESULT records per (search row, iteration), mergeable across partitions.

    ``root_depth``: per search row, the deepest ``d`` (plies) of its root
    RESULT records (ply 0), NaN without any; only consulted for searches
    without ITER markers.
    """

    srow: np.ndarray
    iters: np.ndarray
    count: np.ndarray | None          #: records per row; None when each row is one record
    root_depth: np.ndarray


@dataclass
class ResultPartial:
    """One batch's RESULT records per (srow, iter, ply), and each search row's deepest root RESULT ``d``."""

    results: pd.DataFrame  #: srow, iter, ply, count
    root: pd.DataFrame     #: srow, depth (plies)
    #: srow, iter, ply, count of the RESULT records closing their node's main visit; None without visit columns.
    main: pd.DataFrame | None = None


#: Records columns the main-visit counts read when the input has them (files written before the
#: parser numbered visits do not).
VISIT_COLUMNS = ("seq", "move", "visit", "parent_visit")


def _per_cell_ply(batch: Batch, mask: np.ndarray) -> pd.DataFrame:
    """Records of ``mask`` counted per (srow, iter, ply) cell."""
    plies = batch.plies
    width = int(plies.max(where=mask, initial=0)) + 1  # (plies >= 0; 1 for no records)
    flat = cell_counts(batch.n_cells * width, [(batch.record_groups.record_group, 0, width), (plies, 0, 1)], mask=mask)
    cells = np.flatnonzero(flat)
    return batch.cell_frame(cells // width, ply=cells % width, count=flat[cells].astype(np.int64))


def _nan_as_zero(values: np.ndarray) -> np.ndarray:
    """``values`` with NaN as 0.0 (visit numbers: whole or missing; ``np.nan_to_num`` took 2.5x as long, for
    infinities they cannot hold)."""
    return np.where(np.isnan(values), 0.0, values)


def main_visits(batch: Batch) -> np.ndarray | None:
    """Per record: does this RESULT close its node's main visit (None when the records carry no visits).

    A batch without RESULT records (e.g. an input's empty batch of a selection that keeps none of its
    searches) closes no visit: all False, not None, which would blank the main-visit figures of the whole
    report."""
    records = batch.records
    if any(c not in records.columns for c in VISIT_COLUMNS):
        return None
    if not bool(np.any(batch.is_result)):
        return np.zeros(len(records), dtype=bool)
    visit = np.asarray(records["visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    parent_visit = np.asarray(records["parent_visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    if np.isnan(visit[batch.is_result]).all():
        return None
    # Record order within each search (batches hold whole searches; the columnar readers keep it).
    seq = np.asarray(records["seq"], dtype=np.int64)
    # (srow, seq) packed in one int64 (searches x the seq range stays far below 2**63): order checked in one pass,
    # no sort (the columnar readers keep record order, so a sort is rarely needed).
    key = batch.srow * (int(seq.max()) - int(seq.min()) + 1) + (seq - int(seq.min()))
    order: np.ndarray | None = None if bool(np.all(key[1:] >= key[:-1])) else np.argsort(key, kind="stable")
    move_codes, _ = batch.codes("move")
    arrays = [batch.srow * (1 << 16) + batch.iters, batch.plies, batch.is_result, batch.is_move,
              np.asarray(move_codes, dtype=np.int64), np.asarray(records["depth"], dtype=np.float64),
              _nan_as_zero(visit), _nan_as_zero(parent_visit)]
    if order is not None:
        arrays = [a[order] for a in arrays]
    flags = main_visit_flags(*arrays)
    if order is not None:
        back = np.empty_like(flags)
        back[order] = flags
        flags = back
    return flags


def result_partial(batch: Batch, with_main: bool = True) -> ResultPartial:
    """RESULT counts of a batch per (srow, iter, ply) cell (all visits and, ``with_main``, main visits), and
    the deepest root RESULT ``d`` per search."""
    res = batch.is_result
    results = _per_cell_ply(batch, res)
    flags = main_visits(batch) if with_main else None
    main = _per_cell_ply(batch, res & flags) if flags is not None else None
    root = res & (batch.plies == 0)
    if root.any():
        depth = np.asarray(batch.records["depth"], dtype=np.float64)[root]
        deepest = pd.Series(depth).groupby(batch.srow[root]).max()
        roots = pd.DataFrame({"srow": deepest.index.to_numpy(), "depth": deepest.to_numpy()})
    else:
        roots = pd.DataFrame({"srow": np.zeros(0, dtype=np.int64), "depth": np.zeros(0)})
    return ResultPartial(results, roots, main)


@dataclass
class MergedResults:
    """Every batch's RESULT partials merged: per-search node data and the per-group final-iteration ply grid."""

    nodes: SearchNodes
    grid: np.ndarray
    #: The same grid over main visits only; None when a batch's records carried no node visits.
    grid_main: np.ndarray | None = None


def merge_results(partials: Sequence[ResultPartial], grouping: Grouping) -> MergedResults:
    res = concat([p.results for p in partials], ["srow", "iter", "ply", "count"])
    root = concat([p.root for p in partials], ["srow", "depth"])
    searches = grouping.searches
    root_depth = np.full(len(searches), np.nan)
    root_depth[root["srow"].to_numpy(dtype=np.int64)] = root["depth"].to_numpy(dtype=np.float64)
    srow = res["srow"].to_numpy(dtype=np.int64)
    iters = res["iter"].to_numpy(dtype=np.int64)
    count = res["count"].to_numpy(dtype=np.float64)
    sn = search_nodes(searches, ResultCounts(srow, iters, count, root_depth))
    sg = grouping.search_groups
    grid = ply_grid(len(sg.groups), sg.search_group, sn, srow, iters, res["ply"].to_numpy(dtype=np.int64), count)
    grid_main = None
    if partials and all(p.main is not None for p in partials):
        main = concat([p.main for p in partials if p.main is not None], ["srow", "iter", "ply", "count"])
        grid_main = ply_grid(len(sg.groups), sg.search_group, sn, main["srow"].to_numpy(dtype=np.int64),
                             main["iter"].to_numpy(dtype=np.int64), main["ply"].to_numpy(dtype=np.int64),
                             main["count"].to_numpy(dtype=np.float64))
        # Same shape as the all-visits grid (main counts never reach a ply the others do not).
        padded = np.zeros_like(grid)
        padded[:, :min(grid.shape[1], grid_main.shape[1])] = grid_main[:, :grid.shape[1]]
        grid_main = padded
    return MergedResults(sn, grid, grid_main)


def search_nodes(searches: pd.DataFrame, counts: ResultCounts) -> SearchNodes:
    """Node count, depth and per-iteration counts of every search (see the module docstring).

    ``counts``: the RESULT records as counts per (search row, iteration), merged over batches.
    """
    s = searches
    n_s = len(s)
    source = (s["node_source"].astype("object").where(s["node_source"].notna(), "result").to_numpy()
              if "node_source" in s.columns else np.full(n_s, "result", dtype=object))
    engine_src = source == "engine"
    srow_res = counts.srow
    iters_res = counts.iters
    width = int(iters_res.max()) + 1 if len(iters_res) else 1
    engine_iters: dict[int, dict[int, float]] = {}
    if "iter_nodes" in s.columns and engine_src.any():
        for row in np.flatnonzero(engine_src).tolist():
            engine_iters[row] = _parse_iter_nodes(s["iter_nodes"].iat[row], f"search {s['search'].iat[row]}")
        deepest = max((max(v) for v in engine_iters.values() if v), default=0)
        width = max(width, deepest + 1)
    per_iter = np.bincount(srow_res * width + iters_res, weights=counts.count,
                           minlength=n_s * width).astype(np.float64).reshape(n_s, width)
    for row, counts_ in engine_iters.items():
        per_iter[row, :] = 0.0
        for d, c in counts_.items():
            per_iter[row, d] = c
    present = per_iter > 0
    final_iter = np.where(present.any(axis=1), width - 1 - np.argmax(present[:, ::-1], axis=1), 0)

    # Depth: max_iter, else deepest root RESULT depth (plies), else the engine's deepest listed depth.
    max_iter = (np.asarray(s["max_iter"].fillna(0), dtype=np.int64) if "max_iter" in s.columns
                else np.zeros(n_s, dtype=np.int64))
    depth = np.maximum(max_iter, final_iter)
    no_iter = depth == 0
    if no_iter.any() and len(srow_res):
        fill = np.nan_to_num(counts.root_depth, nan=0.0)
        depth = np.where(no_iter, np.rint(fill).astype(np.int64), depth)
    for row, counts_ in engine_iters.items():
        if depth[row] == 0 and counts_:
            depth[row] = max(counts_)

    result_count = np.bincount(srow_res, weights=counts.count, minlength=n_s).astype(np.float64)
    if "result_nodes" in s.columns:
        declared = np.asarray(s["result_nodes"].astype("float64").fillna(np.nan), dtype=np.float64)
        result_count = np.where(np.isnan(declared), result_count, declared)
    nodes = result_count.copy()
    if engine_src.any():
        end = (np.asarray(s["end_nodes"].astype("float64"), dtype=np.float64) if "end_nodes" in s.columns
               else np.full(n_s, np.nan))
        for row in np.flatnonzero(engine_src).tolist():
            value = end[row]
            if np.isnan(value) and engine_iters.get(row):
                pairs = json.loads(s["iter_nodes"].iat[row])
                value = float(max(pairs)[1])
            nodes[row] = value
    return SearchNodes(nodes=nodes, source=source, depth=depth.astype(np.int64), per_iter=per_iter,
                       final_iter=final_iter.astype(np.int64))


def ply_grid(n_groups: int, search_group: np.ndarray, sn: SearchNodes, srow: np.ndarray, iters: np.ndarray,
             plies: np.ndarray, count: np.ndarray | None = None) -> np.ndarray:
    """[groups, plies] RESULT counts in each search's final iteration (TREEDUMP searches only).

    ``srow``, ``iters``, ``plies`` (and ``count``, records per row; None for
    one record per row) describe RESULT records.
    """
    traced = sn.source != "engine"  # per search; indexed by record below (no per-record string compare)
    final = (iters == sn.final_iter[srow]) & traced[srow]
    g = search_group[srow[final]]
    ply = plies[final]
    width = int(ply.max()) + 1 if len(ply) else 1
    weights = None if count is None else count[final]
    grid = np.bincount(g * width + ply, weights=weights, minlength=n_groups * width).reshape(n_groups, width)
    return grid.astype(np.int64)


def _fanout(grid: np.ndarray) -> np.ndarray:
    """nodes(p + 1) / nodes(p) per group and ply of a [groups, plies] grid."""
    fanout = np.full(grid.shape, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Undefined (NaN) at a group's deepest ply: no nodes below it, even when another group's tree goes deeper.
        fanout[:, :-1] = np.where((grid[:, :-1] > 0) & (grid[:, 1:] > 0), grid[:, 1:] / np.maximum(grid[:, :-1], 1),
                                  np.nan)
    return fanout


def ebf_ply_table(grouping: Grouping, merged: MergedResults) -> pd.DataFrame:
    """RESULT nodes per ply in each search's final iteration, summed per group, and the fanout to the next ply:
    over all visits (``nodes``, ``fanout``) and over main visits (``nodes_main``, ``fanout_main``)."""
    grid = merged.grid
    width = grid.shape[1]
    cells = np.flatnonzero(grid.ravel())
    groups, plies = cells // width, cells % width
    columns: dict[str, object] = {"ply": plies, "nodes": grid.ravel()[cells].astype(np.int64),
                                  "fanout": _fanout(grid).ravel()[cells]}
    if merged.grid_main is not None:
        columns["nodes_main"] = merged.grid_main.ravel()[cells].astype(np.int64)
        columns["fanout_main"] = _fanout(merged.grid_main).ravel()[cells]
    else:
        columns["nodes_main"] = pd.array([pd.NA] * len(cells), dtype="Int64")
        columns["fanout_main"] = np.full(len(cells), np.nan)
    body = pd.DataFrame(columns)
    return pd.concat([key_frame(grouping.search_groups.groups, groups), body], axis=1)


def ebf_iter_table(grouping: Grouping, merged: MergedResults) -> pd.DataFrame:
    """Per group and iteration d: mean N(d) and sqrt(ΣN(d)/ΣN(d−2)) over searches having both."""
    sn = merged.nodes
    sg = grouping.search_groups
    n_g = len(sg.groups)
    n = sn.per_iter
    width = n.shape[1]
    have = n > 0
    pair = np.zeros_like(have)
    pair[:, 3:] = have[:, 3:] & have[:, 1:-2]
    g = np.repeat(sg.search_group[:, None], width, axis=1)
    cell = g * width + np.arange(width)[None, :]
    size = n_g * width
    cnt = np.bincount(cell[have], minlength=size)
    tot = np.bincount(cell[have], weights=n[have], minlength=size)
    pairs = np.bincount(cell[pair], minlength=size)
    num = np.bincount(cell[pair], weights=n[pair], minlength=size)
    shifted = np.zeros_like(n)
    shifted[:, 2:] = n[:, :-2]
    den = np.bincount(cell[pair], weights=shifted[pair], minlength=size)
    keep = np.flatnonzero((cnt > 0) & (np.arange(size) % width >= 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        body = pd.DataFrame({
            "iter": keep % width,
            "searches": cnt[keep].astype(np.int64),
            "mean_nodes": tot[keep] / cnt[keep],
            "pairs": pairs[keep].astype(np.int64),
            "ebf_iter": np.where(pairs[keep] > 0, np.sqrt(num[keep] / np.where(den[keep] > 0, den[keep], np.nan)),
                                 np.nan),
        })
    return pd.concat([key_frame(sg.groups, keep // width), body], axis=1)


def _depth_range(group: np.ndarray, depth: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's smallest and largest search depth (plies; 0 for a group without searches)."""
    depth = np.asarray(depth, dtype=np.int64)
    low = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(low, group, depth)
    np.maximum.at(high, group, depth)
    empty = np.bincount(group, minlength=n_groups) == 0
    low[empty] = 0
    high[empty] = 0
    return low, high


def ebf_table(grouping: Grouping, merged: MergedResults) -> pd.DataFrame:
    """One row per group: mean nodes, depth, and the four EBF estimators (see the module docstring)."""
    sn = merged.nodes
    sg = grouping.search_groups
    n_g = len(sg.groups)
    g = sg.search_group
    nodes, depth = sn.nodes, sn.depth
    known = ~np.isnan(nodes)
    count = np.bincount(g, minlength=n_g)
    n_known = np.bincount(g[known], minlength=n_g)
    dmin, dmax = _depth_range(g, depth, n_g)
    labels = np.full(n_g, "", dtype=object)
    for name in sorted(set(sn.source)):
        hit = np.bincount(g[sn.source == name], minlength=n_g) > 0
        labels = np.where(hit, np.where(labels == "", name, labels + "," + name), labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_nodes = np.bincount(g[known], weights=nodes[known], minlength=n_g) / np.where(n_known > 0, n_known, np.nan)
        ebf = np.where((dmin == dmax) & (dmin > 0) & (mean_nodes > 0),
                       floats.power(mean_nodes, 1.0 / np.where(dmin > 0, dmin, 1)), np.nan)
        ok = known & (depth > 0) & (nodes > 0)
        logs = np.bincount(g[ok], weights=floats.log(nodes[ok]) / depth[ok], minlength=n_g)
        n_ok = np.bincount(g[ok], minlength=n_g)
        ebf_geo = np.where(n_ok > 0, floats.exp(logs / np.where(n_ok > 0, n_ok, 1)), np.nan)
        # Last-iteration estimator: each search's own final iteration D and D - 2.
        rows = np.arange(len(nodes))
        fin = sn.final_iter
        width = sn.per_iter.shape[1]
        has_pair = fin >= 3
        n_d = np.where(has_pair, sn.per_iter[rows, np.minimum(fin, width - 1)], 0.0)
        n_d2 = np.where(has_pair, sn.per_iter[rows, np.maximum(fin - 2, 0)], 0.0)
        use = has_pair & (n_d > 0) & (n_d2 > 0)
        num = np.bincount(g[use], weights=n_d[use], minlength=n_g)
        den = np.bincount(g[use], weights=n_d2[use], minlength=n_g)
        ebf_iter = np.where(den > 0, np.sqrt(num / np.where(den > 0, den, 1)), np.nan)
        # Fanout estimator over plies 0 .. D_min - 2 of the summed final-iteration ply profile.
        grid = merged.grid
        tre = sn.source != "engine"
        d_res = np.full(n_g, np.iinfo(np.int64).max)
        np.minimum.at(d_res, g[tre], depth[tre])
        fan = np.full(n_g, np.nan)
        cand = np.flatnonzero((d_res >= 2) & (d_res <= grid.shape[1]))
        last = d_res[cand] - 1
        first_n, last_n = grid[cand, 0], grid[cand, last]
        good = (first_n > 0) & (last_n > 0)
        fan[cand[good]] = floats.power(last_n[good] / first_n[good], 1.0 / last[good])
    out = pd.DataFrame({"searches": count.astype(np.int64), "node_source": labels,
                        "mean_nodes": mean_nodes, "depth_min": dmin, "depth_max": dmax, "ebf": ebf,
                        "ebf_geo": ebf_geo, "ebf_iter": ebf_iter, "ebf_fanout": fan})
    return pd.concat([sg.groups.reset_index(drop=True), out], axis=1)


class EbfTable:
    """``--table ebf``: the ``ebf``, ``ebf_iter`` and ``ebf_ply`` sections (search-level keys only)."""

    name = "ebf"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.25
    columns = ("tag", "iter", "ply", "depth")
    optional_columns = VISIT_COLUMNS

    def partial(self, batch: Batch) -> ResultPartial:
        return result_partial(batch)

    def finish(self, partials: Sequence[ResultPartial], grouping: Grouping) -> list[Section]:
        merged = merge_results(partials, grouping)
        keys = tuple(k for k in grouping.keys if k not in ("iter", *RECORD_KEYS))  # search-level tables
        return [Section(name, TITLES[name], make(grouping, merged), keys)
                for name, make in (("ebf", ebf_table), ("ebf_iter", ebf_iter_table), ("ebf_ply", ebf_ply_table))]


EBF = EbfTable()

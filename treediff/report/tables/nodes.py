"""The ``nodes`` table: nodes per engine, each group's depth, and the ratio to the first engine.

Per group: ``searches``; ``depth_min``, ``depth_max``: the smallest and largest
depth D of its searches (the ``ebf`` table's D; with ``--by iter`` the
iteration itself); ``nodes`` = Σ node counts (RESULT records, or the engine's
own count for ``node_source`` = ``engine``, see :mod:`treediff.report.tables.ebf`);
``mean_nodes`` = nodes / searches; ``end_nodes`` = Σ of the END records'
``nodes=`` (the engine's own counter; NaN when a search has none);
``ratio`` = mean_nodes / mean_nodes of the *reference group*: the first
engine (in input order; with ``--by source`` the first engine and source)
among the groups with the same other keys (phase, position, iter, ply, depth).

The ratio pairs searches by position (:func:`treediff.model.positions.position_key`:
board, side to move, castling rights, en-passant square), never by id: it is
NaN, with a note, when the group and its reference group did not search the
same positions (an id naming different positions in two groups is one case:
the note gives both FENs), and when they searched them to different depths
(D per position) unless ``--allow-different-depths``.  With ``--by iter`` the
counts are per iteration, so only the positions are checked.

With ``--by iter`` the counts are per iteration: N(d) summed over the searches
that have iteration d (``end_nodes`` does not apply and is NaN).  With
``--by ply`` or ``--by depth`` (record-level keys) ``nodes`` counts the
group's RESULT records at that ply or remaining depth and ``searches`` the
searches having any; ``end_nodes`` is NaN.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from treediff.model.positions import search_position_keys as position_keys
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tables.ebf import MergedResults, ResultPartial, merge_results, result_partial

TITLE = "Nodes (RESULT records) and ratio to the first engine"

#: At most this many notes about undefined ratios, then a count of the rest.
MAX_NOTES = 8


def search_position_keys(searches: pd.DataFrame) -> np.ndarray:
    """Each search's position key (:func:`~treediff.model.positions.search_position_keys`)."""
    fens = searches["fen"].astype("object").tolist() if "fen" in searches.columns else [None] * len(searches)
    ids = searches["position"].astype("object").tolist() if "position" in searches.columns else [None] * len(searches)
    return np.asarray(position_keys(fens, ids), dtype=object)


def _group_label(frame: pd.DataFrame, keys: Sequence[str], row: int) -> str:
    return " / ".join(str(frame[k].iat[row]) for k in keys if k in frame.columns)


def _fmt_depths(depths: set[int]) -> str:
    return str(min(depths)) if len(depths) == 1 else f"{min(depths)}-{max(depths)}"


def _ratio_rules(frame: pd.DataFrame, sg_of_row: np.ndarray, grouping: Grouping, depth: np.ndarray,
                 check_depth: bool) -> tuple[np.ndarray, list[str]]:
    """The ratio column and the notes saying where (and why) it is undefined; see the module docstring."""
    keys = grouping.keys
    others = [k for k in keys if k not in ("engine", "source")]
    n = len(frame)
    if not n:
        return np.zeros(0), []
    if others:
        block = frame.groupby(others, sort=False, dropna=False).ngroup().to_numpy()
        ref_row = pd.Series(np.arange(n)).groupby(block).transform("min").to_numpy(dtype=np.int64)
    else:
        ref_row = np.zeros(n, dtype=np.int64)
    mean = frame["mean_nodes"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = mean / mean[ref_row]

    searches = grouping.searches
    pkeys = search_position_keys(searches)
    fens = searches["fen"].astype("object").tolist() if "fen" in searches.columns else [None] * len(searches)
    sg = grouping.search_groups.search_group
    positions: dict[int, set[str]] = {}
    profile: dict[int, set[tuple[str, int]]] = {}
    fen_of: dict[tuple[int, str], str] = {}
    for row, (g, key, d) in enumerate(zip(sg.tolist(), pkeys.tolist(), depth.tolist())):
        positions.setdefault(g, set()).add(key)
        profile.setdefault(g, set()).add((key, int(d)))
        fen = fens[row]
        fen_of.setdefault((g, key), fen if isinstance(fen, str) else str(key))
    notes: list[str] = []
    label_keys = [k for k in keys if k in frame.columns]
    for i in range(n):
        r = int(ref_row[i])
        if r == i:
            continue
        gi, gr = int(sg_of_row[i]), int(sg_of_row[r])
        pi, pr = positions.get(gi, set()), positions.get(gr, set())
        li, lr = _group_label(frame, label_keys, i), _group_label(frame, label_keys, r)
        if pi != pr:
            ratio[i] = np.nan
            if "position" in keys and len(pi) == 1 and len(pr) == 1:
                (ki,), (kr,) = pi, pr
                notes.append(f"note: ratio of {li} to {lr} undefined: position id {frame['position'].iat[i]!r} names "
                             f"different positions: {fen_of[(gi, ki)]} and {fen_of[(gr, kr)]}; never paired")
            else:
                common = len(pi & pr)
                notes.append(f"note: ratio of {li} to {lr} undefined: they searched different positions "
                             f"({len(pi)} and {len(pr)}, {common} in common)")
            continue
        if check_depth and profile.get(gi, set()) != profile.get(gr, set()):
            di = {d for _, d in profile.get(gi, set())}
            dr = {d for _, d in profile.get(gr, set())}
            what = (f"depth {_fmt_depths(di)} vs {_fmt_depths(dr)}" if di != dr
                    else f"the same positions at different depths ({_fmt_depths(di)})")
            if grouping.options.allow_different_depths:
                notes.append(f"note: ratio of {li} to {lr} is between different depths ({what}; "
                             "--allow-different-depths)")
            else:
                ratio[i] = np.nan
                notes.append(f"note: ratio of {li} to {lr} undefined: different depths ({what}); "
                             "--allow-different-depths to compute it anyway")
    notes = list(dict.fromkeys(notes))
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"note: ... and {len(notes) - MAX_NOTES} more undefined ratios"]
    return ratio, notes


def _depth_range(sg_of_row: np.ndarray, search_group: np.ndarray, depth: np.ndarray,
                 n_sg: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(n_sg, np.iinfo(np.int64).max)
    hi = np.full(n_sg, np.iinfo(np.int64).min)
    np.minimum.at(lo, search_group, depth)
    np.maximum.at(hi, search_group, depth)
    return lo[sg_of_row], hi[sg_of_row]


def nodes_table(ctx: Grouping, merged: MergedResults,
                results: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Nodes per group, each group's depth and the ratio to the reference group, and notes on the ratio.

    ``results``: the batches' RESULT partials (``srow``, ``iter``, ``key``,
    ``ply``, ``count``), needed for record-level keys.
    """
    sn = merged.nodes
    sg = ctx.search_groups
    n_g = len(sg.groups)
    g = sg.search_group
    check_depth = True
    if ctx.record_keys:
        res = results if results is not None else pd.DataFrame({c: [] for c in ("srow", "iter", "key", "count")})
        group = ctx.group_of(res) if len(res) else np.zeros(0, dtype=np.int64)
        nodes = np.bincount(group, weights=res["count"].to_numpy(dtype=np.float64), minlength=ctx.n)
        pairs = pd.DataFrame({"g": group, "s": res["srow"].to_numpy(dtype=np.int64)}).drop_duplicates()
        count = np.bincount(pairs["g"].to_numpy(dtype=np.int64), minlength=ctx.n)
        sg_of_row = ctx.group_search_group
        lo, hi = _depth_range(sg_of_row, g, sn.depth, n_g)
        with np.errstate(invalid="ignore", divide="ignore"):
            frame = pd.concat([ctx.groups.reset_index(drop=True), pd.DataFrame({
                "searches": count.astype(np.int64), "node_source": "result",
                "depth_min": lo, "depth_max": hi, "nodes": nodes.astype(np.int64),
                "mean_nodes": nodes / np.where(count > 0, count, np.nan), "end_nodes": np.nan})], axis=1)
    elif "iter" not in ctx.keys:
        known = ~np.isnan(sn.nodes)
        count = np.bincount(g, minlength=n_g)
        total = np.bincount(g[known], weights=sn.nodes[known], minlength=n_g)
        if "end_nodes" in ctx.searches.columns:
            end = np.asarray(ctx.searches["end_nodes"].astype("float64"), dtype=np.float64)
        else:
            end = np.full(len(g), np.nan)
        end_total = np.bincount(g, weights=np.nan_to_num(end), minlength=n_g)
        end_missing = np.bincount(g, weights=np.isnan(end), minlength=n_g) > 0
        labels = np.full(n_g, "", dtype=object)
        for name in sorted(set(sn.source)):
            hit = np.bincount(g[sn.source == name], minlength=n_g) > 0
            labels = np.where(hit, np.where(labels == "", name, labels + "," + name), labels)
        sg_of_row = np.arange(n_g, dtype=np.int64)
        lo, hi = _depth_range(sg_of_row, g, sn.depth, n_g)
        with np.errstate(invalid="ignore", divide="ignore"):
            frame = pd.concat([sg.groups.reset_index(drop=True), pd.DataFrame({
                "searches": count.astype(np.int64),
                "node_source": labels,
                "depth_min": lo,
                "depth_max": hi,
                "nodes": total,
                "mean_nodes": total / np.where(count > 0, count, np.nan),
                "end_nodes": np.where(end_missing, np.nan, end_total),
            })], axis=1)
    else:
        check_depth = False  # N(d) of one iteration d: the same depth by construction
        width = sn.per_iter.shape[1]
        have = sn.per_iter > 0
        cell = (g[:, None] * width + np.arange(width)[None, :])
        cnt = np.bincount(cell[have], minlength=n_g * width)
        tot = np.bincount(cell[have], weights=sn.per_iter[have], minlength=n_g * width)
        keep = np.flatnonzero(cnt)
        sg_of_row = (keep // width).astype(np.int64)
        keys = sg.groups.iloc[sg_of_row].reset_index(drop=True)
        keys["iter"] = keep % width
        frame = pd.concat([keys, pd.DataFrame({
            "searches": cnt[keep].astype(np.int64),
            "node_source": "",
            "depth_min": (keep % width).astype(np.int64),
            "depth_max": (keep % width).astype(np.int64),
            "nodes": tot[keep],
            "mean_nodes": tot[keep] / cnt[keep],
            "end_nodes": np.nan,
        })], axis=1)
        frame["node_source"] = frame["engine"].map(
            pd.Series(sn.source, index=ctx.searches["engine"].astype("object")).groupby(level=0).agg(
                lambda v: ",".join(sorted(set(v)))))
    ratio, notes = _ratio_rules(frame, sg_of_row, ctx, sn.depth, check_depth)
    frame["ratio"] = ratio
    return frame, notes


class NodesTable:
    """``--table nodes``."""

    name = "nodes"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.04
    columns = ("tag", "iter", "ply", "depth")

    def partial(self, batch: Batch) -> ResultPartial:
        # The nodes table counts every visit: the main-visit flags (the ebf_ply table's) are not computed.
        return result_partial(batch, with_main=False)

    def finish(self, partials: Sequence[ResultPartial], grouping: Grouping) -> list[Section]:
        results = concat([p.results for p in partials], ["srow", "iter", "key", "ply", "count"])
        frame, notes = nodes_table(grouping, merge_results(partials, grouping), results)
        return [Section("nodes", TITLE, frame, tuple(grouping.keys), notes)]


NODES = NodesTable()

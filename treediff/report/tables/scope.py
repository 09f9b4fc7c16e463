"""The ``scope`` table: does a prune skip one move, or abandon the node?

For each PRUNE act and group:

* ``prunes``: MOVE records of that act;
* ``nodes``: node visits in which the act fired at least once (a *node visit*
  is one search of one node: its MOVE decisions up to and including the
  node's RESULT record; a node searched twice in an iteration, e.g. after an
  LMR re-search, is two visits);
* ``continued``: those visits in which some later sibling decision (a MOVE
  record of the same node, same visit, higher ``seq``) follows the act's first
  prune; ``pct_continued`` = 100 · continued / nodes;
* ``followed``: prune records after which a later sibling decision follows in
  the same visit; ``pct_followed`` = 100 · followed / prunes (per record);
* per prune record, the node's legal moves (python-chess, from the search's
  FEN and the node's path, once per node) that were not decided in the visit
  up to and including the prune are its *remaining* moves; they split into
  ``later_decided`` (decided by a later MOVE record of the visit) and
  ``unrecorded`` (never recorded in the visit).  PROBCUT records and null
  moves do not count as decided.  ``remaining``, ``later_decided`` and
  ``unrecorded`` are summed over the prune records of visits that did not end
  in a cutoff (RESULT ``bound=lower``: a cutoff legitimately leaves moves
  untried) and whose node's legal moves are known;
  ``pct_remaining_unrecorded`` = 100 · unrecorded / remaining.

Reading it: a later decision proves skip-one-move (``continue``); remaining
moves that are never recorded mean the engine drops moves silently (e.g.
move-count pruning), which is not evidence of abandoning the node.  An
``(all)`` row per group does the same for any PRUNE act.

Node visits: when the records carry ``parent_visit`` (the parser's node
visits), a MOVE record's visit is (its parent node, ``parent_visit``) and the
visit's RESULT is the node's RESULT with that ``visit``.  Otherwise visits
are delimited without paths: the trace is a depth-first walk in decision
order, so at node ply n a visit ends with a RESULT at ply n or when a record
of a shallower node appears.  Either way this needs records in (search, seq)
order of a single context (they are sorted if not).  A log without PRUNE
records costs nothing beyond reading the columns.
"""
from __future__ import annotations

from typing import Sequence

import chess
import numpy as np
import pandas as pd

from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan
from treediff.report.tables.acts import ALL_ROW

TITLE = "Prune scope: % of nodes still deciding moves after the prune, and the moves left unrecorded"

_COUNTS = ["prunes", "nodes", "continued", "followed", "remaining", "later_decided", "unrecorded"]
_COLUMNS = ["act", "prunes", "nodes", "continued", "pct_continued", "followed", "pct_followed", "remaining",
            "later_decided", "unrecorded", "pct_remaining_unrecorded"]


def _order(batch: Batch) -> np.ndarray | None:
    """Permutation putting records in (search, seq) order, or None when they already are."""
    seq = np.asarray(batch.records["seq"], dtype=np.int64)
    if len(seq) < 2:
        return None
    key = batch.srow * (int(seq.max()) + 1) + seq
    if np.all(key[1:] >= key[:-1]):
        return None
    return np.argsort(key, kind="stable")


def finish_scope(groups: pd.DataFrame, counts: pd.DataFrame | None) -> pd.DataFrame:
    """The scope table from :func:`scope_counts` rows (possibly summed over batches)."""
    if counts is None or len(counts) == 0:
        return pd.concat([groups.iloc[:0].reset_index(drop=True), pd.DataFrame({c: [] for c in _COLUMNS})], axis=1)
    body = counts.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        body["pct_continued"] = 100.0 * body["continued"] / body["nodes"]
        body["pct_followed"] = 100.0 * body["followed"] / body["prunes"]
        body["pct_remaining_unrecorded"] = 100.0 * body["unrecorded"] / body["remaining"].where(body["remaining"] > 0)
    body = body.sort_values(["_group", "_all", "prunes", "act"], ascending=[True, True, False, True], kind="stable")
    keys = key_frame(groups, body["_group"].to_numpy())
    return pd.concat([keys, body[_COLUMNS].reset_index(drop=True)], axis=1)


# ---------------------------------------------------------------------------------------------- legal moves

def _legal_counts(fens: Sequence[str | None], paths: Sequence[str]) -> np.ndarray:
    """Legal moves at each (FEN, UCI path) node (-1 when the FEN or a move on the path does not read)."""
    out = np.full(len(paths), -1, dtype=np.int64)
    boards: dict[tuple[str, str], chess.Board | None] = {}

    def board_at(fen: str, path: str) -> chess.Board | None:
        if (fen, path) in boards:
            return boards[(fen, path)]
        if not path:
            try:
                board: chess.Board | None = chess.Board(fen)
            except ValueError:
                board = None
        else:
            parent, _, move = path.rpartition("/")
            above = board_at(fen, parent)
            board = None
            if above is not None:
                try:
                    step = chess.Move.null() if move == "0000" else chess.Move.from_uci(move)
                except ValueError:
                    step = None
                if step is not None and (step == chess.Move.null() or above.is_legal(step)):
                    board = above.copy(stack=False)
                    board.push(step)
        if len(boards) > 200_000:
            boards.clear()
        boards[(fen, path)] = board
        return board

    for i, (fen, path) in enumerate(zip(fens, paths)):
        if fen is None:
            continue
        board = board_at(fen, path)
        if board is not None:
            out[i] = board.legal_moves.count()
    return out


# ---------------------------------------------------------------------------------------------- visits

def _runs(srow: np.ndarray, iters: np.ndarray) -> np.ndarray:
    n = len(srow)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (srow[1:] != srow[:-1]) | (iters[1:] != iters[:-1])
    return new_run


def _pathless_visits(is_move: np.ndarray, node_ply: np.ndarray, key: np.ndarray, new_run: np.ndarray,
                     levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Visit id of every MOVE record at the given node levels (-1 elsewhere), and per record the index of
    the record that ends its visit (meaningful on those MOVE records; -1 when the trace ends first)."""
    n = len(key)
    prevkey = np.empty(n, dtype=np.int64)
    prevkey[0] = -1
    prevkey[1:] = key[:-1]
    prevkey[new_run] = -1
    vid = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    for lv in levels.tolist():
        # At node ply lv a visit starts after a record with prevkey <= 2 lv (a shallower record, the node's own
        # RESULT, or a new search/iteration): a running count of those numbers the visits.
        cs = np.cumsum(prevkey <= 2 * lv, dtype=np.int64)
        at = np.flatnonzero(is_move & (node_ply == lv))
        vid[at] = lv * (n + 2) + cs[at]
        last = np.searchsorted(cs, cs[at], side="right") - 1  # the visit's last record
        # It closes the visit when it is not deeper (the node's RESULT, or a shallower record); a deeper last
        # record means the search or iteration ended first.
        end[at] = np.where(key[last] <= 2 * lv, last, -1)
    return vid, end


def scope_counts(batch: Batch) -> pd.DataFrame | None:
    """Per record group (cell) and PRUNE act (``_all`` 1), and per group for any PRUNE act (``_all`` 0, act
    ``(all)``): the counts of :data:`_COUNTS`; None when there is no PRUNE decision (nothing else is computed).

    Node visits never span two searches, so counts of disjoint sets of searches add up.
    """
    prune_all = batch.is_move & batch.kind_mask("PRUNE")
    if not prune_all.any():
        return None
    order = _order(batch)

    def take(a: np.ndarray) -> np.ndarray:
        return a if order is None else a[order]

    records = batch.records
    is_move = take(batch.is_move)
    is_result = take(batch.is_result)
    plies = take(batch.plies)
    srow = take(batch.srow)
    iters = take(batch.iters)
    group = take(batch.record_groups.record_group)
    a_codes, a_cats = batch.codes("act")
    acts = take(a_codes)
    prune = take(prune_all)
    probcut = take(batch.equals("act", "PROBCUT"))
    null = take(np.asarray(records["null_move"].fillna(False), dtype=bool)) if "null_move" in records else \
        np.zeros(len(acts), dtype=bool)
    if "move" in records:
        m_codes, _ = batch.codes("move")
    else:  # frames without the column: the path's last move
        last = records["path"].astype("object").fillna("").str.rpartition("/")[2]
        m_codes = pd.factorize(last)[0].astype(np.int64)
    moves = take(m_codes)
    n = len(plies)

    node_ply = plies - is_move.astype(np.int64)
    key = 2 * node_ply + is_move.astype(np.int64)  # RESULT at n -> 2n, MOVE at node n -> 2n + 1
    new_run = _runs(srow, iters)
    idx = np.flatnonzero(prune)
    levels = np.unique(node_ply[idx])
    paths = take(records["path"].astype("object").fillna("").to_numpy(dtype=object))
    bounds = take(records["bound"].astype("object").to_numpy(dtype=object)) if "bound" in records else None

    has_pv = "parent_visit" in records and "visit" in records and records["parent_visit"].notna().any()
    if has_pv:
        vid, cutoff_of = _visits_by_parent_visit(records, take, is_move, is_result, node_ply, srow, iters, paths,
                                                 levels, bounds)
    else:
        vid, end = _pathless_visits(is_move, node_ply, key, new_run, levels)
        cutoff_of = np.zeros(n, dtype=bool)
        if bounds is not None:
            e = end[idx]
            ok = e >= 0
            lower = np.zeros(len(idx), dtype=bool)
            ends = e[ok]
            lower[ok] = is_result[ends] & (plies[ends] == node_ply[idx][ok]) & (bounds[ends] == "lower")
            cutoff_of[idx] = lower

    # The decisions of the visits holding a prune, in trace order within each visit.
    pv = np.unique(vid[idx])
    member = np.flatnonzero(is_move & (vid >= 0) & np.isin(vid, pv))
    member = member[np.argsort(vid[member], kind="stable")]
    mv = vid[member]
    starts = np.flatnonzero(np.r_[True, mv[1:] != mv[:-1]])
    visit_of = np.cumsum(np.r_[True, mv[1:] != mv[:-1]]) - 1   # dense visit number per member
    sibling = ~probcut[member]                                   # a later sibling decision
    decides = sibling & ~null[member] & (moves[member] >= 0)     # decides a legal move
    width = int(moves.max()) + 2 if len(moves) else 1
    pair = visit_of * width + moves[member] + 1
    first = np.zeros(len(member), dtype=bool)
    if decides.any():
        dec = np.flatnonzero(decides)
        _, first_at = np.unique(pair[dec], return_index=True)
        first[dec[first_at]] = True
    cum = np.cumsum(first)
    before_visit = np.r_[0, cum][starts]
    upto = cum - before_visit[visit_of]                          # distinct moves decided so far in the visit
    total = np.bincount(visit_of, weights=first, minlength=len(starts)).astype(np.int64)
    last_sibling = np.full(len(starts), -1, dtype=np.int64)
    np.maximum.at(last_sibling, visit_of[sibling], np.arange(len(member))[sibling])

    # Per prune record (in member order).
    is_p = prune[member]
    p_member = np.flatnonzero(is_p)
    p_rec = member[p_member]
    p_visit = visit_of[p_member]
    followed = last_sibling[p_visit] > p_member
    later = total[p_visit] - upto[p_member]

    # The legal moves at each visit's node, once per (FEN, node path).
    fens_all = batch.searches["fen"].astype("object").to_numpy(dtype=object) if "fen" in batch.searches else None
    v_first_prune = np.full(len(starts), -1, dtype=np.int64)
    v_first_prune[p_visit[::-1]] = p_rec[::-1]
    node_paths = [str(paths[i]).rpartition("/")[0] for i in v_first_prune.tolist()]
    node_fen = [(fens_all[srow[i]] if fens_all is not None and isinstance(fens_all[srow[i]], str) else None)
                for i in v_first_prune.tolist()]
    uniq = pd.DataFrame({"fen": node_fen, "path": node_paths})
    codes, distinct = pd.factorize(pd.MultiIndex.from_frame(uniq.fillna({"fen": ""})))
    dfen = [f or None for f, _ in distinct.tolist()]
    dpath = [p for _, p in distinct.tolist()]
    legal = _legal_counts(dfen, dpath)[codes]
    p_legal = legal[p_visit]
    known = (p_legal >= 0) & ~cutoff_of[p_rec]
    remaining = np.where(known, np.maximum(p_legal - upto[p_member], 0), 0)
    later = np.where(known, np.minimum(later, remaining), 0)
    unrecorded = remaining - later

    # First prune of each (visit, act) and of each visit: the "nodes" and "continued" counts.
    g = group[p_rec]
    a = acts[p_rec] + 1
    na = len(a_cats) + 1
    size = batch.record_groups.n * na
    frames = []
    for per_act in (True, False):
        cell = g * na + (a if per_act else 0)
        block = p_visit * na + (a if per_act else 0)
        _, first_idx = np.unique(block, return_index=True)
        firsts = np.zeros(len(block), dtype=bool)
        firsts[first_idx] = True  # member order is trace order within a visit: the first prune of the block

        def count(weights: np.ndarray | None = None, mask: np.ndarray | None = None) -> np.ndarray:
            c = cell if mask is None else cell[mask]
            w = None if weights is None else (weights if mask is None else weights[mask])
            return np.bincount(c, weights=w, minlength=size).astype(np.int64)

        prunes = count()
        cells = np.flatnonzero(prunes)
        columns = {
            "prunes": prunes, "nodes": count(mask=firsts), "continued": count(mask=firsts & followed),
            "followed": count(mask=followed), "remaining": count(remaining.astype(np.float64)),
            "later_decided": count(later.astype(np.float64)), "unrecorded": count(unrecorded.astype(np.float64)),
        }
        labels = np.concatenate([[None], a_cats])[cells % na] if per_act else np.full(len(cells), ALL_ROW, object)
        frames.append(pd.DataFrame({"_group": cells // na, "_all": 0 if not per_act else 1, "act": labels,
                                    **{k: v[cells] for k, v in columns.items()}}))
    return pd.concat(frames, ignore_index=True)


def _visits_by_parent_visit(records: pd.DataFrame, take, is_move: np.ndarray, is_result: np.ndarray,
                            node_ply: np.ndarray, srow: np.ndarray, iters: np.ndarray, paths: np.ndarray,
                            levels: np.ndarray, bounds: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Visit ids from the parser's ``parent_visit`` (MOVE) and ``visit`` (RESULT) columns, for MOVE records
    at the given node levels, and per record whether its visit ended in a cutoff (on those records)."""
    n = len(paths)
    pv = take(records["parent_visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    rv = take(records["visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    at_level = np.isin(node_ply, levels)
    moves = np.flatnonzero(is_move & at_level & ~np.isnan(pv))
    results = np.flatnonzero(is_result & at_level & ~np.isnan(rv))
    parent = pd.Series(paths[moves], dtype="object").str.rpartition("/")[0].to_numpy(dtype=object)
    node_codes, _ = pd.factorize(np.concatenate([parent, paths[results]]).astype(object))
    m_node, r_node = node_codes[:len(moves)], node_codes[len(moves):]
    frame = pd.DataFrame({"s": np.concatenate([srow[moves], srow[results]]),
                          "i": np.concatenate([iters[moves], iters[results]]),
                          "node": np.concatenate([m_node, r_node]),
                          "v": np.concatenate([pv[moves], rv[results]])})
    ids, _ = pd.factorize(pd.MultiIndex.from_frame(frame))
    vid = np.full(n, -1, dtype=np.int64)
    vid[moves] = ids[:len(moves)]
    cutoff_visit = np.zeros(int(ids.max()) + 1 if len(ids) else 1, dtype=bool)
    if bounds is not None and len(results):
        lower = bounds[results] == "lower"
        cutoff_visit[ids[len(moves):][lower]] = True
    cutoff = np.zeros(n, dtype=bool)
    cutoff[moves] = cutoff_visit[ids[:len(moves)]]
    return vid, cutoff


_PARTIAL_COLUMNS = ["srow", "iter", "key", "_all", "act", *_COUNTS]


class ScopeTable:
    """``--table scope``: how node visits go on after a PRUNE act fired, and the moves they leave unrecorded."""

    name = "scope"
    columns = ("tag", "act", "kind", "ply", "seq", "iter", "path")
    #: Read when the input has them: the move (else taken from the path), null-move flag, RESULT bound (else no
    #: visit counts as a cutoff) and the parser's node visits (else visits are delimited without them).
    optional_columns = ("move", "null_move", "bound", "visit", "parent_visit")

    def partial(self, batch: Batch) -> pd.DataFrame | None:
        sc = scope_counts(batch)
        if sc is None or not len(sc):
            return None
        return batch.cell_frame(sc["_group"].to_numpy(), _all=sc["_all"].to_numpy(), act=sc["act"].to_numpy(),
                                **{c: sc[c].to_numpy() for c in _COUNTS})

    def finish(self, partials: Sequence[pd.DataFrame | None], grouping: Grouping) -> list[Section]:
        sc = concat(partials, _PARTIAL_COLUMNS)
        counts = None
        if len(sc):
            sc = pd.DataFrame({"_group": grouping.group_of(sc), "_all": sc["_all"].to_numpy(),
                               "act": sc["act"].to_numpy(object), **{c: sc[c].to_numpy() for c in _COUNTS}})
            sc = sc.groupby(["_group", "_all", "act"], sort=True, dropna=False, as_index=False)[_COUNTS].sum()
            sc["act"] = none_for_nan(sc["act"].to_numpy())
            for c in ("_group", "_all", *_COUNTS):
                sc[c] = sc[c].astype(np.int64)
            counts = sc
        return [Section("scope", TITLE, finish_scope(grouping.groups, counts), tuple(grouping.keys))]


SCOPE = ScopeTable()

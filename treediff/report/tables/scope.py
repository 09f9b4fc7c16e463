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
* per prune record, the node's legal moves (as python-chess counts them, from
  the search's FEN and the node's path, once per node; counted by the
  compiled move checker when it was built) that were not decided in the visit
  up to and including the prune are its *remaining* moves; they split into
  ``later_decided`` (decided by a later MOVE record of the visit) and
  ``unrecorded`` (never recorded in the visit).  PROBCUT records and null
  moves do not count as decided.  ``remaining``, ``later_decided`` and
  ``unrecorded`` are summed over the prune records of visits that did not end
  in a cutoff (RESULT ``bound=lower``: a cutoff legitimately leaves moves
  untried) and whose node's legal moves are known;
  ``pct_remaining_unrecorded`` = 100 · unrecorded / remaining.

Reading it: a later decision proves skip-one-move; remaining moves that are
never recorded mean the engine drops moves silently (e.g. move-count
pruning), which is not evidence of abandoning the node.  An
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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.parse.checker import (checker_at, compiled_checker_available, fen_checker_args, legal_counts_compiled,
                                    several_kings)
from treediff.report.grouped import cell_counts, group_rows, isin_small
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan
from treediff.report.tables.acts import ALL_ROW

if TYPE_CHECKING:  # python-chess (~30 ms of start-up) is imported where a PRUNE's position is replayed
    import chess

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

#: The paths python-chess reads as the fallback below does (``Move.from_uci`` of each move after the last
#: ``/``, recursively): "" (the root), lower-case UCI moves and 0000 between ``/``; a leading ``/`` is read
#: as the root before it.  Other paths (upper case, other null spellings, ``-``, empty moves) give -1 there;
#: the compiled checker would read some of them, so they never reach it.
_MOVE = r"(?:[a-h][1-8][a-h][1-8][qrbn]?|0000)"
_READABLE_PATH = rf"^(?:/?{_MOVE}(?:/{_MOVE})*)?$"


def _legal_counts(fens: Sequence[str | None], paths: Sequence[str]) -> np.ndarray:
    """Legal moves at each (FEN, UCI path) node (-1 when the FEN or a move on the path does not read, or a
    move is illegal), as python-chess's ``Board.legal_moves.count()`` (a promotion counts four).

    By the compiled checker (:mod:`treediff.parse._cmoves`) when there is one, else (or with
    ``TREEDIFF_MOVE_CHECK=python``) on python-chess boards: the same counts (tests/report/test_scope_legal.py).
    """
    if compiled_checker_available():
        fen_codes, fen_values = pd.factorize(pd.Series(list(fens), dtype="object"))  # None -> -1
        return _legal_counts_compiled(np.asarray(fen_codes, dtype=np.int64), list(fen_values),
                                      pa.array(list(paths), type=pa.large_string()))
    return _legal_counts_python(fens, paths)


def _legal_counts_at(fen_codes: np.ndarray, fen_values: Sequence[object], paths: pa.Array) -> np.ndarray:
    """:func:`_legal_counts` of the nodes (``fen_values[fen_codes[i]]``, ``paths[i]``), the paths an Arrow
    string array: no Python string per node on the compiled path.  A code of -1, or a value that is not a
    string, is a node without a FEN (-1)."""
    if compiled_checker_available():
        return _legal_counts_compiled(fen_codes, fen_values, paths)
    fen_list = [v if isinstance(v, str) else None for v in fen_values]
    return _legal_counts_python([fen_list[c] if c >= 0 else None for c in fen_codes.tolist()],
                                [str(p) for p in pc.fill_null(paths, "").to_pylist()])


def _legal_counts_compiled(fen_codes: np.ndarray, fen_values: Sequence[object], paths: pa.Array) -> np.ndarray:
    """:func:`_legal_counts_at` by one compiled checker per FEN, each FEN's paths in the order given (each path
    replays only the moves after those it shares with the one before: about one move a node when the paths
    come in trace order).  Memory: the checker keeps one path's boards; the paths are one Arrow array."""
    out = np.full(len(paths), -1, dtype=np.int64)
    if not len(paths):
        return out
    has_fen = np.asarray([isinstance(v, str) for v in fen_values] + [False], dtype=bool)
    fen_codes = np.where(has_fen[fen_codes], fen_codes, -1)  # (code -1 reads has_fen's last entry: False)
    path_array = paths.cast(pa.large_string()) if paths.type != pa.large_string() else paths
    readable = np.asarray(pc.fill_null(pc.match_substring_regex(path_array, _READABLE_PATH), False)
                          .to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.flatnonzero(readable & (fen_codes >= 0))
    if not len(rows):
        return out
    # A leading '/' stands for the root before it (as the fallback's rpartition reads it); the checker
    # would read an empty move there.
    moves = path_array.take(pa.array(rows))
    if pc.any(pc.starts_with(moves, "/")).as_py():
        moves = pc.replace_substring_regex(moves, pattern="^/", replacement="", max_replacements=1)
    # Each FEN's paths in the order given: the checker replays a path from the one before it, and the nodes
    # come in trace order (a depth-first walk: neighbours share all but a move or two), which costs it no more
    # than sorted paths (measured: the same CPU on the 5M bench file) and spares the sort of the strings.
    from treediff.report.tries import _is_identity

    order = np.argsort(fen_codes[rows], kind="stable")
    if not _is_identity(order):
        rows, moves = rows[order], moves.take(pa.array(order))
    row_fens = fen_codes[rows]
    bounds = np.flatnonzero(np.diff(row_fens)) + 1
    for lo, hi in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(rows)].tolist()):
        fen = fen_values[row_fens[lo]]
        # The FEN read as the parser reads it (a plain one without python-chess; None where python-chess
        # refuses it, as in the fallback).
        args = fen_checker_args(fen)
        if args is None:
            continue
        if several_kings(args[0]):
            # Two kings of one colour (no engine's position): python-chess's quirks there (castling from
            # the lowest king on the back rank, the other kings moving as pinned pieces) are not the checker's.
            at = rows[lo:hi]
            out[at] = _legal_counts_python([fen] * len(at), [str(p) for p in moves.slice(lo, hi - lo).to_pylist()])
            continue
        out[rows[lo:hi]] = legal_counts_compiled(checker_at(args), moves.slice(lo, hi - lo))
    return out


def _legal_counts_python(fens: Sequence[str | None], paths: Sequence[str]) -> np.ndarray:
    """:func:`_legal_counts` on python-chess boards (the fallback: about 0.2 ms a node)."""
    import chess

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
        boards[(fen, path)] = board
        return board

    readable: dict[str, bool] = {}
    for i, (fen, path) in enumerate(zip(fens, paths)):
        if fen is None:
            continue
        if fen not in readable:
            readable[fen] = board_at(fen, "") is not None
        if not readable[fen]:
            continue
        if len(boards) > 200_000:  # memory stays bounded on huge traces; positions are re-derived after
            boards.clear()
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
                     levels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Visit id of every MOVE record at the given node levels (-1 elsewhere), per record the index of the
    record that ends its visit (meaningful on those MOVE records; -1 when the trace ends first), and those
    MOVE records in visit-id order (trace order within a visit)."""
    n = len(key)
    prevkey = np.empty(n, dtype=np.int64)
    prevkey[0] = -1
    prevkey[1:] = key[:-1]
    prevkey[new_run] = -1
    vid = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    moves = np.flatnonzero(is_move & isin_small(node_ply, levels))
    moves = moves[np.argsort(node_ply[moves].astype(np.int16), kind="stable")]  # radix sort of small ints
    bounds = np.searchsorted(node_ply[moves], levels, side="left"), np.searchsorted(node_ply[moves], levels,
                                                                                   side="right")
    for lv, lo, hi in zip(levels.tolist(), *bounds):
        # At node ply lv a visit starts after a record with prevkey <= 2 lv (a shallower record, the node's own
        # RESULT, or a new search/iteration): the number of such starts up to a record numbers its visit.
        starts = np.flatnonzero(prevkey <= 2 * lv)
        at = moves[lo:hi]
        number = np.searchsorted(starts, at, side="right")
        vid[at] = lv * (n + 2) + number
        # The visit's last record: just before the next start (or the trace's end).  It closes the visit when
        # it is not deeper (the node's RESULT, or a shallower record); a deeper last record means the search or
        # iteration ended first.
        last = np.where(number < len(starts), starts[np.minimum(number, len(starts) - 1)], n) - 1
        end[at] = np.where(key[last] <= 2 * lv, last, -1)
    return vid, end, moves


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
    null = take(batch.flag("null_move"))

    node_ply = plies - is_move.astype(np.int64)
    idx = np.flatnonzero(prune)
    levels = _distinct_small(node_ply[idx])

    path_column = batch.arrow_strings("path")

    def paths_at(rows: np.ndarray) -> pa.Array:
        """The paths of some records (positions in the sorted order), as Arrow strings ("" when missing)."""
        orig = rows if order is None else order[rows]
        return pc.fill_null(path_column.take(pa.array(np.asarray(orig, dtype=np.int64))), "")

    bounds = take(batch.equals("bound", "lower")) if "bound" in records else None  # a RESULT's cutoff

    has_pv = "parent_visit" in records and "visit" in records and records["parent_visit"].notna().any()
    shared = _shared_path_codes(batch, take)
    move_codes = take(batch.codes("move")[0]) if "move" in records else None
    pr = (_prunes_compiled(records, take, is_move, is_result, node_ply, srow, iters, levels, bounds, shared, prune,
                           probcut, null, move_codes, acts)
          if has_pv and shared is not None and move_codes is not None and _scope_kernel() is not None else None)
    if pr is None:
        pr = _prunes_numpy(records, take, is_move, is_result, plies, node_ply, srow, iters, idx, levels, bounds,
                           shared, has_pv, paths_at, prune, probcut, null, move_codes, acts)

    # The legal moves at each visit's node, once per (FEN, node path).
    fens_all = batch.searches["fen"].astype("object").to_numpy(dtype=object) if "fen" in batch.searches else None
    fen_codes, fen_values = (pd.factorize(pd.Series(fens_all, dtype="object")) if fens_all is not None
                             else (np.full(len(batch.searches), -1), np.zeros(0, dtype=object)))
    # Only at the visits that did not end in a cutoff: a cutoff's prunes leave no moves "remaining" (``known``
    # below), so its node's legal moves were counted for nothing (the checker is a tenth of the report's CPU).
    counted = np.ones(len(pr.visit_first_prune), dtype=bool)
    counted[pr.visit[pr.cutoff]] = False
    first_prune = pr.visit_first_prune[counted]
    node_fen = np.asarray(fen_codes, dtype=np.int64)[srow[first_prune]]
    codes, d_fen, d_paths = _distinct_nodes(node_fen, first_prune, paths_at, None if shared is None else shared[1])
    legal = np.full(len(counted), -1, dtype=np.int64)
    legal[counted] = _legal_counts_at(d_fen, list(fen_values), d_paths)[codes]
    p_legal = legal[pr.visit]
    known = (p_legal >= 0) & ~pr.cutoff
    remaining = np.where(known, np.maximum(p_legal - pr.upto, 0), 0)
    later = np.where(known, np.minimum(pr.later, remaining), 0)
    unrecorded = remaining - later

    # First prune of each (visit, act) and of each visit: the "nodes" and "continued" counts.
    g = group[pr.rec]
    a = acts[pr.rec] + 1
    na = len(a_cats) + 1
    size = batch.record_groups.n * na
    followed = pr.followed
    frames = []
    for per_act in (True, False):
        cell = g * na + (a if per_act else 0)
        firsts = pr.first_act if per_act else pr.first_visit

        def count(weights: np.ndarray | None = None, mask: np.ndarray | None = None) -> np.ndarray:
            return cell_counts(size, [(cell, 0, 1)], mask=mask, weights=weights).astype(np.int64, copy=False)

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


@dataclass
class _Prunes:
    """The prune records of the visits holding a prune (member order: visit by visit, trace order within) and
    what the counts need of each.  Records are positions in scope's (search, seq) order."""

    rec: np.ndarray                #: its record
    visit: np.ndarray              #: its visit: 0, 1, ... over the visits holding a prune, in member order
    upto: np.ndarray               #: distinct moves decided in the visit up to it, itself included
    later: np.ndarray              #: the visit's distinct decided moves after it (its total minus ``upto``)
    followed: np.ndarray           #: bool: a later sibling decision (not PROBCUT) in the visit
    cutoff: np.ndarray             #: bool: the visit ended in a cutoff (a RESULT with a lower bound)
    first_act: np.ndarray          #: bool: the visit's first prune of its act
    first_visit: np.ndarray        #: bool: the visit's first prune
    visit_first_prune: np.ndarray  #: per visit: its first prune's record


def _scope_kernel():
    """The compiled kernel (``_ctries.scope_visits``), or None (not built, or ``TREEDIFF_NUMPY_TRIES=1``)."""
    from treediff.report import tries

    return tries._ctries if tries.compiled_available() else None


def _prunes_compiled(records: pd.DataFrame, take, is_move, is_result, node_ply, srow, iters, levels, bounds,
                     shared: tuple[np.ndarray, np.ndarray], prune, probcut, null, move_codes: np.ndarray,
                     acts: np.ndarray) -> _Prunes | None:
    """:class:`_Prunes` from the parser's visit columns by the compiled kernel (one pass: visits numbered as
    :func:`_visits_by_parent_visit` numbers them, the members counted as :func:`_prunes_numpy` does); None
    when a node of a visit has no shared path code (then numpy cuts the paths)."""
    pv = take(records["parent_visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    rv = take(records["visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    at_level = isin_small(node_ply, levels)
    own, parent = shared
    node = np.where(is_move, parent, own)
    read = at_level & ((is_move & ~np.isnan(pv)) | (is_result & ~np.isnan(rv)))
    if read.any() and int(node[read].min()) < 0:
        return None
    with np.errstate(invalid="ignore"):
        if bool(np.any(np.abs(pv) >= 2.0 ** 62)) or bool(np.any(np.abs(rv) >= 2.0 ** 62)):  # (+-inf too)
            return None  # visit numbers no int64 holds: numpy's cast of them, not the kernel's
    n_out = int(np.count_nonzero(prune))

    def out(dtype) -> np.ndarray:
        return np.empty(n_out, dtype=dtype)

    rec, visit, upto, later, v_first = out(np.int64), out(np.int64), out(np.int64), out(np.int64), out(np.int64)
    followed, cutoff, first_act, first_visit = out(np.uint8), out(np.uint8), out(np.uint8), out(np.uint8)
    u8 = lambda a: np.ascontiguousarray(a, dtype=bool).view(np.uint8)  # noqa: E731
    i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    n_p, n_v = _scope_kernel().scope_visits(
        u8(is_move), u8(is_result), u8(at_level), i64(srow * (1 << 16) + iters), i64(node),
        np.ascontiguousarray(pv), np.ascontiguousarray(rv),
        u8(bounds if bounds is not None else np.zeros(len(node), dtype=bool)), u8(prune), u8(probcut), u8(null),
        i64(move_codes), i64(acts), rec, visit, upto, later, followed, cutoff, first_act, first_visit, v_first)
    return _Prunes(rec[:n_p], visit[:n_p], upto[:n_p], later[:n_p], followed[:n_p].astype(bool),
                   cutoff[:n_p].astype(bool), first_act[:n_p].astype(bool), first_visit[:n_p].astype(bool),
                   v_first[:n_v])


def _prunes_numpy(records: pd.DataFrame, take, is_move, is_result, plies, node_ply, srow, iters, idx, levels, bounds,
                  shared, has_pv: bool, paths_at, prune, probcut, null, move_codes: np.ndarray | None,
                  acts: np.ndarray) -> _Prunes:
    """:class:`_Prunes` in numpy, visits from the parser's visit columns (``has_pv``) or delimited without them."""
    n = len(plies)
    if has_pv:
        vid, cutoff_of = _visits_by_parent_visit(records, take, is_move, is_result, node_ply, srow, iters, paths_at,
                                                 levels, bounds, shared)
        candidates = np.flatnonzero(vid >= 0)
        candidates = candidates[np.argsort(vid[candidates], kind="stable")]
    else:
        key = 2 * node_ply + is_move.astype(np.int64)  # RESULT at n -> 2n, MOVE at node n -> 2n + 1
        vid, end, candidates = _pathless_visits(is_move, node_ply, key, _runs(srow, iters), levels)
        cutoff_of = np.zeros(n, dtype=bool)
        if bounds is not None:
            e = end[idx]
            ok = e >= 0
            lower = np.zeros(len(idx), dtype=bool)
            ends = e[ok]
            lower[ok] = is_result[ends] & (plies[ends] == node_ply[idx][ok]) & bounds[ends]
            cutoff_of[idx] = lower

    # The decisions of the visits holding a prune, in trace order within each visit.
    in_pruned = pd.Index(pd.unique(vid[idx])).get_indexer(vid[candidates]) >= 0  # hashed, no sort
    member = candidates[in_pruned]  # in visit-id order, trace order within a visit
    mv = vid[member]
    starts = np.flatnonzero(np.r_[True, mv[1:] != mv[:-1]])
    visit_of = np.cumsum(np.r_[True, mv[1:] != mv[:-1]]) - 1   # dense visit number per member
    sibling = ~probcut[member]                                   # a later sibling decision
    if move_codes is not None:
        moves = move_codes[member]
    else:  # frames without the column: the path's last move
        moves = _codes(last_move(paths_at(member)))
    decides = sibling & ~null[member] & (moves >= 0)             # decides a legal move
    width = int(moves.max()) + 2 if len(moves) else 1
    pair = visit_of * width + moves + 1
    first = np.zeros(len(member), dtype=bool)
    if decides.any():
        dec = np.flatnonzero(decides)
        first[dec[~pd.Series(pair[dec]).duplicated(keep="first").to_numpy()]] = True
    cum = np.cumsum(first)
    before_visit = np.r_[0, cum][starts]
    upto = cum - before_visit[visit_of]                          # distinct moves decided so far in the visit
    total = np.bincount(visit_of, weights=first, minlength=len(starts)).astype(np.int64)
    last_sibling = np.full(len(starts), -1, dtype=np.int64)
    np.maximum.at(last_sibling, visit_of[sibling], np.arange(len(member))[sibling])

    # Per prune record (in member order).
    p_member = np.flatnonzero(prune[member])
    p_rec = member[p_member]
    p_visit = visit_of[p_member]
    v_first_prune = np.full(len(starts), -1, dtype=np.int64)
    v_first_prune[p_visit[::-1]] = p_rec[::-1]
    # A visit's prunes are contiguous (p_visit ascending): its first is where the visit changes.
    first_visit = np.r_[True, p_visit[1:] != p_visit[:-1]] if len(p_visit) else np.zeros(0, dtype=bool)
    first_act = ~pd.Series(p_visit * (int(acts.max(initial=-1)) + 2) + acts[p_rec] + 1) \
        .duplicated(keep="first").to_numpy()
    return _Prunes(p_rec, p_visit, upto[p_member], total[p_visit] - upto[p_member],
                   last_sibling[p_visit] > p_member, cutoff_of[p_rec], first_act, first_visit, v_first_prune)


def _distinct_nodes(node_fen: np.ndarray, moves: np.ndarray, paths_at,
                    parent_codes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """The distinct (FEN, node) of MOVE records ``moves`` (their node: the path without the last move): each
    record's distinct number (first-appearance order), and per distinct node its FEN code (``node_fen``'s)
    and its path (Arrow strings).  The nodes are told apart by ``parent_codes`` (the shared derivation's
    parent path codes: equal codes, equal node paths) when it has one for every record; then only the
    distinct nodes' paths are cut, else every record's path is cut and hashed."""
    node = None
    if parent_codes is not None:
        node = parent_codes[moves]
        if len(node) and int(node.min()) < 0:
            node = None
    if node is not None:
        if not len(node):
            return np.zeros(0, dtype=np.int64), node_fen[:0], parent_path(paths_at(moves))
        nodes = group_rows(node_fen, node)  # (node_fen -1: no FEN)
        return nodes.codes, node_fen[nodes.first], parent_path(paths_at(moves[nodes.first]))
    node_paths = pc.dictionary_encode(parent_path(paths_at(moves)))
    path_codes = _codes(node_paths)
    codes, distinct = pd.factorize(node_fen * (len(node_paths.dictionary) + 1) + path_codes)
    distinct = np.asarray(distinct, dtype=np.int64)
    d_paths = node_paths.dictionary.take(pa.array(distinct % (len(node_paths.dictionary) + 1)))
    return np.asarray(codes, dtype=np.int64), distinct // (len(node_paths.dictionary) + 1), d_paths


def _shared_path_codes(batch: Batch, take) -> tuple[np.ndarray, np.ndarray] | None:
    """Each record's path code and parent path code (one dictionary; sorted order) from the batch's move-try
    derivation (:func:`treediff.report.tries.derive`), which cutoffs and fh derive anyway; None when the batch
    lacks a column it reads (then the nodes are cut and hashed here)."""
    from treediff.report.tries import COLUMNS, derive

    if any(c not in batch.records for c in COLUMNS):
        return None
    t = derive(batch, full=False)
    return take(t.rec_path), take(t.rec_parent)


def _visits_by_parent_visit(records: pd.DataFrame, take, is_move: np.ndarray, is_result: np.ndarray,
                            node_ply: np.ndarray, srow: np.ndarray, iters: np.ndarray, paths_at,
                            levels: np.ndarray, bounds: np.ndarray | None,
                            path_codes: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Visit ids from the parser's ``parent_visit`` (MOVE) and ``visit`` (RESULT) columns, for MOVE records
    at the given node levels, and per record whether its visit ended in a cutoff (on those records).
    ``path_codes``: :func:`_shared_path_codes` (else the nodes' paths are cut and hashed here)."""
    n = len(is_move)
    pv = take(records["parent_visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    rv = take(records["visit"].to_numpy(dtype=np.float64, na_value=np.nan))
    at_level = isin_small(node_ply, levels)
    moves = np.flatnonzero(is_move & at_level & ~np.isnan(pv))
    results = np.flatnonzero(is_result & at_level & ~np.isnan(rv))
    # The node of a MOVE record is its path without the last move; of a RESULT record its path.  Codes from
    # the shared derivation when there is one (a record of ply 0 has no parent code there: then cut here);
    # else cut and hashed in polars, not per record in Python: this was most of the table's time on big inputs.
    node = None
    if path_codes is not None:
        own, parent = path_codes
        node = np.concatenate([parent[moves], own[results]])
        if len(node) and int(node.min()) < 0:
            node = None
    if node is None:
        node = _node_codes(paths_at(moves), paths_at(results))
    ids = _dense_ids(np.concatenate([srow[moves], srow[results]]) * (1 << 16)
                     + np.concatenate([iters[moves], iters[results]]),
                     node, np.concatenate([pv[moves], rv[results]]).astype(np.int64))
    vid = np.full(n, -1, dtype=np.int64)
    vid[moves] = ids[:len(moves)]
    cutoff_visit = np.zeros(int(ids.max()) + 1 if len(ids) else 1, dtype=bool)
    if bounds is not None and len(results):
        cutoff_visit[ids[len(moves):][bounds[results]]] = True
    cutoff = np.zeros(n, dtype=bool)
    cutoff[moves] = cutoff_visit[ids[:len(moves)]]
    return vid, cutoff


def _distinct_small(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of small integers (plies), by a count per value instead of a sort."""
    values = np.asarray(values, dtype=np.int64)
    if not len(values):
        return values
    low = int(values.min())
    return np.flatnonzero(np.bincount(values - low)) + low


def parent_path(paths: pa.Array) -> pa.Array:
    """Each path without its last move (``str.rpartition("/")[0]``; null stays null): split once at its last
    ``/`` (a third of the CPU of Arrow's regex replacement ``/?[^/]*$``, which gives the same strings)."""
    parts = pc.split_pattern(paths, "/", max_splits=1, reverse=True)
    return pc.if_else(pc.equal(pc.list_value_length(parts), 2), pc.list_element(parts, 0), pa.scalar("", paths.type))


def last_move(paths: pa.Array) -> pa.Array:
    """Each path's last move (``str.rpartition("/")[2]``)."""
    return pc.replace_substring_regex(paths, pattern="^.*/", replacement="", max_replacements=1)


def _node_codes(move_paths: pa.Array, result_paths: pa.Array) -> np.ndarray:
    """One code per node, for MOVE records (their path without the last move) then RESULT records (their
    path): the same code for the same node.  Cut and encoded in polars (multithreaded; about half the CPU
    of Arrow's regex kernel on 1M paths)."""
    import polars as pl

    parents = pl.Series(values=move_paths).str.replace(r"/?[^/]*$", "", n=1)
    nodes = pl.concat([parents.cast(pl.String), pl.Series(values=result_paths).cast(pl.String)])
    return np.asarray(nodes.cast(pl.Categorical).to_physical().to_numpy(), dtype=np.int64)


def _codes(values: pa.Array) -> np.ndarray:
    """Dense int64 codes of strings (equal strings, equal codes), hashed in Arrow."""
    encoded = values if pa.types.is_dictionary(values.type) else pc.dictionary_encode(values)
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _dense_ids(*parts: np.ndarray) -> np.ndarray:
    """One dense id per distinct tuple of the int64 ``parts``, as a tuple-wise factorize would give
    (first-appearance order; :func:`treediff.report.grouped.group_rows`)."""
    return group_rows(*parts).codes


_PARTIAL_COLUMNS = ["srow", "iter", "key", "_all", "act", *_COUNTS]


class ScopeTable:
    """``--table scope``: how node visits go on after a PRUNE act fired, and the moves they leave unrecorded."""

    name = "scope"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.5
    #: Reads the batch's move-try derivation (treediff.report.tries.derive): core runs it first, on its own.
    reads_tries = True
    #: (``depth`` too, which scope does not count by: the shared derivation reads it, treediff.report.tries.COLUMNS.
    #: Without it `--table scope` alone cut and hashed the paths itself, in numpy: twice its CPU.)
    columns = ("tag", "act", "kind", "ply", "seq", "iter", "path", "depth")
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

"""Choosing what to align: one search per side (by position) and one iteration per side.

Rules (see docs/ALIGN.md):

* Searches pair by position (board, side to move, castling, en passant:
  :func:`~treediff.model.positions.position_key`), never by id alone.
  ``position`` given: the position that id names (on A, else on B); each side
  must have exactly one search of it; an id naming different positions on the
  two sides is refused with both FENs.  Not given: if each side holds one
  search, those two (their positions must agree when both FENs are known);
  else the one position both sides share; several shared positions is an
  error that lists them.
* Iterations: ``iter`` given: each side that has ITER markers must have it.
  Not given: the deepest iteration both sides *completed*; an iteration is
  completed when it has a RESULT for the root (ply 0); a side whose records
  never carry a root RESULT counts every iteration it has as completed.  A
  search without ITER markers (``iter`` 0 throughout) is one iteration and is
  aligned whole against the other side's chosen iteration.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.columns import first_strings, has, numbers, records_table, strings
from treediff.align.core import equals
from treediff.model.errors import InputError
from treediff.model.positions import search_position_keys


@dataclass(frozen=True)
class SideChoice:
    """The search and iteration chosen on one side."""

    label: str               #: "A" or "B"
    engine: str
    position: str
    search: int
    iter: int                #: root depth in plies; 0 = a search without ITER markers
    iterations: tuple[int, ...]  #: every iteration the search has
    completed: tuple[int, ...]   #: iterations with a root RESULT


def _is_one_search(search: np.ndarray) -> bool:
    """Whether every record is of one search (first and last compared first: a cheap no for most batches)."""
    return bool(len(search)) and search[0] == search[-1] and bool((search == search[0]).all())


def _searches(records: pa.Table) -> pd.DataFrame:
    """One row per search: search, position, fen, engine (strings, "" when unknown)."""
    search = numbers(records, "search", np.int64, fill=None)
    if _is_one_search(search):
        first = np.zeros(1, dtype=np.int64)  # one search (compare's positions): no unique over the records
    else:
        _, first = np.unique(search, return_index=True)
        first = np.sort(first)
    # Only the head rows' values are read.
    cols: dict[str, object] = {"search": search[first]}
    for name in ("position", "fen", "engine"):
        cols[name] = (np.asarray(first_strings(records, name, first), dtype=object) if has(records, name)
                      else np.full(len(first), ""))
    frame = pd.DataFrame(cols)
    ids = search[first]
    if len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1])):  # (already in order: no sort of a small frame)
        return frame
    return frame.sort_values("search", kind="stable").reset_index(drop=True)


def _keys(searches: pd.DataFrame) -> np.ndarray:
    """Position identity per searches row (:func:`~treediff.model.positions.search_position_keys`)."""
    fens = [f if isinstance(f, str) and f else None for f in
            (searches["fen"].astype(object).tolist() if "fen" in searches.columns else [None] * len(searches))]
    ids = searches["position"].astype(object).tolist() if "position" in searches.columns else [None] * len(searches)
    return np.asarray(_position_keys(tuple(fens), tuple(ids)), dtype=object)


@functools.lru_cache(maxsize=1024)
def _position_keys(fens: tuple, ids: tuple) -> tuple[str, ...]:
    # compare asks again for each position the pairing already read: parsing its FEN (python-chess) each time
    # cost ~2 ms a position.
    return tuple(search_position_keys(fens, ids))


def _ids(searches: pd.DataFrame) -> np.ndarray:
    if "position" not in searches.columns:
        return np.full(len(searches), "", dtype=object)
    return np.asarray([p if isinstance(p, str) else "" for p in searches["position"].astype(object).tolist()],
                      dtype=object)


def _fens(searches: pd.DataFrame) -> np.ndarray:
    if "fen" not in searches.columns:
        return np.full(len(searches), "", dtype=object)
    return np.asarray([f if isinstance(f, str) else "" for f in searches["fen"].astype(object).tolist()], dtype=object)


def _describe(searches: pd.DataFrame) -> str:
    ids = _ids(searches)
    numbers = searches["search"].tolist() if "search" in searches.columns else list(range(len(searches)))
    shown = [f"{p or '?'} (search {s})" for p, s in zip(ids[:10], numbers[:10])]
    return ", ".join(shown) + (f" ... ({len(ids)} searches)" if len(ids) > 10 else "")


def id_clashes(searches_a: pd.DataFrame, searches_b: pd.DataFrame) -> list[str]:
    """One message per position id that names different positions on the two sides, with both FENs."""
    ids_a, ids_b = _ids(searches_a), _ids(searches_b)
    keys_a, keys_b = _keys(searches_a), _keys(searches_b)
    fens_a, fens_b = _fens(searches_a), _fens(searches_b)
    out = []
    for pid in sorted((set(ids_a) & set(ids_b)) - {""}):
        at_a, at_b = np.flatnonzero(ids_a == pid), np.flatnonzero(ids_b == pid)
        ka, kb = set(keys_a[at_a]), set(keys_b[at_b])
        if ka != kb and not (ka & kb):
            out.append(f"id {pid} names different positions: A {fens_a[at_a[0]] or '(no FEN)'}, "
                       f"B {fens_b[at_b[0]] or '(no FEN)'}; not paired")
    return out


def choose_pair(searches_a: pd.DataFrame, searches_b: pd.DataFrame, position: str | None) -> tuple[int, int, str]:
    """(row in A's searches, row in B's, position label): the one search per side to align.

    Searches are paired by position (:func:`~treediff.model.positions.position_key`:
    board, side to move, castling, en passant), never by id alone.  ``position``
    given: the position that id names (on A, else on B); an id that names
    different positions on the two sides is refused with both FENs.  Not given:
    the one search per side when each side holds one (refused when both FENs
    are known and differ), else the one position both sides share.  Each side
    must hold exactly one search of the chosen position.
    """
    ids_a, ids_b = _ids(searches_a), _ids(searches_b)
    keys_a, keys_b = _keys(searches_a), _keys(searches_b)
    fens_a, fens_b = _fens(searches_a), _fens(searches_b)
    if position is not None:
        named = {"A": set(keys_a[ids_a == position]), "B": set(keys_b[ids_b == position])}
        for label, keys in named.items():
            if len(keys) > 1:
                raise InputError(f"{label}'s position id {position} names {len(keys)} different positions; "
                                 "keep one per input")
        if not named["A"] and not named["B"]:
            raise InputError(f"no search of position {position} on either side; A has: {_describe(searches_a)}; "
                             f"B has: {_describe(searches_b)}")
        if named["A"] and named["B"] and named["A"] != named["B"]:
            raise InputError(f"position id {position} names different positions: A "
                             f"{fens_a[ids_a == position][0] or '(no FEN)'}, B {fens_b[ids_b == position][0] or '(no FEN)'}")
        key = next(iter(named["A"] or named["B"]))
        hit_a, hit_b = keys_a == key, keys_b == key
        # Several searches of the position on one side: the id chooses among them when it can.
        if hit_a.sum() > 1 and (hit_a & (ids_a == position)).sum() == 1:
            hit_a &= ids_a == position
        if hit_b.sum() > 1 and (hit_b & (ids_b == position)).sum() == 1:
            hit_b &= ids_b == position
        return _one_each(searches_a, searches_b, hit_a, hit_b, position)
    if len(searches_a) == 1 and len(searches_b) == 1:
        if fens_a[0] and fens_b[0] and keys_a[0] != keys_b[0]:
            raise InputError(f"A and B searched different positions ({ids_a[0] or '?'}: {fens_a[0]} vs "
                             f"{ids_b[0] or '?'}: {fens_b[0]})")
        return 0, 0, str(ids_a[0] or ids_b[0])
    shared = sorted(set(keys_a) & set(keys_b))
    if not shared:
        clashes = id_clashes(searches_a, searches_b)
        raise InputError("A and B share no position" + (f" ({'; '.join(clashes)})" if clashes else "")
                         + f"; A has: {_describe(searches_a)}; B has: {_describe(searches_b)}")
    labels = [str(ids_a[keys_a == k][0] or ids_b[keys_b == k][0] or k) for k in shared]
    if len(shared) > 1:
        raise InputError(f"A and B share {len(shared)} positions; choose one with --position: "
                         f"{', '.join(sorted(labels))}")
    return _one_each(searches_a, searches_b, keys_a == shared[0], keys_b == shared[0], labels[0])


def _one_each(searches_a: pd.DataFrame, searches_b: pd.DataFrame, hit_a: np.ndarray, hit_b: np.ndarray,
              label: str) -> tuple[int, int, str]:
    picks = []
    for side, searches, hit in (("A", searches_a, hit_a), ("B", searches_b, hit_b)):
        rows = np.flatnonzero(hit)
        if len(rows) == 0:
            raise InputError(f"{side} has no records for position {label}; {side} has: {_describe(searches)}")
        if len(rows) > 1:
            raise InputError(f"{side} has {len(rows)} searches of position {label} ({_describe(searches.iloc[rows])}); "
                             "keep one per input (--engine-a/--engine-b choose an engine)")
        picks.append(int(rows[0]))
    ids = _ids(searches_a)
    return picks[0], picks[1], str(ids[picks[0]] or _ids(searches_b)[picks[1]] or label)


def choose_searches(
    records_a: pa.Table | pd.DataFrame, records_b: pa.Table | pd.DataFrame, position: str | None
) -> tuple[int, int, str]:
    """(search on A, search on B, position id) to align (:func:`choose_pair` over the records' searches)."""
    records_a, records_b = records_table(records_a), records_table(records_b)
    for label, records in (("A", records_a), ("B", records_b)):
        if records.num_rows == 0:
            where = f" for position {position}" if position else ""
            raise InputError(f"{label} has no MOVE or RESULT records{where} (a 0-node search?)")
    if position is None:
        one = _one_search(records_a), _one_search(records_b)
        if one[0] is not None and one[1] is not None:
            return _one_each_side(one[0], one[1])
    sa, sb = _searches(records_a), _searches(records_b)
    row_a, row_b, label = choose_pair(sa, sb, position)
    return int(sa["search"].iloc[row_a]), int(sb["search"].iloc[row_b]), label


def _one_search(records: pa.Table) -> tuple[int, str, str] | None:
    """(search, position id, FEN; "" when unknown) when the records hold one search, else None."""
    search = numbers(records, "search", np.int64, fill=None)
    if not _is_one_search(search):
        return None
    head = np.zeros(1, dtype=np.int64)
    pid, fen = ((first_strings(records, name, head)[0] if has(records, name) else "") for name in ("position", "fen"))
    return int(search[0]), pid, fen


def _one_each_side(a: tuple[int, str, str], b: tuple[int, str, str]) -> tuple[int, int, str]:
    """:func:`choose_pair`'s one-search-per-side rule without the searches frames (compare: every position).

    The same checks and messages: both FENs known and naming different positions is refused.
    """
    (search_a, id_a, fen_a), (search_b, id_b, fen_b) = a, b
    if fen_a and fen_b:
        key_a, key_b = _position_keys((fen_a, fen_b), (id_a, id_b))
        if key_a != key_b:
            raise InputError(f"A and B searched different positions ({id_a or '?'}: {fen_a} vs "
                             f"{id_b or '?'}: {fen_b})")
    return search_a, search_b, str(id_a or id_b)


def _iterations(records: pa.Table) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(all iterations, completed iterations) of one search's records."""
    if not has(records, "iter"):
        return (0,), (0,)
    iters = numbers(records, "iter", np.int64, fill=0)
    all_iters = tuple(int(i) for i in _distinct(iters))
    if len(all_iters) > 1:
        # Records before the first ITER marker carry iter 0; they are not an iteration.
        all_iters = tuple(i for i in all_iters if i != 0)
    if has(records, "ply"):
        at_root = numbers(records, "ply", np.float64) == 0
    else:
        at_root = pc.equal(strings(records, "path"), "").fill_null(False).to_numpy(zero_copy_only=False)
    root_result = at_root & _is_result(records)
    done = tuple(int(i) for i in _distinct(iters[root_result]) if i in all_iters)
    return all_iters, (done or all_iters)


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of small non-negative ints (iterations: plies) by one count, not a sort."""
    if len(values) == 0 or int(values.min()) < 0 or int(values.max()) > 1 << 16:
        return np.unique(values)
    return np.flatnonzero(np.bincount(values))


def _is_result(records: pa.Table) -> np.ndarray:
    return equals(records, "tag", "RESULT")


def choose_iterations(
    records_a: pa.Table | pd.DataFrame, records_b: pa.Table | pd.DataFrame, iter: int | None
) -> tuple[int, int, tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]], list[str]]:
    """(iteration on A, iteration on B, A's (all, completed), B's (all, completed), notes)."""
    ia, ib = _iterations(records_table(records_a)), _iterations(records_table(records_b))
    notes: list[str] = []
    flat_a, flat_b = ia[0] == (0,), ib[0] == (0,)
    if iter is not None:
        chosen = []
        for label, (all_iters, _), flat in (("A", ia, flat_a), ("B", ib, flat_b)):
            if flat:
                notes.append(f"{label} has no ITER markers: its whole search is aligned as one iteration")
                chosen.append(0)
            elif iter not in all_iters:
                raise InputError(f"{label} has no iteration {iter}; it has {_ranges(all_iters)}")
            else:
                chosen.append(iter)
        return chosen[0], chosen[1], ia, ib, notes
    if flat_a and flat_b:
        return 0, 0, ia, ib, notes
    if flat_a or flat_b:
        label, other = ("A", ib) if flat_a else ("B", ia)
        notes.append(f"{label} has no ITER markers: its whole search is aligned against the other's iteration")
        pick = max(other[1])
        return (0, pick, ia, ib, notes) if flat_a else (pick, 0, ia, ib, notes)
    both_done = set(ia[1]) & set(ib[1])
    if both_done:
        pick = max(both_done)
        return pick, pick, ia, ib, notes
    both = set(ia[0]) & set(ib[0])
    if not both:
        raise InputError(f"A and B share no iteration: A has {_ranges(ia[0])}, B has {_ranges(ib[0])}")
    pick = max(both)
    notes.append(f"no iteration completed on both sides; aligning iteration {pick}, which both started")
    return pick, pick, ia, ib, notes


def _ranges(values: tuple[int, ...]) -> str:
    if not values:
        return "none"
    if list(values) == list(range(values[0], values[-1] + 1)) and len(values) > 2:
        return f"iterations {values[0]}..{values[-1]}"
    return "iterations " + ", ".join(map(str, values))

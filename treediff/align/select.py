"""Choosing what to align: one search per side (by position) and one iteration per side.

Rules (see docs/ALIGN.md):

* ``position`` given: each side must have exactly one search of that position.
  Not given: if each side holds one search, those two (their FENs must agree
  when both are known); else the one position both sides share; several
  shared positions is an error that lists them.
* Iterations: ``iter`` given: each side that has ITER markers must have it.
  Not given: the deepest iteration both sides *completed*; an iteration is
  completed when it has a RESULT for the root (ply 0); a side whose records
  never carry a root RESULT counts every iteration it has as completed.  A
  search without ITER markers (``iter`` 0 throughout) is one iteration and is
  aligned whole against the other side's chosen iteration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treediff.align.core import equals
from treediff.model.errors import InputError


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


def _strings(series: pd.Series) -> pd.Series:
    return series.astype("string").fillna("")


def _fen4(fen: str) -> str:
    return " ".join(fen.split()[:4])


def _searches(records: pd.DataFrame) -> pd.DataFrame:
    """One row per search: search, position, fen, engine (strings, "" when unknown)."""
    _, first = np.unique(records["search"].to_numpy(), return_index=True)
    heads = records.iloc[np.sort(first)]
    cols = {"search": heads["search"].to_numpy()}
    for name in ("position", "fen", "engine"):
        cols[name] = _strings(heads[name]).to_numpy() if name in heads.columns else np.full(len(heads), "")
    frame = pd.DataFrame(cols)
    return frame.sort_values("search", kind="stable").reset_index(drop=True)


def _describe(searches: pd.DataFrame) -> str:
    return ", ".join(f"{p or '?'} (search {s})" for p, s in zip(searches["position"], searches["search"]))


def choose_searches(
    records_a: pd.DataFrame, records_b: pd.DataFrame, position: str | None
) -> tuple[int, int, str]:
    """(search on A, search on B, position id) to align."""
    for label, records in (("A", records_a), ("B", records_b)):
        if len(records) == 0:
            where = f" for position {position}" if position else ""
            raise InputError(f"{label} has no MOVE or RESULT records{where} (a 0-node search?)")
    sa, sb = _searches(records_a), _searches(records_b)
    if position is not None:
        picks = []
        for label, s in (("A", sa), ("B", sb)):
            hit = s[s["position"] == position]
            if len(hit) == 0:
                raise InputError(f"{label} has no records for position {position}; {label} has: {_describe(s)}")
            if len(hit) > 1:
                raise InputError(
                    f"{label} has {len(hit)} searches of position {position} (searches "
                    f"{', '.join(map(str, hit['search']))}); keep one per input"
                )
            picks.append(int(hit["search"].iloc[0]))
        return picks[0], picks[1], position
    if len(sa) == 1 and len(sb) == 1:
        fa, fb = sa["fen"].iloc[0], sb["fen"].iloc[0]
        if fa and fb and _fen4(fa) != _fen4(fb):
            raise InputError(
                f"A and B searched different positions ({sa['position'].iloc[0]}: {fa} vs "
                f"{sb['position'].iloc[0]}: {fb})"
            )
        return int(sa["search"].iloc[0]), int(sb["search"].iloc[0]), sa["position"].iloc[0] or sb["position"].iloc[0]
    shared = sorted(set(sa["position"]) & set(sb["position"]))
    if not shared:
        raise InputError(f"A and B share no position; A has: {_describe(sa)}; B has: {_describe(sb)}")
    if len(shared) > 1:
        raise InputError(f"A and B share {len(shared)} positions; choose one with --position: {', '.join(shared)}")
    return choose_searches(records_a, records_b, shared[0])


def _iterations(records: pd.DataFrame) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(all iterations, completed iterations) of one search's records."""
    if "iter" not in records.columns:
        return (0,), (0,)
    iters = records["iter"].fillna(0).to_numpy(dtype=np.int64)
    all_iters = tuple(int(i) for i in np.unique(iters))
    if len(all_iters) > 1:
        # Records before the first ITER marker carry iter 0; they are not an iteration.
        all_iters = tuple(i for i in all_iters if i != 0)
    if "ply" in records.columns:
        at_root = records["ply"].to_numpy() == 0
    else:
        at_root = (records["path"] == "").to_numpy(dtype=bool, na_value=False)
    root_result = at_root & _is_result(records)
    done = tuple(int(i) for i in np.unique(iters[root_result]) if i in all_iters)
    return all_iters, (done or all_iters)


def _is_result(records: pd.DataFrame) -> np.ndarray:
    return equals(records["tag"], "RESULT")


def choose_iterations(
    records_a: pd.DataFrame, records_b: pd.DataFrame, iter: int | None
) -> tuple[int, int, tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[int, ...], tuple[int, ...]], list[str]]:
    """(iteration on A, iteration on B, A's (all, completed), B's (all, completed), notes)."""
    ia, ib = _iterations(records_a), _iterations(records_b)
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

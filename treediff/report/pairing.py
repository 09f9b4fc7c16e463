"""Which searches of compare's inputs are of the same position, and the depth they are compared at.

* **Position identity** is :func:`treediff.model.positions.position_key`
  (board, side to move, castling rights, en-passant square as python-chess
  normalises them), never the id: an id naming different positions in two
  inputs gives two unpaired rows (and a message with both FENs); one
  position under two ids is paired (under the first input's id).
* **Equal depth.**  A search *completed* iteration d when iteration d holds a
  root RESULT record (ply 0; for an engine without TREEDUMP: d is listed in
  its ``iter_nodes``).  Per position the compared depth N is the deepest
  iteration every search of that position, on every side, completed (or
  ``--depth N``), and a search's figures are those of its records of
  iterations 1..N (records before the first ITER included): nodes = RESULT
  records of iterations 1..N, what the engine's own counter showed then.
  A search without ITER markers counts as one iteration at its root depth.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.core import fold_tables
from treediff.report.filters import IterationCut, counts_view
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tables.nodes import search_position_keys
from treediff.store.iterations import cell_counts
from treediff.store.source import BATCH_RECORDS, Source

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class _Iterations:
    """Per (search row, iteration): RESULT records, root RESULT records and the deepest root RESULT ``d``."""

    name = "iterations"
    columns = ("tag", "iter", "ply", "depth")

    def partial(self, batch: Batch) -> pd.DataFrame:
        depth = np.asarray(batch.records["depth"], dtype=np.float64) if len(batch.records) else np.zeros(0)
        results, roots, deepest = cell_counts(batch.record_groups.record_group, batch.n_cells, batch.is_result,
                                              batch.plies, depth)
        return batch.cell_frame(np.arange(batch.n_cells), results=results, roots=roots, root_depth=deepest)

    def finish(self, partials: Sequence[pd.DataFrame], grouping: Grouping) -> list[Section]:
        return []


@dataclass
class SideDepths:
    """One side's searches: position key, and per search the completed depths with their cumulative nodes."""

    keys: np.ndarray                  #: position key per searches row
    ids: list[str]                    #: position id per searches row
    fens: list[str | None]
    completed: list[dict[int, float]]  #: per searches row: completed depth -> nodes of iterations 1..depth
    has_iters: np.ndarray             #: per searches row: whether the search has ITER markers

    def deepest(self, row: int) -> int:
        return max(self.completed[row], default=0)


#: The iteration profile's table (folded alone by :func:`side_depths`, or with compare's tables).
ITERATIONS = _Iterations()


def side_depths(source: Source, target: int = BATCH_RECORDS) -> SideDepths:
    """Fold the iteration profile of every search of ``source`` (one pass, RESULT records only counted)."""
    (parts,), _ = fold_tables(source, [ITERATIONS], ("engine",), target)
    return depths_of(source.searches, parts)


def depths_of(searches: pd.DataFrame, parts: Sequence[pd.DataFrame],
              keys: np.ndarray | None = None) -> SideDepths:
    """:class:`SideDepths` from the :data:`ITERATIONS` partials of every batch of a source with these
    ``searches`` (``keys``: their position keys, when already known)."""
    frame = concat(parts, ["srow", "iter", "key", "results", "roots", "root_depth"])
    n = len(searches)
    completed: list[dict[int, float]] = [{} for _ in range(n)]
    has_iters = np.zeros(n, dtype=bool)
    if len(frame):
        frame = frame.groupby(["srow", "iter"], as_index=False).agg(
            results=("results", "sum"), roots=("roots", "sum"), root_depth=("root_depth", "max"))
        # One row per (srow, iter), sorted: each search's rows are a run.  Worked out over the runs at once (a
        # pandas group per search cost ~1 ms a search, a quarter of compare's tables at 5M + 5M lines).
        srow = frame["srow"].to_numpy(dtype=np.int64)
        it = frame["iter"].to_numpy(dtype=np.int64)
        res = frame["results"].to_numpy(dtype=np.float64)
        roots = frame["roots"].to_numpy(dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, srow[1:] != srow[:-1]])
        ends = np.r_[starts[1:], len(srow)]
        total = np.cumsum(res)  # (whole numbers of nodes: exact, in any order of summing)
        cum = total - np.repeat(total[starts] - res[starts], ends - starts)  # each search's running sum
        iterated = np.maximum.reduceat(it > 0, starts)
        with np.errstate(invalid="ignore"):  # (np.max of a run keeps its NaN, as the search's depth is unknown)
            deepest = np.maximum.reduceat(frame["root_depth"].to_numpy(dtype=np.float64), starts)
        has_iters[srow[starts[iterated]]] = True
        done = np.flatnonzero(np.repeat(iterated, ends - starts) & (it > 0) & (roots > 0))
        for row, d, c in zip(srow[done].tolist(), it[done].tolist(), cum[done].tolist()):
            completed[row][d] = c
        flat = np.flatnonzero(~iterated & np.isfinite(deepest))
        for row, d, c in zip(srow[starts[flat]].tolist(), deepest[flat].tolist(), cum[ends[flat] - 1].tolist()):
            completed[row] = {int(round(d)): c}
    engine = (searches["node_source"].astype("object") == "engine").to_numpy() if "node_source" in searches else \
        np.zeros(n, dtype=bool)
    if "iter_nodes" in searches.columns:
        for row in np.flatnonzero(engine).tolist():
            text = searches["iter_nodes"].iat[row]
            if isinstance(text, str):
                try:
                    completed[row] = {int(d): float(c) for d, c in json.loads(text)}
                    has_iters[row] = True
                except (ValueError, TypeError):
                    pass
    ids = [str(v) for v in searches["position"].astype("object").where(searches["position"].notna(),
                                                                         searches["fen"].astype("object")).tolist()]
    fens = [f if isinstance(f, str) else None for f in searches["fen"].astype("object").tolist()]
    return SideDepths(search_position_keys(searches) if keys is None else keys, ids, fens, completed, has_iters)


@dataclass
class Pairing:
    """The positions of all sides, their labels, which sides searched each, and the compared depth."""

    order: list[str]                               #: position keys, display order
    label: dict[str, str]                          #: key -> the row's ``position`` label
    present: dict[str, list[bool]]                 #: key -> per side: searched it
    depth: dict[str, int | None]                   #: key -> compared depth N (None: no common depth)
    cut: list[dict[int, int]] = field(default_factory=list)  #: per side: search number -> last iteration kept
    side_depth: dict[tuple[str, int], int | None] = field(default_factory=dict)  #: (key, side) -> its depth
    clashes: list[str] = field(default_factory=list)  #: an id naming different positions, with both FENs
    notes: list[str] = field(default_factory=list)

    @property
    def paired(self) -> list[str]:
        """Keys every side searched and that have a common depth: the population of every total."""
        return [k for k in self.order if all(self.present[k]) and self.depth[k] is not None]

    def missing(self, side: int) -> list[str]:
        return [self.label[k] for k in self.order if not self.present[k][side]]


def _letters(sides: Sequence[int]) -> str:
    return ",".join(LETTERS[i].upper() for i in sides)


def pair_positions(depths: Sequence[SideDepths], searches: Sequence[pd.DataFrame],
                   depth: int | None = None) -> Pairing:
    """Positions across sides by key, labels, clashes and each position's compared depth (module docstring)."""
    n_sides = len(depths)
    order: list[str] = []
    present: dict[str, list[bool]] = {}
    ids_of: dict[str, list[tuple[int, str]]] = {}
    fen_of: dict[tuple[str, int], str] = {}
    for side, sd in enumerate(depths):
        for key, pid, fen in zip(sd.keys.tolist(), sd.ids, sd.fens):
            if key not in present:
                order.append(key)
                present[key] = [False] * n_sides
                ids_of[key] = []
            present[key][side] = True
            if (side, pid) not in ids_of[key]:
                ids_of[key].append((side, pid))
            fen_of.setdefault((key, side), fen or key)
    # An id naming several positions: its rows are told apart by the sides holding them.
    keys_of_id: dict[str, list[str]] = {}
    for key in order:
        for _, pid in ids_of[key]:
            if key not in keys_of_id.setdefault(pid, []):
                keys_of_id[pid].append(key)
    label: dict[str, str] = {}
    clashes: list[str] = []
    notes: list[str] = []
    for pid, keys in keys_of_id.items():
        if len(keys) < 2:
            continue
        described = []
        for key in keys:
            sides = [s for s, p in ids_of[key] if p == pid]
            described.append(f"{_letters(sides)}: {fen_of[(key, sides[0])]}")
        clashes.append(f"position id {pid!r} names different positions ({'; '.join(described)}); never paired")
    used: dict[str, int] = {}
    for key in order:
        first_side, pid = ids_of[key][0]
        text = pid
        if len(keys_of_id[pid]) > 1:
            text = f"{pid} ({_letters([s for s, p in ids_of[key] if p == pid])})"
        used[text] = used.get(text, 0) + 1
        if used[text] > 1:
            text = f"{text} #{used[text]}"
        label[key] = text
        others = [f"{p!r} in {LETTERS[s].upper()}" for s, p in ids_of[key] if p != pid]
        if others:
            notes.append(f"note: position {pid!r} ({LETTERS[first_side].upper()}) is {', '.join(others)} "
                         "(the same position; paired)")

    # The compared depth per position, and each search's last kept iteration.
    rows_of: dict[tuple[str, int], list[int]] = {}
    for side, sd in enumerate(depths):
        for row, key in enumerate(sd.keys.tolist()):
            rows_of.setdefault((key, side), []).append(row)
    common: dict[str, int | None] = {}
    for key in order:
        if not all(present[key]):
            common[key] = None
            continue
        sets = [set(depths[side].completed[row]) for side in range(n_sides) for row in rows_of[(key, side)]]
        shared = set.intersection(*sets) if sets else set()
        if depth is not None:
            common[key] = depth if depth in shared else None
            if depth not in shared:
                short = [f"{LETTERS[side].upper()} {max(depths[side].completed[row], default=0)}"
                         for side in range(n_sides) for row in rows_of[(key, side)]
                         if depth not in depths[side].completed[row]]
                notes.append(f"note: {label[key]}: --depth {depth} not completed by every side "
                             f"(deepest completed: {', '.join(short)}); not paired")
        else:
            common[key] = max(shared) if shared else None
            if not shared:
                deep = [f"{LETTERS[side].upper()} {sorted(depths[side].completed[row])}"
                        for side in range(n_sides) for row in rows_of[(key, side)]]
                notes.append(f"note: {label[key]}: no iteration completed by every side ({'; '.join(deep)}); "
                             "not paired")
    cut: list[dict[int, int]] = [{} for _ in range(n_sides)]
    side_depth: dict[tuple[str, int], int | None] = {}
    cut_from: list[list[tuple[str, int, int]]] = [[] for _ in range(n_sides)]
    for side, sd in enumerate(depths):
        numbers = searches[side]["search"].to_numpy(dtype=np.int64)
        for row, key in enumerate(sd.keys.tolist()):
            own = sd.deepest(row)
            n_key = common[key]
            if n_key is not None:
                cut[side][int(numbers[row])] = n_key
                if own > n_key:
                    cut_from[side].append((label[key], own, n_key))
                side_depth[(key, side)] = n_key
            else:
                prev = side_depth.get((key, side))
                side_depth[(key, side)] = max(own, prev or 0) if own else prev
    for side, items in enumerate(cut_from):
        if not items:
            continue
        letter = LETTERS[side].upper()
        shown = ", ".join(f"{lab} {own} -> {n}" for lab, own, n in items[:4])
        more = f", and {len(items) - 4} more" if len(items) > 4 else ""
        notes.append(f"note: {letter} cut to the common depth at {len(items)} position(s): {shown}{more}")
    return Pairing(order, label, present, common, cut, side_depth, clashes, notes)


def cut_view(source: Source, depths: SideDepths, pairing: Pairing, side: int) -> Source:
    """The side's source with every search labelled by its row's ``position`` and cut to its compared depth."""
    searches = counts_view(source.searches)
    searches["position"] = pd.array([pairing.label[k] for k in depths.keys.tolist()], dtype="string")
    cut = pairing.cut[side]
    numbers = searches["search"].to_numpy(dtype=np.int64)
    if "max_iter" in searches.columns:
        own = searches["max_iter"].astype("Int64").to_numpy(dtype=object, na_value=None)
        searches["max_iter"] = pd.array(
            [cut.get(int(s), o) if depths.has_iters[i] else o for i, (s, o) in enumerate(zip(numbers, own))],
            dtype="Int64")
    if "node_source" in searches.columns and "iter_nodes" in searches.columns:
        engine = (searches["node_source"].astype("object") == "engine").to_numpy()
        iter_nodes = searches["iter_nodes"].astype("object").to_numpy(copy=True)
        end = searches["end_nodes"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
        for row in np.flatnonzero(engine).tolist():
            n = cut.get(int(numbers[row]))
            done = depths.completed[row]
            if n is None or not done:
                continue
            iter_nodes[row] = json.dumps([[d, done[d]] for d in sorted(done) if d <= n])
            end[row] = done.get(n, np.nan)
        searches["iter_nodes"] = iter_nodes
        searches["end_nodes"] = pd.array(end, dtype="Float64")
    return source.with_searches(searches)


def cut_filter(pairing: Pairing, side: int) -> IterationCut:
    return IterationCut(dict(pairing.cut[side]))

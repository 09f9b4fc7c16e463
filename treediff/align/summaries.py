"""Divergence summaries of an :class:`~treediff.align.api.Alignment`: pure functions returning DataFrames.

* :func:`kind_confusion`: A's kind x B's kind on shared paths (counts of paths);
* :func:`divergence_summary` / :func:`top_divergences`: every node attributed to
  its topmost non-``same`` row (:mod:`treediff.align.attribution`), the largest
  frontier rows with a sentence each, the total and its breakdowns;
* :func:`divergences`: the same over every position two sources share (compare).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from treediff.align.api import Alignment
from treediff.align.attribution import (
    ABSENT,
    REST,
    SHARED,
    Attribution,
    _kind_rank,
    attribute,
    attribute_arrays,
    by_kind,
    by_ply,
    divergence_rows,
    main_rows,
    merge_breakdowns,
    rest_sentence,
    sentence,
    shown,
)
from treediff.align.core import LOAD_COLUMNS, STATUS_VALUES, RowArrays
from treediff.align.stream import BYTES_PER_RECORD, MemoryBudget, position_pairs
from treediff.model.errors import InputError
from treediff.model.schema import KIND_VALUES
from treediff.store.source import Source, release_freed_memory

#: The label for a shared path one side reached without a MOVE decision (the root, RESULT-only paths).
NO_DECISION = "(none)"


def kind_confusion(alignment: Alignment, within: np.ndarray | None = None) -> pd.DataFrame:
    """A's kind (rows) against B's kind (columns), counting paths both sides have.

    A path's kind is the kind of its first decision.  Paths neither side made
    a decision about (the root) are left out; a path only one side decided is
    counted under :data:`NO_DECISION` for the other.  Kinds are in taxonomy
    order; only kinds that occur are shown.  ``within``: optional boolean
    mask over the rows (e.g. one subtree) to count.
    """
    rows = alignment.rows
    status = rows["status"].to_numpy(dtype=object)
    shared = (status == "same") | (status == "differs")
    if within is not None:
        shared &= within
    ka = rows["kind_a"].astype(object).where(rows["kind_a"].notna(), NO_DECISION).to_numpy()[shared]
    kb = rows["kind_b"].astype(object).where(rows["kind_b"].notna(), NO_DECISION).to_numpy()[shared]
    decided = (ka != NO_DECISION) | (kb != NO_DECISION)
    ka, kb = ka[decided], kb[decided]
    order = [*KIND_VALUES, NO_DECISION]
    rank = {k: i for i, k in enumerate(order)}
    labels_a = sorted(set(ka), key=lambda k: (rank.get(k, len(order)), k))
    labels_b = sorted(set(kb), key=lambda k: (rank.get(k, len(order)), k))
    # One bincount over (code in A) x (code in B): pandas' crosstab cost ~30 ms a position (compare runs one
    # per shared position).
    codes_a = pd.Categorical(ka, categories=labels_a).codes.astype(np.int64)
    codes_b = pd.Categorical(kb, categories=labels_b).codes.astype(np.int64)
    counts = np.bincount(codes_a * len(labels_b) + codes_b, minlength=len(labels_a) * len(labels_b))
    return pd.DataFrame(counts.reshape(len(labels_a), len(labels_b)).astype("int64"),
                        index=pd.Index([str(k) for k in labels_a], name="A"),
                        columns=pd.Index([str(k) for k in labels_b], name="B"))


@dataclass
class DivergenceSummary:
    """The attribution of one scope as tables: see :mod:`treediff.align.attribution`.

    ``rows``: the shown frontier rows and the ``(rest)`` row
    (:func:`~treediff.align.attribution.divergence_rows`); ``total``: the
    ``divergence_total`` record; ``by_kind`` / ``by_ply``: the delta by
    frontier kind in A x kind in B and by frontier ply, the shared residual
    last; ``attribution``: the frontier rows themselves.
    """

    rows: pd.DataFrame
    total: dict
    by_kind: pd.DataFrame
    by_ply: pd.DataFrame
    attribution: Attribution


def divergence_summary(alignment: Alignment, n: int = 10, under: str | None = None, drill: bool = False,
                       min_cost: int = 0, name: Callable[[str], str] | None = None) -> DivergenceSummary:
    """Attribute every node of the tree (or of ``under``'s subtree) to its frontier row; the ``n`` largest.

    ``under``: a normalized path; the scope is its subtree, the path itself
    included as a possible frontier row.  ``drill``: the path itself is left
    out (the attribution is repeated inside it; needs ``under``).
    ``min_cost``: only frontier rows with |delta| >= it are listed (the others
    are in the ``(rest)`` row).  ``name``: how sentences write a path.
    """
    rows = main_rows(alignment.rows)
    scope = 0
    if under:
        hits = np.flatnonzero(rows["path"].to_numpy(dtype=object) == under)
        if len(hits) == 0:
            raise InputError(f"{under}: neither side has this path")
        scope = int(hits[0])
    att = attribute(rows, scope, drill=drill)
    return DivergenceSummary(
        rows=divergence_rows(rows, att, n=n, min_cost=min_cost, name=name),
        total=att.total(),
        by_kind=by_kind(rows, att),
        by_ply=by_ply(rows, att),
        attribution=att,
    )


def top_divergences(alignment: Alignment, n: int = 10, under: str | None = None, drill: bool = False,
                    min_cost: int = 0) -> pd.DataFrame:
    """The ``n`` frontier rows of largest |delta| with a sentence each, and a ``(rest)`` row.

    Every node counts once, at its topmost non-``same`` ancestor-or-self row;
    see :func:`divergence_summary` and docs/ALIGN.md.
    """
    return divergence_summary(alignment, n=n, under=under, drill=drill, min_cost=min_cost).rows


def _position_keys(searches: pd.DataFrame) -> np.ndarray:
    """Each search's position identity (:func:`~treediff.model.positions.search_position_keys`)."""
    from treediff.model.positions import search_position_keys

    fens = searches["fen"].astype(object).tolist() if "fen" in searches.columns else [None] * len(searches)
    return np.asarray(search_position_keys(fens, searches["position"].astype(object).tolist()), dtype=object)


def paired_positions(source_a: Source, source_b: Source) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The positions both sources searched, paired by position (board, side, castling, en passant), not by id.

    Returns (label, A's searches rows, B's) per position, sorted by label: the
    rows as ascending int64 indices into each source's ``searches`` (not masks:
    one mask per position is quadratic in positions, ~300 MB at 12k positions),
    the label A's id for the position (B's when A's is missing).  An id that
    names two different positions pairs nothing; a position under two ids is paired.
    """
    sa, sb = source_a.searches, source_b.searches
    ka, kb = _position_keys(sa), _position_keys(sb)
    ids_a, ids_b = sa["position"].astype(object).to_numpy(), sb["position"].astype(object).to_numpy()
    rows_a: dict[object, list[int]] = {}
    rows_b: dict[object, list[int]] = {}
    for rows, keys in ((rows_a, ka), (rows_b, kb)):
        for i, key in enumerate(keys.tolist()):
            rows.setdefault(key, []).append(i)
    out = []
    for key in set(rows_a) & set(rows_b):
        at_a, at_b = np.asarray(rows_a[key], dtype=np.int64), np.asarray(rows_b[key], dtype=np.int64)
        named = [str(p) for p in ids_a[at_a] if isinstance(p, str) and p] or \
                [str(p) for p in ids_b[at_b] if isinstance(p, str) and p] or [str(key)]
        out.append((named[0], at_a, at_b))
    return sorted(out, key=lambda item: item[0])


def largest_pair(source_a: Source, source_b: Source) -> int | None:
    """The most records one paired position holds, A's searches and B's together (what
    :meth:`~treediff.store.budget.MemoryBudget.check_pair` weighs), from the searches tables' counts; None
    when either table does not count its searches' records, 0 when no position is paired."""
    counts = []
    for source in (source_a, source_b):
        if "records" not in source.searches.columns:
            return None
        counts.append(source.searches["records"].fillna(0).to_numpy(dtype=np.int64))
    return max((int(counts[0][at_a].sum() + counts[1][at_b].sum())
                for _, at_a, at_b in paired_positions(source_a, source_b)), default=0)


@dataclass
class CompareDivergences:
    """compare's divergences over every shared position (see :func:`divergences`)."""

    rows: pd.DataFrame          #: the shown frontier rows of all positions, then ``(rest)``; ``position`` first
    total: pd.DataFrame         #: one row: ``divergence_total`` summed over the aligned positions
    by_kind: pd.DataFrame       #: delta by frontier kind A x kind B, summed over positions; residual last
    by_ply: pd.DataFrame        #: delta by frontier ply, summed over positions; residual last
    kinds: pd.DataFrame         #: kind_confusion summed over positions (counts of aligned paths)
    notes: list[str]

    @property
    def empty(self) -> bool:
        return self.total.empty


def _confusion_counts(rows: RowArrays) -> tuple[list[str], list[str], np.ndarray]:
    """:func:`kind_confusion` of aligned rows as (A's labels, B's labels, counts): no DataFrame per position."""
    shared = rows.status <= 1  # same, differs
    none = len(rows.kind_labels)
    ka = rows.a.kind_codes[shared]
    kb = rows.b.kind_codes[shared]
    ka = np.where(ka < 0, none, ka)
    kb = np.where(kb < 0, none, kb)
    decided = (ka != none) | (kb != none)
    ka, kb = ka[decided], kb[decided]
    names = [*(str(k) for k in rows.kind_labels), NO_DECISION]
    order = [*KIND_VALUES, NO_DECISION]
    rank = {k: i for i, k in enumerate(order)}

    def labels(codes: np.ndarray) -> list[int]:
        return sorted(np.unique(codes).tolist(), key=lambda c: (rank.get(names[c], len(order)), names[c]))

    la, lb = labels(ka), labels(kb)
    lut_a = np.zeros(none + 1, dtype=np.int64)
    lut_a[la] = np.arange(len(la))
    lut_b = np.zeros(none + 1, dtype=np.int64)
    lut_b[lb] = np.arange(len(lb))
    counts = np.bincount(lut_a[ka] * len(lb) + lut_b[kb], minlength=len(la) * len(lb)).reshape(len(la), len(lb))
    return [names[c] for c in la], [names[c] for c in lb], counts.astype(np.int64)


class _ConfusionSum:
    """kind_confusion tables summed over positions, labels ordered as ``DataFrame.add(fill_value=0)`` orders them.

    Summing 124 DataFrames cost ~7 ms a position (alignment of two frames each time); the label order
    (pandas' outer join of the indexes: kept when equal, else the union, sorted) is reproduced with the
    same Index joins on the labels alone.
    """

    def __init__(self) -> None:
        self.index: pd.Index | None = None
        self.columns: pd.Index | None = None
        self.counts: dict[tuple[str, str], int] = {}
        self._joins: dict[tuple, pd.Index] = {}

    def add(self, labels_a: list[str], labels_b: list[str], counts: np.ndarray) -> None:
        if self.index is None or self.columns is None:
            self.index, self.columns = pd.Index(labels_a, name="A"), pd.Index(labels_b, name="B")
        else:
            self.index = self._join(self.index, labels_a, "A")
            self.columns = self._join(self.columns, labels_b, "B")
        for i, j in zip(*np.nonzero(counts >= 0)):
            key = (labels_a[i], labels_b[j])
            self.counts[key] = self.counts.get(key, 0) + int(counts[i, j])

    def _join(self, index: pd.Index, labels: list[str], name: str) -> pd.Index:
        """``index`` outer-joined with ``labels`` as pandas aligns two frames (memoized: a few label sets recur)."""
        key = (name, tuple(index), tuple(labels))
        if key not in self._joins:
            other = pd.Index(labels, name=name)
            self._joins[key] = index if index.equals(other) else index.join(other, how="outer")
        return self._joins[key]

    def frame(self) -> pd.DataFrame:
        assert self.index is not None and self.columns is not None
        rows = {label: i for i, label in enumerate(self.index)}
        cols = {label: j for j, label in enumerate(self.columns)}
        values = np.zeros((len(rows), len(cols)), dtype=np.int64)
        for (a, b), count in self.counts.items():
            values[rows[a], cols[b]] += count
        return pd.DataFrame(values, index=self.index, columns=self.columns)


def _row_values(rows: RowArrays, at: list[int], paths: list[str]) -> list[dict]:
    """The aligned rows ``at`` as mappings holding what the frame's ``iterrows`` would (for :func:`sentence`)."""
    status_names = np.asarray(STATUS_VALUES, dtype=object)
    out: list[dict] = [{"path": path, "status": str(status_names[rows.status[i]])} for i, path in zip(at, paths)]
    kinds = [*(str(k) for k in rows.kind_labels), np.nan]  # code -1: a missing category
    idx = np.asarray(at, dtype=np.int64)
    for side, suffix in ((rows.a, "a"), (rows.b, "b")):
        seq = [side.seq_categories[c] for c in side.seq_codes[idx].tolist()]
        kind = [kinds[c] for c in side.kind_codes[idx].tolist()]
        floats = {name: side.at(name, idx).tolist() for name in ("depth", "new_depth", "final_depth", "reduction", "mn")}
        decisions, visits = side.at("decisions", idx).tolist(), side.at("visits", idx).tolist()
        for k, row in enumerate(out):
            row[f"seq_{suffix}"] = seq[k]
            row[f"kind_{suffix}"] = kind[k]
            for name, values in floats.items():
                row[f"{name}_{suffix}"] = values[k]
            row[f"decisions_{suffix}"] = decisions[k]
            row[f"visits_{suffix}"] = visits[k]
    for name in ("nodes_a", "nodes_b", "other_visit_nodes_a", "other_visit_nodes_b"):
        values = getattr(rows, name)[idx].tolist()
        for k, row in enumerate(out):
            row[name] = values[k]
    return out


def _frontier_kinds(rows: RowArrays, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' kind labels at rows ``at``, as :func:`~treediff.align.attribution.side_kinds` gives them."""
    names = np.asarray([*(str(k) for k in rows.kind_labels), NO_DECISION], dtype=object)
    status = rows.status[at]
    out = []
    for side, absent in ((rows.a, 3), (rows.b, 2)):  # A is absent from only-B rows, B from only-A rows
        codes = side.kind_codes[at]
        labels = names[np.where(codes < 0, len(names) - 1, codes)]
        labels[status == absent] = ABSENT
        out.append(labels)
    return out[0], out[1]


@dataclass
class _PositionResult:
    """What one aligned position contributes to :func:`divergences` (its alignment itself is not kept).

    Plain lists and arrays: the tables are built once, over every position, in :func:`divergences`.
    """

    top: list[dict]
    frontier_a: int
    frontier_b: int
    total: dict
    kinds: tuple[list[str], list[str], np.ndarray]
    by_kind: list[tuple]
    residual: tuple[int, int, int]
    by_ply: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class _Shortlist:
    """The ``n`` frontier rows that lead so far, over the positions aligned, in the order :func:`divergences` shows
    them: largest |delta| first, then positions in sorted order, then a position's own order.  A row ``n`` others
    already beat is never shown (more rows only raise the bar), so its values and sentence are not built:
    most positions of a large compare then build none."""

    def __init__(self, n: int):
        self.n = max(n, 0)
        #: The leaders' keys negated, (|delta|, -position, -k): heap[0] is the weakest leader.
        self._heap: list[tuple[int, int, int]] = []

    def admit(self, cost: int, position: int, k: int) -> bool:
        """Whether the row (|delta| ``cost``, position rank, rank within its position) may still be shown."""
        entry = (cost, -position, -k)
        if len(self._heap) < self.n:
            heapq.heappush(self._heap, entry)
            return True
        if self.n and entry > self._heap[0]:
            heapq.heapreplace(self._heap, entry)
            return True
        return False


def _position_result(position: str, rows: RowArrays, iter_a: int, iter_b: int, n: int,
                     min_cost: int, rank: int = 0, shortlist: _Shortlist | None = None) -> _PositionResult:
    """One position's attribution (one tree walk), its own top ``n`` frontier rows and its breakdowns.

    ``rank``: the position's place in the sorted order; ``shortlist``: the rows leading over every position
    so far (the rows it rules out are left out of ``top``: they are summed in the rest, never shown)."""
    att = attribute_arrays(rows.subtree_rows, rows.nodes_a, rows.nodes_b, rows.status != 0, rows.parent)
    # Only a position's own top n can be among the overall top n: the rest is summed.
    pick = shown(att, n, min_cost)
    paths = rows.path_at(att.frontier[pick])
    delta = att.delta[pick].tolist()
    chosen = [k for k, path in enumerate(paths) if path != REST
              and (shortlist is None or shortlist.admit(abs(delta[k]), rank, k))]
    pick, paths, delta = pick[chosen], [paths[k] for k in chosen], [delta[k] for k in chosen]
    at = att.frontier[pick]
    values = _row_values(rows, at.tolist(), paths) if len(at) else []
    nodes_a, nodes_b = att.nodes_a[pick].tolist(), att.nodes_b[pick].tolist()
    top = [{"position": position, "iter_a": iter_a, "iter_b": iter_b, "path": path, "status": row["status"],
            "nodes_a": nodes_a[k], "nodes_b": nodes_b[k], "delta": delta[k], "sentence": sentence(row)}
           for k, (path, row) in enumerate(zip(paths, values))]
    # by_kind: frontier rows grouped by (kind in A, kind in B) in order of appearance, then largest |delta|.
    ka, kb = _frontier_kinds(rows, att.frontier)
    groups: dict[tuple[str, str], list[int]] = {}
    for a, b, na, nb in zip(ka.tolist(), kb.tolist(), att.nodes_a.tolist(), att.nodes_b.tolist()):
        g = groups.setdefault((a, b), [0, 0, 0])
        g[0] += 1
        g[1] += na
        g[2] += nb
    kinds = sorted(((a, b, g[0], g[1], g[2]) for (a, b), g in groups.items()),
                   key=lambda t: (-abs(t[3] - t[4]), _kind_rank(t[0]), _kind_rank(t[1])))
    ply = rows.ply.astype(np.int64)[att.frontier]
    length = int(ply.max(initial=-1)) + 1
    count = np.bincount(ply, minlength=length)
    pa_ = np.bincount(ply, weights=att.nodes_a, minlength=length).astype(np.int64)
    pb_ = np.bincount(ply, weights=att.nodes_b, minlength=length).astype(np.int64)
    present = np.flatnonzero(count)
    return _PositionResult(top=top, frontier_a=int(att.nodes_a.sum()), frontier_b=int(att.nodes_b.sum()),
                           total=att.total(), kinds=_confusion_counts(rows), by_kind=kinds,
                           residual=(att.residual_rows, att.residual_a, att.residual_b),
                           by_ply=(present, count[present], pa_[present], pb_[present]))


def _kind_parts(results: list[_PositionResult]) -> pd.DataFrame:
    """Every position's by_kind rows (residual last per position) as one frame, as their concatenation is."""
    kind_a: list[str] = []
    kind_b: list[str] = []
    counts: list[tuple[int, int, int]] = []
    for result in results:
        for a, b, rows_, na, nb in result.by_kind:
            kind_a.append(a)
            kind_b.append(b)
            counts.append((rows_, na, nb))
        kind_a.append(SHARED)
        kind_b.append(SHARED)
        counts.append(result.residual)
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    return pd.DataFrame({"kind_a": kind_a, "kind_b": kind_b, "rows": c[:, 0], "nodes_a": c[:, 1],
                         "nodes_b": c[:, 2], "delta": c[:, 1] - c[:, 2]})


def _ply_parts(results: list[_PositionResult]) -> pd.DataFrame:
    """Every position's by_ply rows (residual last per position) as one frame."""
    plies: list[object] = []
    parts = []
    for result in results:
        present, count, na, nb = result.by_ply
        plies.extend(present.tolist())
        plies.append(SHARED)
        parts.append(np.stack([count, na, nb], axis=1).astype(np.int64))
        parts.append(np.asarray([result.residual], dtype=np.int64))
    c = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)
    return pd.DataFrame({"ply": pd.Series(plies, dtype=object), "rows": c[:, 0], "nodes_a": c[:, 1],
                         "nodes_b": c[:, 2], "delta": c[:, 1] - c[:, 2]})


class Helping(Protocol):
    """Another process that aligns some positions for :func:`divergences` (compare's parent once its tables
    are done: :class:`treediff.run.forked.Helper` is the child's side).  ``answers`` gives back what it made
    of the pieces so far (and learns whether it is free), ``free`` says whether it takes a piece now,
    ``offer`` hands it one, ``finish`` waits for the rest."""

    def free(self) -> bool: ...

    def offer(self, piece: Any) -> bool: ...

    def answers(self) -> list[Any]: ...

    def finish(self) -> list[Any]: ...


#: A position is handed to a helping process only when its pair's aligner working set is at most this
#: share of the budget: the shipped copy of its records and the helper's aligning of it are memory the
#: budget's shares do not count, so only positions small next to it cross (in the bench logs, all).
HELP_SHARE = 8


def _packed(table: pa.Table) -> bytes:
    """A records table as Arrow IPC stream bytes: only its own rows (a pickled slice carries its whole batch)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _unpacked(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class PositionAligner:
    """One position aligned and attributed as :func:`divergences` does it; also the helping process's work
    (``aligner(piece)`` for a position :func:`divergences` handed over).

    Each keeps its own :class:`_Shortlist`: a row another process's positions would have ruled out is still
    beaten by those rows when :func:`divergences` folds every position, so the shown rows are the same."""

    def __init__(self, n: int = 10, iteration: int | None = None, min_cost: int = 0):
        self.n, self.iteration, self.min_cost = n, iteration, min_cost
        self.shortlist = _Shortlist(n)

    def align(self, index: int, position: str, sides: list[pa.Table]) -> _PositionResult | str:
        """Position ``index`` (``position`` its label) from ``sides`` = [A's records, B's]; the list is emptied
        (the records are freed once aligned).  A note instead when it cannot be aligned."""
        from treediff.align.api import align_arrays

        ra, rb = sides
        sides.clear()
        try:
            rows, choice_a, choice_b, _ = align_arrays(ra, rb, iter=self.iteration)
        except InputError as exc:
            return f"divergences: position {position} not aligned ({exc})"
        del ra, rb
        return _position_result(position, rows, choice_a.iter, choice_b.iter, self.n, self.min_cost, index,
                                self.shortlist)

    @property
    def settings(self) -> tuple[int, int | None, int]:
        """(n, iteration, min_cost): what a position handed over must have been aligned with."""
        return self.n, self.iteration, self.min_cost

    def __call__(self, piece: tuple) -> tuple[int, _PositionResult | str]:
        """A position handed over by :func:`divergences`: (index, its result).  The piece carries the settings
        of the :func:`divergences` call; an aligner made with others refuses it (its rows would differ)."""
        index, position, packed_a, packed_b, settings = piece
        if tuple(settings) != self.settings:
            raise ValueError(f"a position aligned with n, iteration, min_cost = {tuple(settings)} handed to an "
                             f"aligner of {self.settings}")
        return index, self.align(index, position, [_unpacked(packed_a), _unpacked(packed_b)])


def divergences(source_a: Source, source_b: Source, n: int = 10, iteration: int | None = None,
                min_cost: int = 0, progress: Callable[[int, int], None] | None = None,
                budget: MemoryBudget | None = None, paths: Sequence[str] = ("A", "B"),
                helping: Helping | None = None) -> CompareDivergences:
    """Align A and B position by position and attribute every node; the ``n`` largest frontier rows overall.

    Positions are paired as compare pairs them (:func:`paired_positions`:
    by the position, not the id).  Each source is read once, in batches, and
    a position is aligned as soon as both sides' records of it are in
    (:func:`treediff.align.stream.position_pairs`: memory is bounded by
    ``budget``, ``--memory-limit``; a position pair larger than that is an
    error naming ``paths`` and the position).  Each position is aligned at ``iteration`` (compare's ``--depth``;
    default: the deepest iteration both completed).  The
    frontier rows of all positions compete for the ``n`` places (largest
    |delta| first; ties: positions in sorted order, then tree order); the
    ``(rest)`` row sums every frontier row not shown, of every position.
    ``total`` sums each aligned position's ``divergence_total`` (nodes of the
    aligned iterations, delta, shared residual) and counts the positions, so
    Σ delta (rows) + shared_residual = delta holds over the positions too.
    Positions that cannot be aligned are left out with a note.  ``progress`` (a terminal's display) gets
    (positions done, positions) after each position.  ``helping``: another process that takes positions
    when it is free (:class:`Helping`: :class:`PositionAligner` there); the answer is the same.
    """
    release_freed_memory()
    budget = budget or MemoryBudget()
    paired = paired_positions(source_a, source_b)
    labels = [position for position, _, _ in paired]
    per: dict[int, _PositionResult | str] = {}
    aligner = PositionAligner(n, iteration, min_cost)
    pairs = position_pairs(source_a, source_b, [(mask_a, mask_b) for _, mask_a, mask_b in paired], LOAD_COLUMNS,
                           budget, labels, paths)
    shippable = budget.limit // HELP_SHARE
    for done, (index, ra, rb) in enumerate(pairs):
        if progress is not None:
            progress(done, len(paired))
        position = labels[index]
        if helping is not None:
            per.update(helping.answers())
            if helping.free() and (ra.num_rows + rb.num_rows) * BYTES_PER_RECORD <= shippable and \
                    helping.offer((index, position, _packed(ra), _packed(rb), aligner.settings)):
                continue
        sides = [ra, rb]
        del ra, rb
        per[index] = aligner.align(index, position, sides)
    if helping is not None:
        per.update(helping.finish())
    # Folded in the positions' sorted order, whatever order the inputs completed them in: same numbers, same ties.
    tops: list[dict] = []
    results: list[_PositionResult] = []
    notes: list[str] = []
    kinds = _ConfusionSum()
    totals = {"positions": 0, "nodes_a": 0, "nodes_b": 0, "delta": 0, "shared_residual": 0,
              "shared_residual_a": 0, "shared_residual_b": 0, "frontier_rows": 0}
    frontier_a = frontier_b = 0
    for index in sorted(per):
        result = per[index]
        if isinstance(result, str):
            notes.append(result)
            continue
        results.append(result)
        tops.extend(result.top)
        frontier_a += result.frontier_a
        frontier_b += result.frontier_b
        totals["positions"] += 1
        for key, value in result.total.items():
            totals[key] += value
        kinds.add(*result.kinds)
    if not results:
        return CompareDivergences(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
                                  notes)
    columns = ["position", "iter_a", "iter_b", "path", "status", "nodes_a", "nodes_b", "delta", "sentence"]
    delta = np.asarray([row["delta"] for row in tops], dtype=np.int64)
    order = np.argsort(-np.abs(delta), kind="stable")[: max(n, 0)].tolist()
    shown_rows = [tops[i] for i in order]
    hidden = totals["frontier_rows"] - len(shown_rows)
    if hidden:
        rest_a = frontier_a - sum(int(row["nodes_a"]) for row in shown_rows)
        rest_b = frontier_b - sum(int(row["nodes_b"]) for row in shown_rows)
        shown_rows.append({"position": "", "iter_a": None, "iter_b": None, "path": REST, "status": "",
                           "nodes_a": rest_a, "nodes_b": rest_b, "delta": rest_a - rest_b,
                           "sentence": rest_sentence(hidden, rest_a, rest_b)})
    top_all = pd.DataFrame({
        "position": pd.array([row["position"] for row in shown_rows], dtype="str"),
        "iter_a": pd.array([row["iter_a"] for row in shown_rows], dtype="Int64"),
        "iter_b": pd.array([row["iter_b"] for row in shown_rows], dtype="Int64"),
        "path": pd.array([row["path"] for row in shown_rows], dtype="str"),
        "status": pd.array([row["status"] for row in shown_rows], dtype="str"),
        "nodes_a": np.asarray([row["nodes_a"] for row in shown_rows], dtype=np.int64),
        "nodes_b": np.asarray([row["nodes_b"] for row in shown_rows], dtype=np.int64),
        "delta": np.asarray([row["delta"] for row in shown_rows], dtype=np.int64),
        "sentence": pd.Series([row["sentence"] for row in shown_rows], dtype=object),
    })
    return CompareDivergences(
        rows=top_all[columns],
        total=pd.DataFrame([totals]),
        by_kind=merge_breakdowns([_kind_parts(results)], ["kind_a", "kind_b"]),
        by_ply=merge_breakdowns([_ply_parts(results)], ["ply"]),
        kinds=kinds.frame(),
        notes=notes,
    )

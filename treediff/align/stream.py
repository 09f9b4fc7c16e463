"""Two sources' records paired by position in one pass over each, in bounded memory (``--memory-limit``).

compare aligns every position both inputs searched.  Reading a position's
records with ``source.select(...).records()`` costs a read of (at least) the
row groups holding it, per position; holding both inputs whole costs memory
that grows with the logs.  :func:`position_pairs` instead walks both sources'
batches once, side by side (a batch holds whole searches), and hands the
aligner one position's records of A and of B as soon as both sides are
complete.  Inputs that list their positions in the same order (two engines run
over one EPD batch) keep about one batch per side in memory; otherwise the
positions still waiting for the other side are counted by the bytes they keep
alive (a slice of a batch keeps the whole batch), copied out of their batches
when that passes half of the budget, and spilled to a scratch directory
(removed on every exit path) when even the copies do, and read back when their
partner arrives.  A position pair too large for the budget on
its own is an error naming the files and the position, never swapping.

Units: ``MemoryBudget.limit`` is bytes; record budgets are records (rows of
the records table).
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from treediff.model.errors import InputError
from treediff.store.budget import (  # re-exported: their home was here
    BYTES_PER_RECORD as BYTES_PER_RECORD,
    DEFAULT_MEMORY_LIMIT as DEFAULT_MEMORY_LIMIT,
    MemoryBudget as MemoryBudget,
    format_bytes as format_bytes,
    parse_memory_limit as parse_memory_limit,
)

if TYPE_CHECKING:
    from treediff.store.source import Source

def frame_bytes(table: pa.Table) -> int:
    """Bytes of a records table's buffers: every buffer it views, whole (a slice keeps its batch's buffers
    alive, so a batch's size counts them all; an owned copy counts its own)."""
    return int(table.get_total_buffer_size())


@dataclass
class _Pending:
    """One side's records of one position, in memory (frames: Arrow tables) or spilled (files), and searches seen.

    ``pins``: per frame, the id of the batch it is a slice of (a view that keeps the whole batch alive),
    or -1 when the frame owns its data (a copy: :meth:`_Side.compact`); ``owned``: bytes of those."""

    frames: list = field(default_factory=list)
    pins: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    records: int = 0
    seen: int = 0
    owned: int = 0

    def load(self) -> list:
        frames = list(self.frames)
        for name in self.files:
            with open(name, "rb") as fh:
                frames.extend(pickle.load(fh))
            os.unlink(name)
        return frames


class _Side:
    """One source's batches split by paired position, with its bookkeeping."""

    def __init__(self, source: Source, masks: Sequence[np.ndarray], columns: Sequence[str], target: int):
        searches = source.searches
        ids = searches["search"].to_numpy(dtype=np.int64)
        position = np.full(len(searches), -1, dtype=np.int64)
        for index, rows in enumerate(masks):  # searches rows: int indices, or a boolean mask
            rows = np.asarray(rows)
            position[np.flatnonzero(rows) if rows.dtype == bool else rows] = index
        wanted = position >= 0
        #: search id -> paired position index (-1: not paired)
        self.of_search = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
        self.of_search[ids] = position
        # A search is seen in a batch only if it has records: a position is complete when every such search was.
        has = (searches["records"].fillna(0).to_numpy(dtype=np.int64) > 0 if "records" in searches.columns
               else np.ones(len(searches), dtype=bool))
        self.expected = np.bincount(position[wanted & has], minlength=len(masks))
        self.known = "records" in searches.columns
        self.pending: dict[int, _Pending] = {}
        self.done = np.zeros(len(masks), dtype=bool)
        self._batches = iter(source.select(wanted).arrow_batches(columns, target=target)) if wanted.any() else iter(())
        self.exhausted = False
        #: Bytes of each batch some pending frame is a slice of (by batch id); the whole batch stays alive.
        self._batch_bytes: dict[int, int] = {}
        self._batch_rows: dict[int, int] = {}
        self._next_batch = 0
        #: Bytes of the largest batch read so far (a batch is alive while it is split, the next one is read ahead).
        self.batch_peak = 0

    def pull(self) -> list[int]:
        """Read the next batch into the pending positions; the positions it completed (all of them at the end)."""
        try:
            batch = next(self._batches)
        except StopIteration:
            self.exhausted = True
            rest = [p for p in self.pending if not self.done[p]]
            self.done[rest] = True
            return rest
        bid, self._next_batch = self._next_batch, self._next_batch + 1
        size = frame_bytes(batch)
        self.batch_peak = max(self.batch_peak, size)
        search = batch.column("search").to_numpy().astype(np.int64, copy=False)
        pos = self.of_search[search]
        order = np.argsort(pos, kind="stable")  # records keep their order within a position
        sorted_pos = pos[order]
        starts = np.flatnonzero(np.r_[True, sorted_pos[1:] != sorted_pos[:-1]]) if len(pos) else np.array([], int)
        ends = np.r_[starts[1:], len(pos)]
        # Searches per position in this batch: a search's position is its own, so the distinct searches of
        # the paired records are those of the runs' first records (a batch holds whole searches, in runs:
        # a unique over a few run heads, not a sort of every record).
        heads = np.flatnonzero(np.r_[True, search[1:] != search[:-1]]) if len(search) else np.zeros(0, np.int64)
        ids = np.unique(search[heads])
        ids = ids[self.of_search[ids] >= 0]
        searches_in = np.bincount(self.of_search[ids], minlength=len(self.done)) if len(ids) else \
            np.zeros(len(self.done), dtype=np.int64)
        completed = []
        for start, end in zip(starts.tolist(), ends.tolist()):
            p = int(sorted_pos[start])
            if p < 0:
                continue
            entry = self.pending.setdefault(p, _Pending())
            first, last = int(order[start]), int(order[end - 1])
            # A position's records are usually one run of the batch: a slice, not a take of the batch reordered
            # (the positions are numbered in label order, not in the inputs' order).
            if last - first == end - start - 1:
                entry.frames.append(batch.slice(first, last + 1 - first))  # a view: the batch stays alive with it
                entry.pins.append(bid)
                self._batch_bytes[bid], self._batch_rows[bid] = size, batch.num_rows
            else:  # a take: its own copy
                part = batch.take(pa.array(order[start:end], type=pa.int64()))
                entry.frames.append(part)
                entry.pins.append(-1)
                entry.owned += frame_bytes(part)
            entry.records += end - start
            entry.seen += int(searches_in[p])
            if self.known and entry.seen >= self.expected[p]:
                self.done[p] = True
                completed.append(p)
        self._compact_sparse(bid)
        return completed

    def _compact_sparse(self, current: int) -> None:
        """Copy the pending slices of older batches that hold less than half of their batch's records: a
        position still waiting after its batch was split (e.g. the other input's search of it comes much
        later) would otherwise keep the whole batch alive; the current batch's positions usually pair soon."""
        pinned: dict[int, int] = {}
        for entry in self.pending.values():
            for frame, pin in zip(entry.frames, entry.pins):
                if pin >= 0 and pin != current:
                    pinned[pin] = pinned.get(pin, 0) + frame.num_rows
        sparse = {b for b, rows in pinned.items() if 2 * rows < self._batch_rows.get(b, 0)}
        if sparse:
            self.compact(sparse)

    def buffered(self) -> int:
        return sum(sum(f.num_rows for f in e.frames) for e in self.pending.values())

    def held(self) -> int:
        """Bytes the pending frames keep alive: every batch one of them is a slice of, whole, plus the
        frames that own their data (what the memory holds, not just the pending records' share)."""
        pinned = {b for e in self.pending.values() for b in e.pins if b >= 0}
        for b in [b for b in self._batch_bytes if b not in pinned]:
            del self._batch_bytes[b]  # (no pending frame views it any more: freed)
            self._batch_rows.pop(b, None)
        return sum(self._batch_bytes[b] for b in pinned) + sum(e.owned for e in self.pending.values())

    def compact(self, batches: set[int] | None = None) -> None:
        """Copy every pending frame that is a slice of a batch (of ``batches``; None: of any), so the
        batches are freed: a few positions still waiting for the other input no longer keep them alive.

        Batch by batch: a batch is freed once its last slice is copied, so at most one batch's copies are
        alive beside the batches still to do (copying entry by entry kept every batch until the end: the held
        bytes twice over, compare 100M + 100M's peak, docs/PERFORMANCE.md, sixteenth session)."""
        slices: dict[int, list[tuple[_Pending, int]]] = {}
        for entry in self.pending.values():
            for k, pin in enumerate(entry.pins):
                if pin >= 0 and (batches is None or pin in batches):
                    slices.setdefault(pin, []).append((entry, k))
        for pin in sorted(slices):
            for entry, k in slices.pop(pin):
                entry.frames[k] = _owned(entry.frames[k])
                entry.pins[k] = -1
                entry.owned += frame_bytes(entry.frames[k])
        for b in list(self._batch_bytes) if batches is None else batches:
            self._batch_bytes.pop(b, None)
            self._batch_rows.pop(b, None)

    def spill(self, directory: Path) -> None:
        """Write every in-memory pending frame to ``directory`` (pickles: exact types and dictionaries)."""
        self.compact()  # (a pickled slice would carry only its rows; the copy makes that certain)
        for p, entry in self.pending.items():
            if not entry.frames:
                continue
            name = directory / f"{id(self)}-{p}-{len(entry.files)}.pkl"
            with open(name, "wb") as fh:
                pickle.dump(entry.frames, fh, protocol=pickle.HIGHEST_PROTOCOL)
            entry.files.append(str(name))
            entry.frames, entry.pins, entry.owned = [], [], 0

    def take(self, p: int) -> tuple[list, int]:
        entry = self.pending.pop(p, None)
        return ([], 0) if entry is None else (entry.load(), entry.records)


def position_pairs(source_a: Source, source_b: Source, masks: Sequence[tuple[np.ndarray, np.ndarray]],
                   columns: Sequence[str], budget: MemoryBudget, labels: Sequence[str],
                   paths: Sequence[str] = ("A", "B"),
                   scratch: Callable[[], Path] | None = None) -> Iterator[tuple[int, pa.Table, pa.Table]]:
    """(position index, A's records, B's records: Arrow tables) for each paired position, in the order both
    sides complete.

    ``masks``: per position, A's and B's searches rows (int indices, as
    :func:`~treediff.align.summaries.paired_positions` gives them, or boolean masks); ``labels``:
    each position's name for errors.  Each source is read once, in batches of
    about :attr:`MemoryBudget.batch_records`.  Positions waiting for the other
    side are counted by the bytes they keep alive (a pending slice keeps its whole batch:
    :meth:`_Side.held`); past :attr:`MemoryBudget.pending_bytes`, or when they and the pair about to be
    aligned (:data:`BYTES_PER_RECORD` a record) and the batches in flight would pass the limit, the slices
    are first copied (the batches freed), then, if still too much, spilled into ``scratch()`` (a directory
    made on first need).  A position whose records exceed the budget raises :class:`InputError` (see
    :meth:`MemoryBudget.check_pair`).
    """
    sides = [_Side(source, [m[i] for m in masks], columns, budget.batch_records)
             for i, source in enumerate((source_a, source_b))]
    directory: Path | None = None

    def room(need: int, share: int) -> None:
        """Keep the pending frames' bytes within ``share`` of the budget less ``need``: first copy the
        slices that keep whole batches alive, then, if that is not enough, spill them."""
        nonlocal directory
        if sum(s.held() for s in sides) + need <= share:
            return
        for s in sides:
            s.compact()
        if sum(s.held() for s in sides) + need <= share:
            return
        if directory is None:
            directory = scratch() if scratch is not None else _scratch()
        for s in sides:
            s.spill(directory)

    def pair(p: int) -> tuple[int, pa.Table, pa.Table]:
        (frames_a, n_a), (frames_b, n_b) = sides[0].take(p), sides[1].take(p)
        budget.check_pair(labels[p], n_a, n_b, paths)
        # The aligner's working set, the batches being split and read ahead (two a side) and the pending
        # frames together stay within the limit: make room before aligning.
        room((n_a + n_b) * BYTES_PER_RECORD + 2 * sum(s.batch_peak for s in sides), budget.limit)
        return p, _one(frames_a, columns), _one(frames_b, columns)

    try:
        turn = 0
        while not (sides[0].exhausted and sides[1].exhausted):
            # The side holding less is behind (its partner's positions wait for it): read it next, so two
            # inputs in the same order stay within a batch of each other (alternating lets inputs whose
            # searches differ in size drift apart until the spill threshold).  Ties alternate.
            held = [s.buffered() for s in sides]
            if held[0] != held[1]:
                turn = 0 if held[0] < held[1] else 1
            side = sides[turn] if not sides[turn].exhausted else sides[1 - turn]
            turn = 1 - turn
            for p in side.pull():
                if not sides[0].done[p] or not sides[1].done[p]:
                    continue
                yield pair(p)
            room(0, budget.pending_bytes)
        # Positions one side never recorded (every search without records) are still aligned (and fail there).
        for p in range(len(masks)):
            if p in sides[0].pending or p in sides[1].pending or not (sides[0].done[p] and sides[1].done[p]):
                yield pair(p)
    finally:
        if directory is not None:  # spilled frames not read back (an error, or the consumer stopped)
            _remove(directory)


def _owned(frame: pa.Table) -> pa.Table:
    """A copy of ``frame`` that shares no record buffer with it (a slice of a batch keeps the whole batch
    alive; the copy does not).  A dictionary column's copy keeps its dictionary (one small array a batch)."""
    return frame.take(pa.array(np.arange(frame.num_rows, dtype=np.int64)))


def _one(frames: list, columns: Sequence[str]) -> pa.Table:
    if not frames:
        return pa.table({c: pa.array([], pa.null()) for c in dict.fromkeys(("engine", "search", *columns))})
    if len(frames) == 1:
        return frames[0]
    # (a side's batches share one schema; "permissive" also unifies a dictionary's index width should two differ)
    return pa.concat_tables(frames, promote_options="permissive")


def _scratch() -> Path:
    from treediff.parse.source import scratch_dir

    return scratch_dir("spill")


def _remove(directory: Path) -> None:
    from treediff.parse.source import remove_scratch

    remove_scratch(directory)

"""The vectorized tree aligner: two sides' records of one search iteration -> one row per move path.

Both sides' paths are dictionary-encoded together, so a path (normalized UCI,
``/``-joined, ``""`` for the root) is one integer code whatever engine wrote
it.  Everything after that is integer work over the union of paths:

* each path's parent is found by stripping its last move (one Arrow regex and
  one hash lookup for the whole table); paths whose parent never occurs get
  the parent synthesized, so the union is always one tree rooted at ``""``;
* per-path decision sequences come from one stable sort of the MOVE records by
  path code (records keep their ``seq`` order within a path);
* subtree sums (RESULT counts = node counts, row counts) are accumulated level
  by level, deepest ply first, with ``np.add.reduceat`` over rows sorted by
  (ply, parent);
* depth-first (pre-order) positions are assigned level by level, shallowest
  first: a row's position is its parent's + 1 + the subtree sizes of the
  siblings ordered before it.

Siblings are ordered by A's move number ``mn`` (B's for rows only B decided;
paths neither side decided, such as the root, last), then rows A decided
before rows only B decided before undecided rows, then by first ``seq`` of the
deciding side (undecided rows: by path).

Node visits (docs/ALIGN.md, "Node visits"): a row's decisions are those made
in its parent's main visit (:func:`treediff.parse.visits.visit_tree`), found
from the records' ``visit`` / ``parent_visit`` columns (worked out here when
the records lack them).  With ``visits="all"`` each other visit of a row in
its parent's main visit gets a row of its own after the row.

Units: depths are plies (float), node counts are RESULT records.
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.columns import PATH_TYPE, codes, has, numbers, records_table, strings
from treediff.model.schema import KIND_VALUES
from treediff.parse.visits import VisitTree, visit_numbers, visit_tree

try:  # the compiled per-path passes (treediff/align/_calign.c); optional: the numpy passes below are the fallback
    from treediff.align import _calign  # type: ignore[attr-defined]  # (compiled: no stub)
except ImportError:
    _calign = None
#: What this module calls of ``_calign``: a module built from older source lacks some, and is not used.
CALIGN_FUNCTIONS = ("tree", "visit_tree", "decisions", "order")
if _calign is not None and not all(hasattr(_calign, name) for name in CALIGN_FUNCTIONS):
    _calign = None

#: Set (to anything but "" or "0") to run the numpy passes even when ``_calign`` is built (tests, A/B timing).
NO_CALIGN_ENV = "TREEDIFF_NO_CALIGN"


def compiled_available() -> bool:
    """Whether the aligner runs its compiled per-path passes (``_calign`` built and not turned off)."""
    return _calign is not None and os.environ.get(NO_CALIGN_ENV, "") in ("", "0")


SEQ_SEPARATOR = "→"


class Status(str, enum.Enum):
    """How one aligned path compares between the two sides."""

    SAME = "same"        #: both sides decided the path identically (acts and depths)
    DIFFERS = "differs"  #: both sides have the path, decided differently
    ONLY_A = "only-A"    #: only A has the path (or anything below it)
    ONLY_B = "only-B"    #: only B has the path (or anything below it)


STATUS_VALUES = [s.value for s in Status]

#: Columns the aligner reads from the records table.  ``line``, ``visit`` and
#: ``parent_visit`` may be missing: lines are then null, and visits are worked
#: out from the records (:data:`OPTIONAL_COLUMNS`).
NEEDED_COLUMNS = ("tag", "seq", "line", "path", "mn", "act", "kind", "depth", "new_depth", "reduction",
                  "visit", "parent_visit")
OPTIONAL_COLUMNS = ("line", "visit", "parent_visit")

#: Records columns the aligner's callers read (``treediff diff``, compare's divergences).
LOAD_COLUMNS = ("position", "fen", "iter", "ply", *NEEDED_COLUMNS)

#: ``align_trees(..., visits=...)``: one row per path (its main visit's decisions), or also one per other visit.
VISIT_MODES = ("main", "all")
#: ``visit_label`` values (``visits="all"``), in the order a path's rows come.
VISIT_LABELS = ("main", "verify", "re-search")
_PATH_DTYPE = PATH_TYPE  # (the type align/columns.py reads paths as)
# The big transient Arrow buffers (hash tables, parent strings) go to the
# system allocator, which hands them back when freed; Arrow's default pool
# keeps them, and numpy cannot reuse them, so peak RSS would grow by ~0.5 GB.
_POOL = pa.system_memory_pool()


class _Side:
    """One side's records reduced to numpy arrays, in record order."""

    def __init__(self, records: pa.Table | pd.DataFrame, keep: np.ndarray | None = None):
        """``records``: an Arrow records table (a pandas frame is converted: :func:`records_table`); ``keep``:
        optional boolean mask of the records to use (one search's iteration): the columns are converted and
        then indexed, never the table filtered."""
        records = records_table(records)
        missing = [c for c in NEEDED_COLUMNS if not has(records, c) and c not in OPTIONAL_COLUMNS]
        if missing:
            raise ValueError(f"records lack column(s): {', '.join(missing)}")
        tag_codes, tag_labels = codes(records, "tag")
        # typhoon_py's --shadow side searches (no decision, no node; only fh/whatif read them) and records
        # without a path are left out.
        path = strings(records, "path")
        # (a copy: edited below)
        use = np.ones(len(path), dtype=bool) if path.null_count == 0 else \
            np.array(path.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        use &= ~_code_is(tag_codes, tag_labels, "SHADOW")
        if keep is not None:
            use &= keep
        idx: np.ndarray | None = None if bool(use.all()) else np.flatnonzero(use)
        seq = _take(numbers(records, "seq", np.int64, fill=None), idx)
        if len(seq) > 1 and not bool(np.all(seq[1:] >= seq[:-1])):
            order = np.argsort(seq, kind="stable")  # visits are read in record order
            idx = order if idx is None else idx[order]
            seq = seq[order]
        self.n = len(seq)
        # The records' paths are the strings ``path_idx`` of ``path_strings`` (None: all, in order): the
        # compiled tree reads them where they are; :attr:`path` takes them (~0.15 ms a side).
        self.path_strings = path
        self.path_idx = None if idx is None else np.ascontiguousarray(idx, dtype=np.int64)
        self._path: pa.Array | None = path if idx is None else None
        tags = _take(tag_codes, idx)
        self.is_move = _code_is(tags, tag_labels, "MOVE")
        self.is_result = _code_is(tags, tag_labels, "RESULT")
        self.seq = seq
        # float32 holds every depth exactly (ticks / unit with unit a power of
        # two or 1) and halves the memory of 2M-record sides.
        self.mn = _take(numbers(records, "mn", np.float32), idx)
        self.depth = _take(numbers(records, "depth", np.float32), idx)
        self.new_depth = _take(numbers(records, "new_depth", np.float32), idx)
        self.reduction = _take(numbers(records, "reduction", np.float32), idx)
        self.act = codes(records, "act", idx)
        self.kind = codes(records, "kind", idx)
        #: Source line of each record (-1: unknown), int32 when every line fits.
        self.line = _lines(records, self.n, idx)
        # The parser's visit numbers (0: unknown); None when the records carry none (worked out later).
        self.visit: np.ndarray | None = None
        self.parent_visit: np.ndarray | None = None
        if has(records, "visit") and has(records, "parent_visit"):
            visit = _take(numbers(records, "visit", np.float64), idx)
            parent_visit = _take(numbers(records, "parent_visit", np.float64), idx)
            if not (np.isnan(visit[self.is_result]).all() and np.isnan(parent_visit[self.is_move]).all()):
                self.visit = np.nan_to_num(visit, nan=0.0).astype(np.int32)
                self.parent_visit = np.nan_to_num(parent_visit, nan=0.0).astype(np.int32)
            del visit, parent_visit

    @property
    def path(self) -> pa.Array:
        """The records' paths (large_string, record order)."""
        if self._path is None:
            self._path = self.path_strings.take(pa.array(self.path_idx, type=pa.int64()))
        return self._path

    def visits(self, codes: np.ndarray, parent: np.ndarray, ply: np.ndarray) -> VisitTree:
        """This side's visit tree over the shared path codes (the columns' numbers, else worked out)."""
        if self.visit is None or self.parent_visit is None:
            node = np.where(self.is_result, codes, parent[codes]).astype(np.int64)
            self.visit, self.parent_visit = visit_numbers(node, self.is_result, self.depth)
        if compiled_available():
            return compiled_visit_tree(codes, parent, ply, self.is_result, self.is_move, self.depth, self.visit,
                                       self.parent_visit)
        return visit_tree(codes, parent, ply, self.is_result, self.is_move, self.depth, self.visit,
                          self.parent_visit)


def compiled_visit_tree(code: np.ndarray, parent: np.ndarray, ply: np.ndarray, is_result: np.ndarray,
                        is_move: np.ndarray, depth: np.ndarray, visit: np.ndarray,
                        parent_visit: np.ndarray) -> VisitTree:
    """:func:`treediff.parse.visits.visit_tree` by ``_calign.visit_tree`` (same arguments, same arrays): a few
    linear passes (the latest MOVE per path, the next RESULT per parent, a hash of (node, visit), a counting
    sort by ply) instead of numpy's sorts and searches."""
    n_results = int(np.count_nonzero(is_result))
    out = np.empty((8, n_results), dtype=np.int64)
    main_visit = np.empty(len(parent), dtype=np.int64)
    nodes = _calign.visit_tree(
        np.ascontiguousarray(code, dtype=np.int64), np.ascontiguousarray(parent, dtype=np.int64),
        np.ascontiguousarray(ply, dtype=np.int64), np.ascontiguousarray(is_result, dtype=bool).view(np.uint8),
        np.ascontiguousarray(is_move, dtype=bool).view(np.uint8), np.ascontiguousarray(depth, dtype=np.float64),
        np.ascontiguousarray(visit, dtype=np.int64), np.ascontiguousarray(parent_visit, dtype=np.int64),
        out, main_visit)
    return VisitTree(result=out[0], code=out[1], visit=out[2], entering=out[3], parent_visit=out[4],
                     parent_result=out[5], is_main=out[6].astype(bool), anchor=out[7],
                     nodes=np.frombuffer(nodes, dtype=np.int64).copy(), main_visit=main_visit)


def _take(values: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
    return values if idx is None else values[idx]


def _code_is(codes: np.ndarray, labels: np.ndarray, value: str) -> np.ndarray:
    """``codes`` (of ``labels``) equal to ``value``'s code, as a bool array."""
    hits = np.flatnonzero(labels == value)
    return codes == hits[0] if len(hits) else np.zeros(len(codes), dtype=bool)


def _lines(records: pa.Table, n: int, idx: np.ndarray | None = None) -> np.ndarray:
    if not has(records, "line"):
        return np.full(n, -1, dtype=np.int32)
    values = _take(numbers(records, "line", np.int64, fill=-1), idx)
    fits = len(values) == 0 or int(values.max()) < 2**31
    return values.astype(np.int32 if fits else np.int64)


def equals(records: pa.Table, name: str, value: str) -> np.ndarray:
    """``records[name] == value`` as a bool array (nulls: False), from the column's codes."""
    column_codes, labels = codes(records, name)
    return _code_is(column_codes, labels, value)


def _unify(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], order: list[str] | None = None):
    """Re-code two (codes, labels) pairs onto one shared label list; -1 stays missing."""
    labels = list(order or [])
    labels += sorted((set(a[1]) | set(b[1])) - set(labels))
    index = {lab: i for i, lab in enumerate(labels)}
    out = []
    for codes, labs in (a, b):
        lut = np.array([index[lab] for lab in labs] + [-1], dtype=np.int32)
        out.append(lut[codes])  # code -1 picks the trailing -1
    return out[0], out[1], np.asarray(labels, dtype=object)


def _ply_and_parents(paths: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(ply, parent path) of every path (no nulls): the parent is the path cut at its last ``/``, ``""`` for
    paths of ply <= 1.

    Read from the strings' buffers: one scan for the ``/`` bytes gives each path's count of them and its last
    one, and the parents' bytes are one gather (Arrow's split, list element and if_else plus a count of the
    substring cost ~3x as much on a position's ~8k paths; ``/`` never occurs inside a UTF-8 multi-byte
    character, so bytes are enough)."""
    paths = paths.cast(_PATH_DTYPE)
    n = len(paths)
    buffers = paths.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[paths.offset:paths.offset + n + 1] if n else \
        np.zeros(1, dtype=np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    lo, hi = int(offsets[0]), int(offsets[-1])
    slashes = np.flatnonzero(data[lo:hi] == 47) + lo  # (ord("/"))
    before = np.searchsorted(slashes, offsets)  # slashes before each path's start (and the end)
    count = np.diff(before)
    start = offsets[:-1]
    ply = np.where(offsets[1:] > start, count + 1, 0).astype(np.int64)
    last = slashes[np.maximum(before[1:] - 1, 0)] if len(slashes) else np.zeros(n, dtype=np.int64)
    length = np.where(count > 0, last - start, 0)  # (ply <= 1: no slash, "")
    parent_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length, out=parent_offsets[1:])
    total = int(parent_offsets[-1])
    gather = np.repeat(start - parent_offsets[:-1], length) + np.arange(total, dtype=np.int64)
    parent_data = data[gather] if total else np.zeros(0, dtype=np.uint8)
    parents = pa.Array.from_buffers(_PATH_DTYPE, n, [None, pa.py_buffer(parent_offsets), pa.py_buffer(parent_data)])
    return ply, parents


def _parent_index(paths: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """(ply, parent path, parent index or -1 when the parent is not in ``paths``) of every path."""
    ply, parent_paths = _ply_and_parents(paths)
    found = pc.index_in(parent_paths, value_set=paths, memory_pool=_POOL)
    parent = pc.coalesce(found, pa.scalar(-1, found.type), memory_pool=_POOL).to_numpy(zero_copy_only=False).astype(np.int64)
    return ply, parent_paths, parent


def _tree_of(uniques: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Close the path set under "parent of" and return (paths, ply, parent index; -1 for the root)."""
    if not pc.any(pc.equal(uniques, "")).as_py():
        uniques = pa.concat_arrays([uniques, pa.array([""], _PATH_DTYPE)])
    ply, parent_paths, parent = _parent_index(uniques)
    lost = (parent < 0) & (ply > 0)
    # A path whose parent never occurs (a truncated or filtered trace): add the
    # parent as a row with no records of its own, until the set is closed.
    while lost.any():
        missing = pc.unique(parent_paths.filter(pa.array(lost)))
        uniques = pa.concat_arrays([uniques, missing.cast(_PATH_DTYPE)])
        ply, parent_paths, parent = _parent_index(uniques)
        lost = (parent < 0) & (ply > 0)
    parent[ply == 0] = -1
    return uniques, ply, parent


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, object]:
    """(int64 offsets, data buffer) of a large_string array without nulls, for ``_calign``."""
    n = len(arr)
    buffers = arr.buffers()
    if n == 0 or buffers[1] is None:
        return np.zeros(1, dtype=np.int64), b""
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    return np.ascontiguousarray(offsets), buffers[2] if buffers[2] is not None else b""


def _no_nulls(strings: pa.Array, idx: np.ndarray | None) -> bool:
    """Whether the strings ``idx`` (None: all) of ``strings`` are all valid."""
    if strings.null_count == 0:
        return True
    valid = strings.is_valid().to_numpy(zero_copy_only=False)
    return bool(valid.all() if idx is None else valid[idx].all())


def _encode_and_close(path_a: pa.Array, path_b: pa.Array, idx_a: np.ndarray | None = None,
                      idx_b: np.ndarray | None = None) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray]:
    """(path code of every record, A's then B's; paths; ply; parent index, -1 for the root): the numpy
    dictionary encoding plus :func:`_tree_of`, or ``_calign.tree`` (same codes: first occurrence order, then
    ``""``, then missing parents in the order the rounds of :func:`_tree_of` append them).

    ``idx_a`` / ``idx_b``: int64 indices, the side's records' strings of ``path_a`` / ``path_b`` (None: all)."""
    n_records = (len(path_a) if idx_a is None else len(idx_a)) + (len(path_b) if idx_b is None else len(idx_b))
    strings_ok = path_a.type == _PATH_DTYPE and path_b.type == _PATH_DTYPE
    if (compiled_available() and n_records < 2**31 and strings_ok
            and _no_nulls(path_a, idx_a) and _no_nulls(path_b, idx_b)):
        off_a, data_a = _string_buffers(path_a)
        off_b, data_b = _string_buffers(path_b)
        codes = np.empty(n_records, dtype=np.int32)
        n_paths, offsets, data, ply_bytes, parent_bytes = _calign.tree(off_a, data_a, off_b, data_b, codes, idx_a,
                                                                      idx_b)
        paths = pa.Array.from_buffers(_PATH_DTYPE, n_paths, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        return (codes, paths, np.frombuffer(ply_bytes, dtype=np.int64).copy(),
                np.frombuffer(parent_bytes, dtype=np.int64).copy())
    if idx_a is not None:
        path_a = path_a.take(pa.array(idx_a, type=pa.int64()))
    if idx_b is not None:
        path_b = path_b.take(pa.array(idx_b, type=pa.int64()))
    # One memo table across both chunks: codes agree, the last chunk's dictionary has every path.
    encoded = pc.dictionary_encode(pa.chunked_array([path_a, path_b], type=_PATH_DTYPE), memory_pool=_POOL)
    codes = np.concatenate(
        [np.empty(0, np.int32)] + [c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks]
    ).astype(np.intp if n_records >= 2**31 else np.int32, copy=False)
    dictionary = encoded.chunks[-1].dictionary if encoded.num_chunks else pa.array([], _PATH_DTYPE)
    del encoded
    paths, ply, parent = _tree_of(dictionary)
    return codes, paths, ply, parent


def _main_decisions(side: _Side, codes: np.ndarray, parent: np.ndarray, tree: VisitTree, n_paths: int) -> np.ndarray:
    """The MOVE records that are the rows' decisions: those made in the parent's main visit.

    A path its parent's main visit made no decision about (reached only under
    other visits of the parent, or the parent has no main visit) takes the
    decisions of the last visit of its parent that made one (the highest
    ``parent_visit`` among its MOVE records): a row's decisions always come
    from one visit of its parent.
    """
    moves = np.flatnonzero(side.is_move)
    assert side.parent_visit is not None  # (side.visits() ran first)
    pv = side.parent_visit[moves]
    move_codes = codes[moves]
    p = parent[move_codes]
    main_of_parent = tree.main_visit[np.maximum(p, 0)]
    in_main = (p >= 0) & (main_of_parent > 0) & (pv == main_of_parent)
    decided = np.bincount(move_codes[in_main], minlength=n_paths) > 0
    latest = np.full(n_paths, np.iinfo(np.int64).min, dtype=np.int64)
    # (int64 values into the int64 array: ufunc.at's fast path; int32 values took its slow one, ~60x)
    np.maximum.at(latest, move_codes, pv.astype(np.int64))
    keep = in_main | (~decided[move_codes] & (pv == latest[move_codes]))
    mask = np.zeros(side.n, dtype=bool)
    mask[moves[keep]] = True
    return mask


def _compiled_decisions(side: _Side, codes: np.ndarray, parent: np.ndarray, tree: VisitTree,
                        n_paths: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_main_decisions` and :class:`_Decisions`' grouping by ``_calign.decisions``: (the kept MOVEs'
    record indices grouped by path code, count and first index per code), or None when the records are not
    in ``seq`` order (the numpy passes then sort them)."""
    seq = side.seq
    if len(seq) > 1 and not bool(np.all(seq[1:] >= seq[:-1])):
        return None
    assert side.parent_visit is not None  # (side.visits() ran first)
    order = np.empty(side.n, dtype=np.int64)
    count = np.empty(n_paths, dtype=np.int64)
    start = np.empty(n_paths, dtype=np.int64)
    m = _calign.decisions(np.ascontiguousarray(codes, dtype=np.int64), np.ascontiguousarray(side.is_move, dtype=bool).view(np.uint8),
                          np.ascontiguousarray(side.parent_visit, dtype=np.int64),
                          np.ascontiguousarray(parent, dtype=np.int64),
                          np.ascontiguousarray(tree.main_visit, dtype=np.int64), order, count, start)
    return order[:m], count, start


class _Decisions:
    """One side's MOVE records (those of ``keep``) grouped by path code, in ``seq`` order within a path."""

    def __init__(self, side: _Side, codes: np.ndarray, n_paths: int, act: np.ndarray, kind: np.ndarray,
                 keep: np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        """``keep``: a mask of the MOVE records to use (default: all), or :func:`_compiled_decisions`' grouping."""
        if isinstance(keep, tuple):
            at, self.count, self.start = keep
            self.act, self.kind = act[at], kind[at]
            self.depth, self.new_depth, self.reduction = side.depth[at], side.new_depth[at], side.reduction[at]
            self.mn, self.seq, self.line = side.mn[at], side.seq[at], side.line[at]
            self._grouped()
            return
        chosen = side.is_move if keep is None else keep
        move_codes = codes[chosen]
        seq = side.seq[chosen]
        if len(seq) < 2 or bool(np.all(seq[1:] >= seq[:-1])):
            order = np.argsort(move_codes, kind="stable")
        else:
            order = np.lexsort((seq, move_codes))
        self.count = np.bincount(move_codes, minlength=n_paths)
        self.start = np.cumsum(self.count) - self.count
        self.act = act[chosen][order]
        self.kind = kind[chosen][order]
        self.depth = side.depth[chosen][order]
        self.new_depth = side.new_depth[chosen][order]
        self.reduction = side.reduction[chosen][order]
        self.mn = side.mn[chosen][order]
        self.seq = seq[order]
        self.line = side.line[chosen][order]
        self._grouped()

    def _grouped(self) -> None:
        # (first() and last() are called ~16 times a position: the decided codes and their ends, once)
        self._has = self.count > 0
        self._first = self.start[self._has]
        self._last = self._first + self.count[self._has] - 1

    def first(self, values: np.ndarray, fill, paths: np.ndarray | None = None) -> np.ndarray:
        """Each path's first decision's value (``fill`` where it made none), by path code; or at the path codes
        ``paths`` only (in that order)."""
        dtype = values.dtype if values.dtype != object else object
        if paths is None:
            out = np.full(len(self.count), fill, dtype=dtype)
            out[self._has] = values[self._first]
            return out
        out = np.full(len(paths), fill, dtype=dtype)
        has = self.count[paths] > 0
        out[has] = values[self.start[paths[has]]]
        return out

    def last(self, values: np.ndarray, fill, paths: np.ndarray | None = None) -> np.ndarray:
        """Each path's last decision's value (``fill`` where it made none), as :meth:`first`."""
        if paths is None:
            out = np.full(len(self.count), fill, dtype=values.dtype)
            out[self._has] = values[self._last]
            return out
        out = np.full(len(paths), fill, dtype=values.dtype)
        has = self.count[paths] > 0
        decided = paths[has]
        out[has] = values[self.start[decided] + self.count[decided] - 1]
        return out

    def sequence(self, labels: np.ndarray) -> pd.Categorical:
        """Each path's acts in order, joined by ``→``; ``""`` where the side made no decision.

        Single decisions (the vast majority) are category codes of their act;
        only multi-decision paths get strings built.
        """
        names = [*labels, "?"]  # act code -1 (missing) reads as "?"
        codes = np.zeros(len(self.count), dtype=np.int64)  # category 0 is ""
        has = self.count > 0
        act_first = self.act[self.start[has]]
        codes[has] = np.where(act_first < 0, len(names), act_first + 1)
        categories = ["", *names]
        multi = np.flatnonzero(self.count > 1)
        if len(multi):
            named = np.asarray(names, dtype=object)
            text = named[self.act[self.start[multi]]]
            for k in range(1, int(self.count.max())):
                longer = np.flatnonzero(self.count[multi] > k)
                text[longer] = text[longer] + SEQ_SEPARATOR + named[self.act[self.start[multi[longer]] + k]]
            multi_codes, multi_names = pd.factorize(text)
            codes[multi] = len(categories) + multi_codes
            categories += list(multi_names)
        return codes, categories


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for name in names:
        while name in seen:
            name += "'"
        seen.add(name)
        out.append(name)
    return out


def _same_float(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y))


def _compare(da: _Decisions, db: _Decisions, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For paths ``rows`` with equally many decisions on both sides: (acts equal, acts and depths equal)."""
    acts_eq = np.ones(len(rows), dtype=bool)
    all_eq = np.ones(len(rows), dtype=bool)
    counts = da.count[rows]
    for k in range(int(counts.max(initial=0))):
        sel = np.flatnonzero(counts > k)
        ia = da.start[rows[sel]] + k
        ib = db.start[rows[sel]] + k
        act_ok = da.act[ia] == db.act[ib]
        depth_ok = (
            _same_float(da.depth[ia], db.depth[ib])
            & _same_float(da.new_depth[ia], db.new_depth[ib])
            & _same_float(da.reduction[ia], db.reduction[ib])
        )
        acts_eq[sel] &= act_ok
        all_eq[sel] &= act_ok & depth_ok
    return acts_eq, all_eq


def _sibling_key(dec_a: "_Decisions", dec_b: "_Decisions", paths: pa.Array) -> np.ndarray:
    """Sort key among siblings: A's move number, A-decided before B-only before undecided, first seq."""
    has_a, has_b = dec_a.count > 0, dec_b.count > 0
    mn = np.where(has_a, dec_a.first(dec_a.mn, np.nan), dec_b.first(dec_b.mn, np.nan))
    mn = np.where(np.isnan(mn), 4095, np.clip(mn, 0, 4095)).astype(np.int64)
    side_rank = np.where(has_a, 0, np.where(has_b, 1, 2)).astype(np.int64)
    first_seq = np.where(has_a, dec_a.first(dec_a.seq, 0), dec_b.first(dec_b.seq, 0))
    undecided = np.flatnonzero(side_rank == 2)  # the root, RESULT-only and synthesized paths: few
    by_name = pc.sort_indices(paths.take(pa.array(undecided))).to_numpy(zero_copy_only=False)
    first_seq[undecided[by_name]] = np.arange(len(undecided))
    return (mn << 50) | (side_rank << 48) | np.clip(first_seq, 0, (1 << 48) - 1)


def _sum_subtrees(sums: np.ndarray, par: np.ndarray, bounds: np.ndarray) -> None:
    """Add every row's sums into its parent's, deepest ply first (in place).

    Rows are sorted by (ply, parent): ply k is ``bounds[k]:bounds[k+1]`` and
    its rows come in runs of one parent each.
    """
    for k in range(len(bounds) - 2, 0, -1):
        lo, hi = bounds[k], bounds[k + 1]
        if hi == lo:
            continue
        p = par[lo:hi]
        starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        # Each parent occurs once in p[starts], so a plain fancy += is safe.
        sums[p[starts]] += np.add.reduceat(sums[lo:hi], starts, axis=0)


def _preorder(size: np.ndarray, par: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Depth-first position of every row: parent's + 1 + sizes of the siblings sorted before it."""
    pos = np.zeros(len(size), dtype=np.int64)
    for k in range(1, len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        if hi == lo:
            continue
        p = par[lo:hi]
        group_first = np.r_[True, p[1:] != p[:-1]]
        before = np.cumsum(size[lo:hi]) - size[lo:hi]
        group_base = before[np.flatnonzero(group_first)][np.cumsum(group_first) - 1]
        pos[lo:hi] = pos[p] + 1 + (before - group_base)
    return pos


def _order_rows(ply: np.ndarray, parent: np.ndarray, key: np.ndarray, sums: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(path code of each row, parent row, subtree sums per row): rows depth-first, siblings by ``key`` (then
    code); ``sums`` (per path code: its own counts) summed over subtrees.  The numpy pass of ``_calign.order``."""
    n_paths = len(ply)
    level_key = (ply.astype(np.int64) << 40) | (parent + 1)
    order = np.lexsort((key, level_key))
    del level_key

    # From here on, arrays are in (ply, parent, sibling) order.
    inverse = np.empty(n_paths, dtype=np.int64)
    inverse[order] = np.arange(n_paths)
    par = parent[order]
    par = np.where(par >= 0, inverse[np.maximum(par, 0)], -1)
    ply_o = ply[order]
    sums = sums[order]
    bounds = np.searchsorted(ply_o, np.arange(int(ply_o.max(initial=0)) + 2))
    del inverse, ply_o
    _sum_subtrees(sums, par, bounds)
    pos = _preorder(sums[:, 4], par, bounds)

    final = np.empty(n_paths, dtype=np.int64)
    final[pos] = np.arange(n_paths)
    src = order[final]  # original path index of each output row
    parent_row = par[final]
    parent_row = np.where(parent_row >= 0, pos[np.maximum(parent_row, 0)], -1)
    sums = sums[final]
    return src, parent_row, sums


def _status(sums: np.ndarray, dec_a: "_Decisions", dec_b: "_Decisions", src: np.ndarray) -> np.ndarray:
    """Status codes (index into STATUS_VALUES) of rows in output order."""
    present_a, present_b = sums[:, 2] > 0, sums[:, 3] > 0
    status = np.full(len(src), 1, dtype=np.int8)  # differs
    status[present_a & ~present_b] = 2
    status[~present_a & present_b] = 3
    count_a, count_b = dec_a.count[src], dec_b.count[src]
    both = present_a & present_b
    status[both & (count_a == 0) & (count_b == 0)] = 0
    comparable = np.flatnonzero(both & (count_a == count_b) & (count_a > 0))
    _, all_eq = _compare(dec_a, dec_b, src[comparable])
    status[comparable[all_eq]] = 0
    return status


def _per_path_result(tree: VisitTree, values: np.ndarray, n_paths: int, fill=np.nan) -> np.ndarray:
    """Per path: ``values`` (per record) of its main visit's RESULT, else of its first RESULT (``fill``: none)."""
    out = np.full(n_paths, fill, dtype=values.dtype)
    codes, first = np.unique(tree.code, return_index=True)  # (RESULTs are in record order)
    out[codes] = values[tree.result[first]]
    main = np.flatnonzero(tree.is_main)
    out[tree.code[main]] = values[tree.result[main]]
    return out


def align_trees(records_a: pd.DataFrame, records_b: pd.DataFrame, visits: str = "main") -> pd.DataFrame:
    """Align two sides' records of one search iteration; one row per path, depth-first.

    Both frames hold the records of exactly one tree (one search, one
    iteration).  Returns the rows described in :class:`treediff.align.Alignment`;
    ``visits="all"`` adds a row per other visit of a path (see docs/ALIGN.md).
    """
    if visits not in VISIT_MODES:
        raise ValueError(f"visits must be one of {', '.join(VISIT_MODES)}, not {visits!r}")
    return align_sides(_Side(records_a), _Side(records_b), keep_visits=visits == "all").frame()


def align_sides(a: "_Side", b: "_Side", keep_visits: bool = False) -> RowArrays:
    """:func:`align_trees` on two sides already reduced to arrays; the rows as :class:`RowArrays`.

    ``keep_visits``: keep what the rows of other node visits need (``visits="all"``, added by
    :meth:`RowArrays.frame`).
    """
    codes, paths, ply, parent = _encode_and_close(a.path_strings, b.path_strings, a.path_idx, b.path_idx)
    n_paths = len(paths)
    codes_a, codes_b = codes[: a.n], codes[a.n :]

    # Node visits, one side at a time (a visit tree is large and short-lived): the decisions made in each
    # row's parent's main visit, and per path its main visit's RESULT depth and line and its main-visit nodes.
    keep: list[np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    result_of, anchored, trees = [], [], []
    for side, side_codes in ((a, codes_a), (b, codes_b)):
        tree = side.visits(side_codes, parent, ply)
        grouped = _compiled_decisions(side, side_codes, parent, tree, n_paths) if compiled_available() else None
        keep.append(grouped if grouped is not None else _main_decisions(side, side_codes, parent, tree, n_paths))
        result_of.append((_per_path_result(tree, side.depth, n_paths).astype(np.float32),
                          _per_path_result(tree, side.line, n_paths, -1)))
        anchored.append(np.bincount(tree.anchor[tree.anchor >= 0], minlength=n_paths))
        if keep_visits:  # (the visit rows read the trees again)
            trees.append(tree)
        else:
            side.visit = side.parent_visit = None
        del tree
    act_a, act_b, act_labels = _unify(a.act, b.act)
    kind_a, kind_b, kind_labels = _unify(a.kind, b.kind, order=KIND_VALUES)
    dec_a = _Decisions(a, codes_a, n_paths, act_a, kind_a, keep[0])
    dec_b = _Decisions(b, codes_b, n_paths, act_b, kind_b, keep[1])
    del keep

    # Per-path own counts, later summed over subtrees: RESULTs (nodes) and all
    # records (presence) per side, 1 per row (subtree size in rows), and the
    # RESULTs whose chain of visits is main up to this path (main-visit nodes).
    sums = np.zeros((n_paths, 7), dtype=np.int64 if a.n + b.n >= 2**31 else np.int32)
    sums[:, 0] = np.bincount(codes_a[a.is_result], minlength=n_paths)
    sums[:, 1] = np.bincount(codes_b[b.is_result], minlength=n_paths)
    sums[:, 2] = np.bincount(codes_a, minlength=n_paths)
    sums[:, 3] = np.bincount(codes_b, minlength=n_paths)
    sums[:, 4] = 1
    sums[:, 5], sums[:, 6] = anchored
    del anchored
    visit_counts = (sums[:, 0].astype(np.int32), sums[:, 1].astype(np.int32))

    key = _sibling_key(dec_a, dec_b, paths)
    ordered = None
    if compiled_available():
        ordered = _calign.order(np.ascontiguousarray(ply, dtype=np.int64), np.ascontiguousarray(parent, dtype=np.int64),
                                np.ascontiguousarray(key, dtype=np.int64), np.ascontiguousarray(sums, dtype=np.int64),
                                sums.shape[1])
    if ordered is not None:  # (copies: the rows' arrays are writable, as numpy's are)
        src = np.frombuffer(ordered[0], dtype=np.int64).copy()
        parent_row = np.frombuffer(ordered[1], dtype=np.int64).copy()
        sums = np.frombuffer(ordered[2], dtype=np.int64).reshape(n_paths, sums.shape[1]).copy()
    else:
        src, parent_row, sums = _order_rows(ply, parent, key, sums)
    status = _status(sums, dec_a, dec_b, src)

    rows = RowArrays(
        paths=paths, src=src, ply=ply[src].astype(np.int16), status=status,
        a=SideRows(dec_a, result_of[0], visit_counts[0], src, act_labels),
        b=SideRows(dec_b, result_of[1], visit_counts[1], src, act_labels),
        kind_labels=kind_labels,
        nodes_a=sums[:, 0].astype(np.int64), nodes_b=sums[:, 1].astype(np.int64),
        other_visit_nodes_a=(sums[:, 0] - sums[:, 5]).astype(np.int64),
        other_visit_nodes_b=(sums[:, 1] - sums[:, 6]).astype(np.int64),
        parent=parent_row, subtree_rows=sums[:, 4].astype(np.int64),
    )
    del result_of
    if keep_visits:
        rows.visit_sides = (_VisitSide(a, trees[0], act_a, kind_a, parent), _VisitSide(b, trees[1], act_b, kind_b, parent))
        rows.act_labels = act_labels
    return rows


class SideRows:
    """One side's per-row columns of :class:`RowArrays` (row order), before any pandas wrapping.

    ``seq_codes`` index ``seq_categories``; ``kind_codes`` index the rows' ``kind_labels`` (-1: no
    decision); depths are plies (float32, NaN: none); ``line`` is -1 when unknown.

    Each column is worked out when first read, from the side's decisions grouped by path: compare's
    divergences read ``kind_codes`` of every row and the other columns at a position's few shown rows only
    (:meth:`at`), a fraction of building them all (~0.3 ms a side of a 17k-record position).
    """

    COLUMNS = ("seq_codes", "seq_categories", "kind_codes", "depth", "new_depth", "final_depth", "reduction", "mn",
               "decisions", "visits", "line")

    def __init__(self, dec: _Decisions, results: tuple[np.ndarray, np.ndarray], count: np.ndarray, src: np.ndarray,
                 act_labels: np.ndarray):
        self._dec, self._results, self._count, self._src, self._act_labels = dec, results, count, src, act_labels
        self._columns: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name not in SideRows.COLUMNS:
            raise AttributeError(name)
        if name not in self._columns:
            if name in ("seq_codes", "seq_categories"):
                codes, categories = self._dec.sequence(self._act_labels)
                self._columns["seq_codes"], self._columns["seq_categories"] = codes[self._src], _dedupe(categories)
            else:
                self._columns[name] = self._per_path(name, self._src)
            if len(self._columns) == len(SideRows.COLUMNS):  # every column built: the decisions can go
                self._dec = self._results = self._count = None  # type: ignore[assignment]
        return self._columns[name]

    def at(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Column ``name`` at rows ``rows``: ``getattr(self, name)[rows]`` without building the whole column."""
        if name in self._columns or name in ("seq_codes", "seq_categories"):
            return getattr(self, name)[rows]
        return self._per_path(name, self._src[rows])

    def _per_path(self, name: str, paths: np.ndarray) -> np.ndarray:
        """Column ``name`` (not the sequence) at the path codes ``paths``."""
        dec = self._dec
        if name == "depth":
            depth = dec.first(dec.depth, np.nan, paths)
            no_move = dec.count[paths] == 0
            depth[no_move] = self._results[0][paths][no_move]
            return depth.astype(np.float32)
        if name == "line":
            line = dec.first(dec.line, -1, paths)
            no_move = dec.count[paths] == 0
            line[no_move] = self._results[1][paths][no_move]
            return line
        if name == "kind_codes":
            return np.where(dec.count[paths] > 0, dec.first(dec.kind, -1, paths), -1)
        if name == "final_depth":
            return dec.last(dec.new_depth, np.nan, paths).astype(np.float32)
        if name == "decisions":
            return dec.count[paths].astype(np.int32)
        if name == "visits":
            return self._count[paths]
        return dec.first(getattr(dec, name), np.nan, paths).astype(np.float32)  # new_depth, reduction, mn


@dataclass
class RowArrays:
    """The aligned rows as numpy arrays, in depth-first row order (:meth:`frame` is the rows' DataFrame).

    compare's divergences read these directly: building the DataFrame (categoricals, the path strings,
    nullable lines) costs more per position than attributing it.  ``paths``: the union of paths by code;
    ``src``: each row's path code; ``status``: codes into :data:`STATUS_VALUES`.
    """

    paths: pa.Array
    src: np.ndarray
    ply: np.ndarray
    status: np.ndarray
    a: SideRows
    b: SideRows
    kind_labels: np.ndarray
    nodes_a: np.ndarray
    nodes_b: np.ndarray
    other_visit_nodes_a: np.ndarray
    other_visit_nodes_b: np.ndarray
    parent: np.ndarray
    subtree_rows: np.ndarray
    visit_sides: tuple | None = None
    act_labels: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def path_at(self, rows: np.ndarray) -> list[str]:
        """The path strings of rows ``rows``."""
        return pc.take(self.paths, pa.array(self.src[rows], type=pa.int64())).to_pylist()

    def frame(self) -> pd.DataFrame:
        """The rows as :class:`~treediff.align.api.Alignment` documents them (one row per path)."""
        columns: dict[str, object] = {
            "path": pc.take(self.paths, pa.array(self.src), memory_pool=_POOL).to_pandas(),
            "ply": self.ply,
            "status": pd.Categorical.from_codes(self.status, categories=STATUS_VALUES),
        }
        for side, suffix in ((self.a, "a"), (self.b, "b")):
            columns.update({
                f"seq_{suffix}": pd.Categorical.from_codes(side.seq_codes, categories=side.seq_categories),
                f"kind_{suffix}": pd.Categorical.from_codes(side.kind_codes, categories=list(self.kind_labels)),
                f"depth_{suffix}": side.depth,
                f"new_depth_{suffix}": side.new_depth,
                f"final_depth_{suffix}": side.final_depth,
                f"reduction_{suffix}": side.reduction,
                f"mn_{suffix}": side.mn,
                f"decisions_{suffix}": side.decisions,
                f"visits_{suffix}": side.visits,
                f"line_{suffix}": _nullable_ints(side.line),
            })
        columns.update({
            "nodes_a": self.nodes_a, "nodes_b": self.nodes_b,
            "other_visit_nodes_a": self.other_visit_nodes_a, "other_visit_nodes_b": self.other_visit_nodes_b,
            "parent": self.parent, "subtree_rows": self.subtree_rows,
        })
        # copy=False keeps one block per column: consolidating ~20 columns of
        # millions of rows into 2-D blocks would cost more than the alignment.
        rows = pd.DataFrame(columns, copy=False)
        if self.visit_sides is not None:
            assert self.act_labels is not None
            rows = _with_visit_rows(rows, self.src, self.visit_sides, self.act_labels, self.kind_labels)
        return rows


def _nullable_ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Values (NaN or negative: none) as a nullable integer array (Int32 when they fit, else Int64)."""
    values = np.asarray(values)
    missing = np.isnan(values) if values.dtype.kind == "f" else values < 0
    kept = np.where(missing, 0, values)
    fits = len(kept) == 0 or int(kept.max()) < 2**31
    return pd.arrays.IntegerArray(kept.astype(np.int32 if fits else np.int64), missing)


# ---------------------------------------------------------------------- visits="all"
class _VisitSide:
    """One side's visits that get rows of their own: the other visits of a path within its parent's main visit."""

    def __init__(self, side: _Side, tree: VisitTree, act: np.ndarray, kind: np.ndarray, parent: np.ndarray):
        self.side, self.tree, self.act, self.kind = side, tree, act, kind
        code = tree.code
        p = parent[code]
        main_of_parent = tree.main_visit[np.maximum(p, 0)]
        in_parents_main = (p < 0) | ((main_of_parent > 0) & (tree.parent_visit == main_of_parent))
        has_main = tree.main_visit[code] > 0
        main_idx = np.full(len(tree.main_visit), -1, dtype=np.int64)
        main_idx[code[tree.is_main]] = np.flatnonzero(tree.is_main)
        other = np.flatnonzero(in_parents_main & has_main & ~tree.is_main & (main_idx[code] >= 0))
        m = main_idx[code[other]]
        depth = side.depth[tree.result]
        before = tree.result[other] < tree.result[m]
        # verify: a shallower visit before the main one; re-search: any other (an earlier visit at the
        # main visit's depth or deeper, e.g. the root's earlier aspiration attempts; a later, shallower one).
        verify = before & (depth[other] < depth[m])
        self.visits = other                       #: RESULT indices (into the tree's arrays)
        self.label = np.where(verify, 1, 2)       #: index into VISIT_LABELS
        self.main_idx = main_idx                  #: per path code: its main visit's RESULT index (-1: none)
        # Rank among the path's visits of the same label, in visit order.
        key = code[other] * 4 + self.label
        o = np.lexsort((tree.result[other], key))
        first = np.r_[True, key[o][1:] != key[o][:-1]] if len(o) else np.zeros(0, dtype=bool)
        run = np.cumsum(first) - 1
        starts = np.flatnonzero(first)
        rank = np.empty(len(other), dtype=np.int64)
        rank[o] = np.arange(len(o)) - starts[run] if len(o) else np.zeros(0, dtype=np.int64)
        self.rank = rank

    def frame(self) -> pd.DataFrame:
        """The keys of these visits: path code, label, rank, and the RESULT index."""
        t = self.tree
        return pd.DataFrame({"code": t.code[self.visits], "label": self.label, "rank": self.rank,
                             "r": self.visits})

    def columns(self, r: np.ndarray, suffix: str, act_labels: np.ndarray, kind_labels: np.ndarray) -> dict:
        """Per visit (RESULT index, -1: this side has no such visit): its entering decision and its nodes."""
        t, side = self.tree, self.side
        has = r >= 0
        rr = np.maximum(r, 0)
        e = np.where(has, t.entering[rr] if len(t.entering) else -1, -1)
        dec = e >= 0
        ee = np.maximum(e, 0)

        def of_entry(values: np.ndarray, fill=np.nan) -> np.ndarray:
            out = np.full(len(r), fill, dtype=np.float64)
            out[dec] = values[ee[dec]]
            return out

        def of_result(values: np.ndarray, fill=np.nan) -> np.ndarray:
            out = np.full(len(r), fill, dtype=np.float64)
            out[has] = values[t.result[rr[has]]]
            return out

        act = np.full(len(r), -1, dtype=np.int64)
        act[dec] = self.act[ee[dec]]
        kind = np.full(len(r), -1, dtype=np.int64)
        kind[dec] = self.kind[ee[dec]]
        names = np.asarray([*act_labels, "?"], dtype=object)
        seq = np.where(dec, names[np.where(act >= 0, act, len(act_labels))], "")
        nodes = np.zeros(len(r), dtype=np.int64)
        nodes[has] = t.nodes[rr[has]]
        visit = np.zeros(len(r), dtype=np.float64)
        visit[has] = t.visit[rr[has]]
        visit[~has] = np.nan
        new_depth = of_entry(side.new_depth)
        return {
            f"seq_{suffix}": seq,
            f"kind_{suffix}": pd.Categorical.from_codes(kind, categories=list(kind_labels)),
            f"depth_{suffix}": of_entry(side.depth).astype(np.float32),
            f"new_depth_{suffix}": new_depth.astype(np.float32),
            f"final_depth_{suffix}": new_depth.astype(np.float32),
            f"reduction_{suffix}": of_entry(side.reduction).astype(np.float32),
            f"mn_{suffix}": of_entry(side.mn).astype(np.float32),
            f"decisions_{suffix}": dec.astype(np.int32),
            f"line_{suffix}": _nullable_ints(np.where(of_result(side.line) < 0, np.nan, of_result(side.line))),
            f"nodes_{suffix}": nodes,
            f"other_visit_nodes_{suffix}": np.zeros(len(r), dtype=np.int64),
            f"visit_{suffix}": _nullable_ints(visit),
            f"visit_depth_{suffix}": of_result(side.depth).astype(np.float32),
            "_act": act,
        }


def _with_visit_rows(rows: pd.DataFrame, src: np.ndarray, sides: tuple[_VisitSide, _VisitSide],
                     act_labels: np.ndarray, kind_labels: np.ndarray) -> pd.DataFrame:
    """``rows`` with a row per other visit inserted after each path's row (``visits="all"``)."""
    n = len(rows)
    row_of_code = np.empty(len(src), dtype=np.int64)
    row_of_code[src] = np.arange(n)
    # The main rows: their main visit's number and depth per side.
    for vs, suffix in zip(sides, ("a", "b")):
        idx = vs.main_idx[src]
        has = idx >= 0
        ii = np.maximum(idx, 0)
        visit = np.where(has, vs.tree.visit[ii] if len(vs.tree.visit) else 0, 0).astype(np.float64)
        visit[~has] = np.nan
        depth = np.full(n, np.nan)
        depth[has] = vs.side.depth[vs.tree.result[ii[has]]]
        rows[f"visit_{suffix}"] = _nullable_ints(visit)
        rows[f"visit_depth_{suffix}"] = depth.astype(np.float32)
    rows["visit_label"] = VISIT_LABELS[0]
    # Other visits, paired across the sides by (path, label, rank).
    fa, fb = sides[0].frame(), sides[1].frame()
    pairs = fa.merge(fb, on=["code", "label", "rank"], how="outer", suffixes=("_a", "_b"))
    if len(pairs) == 0:
        rows["visit_label"] = pd.Categorical(rows["visit_label"], categories=list(VISIT_LABELS))
        return rows
    ra = pairs["r_a"].fillna(-1).to_numpy(dtype=np.int64)
    rb = pairs["r_b"].fillna(-1).to_numpy(dtype=np.int64)
    code = pairs["code"].to_numpy(dtype=np.int64)
    label = pairs["label"].to_numpy(dtype=np.int64)
    at = row_of_code[code]
    seq_of = [sides[0].tree.result, sides[1].tree.result]
    when = np.where(ra >= 0, seq_of[0][np.maximum(ra, 0)] if len(seq_of[0]) else 0,
                    (seq_of[1][np.maximum(rb, 0)] if len(seq_of[1]) else 0))
    o = np.lexsort((when, (ra < 0).astype(np.int64), at))
    ra, rb, code, label, at = ra[o], rb[o], code[o], label[o], at[o]
    ca = sides[0].columns(ra, "a", act_labels, kind_labels)
    cb = sides[1].columns(rb, "b", act_labels, kind_labels)
    act_a, act_b = ca.pop("_act"), cb.pop("_act")
    both = (ra >= 0) & (rb >= 0)
    same = both & (act_a == act_b)
    for col in ("depth", "new_depth", "reduction", "visit_depth"):
        same &= _same_float(np.asarray(ca[f"{col}_a"], dtype=np.float64), np.asarray(cb[f"{col}_b"], dtype=np.float64))
    status = np.where(same, 0, np.where(both, 1, np.where(ra >= 0, 2, 3)))
    extra: dict[str, object] = {
        "path": rows["path"].to_numpy(dtype=object)[at],
        "ply": rows["ply"].to_numpy()[at],
        "status": pd.Categorical.from_codes(status, categories=STATUS_VALUES),
    }
    extra.update(ca)
    extra.update(cb)
    extra.update({
        "visits_a": rows["visits_a"].to_numpy()[at],
        "visits_b": rows["visits_b"].to_numpy()[at],
        "parent": rows["parent"].to_numpy()[at],
        "subtree_rows": np.ones(len(at), dtype=np.int64),
        "visit_label": np.asarray(VISIT_LABELS, dtype=object)[label],
    })
    extra_frame = pd.DataFrame(extra)
    # New positions: a path's row, then its other visits, then its subtree.
    per_row = np.bincount(at, minlength=n)
    before = np.cumsum(per_row) - per_row            # other-visit rows attached to rows before each row
    new_pos = np.arange(n) + before
    rank_in_row = np.arange(len(at)) - np.searchsorted(at, at)
    extra_pos = new_pos[at] + 1 + rank_in_row
    size = rows["subtree_rows"].to_numpy()
    end = np.arange(n) + size                         # first row after each subtree
    attached_until = np.concatenate(([0], np.cumsum(per_row)))
    new_size = size + attached_until[end] - attached_until[np.arange(n)]
    main = rows.copy()
    main["subtree_rows"] = new_size
    parent = main["parent"].to_numpy()
    main["parent"] = np.where(parent >= 0, new_pos[np.maximum(parent, 0)], -1)
    extra_frame["parent"] = np.where(extra_frame["parent"] >= 0, new_pos[np.maximum(extra_frame["parent"], 0)], -1)
    merged = pd.concat([main, extra_frame[main.columns]], ignore_index=True)
    order = np.empty(len(merged), dtype=np.int64)
    order[new_pos] = np.arange(n)
    order[extra_pos] = n + np.arange(len(at))
    out = merged.iloc[order].reset_index(drop=True)
    for col in ("seq_a", "seq_b"):
        out[col] = pd.Categorical(out[col].astype(object))
    for col in ("kind_a", "kind_b"):
        out[col] = pd.Categorical(out[col].astype(object), categories=list(kind_labels))
    out["status"] = pd.Categorical(out["status"].astype(object), categories=STATUS_VALUES)
    out["visit_label"] = pd.Categorical(out["visit_label"], categories=list(VISIT_LABELS))
    return out

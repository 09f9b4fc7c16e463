"""The :class:`Table` protocol every report table follows, and what its two halves receive.

A report table is one module in :mod:`treediff.report.tables` holding both halves:

* ``partial(batch)``: small aggregates of one :class:`Batch` of records,
  keyed by (search row, iteration, record key) *cells*, so that partials of
  disjoint batches add up (a batch always holds whole searches); the record
  key is 0 unless the report is grouped by a record-level key (``--by ply``,
  ``--by depth``, :data:`~treediff.report.grouping.RECORD_KEYS`), and a
  table never needs to look at it: :meth:`Batch.cell_frame` writes it and
  :meth:`Grouping.group_of` reads it;
* ``finish(partials, grouping)``: merges the partials of every batch, maps
  cells to the report's groups (:class:`Grouping`) and returns the table's
  :class:`Section` (s).

An input held in memory is simply one batch; a dataset is many.  Nothing is
shared between tables through caches: a table that needs another's
aggregate computes it itself (they are bincounts, cheap next to reading).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, Sequence

import numpy as np
import pandas as pd

from treediff.report.grouping import RECORD_KEYS, RecordGroups, SearchGroups, codes_of, group_searches

#: Iteration numbers are int16: (row, iteration) cells are packed as row * ITER_SPAN + iteration.
ITER_SPAN = 1 << 16
#: Record keys are packed in 26 bits: the node type (``nt``) in the top 2, the deciding node's ply in the next
#: 12, its remaining depth in the low 12.
KEY_SPAN = 1 << 26
_FIELD = 1 << 12
#: Node type codes in the record key (0: none or another value).
NT_VALUES = (None, "PV", "CUT", "ALL")
#: Depth codes: whole plies + _DEPTH_ZERO; code 0 is "no depth".
_DEPTH_ZERO = 1 << 11


def record_key_codes(records: pd.DataFrame, is_move: np.ndarray, keys: Sequence[str]) -> np.ndarray:
    """Each record's packed record key for the record-level ``keys`` (0 when there are none).

    ``ply``: the deciding node's ply (a MOVE record's ``ply`` − 1, a RESULT's
    ``ply``).  ``depth``: the deciding node's remaining depth in whole plies
    (``floor(d)``: a MOVE record's ``d`` is its node's depth at the decision,
    a RESULT's ``d`` the node's entry depth).
    """
    n = len(records)
    packed = np.zeros(n, dtype=np.int64)
    if "ply" in keys and n:
        ply = np.asarray(records["ply"].fillna(0), dtype=np.int64) - is_move.astype(np.int64)
        packed += np.clip(ply, 0, _FIELD - 1) * _FIELD
    if "depth" in keys and n:
        depth = np.asarray(records["depth"], dtype=np.float64)
        known = ~np.isnan(depth)
        code = np.zeros(n, dtype=np.int64)
        code[known] = np.clip(np.floor(depth[known]), 1 - _DEPTH_ZERO, _DEPTH_ZERO - 1).astype(np.int64) + _DEPTH_ZERO
        packed += code
    if "nt" in keys and n and "node_type" in records:
        codes, cats = codes_of(records["node_type"])
        lut = np.asarray([NT_VALUES.index(c) if c in NT_VALUES else 0 for c in cats.tolist()] + [0], dtype=np.int64)
        packed += lut[codes] * (_FIELD * _FIELD)
    return packed


def decode_record_key(packed: np.ndarray, key: str) -> np.ndarray:
    """The values of one record-level key from packed record keys (depth: float, NaN when unknown; nt: object,
    None when unknown)."""
    packed = np.asarray(packed, dtype=np.int64)
    if key == "nt":
        nt: np.ndarray = np.asarray(NT_VALUES, dtype=object)[packed // (_FIELD * _FIELD)]
        return nt
    if key == "ply":
        return (packed // _FIELD) % _FIELD
    code = packed % _FIELD
    return np.where(code > 0, (code - _DEPTH_ZERO).astype(np.float64), np.nan)


@dataclass(frozen=True)
class ReportOptions:
    """Report-wide choices a table's ``finish`` may consult (they never change a partial)."""

    #: ``--allow-different-depths``: the nodes table's ratio between groups of different depths.
    allow_different_depths: bool = False
    #: ``--bucket``: the fh table's bucket keys (treediff.report.tables.fh.BUCKETS), in display order.
    fh_buckets: tuple[str, ...] = ("kind", "depth", "mn")


@dataclass
class Section:
    """One rendered table: a stable ``name`` (used as JSON key / CSV section), a title and the data."""

    name: str
    title: str
    frame: pd.DataFrame
    keys: tuple[str, ...] = ()  #: grouping columns at the left of ``frame``
    #: Sentences about the numbers (why a ratio is undefined, ...): after the table in the human formats,
    #: ``notes`` in JSON.
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    """The tables of one ``treediff report`` run, in display order."""

    sections: list[Section] = field(default_factory=list)
    keys: tuple[str, ...] = ("engine",)

    def __getitem__(self, name: str) -> pd.DataFrame:
        for s in self.sections:
            if s.name == name:
                return s.frame
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sections]


class Batch:
    """Records of whole searches, each record mapped to its (search row, iteration, record key) cell.

    ``records`` holds at least the columns the tables asked for;
    ``row_of[search]`` is the searches-table row of a ``search`` number;
    ``record_keys`` are the report's record-level grouping keys (``ply``,
    ``depth``; each record's packed value is its cell's third component).
    :attr:`record_groups` numbers the cells, so the per-group counting
    helpers of the table modules run unchanged on a batch (a cell is a group).
    """

    def __init__(self, records: pd.DataFrame, searches: pd.DataFrame, row_of: np.ndarray,
                 record_keys: Sequence[str] = (), srow: np.ndarray | None = None):
        self.records = records
        self.searches = searches
        self._codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._flags: dict[str, np.ndarray] = {}
        self._strings: dict[str, Any] = {}
        #: Whether a table folded over this batch reads the full move-try derivation (a table with
        #: ``full_tries = True``): then a light request derives the full one, which every table shares.
        self.wants_full_tries = False
        self.record_keys = tuple(k for k in RECORD_KEYS if k in record_keys)
        if srow is None:  # ``srow``: the caller's row_of[records' search], when it has it
            srow = row_of[np.asarray(records["search"], dtype=np.int64)] if len(records) else np.zeros(0, np.int64)
        self.srow = np.asarray(srow, dtype=np.int64)
        packed = self.srow * ITER_SPAN + self.iters
        if self.record_keys:
            packed = packed * KEY_SPAN + record_key_codes(records, self.is_move, self.record_keys)
        cells, inverse = sorted_codes(packed)
        span = KEY_SPAN if self.record_keys else 1
        #: Per cell: its searches row, iteration and packed record key.
        self.cell_key = (cells % span).astype(np.int64)
        cells = cells // span
        self.cell_srow = (cells // ITER_SPAN).astype(np.int64)
        self.cell_iter = (cells % ITER_SPAN).astype(np.int64)
        groups = pd.DataFrame({"srow": self.cell_srow, "iter": self.cell_iter})
        self.record_groups = RecordGroups(("engine", "iter"), inverse.astype(np.int64).reshape(-1), groups)

    @property
    def n_cells(self) -> int:
        return len(self.cell_srow)

    @cached_property
    def is_move(self) -> np.ndarray:
        return self.equals("tag", "MOVE")

    @cached_property
    def is_result(self) -> np.ndarray:
        return self.equals("tag", "RESULT")

    def equals(self, column: str, value: str) -> np.ndarray:
        """Records whose string ``column`` is ``value`` (compared once per category, not per record)."""
        codes, cats = self.codes(column)
        hits = np.flatnonzero(cats == value)
        if len(hits) == 0:
            return np.zeros(len(codes), dtype=bool)
        return np.asarray(codes == hits[0], dtype=bool)

    def codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Integer codes and categories of a string column of the records (computed once per batch)."""
        if column not in self._codes:
            self._codes[column] = codes_of(self.records[column])
        return self._codes[column]

    def kind_mask(self, kind: str) -> np.ndarray:
        return self.equals("kind", kind)

    def flag(self, column: str) -> np.ndarray:
        """A boolean column of the records with missing values as False (computed once per batch; all False
        when the records lack it): ``np.asarray(records[column].fillna(False), dtype=bool)``."""
        if column not in self._flags:
            self._flags[column] = (flag_values(self.records[column]) if column in self.records
                                   else np.zeros(len(self.records), dtype=bool))
        return self._flags[column]

    def arrow_strings(self, column: str) -> Any:
        """A string column of the records as one Arrow ``large_string`` array, nulls kept (made once per batch:
        the move-try derivation and scope both read the paths so, and each joining and casting the column's
        chunks copied every path).  No copy of an Arrow-backed column's strings beyond that join."""
        if column not in self._strings:
            import pyarrow as pa

            values = pa.array(self.records[column], from_pandas=True)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            self._strings[column] = values.cast(pa.large_string()) if values.type != pa.large_string() else values
        return self._strings[column]

    @cached_property
    def iters(self) -> np.ndarray:
        """Each record's iteration (root depth in plies; 0 without ITER markers)."""
        if not len(self.records):
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self.records["iter"].fillna(0), dtype=np.int64)

    @cached_property
    def plies(self) -> np.ndarray:
        return np.asarray(self.records["ply"].fillna(0), dtype=np.int64)

    def cell_frame(self, cell: np.ndarray, **columns: Any) -> pd.DataFrame:
        """A partial keyed by (srow, iter, key) of the given cells, plus ``columns``."""
        cell = np.asarray(cell, dtype=np.int64)
        return pd.DataFrame({"srow": self.cell_srow[cell], "iter": self.cell_iter[cell], "key": self.cell_key[cell],
                             **columns})


class Grouping:
    """The report's groups and the map from (search row, iteration, record key) cells to them.

    ``cells`` lists every cell holding records (over all batches; columns
    ``srow``, ``iter`` and, with record-level keys, ``key``).  With search
    keys only, a group is a search group (engine, source, phase, position);
    with ``iter`` and/or a record-level key (``ply``, ``depth``), each
    (search group, iteration, record key) combination that holds records.
    ``options``: the report-wide :class:`ReportOptions`.
    """

    def __init__(self, searches: pd.DataFrame, keys: tuple[str, ...], cells: pd.DataFrame,
                 options: ReportOptions | None = None):
        self.searches = searches
        self.keys = keys
        self.options = options or ReportOptions()
        self.search_groups: SearchGroups = group_searches(searches, keys)
        sg = self.search_groups
        self.record_keys = tuple(k for k in RECORD_KEYS if k in keys)
        self.cell_level = "iter" in keys or bool(self.record_keys)
        if self.cell_level:
            packed = self._pack(cells)
            self._cells = np.unique(packed)
            rest = self._cells // KEY_SPAN
            groups = sg.groups.iloc[rest // ITER_SPAN].reset_index(drop=True)
            if "iter" in keys:
                groups["iter"] = (rest % ITER_SPAN).astype(np.int64)
            for key in self.record_keys:
                values = decode_record_key(self._cells % KEY_SPAN, key)
                if key == "nt":
                    groups[key] = values
                    continue
                groups[key] = (values.astype(np.int64) if not np.isnan(values).any()
                               else pd.Series(values).astype("Int64").to_numpy(dtype=object))
            self.groups = groups
            #: Each group's search group (its row of ``search_groups.groups``).
            self.group_search_group = np.asarray(rest // ITER_SPAN, dtype=np.int64)
        else:
            self.groups = sg.groups
            self.group_search_group = np.arange(len(sg.groups), dtype=np.int64)

    def _pack(self, frame: pd.DataFrame) -> np.ndarray:
        rows = frame["srow"].to_numpy(dtype=np.int64)
        packed = self.search_groups.search_group[rows] * ITER_SPAN
        if "iter" in self.keys:
            packed = packed + frame["iter"].to_numpy(dtype=np.int64)
        packed = packed * KEY_SPAN
        if self.record_keys and "key" in frame.columns:
            key = frame["key"].to_numpy(dtype=np.int64)
            nt, ply, depth = key // (_FIELD * _FIELD), (key // _FIELD) % _FIELD, key % _FIELD
            key = ((nt if "nt" in self.record_keys else 0) * _FIELD * _FIELD
                   + (ply if "ply" in self.record_keys else 0) * _FIELD
                   + (depth if "depth" in self.record_keys else 0))
            packed = packed + key
        return np.asarray(packed, dtype=np.int64)

    @property
    def n(self) -> int:
        return len(self.groups)

    def group_of(self, frame: pd.DataFrame) -> np.ndarray:
        """The group number of each row of a partial (its ``srow``, ``iter`` and ``key`` columns)."""
        if self.cell_level:
            return np.asarray(np.searchsorted(self._cells, self._pack(frame)), dtype=np.int64)
        return np.asarray(self.search_groups.search_group[frame["srow"].to_numpy(dtype=np.int64)], dtype=np.int64)

    def total(self, frame: pd.DataFrame, column: str) -> np.ndarray:
        """Σ ``column`` of a partial per group (integers)."""
        if column not in frame.columns or not len(frame):
            return np.zeros(self.n, dtype=np.int64)
        return np.bincount(self.group_of(frame), weights=frame[column].fillna(0).to_numpy(dtype=np.float64),
                           minlength=self.n).astype(np.int64)


class Table(Protocol):
    """One report table (see the module docstring); registered in :data:`treediff.report.tables.TABLES`."""

    @property
    def name(self) -> str:
        """The ``--table`` name."""

    @property
    def columns(self) -> tuple[str, ...]:
        """Records columns ``partial`` reads (``engine`` and ``search`` are always there)."""

    def partial(self, batch: Batch) -> Any:
        """Aggregates of one batch, additive across batches."""

    def finish(self, partials: Sequence[Any], grouping: Grouping) -> list[Section]:
        """The table's sections from every batch's partial."""


def concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """Partials of all batches as one frame (an empty one with ``columns`` when there are none)."""
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in columns})
    return pd.concat(frames, ignore_index=True)


def sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of int64 values: hashed (pandas' factorize) and only the
    distinct values sorted, not every value (a batch has ~1e5-1e6 records and ~1e3 cells)."""
    values = np.asarray(values, dtype=np.int64)
    codes, uniques = pd.factorize(values)
    uniques = np.asarray(uniques, dtype=np.int64)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[order] = np.arange(len(uniques), dtype=np.int64)
    return uniques[order], rank[np.asarray(codes, dtype=np.int64)]


def flag_values(column: pd.Series) -> np.ndarray:
    """``np.asarray(column.fillna(False), dtype=bool)`` without pandas' missing-value scan of an object column.

    A bool Arrow column with nulls reads back as an object column of True/False/None: its fillna (an
    ``isna`` over Python objects, then a new object array) cost ~0.1 CPU-µs a record, three tables a batch.
    Here an object column is cast by truth value (None -> False, as fillna then bool would) and float NaN,
    the one missing value that is truthy, is found as the values unequal to themselves; anything else
    (pd.NA, nullable dtypes) goes through fillna as before.
    """
    if column.dtype == bool:
        return np.asarray(column.to_numpy(), dtype=bool)
    if isinstance(column.dtype, pd.BooleanDtype):  # (what the sources' batches hold: records_frame)
        return np.asarray(column.to_numpy(dtype=bool, na_value=False), dtype=bool)
    if column.dtype == object:
        values = column.to_numpy()
        try:
            out: np.ndarray = np.asarray(values.astype(bool), dtype=bool)
            unequal = np.asarray(values != values, dtype=bool)  # float NaN (fillna makes it False)
        except (TypeError, ValueError):  # pd.NA's truth value is ambiguous: the general path
            pass
        else:
            if unequal.shape == out.shape:
                out[unequal] = False
                return out
    if column.dtype.kind == "f":  # NaN -> False, else the truth value (pandas 3 warns on a bool fill of floats)
        floats = column.to_numpy(dtype=np.float64, na_value=np.nan)  # (a nullable Float64's NA too)
        return np.asarray((floats != 0) & ~np.isnan(floats), dtype=bool)
    # (through object: a False fill of another dtype, e.g. nullable integers, is deprecated in pandas 3)
    return np.asarray(column.astype(object).fillna(False), dtype=bool)


def none_for_nan(values: np.ndarray) -> np.ndarray:
    """Object array with None where pandas sees a missing value (missing acts stay None, not NaN)."""
    values = np.asarray(values, dtype=object)
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return values

"""The :class:`Table` protocol every report table follows, and what its two halves receive.

A report table is one module in :mod:`treediff.report.tables` holding both halves:

* ``partial(batch)``: small aggregates of one :class:`Batch` of records,
  keyed by (search row, iteration) *cells*, so that partials of disjoint
  batches add up (a batch always holds whole searches);
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

from treediff.report.grouping import RecordGroups, SearchGroups, codes_of, group_searches

#: Iteration numbers are int16: (row, iteration) cells are packed as row * ITER_SPAN + iteration.
ITER_SPAN = 1 << 16


@dataclass
class Section:
    """One rendered table: a stable ``name`` (used as JSON key / CSV section), a title and the data."""

    name: str
    title: str
    frame: pd.DataFrame
    keys: tuple[str, ...] = ()  #: grouping columns at the left of ``frame``


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
    """Records of whole searches, each record mapped to its (search row, iteration) cell.

    ``records`` holds at least the columns the tables asked for;
    ``row_of[search]`` is the searches-table row of a ``search`` number.
    :attr:`record_groups` numbers the cells, so the per-group counting
    helpers of the table modules run unchanged on a batch (a cell is a group).
    """

    def __init__(self, records: pd.DataFrame, searches: pd.DataFrame, row_of: np.ndarray):
        self.records = records
        self.searches = searches
        self.srow = row_of[np.asarray(records["search"], dtype=np.int64)] if len(records) else np.zeros(0, np.int64)
        packed = self.srow * ITER_SPAN + self.iters
        cells, inverse = np.unique(packed, return_inverse=True)
        #: Per cell: its searches row and iteration.
        self.cell_srow = (cells // ITER_SPAN).astype(np.int64)
        self.cell_iter = (cells % ITER_SPAN).astype(np.int64)
        groups = pd.DataFrame({"srow": self.cell_srow, "iter": self.cell_iter})
        self.record_groups = RecordGroups(("engine", "iter"), inverse.astype(np.int64).reshape(-1), groups)
        self._codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}

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
        """A partial keyed by (srow, iter) of the given cells, plus ``columns``."""
        cell = np.asarray(cell, dtype=np.int64)
        return pd.DataFrame({"srow": self.cell_srow[cell], "iter": self.cell_iter[cell], **columns})


class Grouping:
    """The report's groups and the map from (search row, iteration) cells to them.

    ``cells`` lists every (srow, iter) cell holding records (over all
    batches).  Without ``iter`` in the keys a group is a search group
    (engine, source, phase, position); with it, each (search group,
    iteration) pair that holds records.
    """

    def __init__(self, searches: pd.DataFrame, keys: tuple[str, ...], cells: pd.DataFrame):
        self.searches = searches
        self.keys = keys
        self.search_groups: SearchGroups = group_searches(searches, keys)
        sg = self.search_groups
        if "iter" in keys:
            self._width = int(cells["iter"].max()) + 1 if len(cells) else 1
            packed = self._pack(cells)
            self._cells = np.unique(packed)
            groups = sg.groups.iloc[self._cells // self._width].reset_index(drop=True)
            groups["iter"] = (self._cells % self._width).astype(np.int64)
            self.groups = groups
        else:
            self.groups = sg.groups

    def _pack(self, frame: pd.DataFrame) -> np.ndarray:
        rows = frame["srow"].to_numpy(dtype=np.int64)
        packed = self.search_groups.search_group[rows] * self._width + frame["iter"].to_numpy(dtype=np.int64)
        return np.asarray(packed, dtype=np.int64)

    @property
    def n(self) -> int:
        return len(self.groups)

    def group_of(self, frame: pd.DataFrame) -> np.ndarray:
        """The group number of each row of a partial (its ``srow`` and ``iter`` columns)."""
        if "iter" in self.keys:
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


def none_for_nan(values: np.ndarray) -> np.ndarray:
    """Object array with None where pandas sees a missing value (missing acts stay None, not NaN)."""
    values = np.asarray(values, dtype=object)
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return values

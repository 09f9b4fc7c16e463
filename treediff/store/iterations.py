"""A search's iteration profile: per (search, iteration), its RESULT records, its root RESULT records and the
deepest root RESULT's depth.

compare pairs searches by the iterations they completed (:mod:`treediff.report.pairing`: an iteration is
completed when it holds a root RESULT record).  The report folds the profile from the records
(``pairing.ITERATIONS``), which costs a read of every record of a side before its figures can be read cut to
the pairing.  A spilled log's writer (:class:`treediff.store.spill.SpillWriter`) counts the same profile from
the parts it writes, so compare gets it from the spill without that read
(:meth:`treediff.store.source.Source.iteration_profile`).  Both count with :func:`cell_counts`.

Units: ``iter`` is the iteration (root depth, plies; 0 for records before the first ITER marker or in a log
without them); ``root_depth`` is a root RESULT record's ``d`` (plies; ``-inf`` when the cell holds no root
RESULT, NaN when one of its root RESULTs has no ``d``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from treediff.store.arrays import equals, numbers, primitive

if TYPE_CHECKING:  # (pandas at the edges only: a log's parse counts and writes the profile without it)
    import pandas as pd

__all__ = ["PROFILE_COLUMNS", "cell_counts", "merge_counts", "merge_profiles", "profile_counts", "profile_of",
           "profile_table"]

#: The profile's columns: one row per (search, iter) holding records.
PROFILE_COLUMNS = ("search", "iter", "results", "roots", "root_depth")
#: Records columns the profile is counted from.
PROFILE_RECORD_COLUMNS = ("search", "iter", "tag", "ply", "depth")
#: (search, iter) packed as search * _SPAN + (iter + _ITER_OFFSET): ``iter`` is int16.
_ITER_OFFSET = 1 << 15
_SPAN = 1 << 16


def cell_counts(cell: np.ndarray, n_cells: int, is_result: np.ndarray, plies: np.ndarray,
                depth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell (``cell``: each record's cell number, below ``n_cells``): RESULT records, root (ply 0) RESULT
    records (int64 each) and the deepest root RESULT's ``depth`` (float64; ``-inf`` without one, NaN when one
    has no depth: ``np.maximum`` keeps NaN).  ``plies``: each record's ply, nulls as 0; ``depth`` float64."""
    root = is_result & (plies == 0)
    results = np.bincount(cell[is_result], minlength=n_cells).astype(np.int64)
    roots = np.bincount(cell[root], minlength=n_cells).astype(np.int64)
    deepest = np.full(n_cells, -np.inf)
    if root.any():
        with np.errstate(invalid="ignore"):  # (a NaN depth stays NaN: that is the point)
            np.maximum.at(deepest, cell[root], np.asarray(depth, dtype=np.float64)[root])
    return results, roots, deepest


def _packed(search: np.ndarray, iters: np.ndarray) -> np.ndarray:
    return search.astype(np.int64) * _SPAN + (iters.astype(np.int64) + _ITER_OFFSET)


def _cells(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``packed`` (sorted) and each value's index among them.  A records table holds
    long runs of one (search, iteration), so the runs are found first and only their values sorted."""
    n = len(packed)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], packed[1:] != packed[:-1])))
    cells, run_cell = np.unique(packed[starts], return_inverse=True)
    return cells, np.repeat(run_cell.reshape(-1), np.diff(np.append(starts, n)))


#: Records counted at a time by :func:`profile_of` (its per-record arrays, ~50 bytes a record, stay small
#: however large the table: the spill writer counts beside the parse).
SLICE_ROWS = 1 << 16


def profile_of(table: pa.Table | pa.RecordBatch) -> pd.DataFrame:
    """The profile of a records table (it needs :data:`PROFILE_RECORD_COLUMNS`): one row per (search, iter)
    holding records, in (search, iter) order; ``iter`` and ``ply`` nulls count as 0, as a report batch reads
    them.  Counted :data:`SLICE_ROWS` records at a time and merged (:func:`merge_profiles`: the same counts),
    in numpy: one frame at the end (a frame a slice cost the spill writer ~28 ns a record, holding the GIL)."""
    return _frame(*profile_counts(table))


#: One table's profile as arrays: packed (search, iter) cells (sorted, distinct), and per cell its RESULT
#: records, root RESULT records and deepest root depth (:func:`cell_counts`).
Counts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def profile_counts(table: pa.Table | pa.RecordBatch) -> Counts:
    """:func:`profile_of` as arrays (:data:`Counts`), without a frame: what the spill writer keeps a part."""
    counts = [_slice_counts(table.slice(start, SLICE_ROWS)) for start in range(0, table.num_rows, SLICE_ROWS)]
    return counts[0] if len(counts) == 1 else merge_counts(counts)


def profile_table(counts: Counts) -> pa.Table:
    """The profile of ``counts`` as an Arrow table of :data:`PROFILE_COLUMNS` (int64, and ``root_depth``
    float64), as :func:`profile_of`'s frame converts: the spill writer's file, written without pandas."""
    search, iters, results, roots, deepest = _columns(*counts)
    return pa.table({"search": primitive(search, pa.int64()), "iter": primitive(iters, pa.int64()),
                     "results": primitive(results, pa.int64()), "roots": primitive(roots, pa.int64()),
                     "root_depth": primitive(deepest, pa.float64())})


def _slice_counts(table: pa.Table | pa.RecordBatch) -> Counts:
    search = numbers(table.column("search"), np.int64, 0)
    iters = numbers(table.column("iter"), np.int64, 0)
    cells, cell = _cells(_packed(search, iters))
    is_result = equals(table.column("tag"), "RESULT")
    depth = numbers(table.column("depth"), np.float64, np.nan)
    return (cells, *cell_counts(cell, len(cells), is_result, numbers(table.column("ply"), np.int64, 0), depth))


def _columns(cells: np.ndarray, results: np.ndarray, roots: np.ndarray,
             deepest: np.ndarray) -> tuple[np.ndarray, ...]:
    return ((cells // _SPAN).astype(np.int64), (cells % _SPAN - _ITER_OFFSET).astype(np.int64), results, roots,
            deepest)


def _frame(cells: np.ndarray, results: np.ndarray, roots: np.ndarray, deepest: np.ndarray) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(dict(zip(PROFILE_COLUMNS, _columns(cells, results, roots, deepest))))


def merge_profiles(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The profile of the records of several tables (a search's records may lie in several): counts added,
    depths the maximum (NaN kept, as :func:`cell_counts` over all the records at once gives)."""
    return _frame(*merge_counts([(_packed(part["search"].to_numpy(dtype=np.int64),
                                           part["iter"].to_numpy(dtype=np.int64)),
                                   part["results"].to_numpy(dtype=np.int64), part["roots"].to_numpy(dtype=np.int64),
                                   part["root_depth"].to_numpy(dtype=np.float64)) for part in parts]))


def merge_counts(parts: list[Counts]) -> Counts:
    """Several tables' counts as one table's (see :func:`merge_profiles`)."""
    if not parts:
        return (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.float64))
    cells, cell = np.unique(np.concatenate([part[0] for part in parts]), return_inverse=True)
    cell = cell.reshape(-1)
    results = np.zeros(len(cells), dtype=np.int64)
    roots = np.zeros(len(cells), dtype=np.int64)
    np.add.at(results, cell, np.concatenate([part[1] for part in parts]))
    np.add.at(roots, cell, np.concatenate([part[2] for part in parts]))
    deepest = np.full(len(cells), -np.inf)
    with np.errstate(invalid="ignore"):
        np.maximum.at(deepest, cell, np.concatenate([part[3] for part in parts]))
    return cells, results, roots, deepest

"""Building a report: fold every table's partial over a source's batches, then finish each table.

Definitions of every table are in ``docs/REPORTS.md`` and in the docstrings of
the modules in :mod:`treediff.report.tables`.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Protocol, Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report.grouping import RECORD_KEY_COLUMNS, RECORD_KEYS, parse_by
from treediff.report.table import Batch, Grouping, Report, ReportOptions, Section, Table, concat
from treediff.report.tables import TABLES as REGISTRY
from treediff.store.source import BATCH_RECORDS, FrameSource, Source

#: The tables ``--table`` accepts, in display order.
TABLES = tuple(REGISTRY)

__all__ = ["TABLES", "RecordFilter", "Report", "ReportOptions", "Section", "build_report", "columns_for",
           "fold_tables", "parse_tables", "report_frames"]


class RecordFilter(Protocol):
    """Which records of a batch a report counts (``--under``, compare's cut to a common depth).

    Searches stay whole in a batch; a filter only drops records of them.
    """

    @property
    def columns(self) -> tuple[str, ...]:
        """Records columns :meth:`mask` reads."""

    def mask(self, records: pd.DataFrame) -> np.ndarray:
        """A boolean per record: True to keep it."""


def parse_tables(tables: str | Iterable[str] | None) -> tuple[str, ...]:
    """Normalize ``--table`` (comma-separated, ``all`` for every table) to names in display order."""
    if tables is None:
        return TABLES
    items = [t.strip() for t in (tables.split(",") if isinstance(tables, str) else tables) if t.strip()]
    if not items or "all" in items:
        return TABLES
    unknown = [t for t in items if t not in TABLES]
    if unknown:
        raise InputError(f"--table: unknown table {unknown[0]!r} (choose from {', '.join(TABLES)}, all)")
    return tuple(t for t in TABLES if t in items)


def columns_for(tables: Sequence[str], keys: Sequence[str] = (), optional: bool = True) -> list[str]:
    """The records columns the given tables read (``iter`` always: partials are kept per iteration;
    ``tag`` and ``ply`` or ``depth`` for the record-level keys), with the tables' ``optional_columns``
    unless ``optional`` is False (then only what they cannot do without)."""
    cols: dict[str, None] = {}
    for t in tables:
        cols.update(dict.fromkeys(REGISTRY[t].columns))
        if optional:
            cols.update(dict.fromkeys(getattr(REGISTRY[t], "optional_columns", ())))
    cols["iter"] = None
    for key in RECORD_KEYS:
        if key in keys:
            cols["tag"] = None
            cols[RECORD_KEY_COLUMNS[key]] = None
    return list(cols)


def _row_of(searches: pd.DataFrame) -> np.ndarray:
    ids = searches["search"].to_numpy(dtype=np.int64)
    row_of = np.full(int(ids.max()) + 1 if len(ids) else 1, -1, dtype=np.int64)
    row_of[ids] = np.arange(len(ids))
    return row_of


def _check_columns(batch: pd.DataFrame, needed: Sequence[str]) -> pd.DataFrame:
    missing = [c for c in needed if c not in batch.columns]
    if missing and len(batch):
        raise InputError(f"the records table lacks column(s) {', '.join(missing)}")
    if missing:
        batch = batch.assign(**{c: pd.Series([], dtype="object") for c in missing})
    return batch


def _check_search_ids(batch: pd.DataFrame, row_of: np.ndarray) -> None:
    rsearch = batch["search"].to_numpy(dtype=np.int64)
    bad = (rsearch < 0) | (rsearch >= len(row_of))
    bad[~bad] = row_of[rsearch[~bad]] < 0
    if bad.any():
        missing = int(rsearch[np.argmax(bad)])
        raise InputError(f"records refer to search {missing}, which the searches table does not hold")


def build_report(source: Source, tables: Sequence[str] | str | None = TABLES,
                 by: Sequence[str] | str | None = None, target: int = BATCH_RECORDS,
                 options: ReportOptions | None = None, keep: RecordFilter | None = None) -> Report:
    """Compute the requested tables over ``source``, ``target`` records a batch at most (whole searches).

    ``options``: report-wide choices (:class:`ReportOptions`); ``keep``: count
    only the records it keeps (:class:`RecordFilter`).
    """
    keys = parse_by(by)
    names = parse_tables(tables)
    specs = [REGISTRY[n] for n in names]
    partials, grouping = fold_tables(source, specs, keys, target, options, keep)
    report = Report(keys=tuple(keys))
    for spec, parts in zip(specs, partials):
        for section in spec.finish(parts, grouping):
            section.frame = section.frame.reset_index(drop=True)
            report.sections.append(section)
    return report


def _batches(source: Source, read: list[str], optional: list[str], target: int) -> Iterator[pd.DataFrame]:
    """``source.batches`` of ``read`` plus the ``optional`` columns when the input has them.

    A table's ``optional_columns`` (e.g. the node-visit columns, absent from
    files written before the parser made them) are asked for too; an input
    that cannot give them is read without them.
    """
    if not optional:
        yield from source.batches(read, target)
        return
    batches = source.batches([*read, *optional], target)
    try:
        first = next(batches)
    except StopIteration:
        return
    except (KeyError, ValueError):  # pyarrow's ArrowInvalid is a ValueError: a column the files do not have
        yield from source.batches(read, target)
        return
    yield first
    yield from batches


def fold_tables(source: Source, specs: Sequence[Table], keys: Sequence[str], target: int = BATCH_RECORDS,
                options: ReportOptions | None = None,
                keep: RecordFilter | None = None) -> tuple[list[list[Any]], Grouping]:
    """Every table's partial of every batch of ``source`` (records filtered by ``keep``), and the grouping.

    The one loop over the batches: :func:`build_report` finishes the tables;
    :mod:`treediff.report.compare` folds its own small tables with it too.
    """
    keys = tuple(keys)
    searches = source.searches
    if len(searches) == 0:
        raise InputError("no searches in the input")
    columns: dict[str, None] = {}
    for spec in specs:
        columns.update(dict.fromkeys(spec.columns))
    columns.update(dict.fromkeys(columns_for((), keys, optional=False)))
    if keep is not None:
        columns.update(dict.fromkeys(keep.columns))
    read = list(columns)
    optional = [c for spec in specs for c in getattr(spec, "optional_columns", ()) if c not in columns]
    row_of = _row_of(searches)
    partials: list[list[Any]] = [[] for _ in specs]
    cells = []
    for records in _batches(source, read, list(dict.fromkeys(optional)), target):
        records = _check_columns(records, read)
        if len(records):
            _check_search_ids(records, row_of)
        if keep is not None and len(records):
            records = records[np.asarray(keep.mask(records), dtype=bool)].reset_index(drop=True)
        batch = Batch(records, searches, row_of, keys)
        cells.append(batch.cell_frame(np.arange(batch.n_cells)))
        for spec, out in zip(specs, partials):
            out.append(spec.partial(batch))
    return partials, Grouping(searches, keys, concat(cells, ["srow", "iter", "key"]), options)


def report_frames(records: pd.DataFrame, searches: pd.DataFrame, tables: Sequence[str] | str | None = TABLES,
                  by: Sequence[str] | str | None = None, options: ReportOptions | None = None,
                  keep: RecordFilter | None = None) -> Report:
    """:func:`build_report` of records and searches DataFrames already in memory (the Python API's frames)."""
    return build_report(FrameSource(records, searches), tables, by, options=options, keep=keep)

"""Building a report: fold every table's partial over a source's batches, then finish each table.

Definitions of every table are in ``docs/REPORTS.md`` and in the docstrings of
the modules in :mod:`treediff.report.tables`.
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report.grouping import RECORD_KEY_COLUMNS, RECORD_KEYS, parse_by
from treediff.report.table import Batch, Grouping, Report, ReportOptions, Section, Table, concat
from treediff.report.tables import TABLES as REGISTRY
from treediff.store import budget
from treediff.store.source import BATCH_RECORDS, FrameSource, Source

#: The tables ``--table`` accepts, in display order.
TABLES = tuple(REGISTRY)

__all__ = ["TABLES", "Fold", "Folded", "RecordFilter", "Report", "ReportOptions", "ReportRequest", "Section", "build_report",
           "build_reports", "columns_for", "finish_report", "fold_many", "fold_tables", "parse_tables", "report_frames"]


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


def _search_rows(batch: pd.DataFrame, row_of: np.ndarray) -> np.ndarray:
    """Each record's searches row (``row_of[search]``); an error naming a search the table does not hold."""
    rsearch = batch["search"].to_numpy(dtype=np.int64)
    if not len(rsearch):
        return np.zeros(0, np.int64)
    if int(rsearch.min()) >= 0 and int(rsearch.max()) < len(row_of):
        srow = row_of[rsearch]
        if int(srow.min()) >= 0:  # the usual case: one gather, no masks
            return np.asarray(srow, dtype=np.int64)
    _check_search_ids(batch, row_of)
    return np.asarray(row_of[rsearch], dtype=np.int64)


def _check_search_ids(batch: pd.DataFrame, row_of: np.ndarray) -> None:
    rsearch = batch["search"].to_numpy(dtype=np.int64)
    bad = (rsearch < 0) | (rsearch >= len(row_of))
    bad[~bad] = row_of[rsearch[~bad]] < 0
    if bad.any():
        missing = int(rsearch[np.argmax(bad)])
        raise InputError(f"records refer to search {missing}, which the searches table does not hold")


def build_report(source: Source, tables: Sequence[str] | str | None = TABLES,
                 by: Sequence[str] | str | None = None, target: int = BATCH_RECORDS,
                 options: ReportOptions | None = None, keep: RecordFilter | None = None,
                 background: Background | None = None) -> Report:
    """Compute the requested tables over ``source``, ``target`` records a batch at most (whole searches).

    ``options``: report-wide choices (:class:`ReportOptions`); ``keep``: count
    only the records it keeps (:class:`RecordFilter`); ``background``: see :func:`fold_many`.
    """
    return build_reports(source, [ReportRequest(tables, by, options, keep)], target, background)[0]


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

    The one loop over the batches (:func:`fold_many` of one :class:`Fold`): :func:`build_report`
    finishes the tables; :mod:`treediff.report.compare` folds its own small tables with it too.
    """
    fold = Fold(tuple(specs), tuple(keys), options, keep)
    folded = fold_many(source, [fold], target)[0]
    return folded.partials, folded.grouping(fold)


@dataclass(eq=False)
class Fold:
    """One request of :func:`fold_many`: tables, grouping keys, report options, record filter, population."""

    specs: tuple[Table, ...]
    keys: tuple[str, ...]
    options: ReportOptions | None = None
    keep: RecordFilter | None = None
    #: One flag per searches row of the source: the searches counted, as if folded over ``source.select(rows)``
    #: (its searches table, its records); None: every search.
    rows: np.ndarray | None = None

    def __post_init__(self) -> None:
        # A table whose partials depend on the options (fh counts by its buckets only) gets its instance for them.
        self.specs = tuple(spec.for_options(self.options) if hasattr(spec, "for_options") else spec
                           for spec in self.specs)


@dataclass(eq=False)
class ReportRequest:
    """One report of :func:`build_reports`: :func:`build_report`'s arguments, plus the searches it counts."""

    tables: Sequence[str] | str | None = TABLES
    by: Sequence[str] | str | None = None
    options: ReportOptions | None = None
    keep: RecordFilter | None = None
    #: One flag per searches row of the source: the report of ``source.select(rows)``; None: every search.
    rows: np.ndarray | None = None

    def fold(self) -> Fold:
        """The :class:`Fold` of this report (its tables and keys parsed)."""
        return Fold(tuple(REGISTRY[n] for n in parse_tables(self.tables)), tuple(parse_by(self.by)), self.options,
                    self.keep, self.rows)


def build_reports(source: Source, requests: Sequence[ReportRequest], target: int = BATCH_RECORDS,
                  background: Background | None = None) -> list[Report]:
    """Each request's :func:`build_report`, all from one read of ``source`` (:func:`fold_many`).

    Request i's report equals ``build_report(source.select(rows) if rows is not None else source, tables, by,
    target, options, keep)``: compare's per-side tables read each side once instead of two or three times.
    """
    folds = [request.fold() for request in requests]
    return [finish_report(fold, folded.partials, folded.grouping(fold))
            for fold, folded in zip(folds, fold_many(source, folds, target, background))]


def finish_report(fold: Fold, partials: Sequence[list[Any]], grouping: Grouping) -> Report:
    """The report of a fold's tables: each table finished over ``grouping`` (frames renumbered from 0)."""
    report = Report(keys=fold.keys)
    for spec, parts in zip(fold.specs, partials):
        for section in spec.finish(parts, grouping):
            section.frame = section.frame.reset_index(drop=True)
            report.sections.append(section)
    return report


#: Runs ``work(progress)`` elsewhere: ``with background(work) as job: ... job.result()`` (the CLI passes
#: :func:`treediff.run.forked.in_background`; a job that is not forked computes ``work`` in ``result``).
Background = Callable[[Callable[[Any], Any]], Any]


@dataclass
class _Folding:
    """What folding a run of batches gives, per fold: each table's partials, the cell frames; and the last
    batch's columns (an empty frame), for a fold no batch held records of."""

    partials: list[list[list[Any]]]
    cells: list[list[pd.DataFrame]]
    last_empty: pd.DataFrame | None

    def then(self, later: _Folding) -> _Folding:
        """This run's batches followed by ``later``'s, as one fold over both lists them."""
        return _Folding([[mine + theirs for mine, theirs in zip(p, q)] for p, q in zip(self.partials, later.partials)],
                        [mine + theirs for mine, theirs in zip(self.cells, later.cells)],
                        later.last_empty if later.last_empty is not None else self.last_empty)


def _halves(source: Source) -> tuple[Source, Source] | None:
    """``source`` cut in two selections of consecutive searches rows holding about half of its records each
    (the searches tables' counts; one search one record where they do not count); None for one search, or
    fewer than ``store.budget.FORK_MIN_RECORDS`` records counted (a fork would cost more than it saves)."""
    searches = source.searches
    n = len(searches)
    if n < 2:
        return None
    weights = searches["records"].fillna(0).to_numpy(dtype=np.float64) if "records" in searches.columns \
        else np.ones(n)
    total = float(weights.sum())
    if "records" in searches.columns and total < budget.FORK_MIN_RECORDS:
        return None
    cumulative = np.cumsum(weights if total > 0 else np.ones(n))
    k = min(max(int(np.searchsorted(cumulative, cumulative[-1] / 2)) + 1, 1), n - 1)
    first = np.arange(n) < k
    return source.select(first), source.select(~first)


@dataclass
class Folded:
    """What :func:`fold_many` gives per fold: every table's partials, the cells holding records, the searches."""

    partials: list[list[Any]]  #: per table of the fold, its partial of every batch folded
    cells: pd.DataFrame        #: every (srow, iter, key) cell holding records (over all batches)
    searches: pd.DataFrame     #: the searches table the partials' ``srow`` index (the fold's population)

    def grouping(self, fold: Fold, searches: pd.DataFrame | None = None) -> Grouping:
        """The fold's :class:`Grouping`; ``searches``: another table of the same rows (e.g. relabelled)."""
        return Grouping(self.searches if searches is None else searches, fold.keys, self.cells, fold.options)


@dataclass
class _Population:
    """The searches one or more folds count: their searches table, ``row_of`` over it, and per source row
    whether it belongs (None: every row, the source's own table)."""

    searches: pd.DataFrame
    row_of: np.ndarray
    member: np.ndarray | None


def _population(source: Source, rows: np.ndarray | None, whole: _Population) -> _Population:
    if rows is None:
        return whole
    rows = np.asarray(rows, dtype=bool)
    if len(rows) != len(whole.searches):
        raise ValueError(f"a fold's rows need one flag per searches row ({len(rows)} for {len(whole.searches)})")
    if rows.all():  # source.select(every row) holds the same searches and records
        return whole
    searches = source.select(rows).searches  # the selection's own searches table (selecting reads nothing)
    if len(searches) == 0:
        raise InputError("no searches in the input")
    return _Population(searches, _row_of(searches), rows)


def _partial_key(spec: Table) -> Any:
    """What identifies a table's partial: the ``partial_key`` a table with state gives (fh: its buckets), else
    its class's ``partial`` function when the table holds no state of its own (``skips`` shares ``acts``'
    partial; a partial depends on the batch alone), else the table itself."""
    key = getattr(spec, "partial_key", None)  # (a table with state says what its partial depends on)
    if key is not None:
        return key
    function = getattr(type(spec), "partial", None)
    return function if function is not None and getattr(spec, "__dict__", None) == {} else id(spec)


def fold_many(source: Source, folds: Sequence[Fold], target: int = BATCH_RECORDS,
              background: Background | None = None) -> list[Folded]:
    """:func:`fold_tables` of several folds in one read of ``source``: per fold, every table's partials and
    cells (:class:`Folded`), each exactly what that fold alone over ``source.select(fold.rows)`` gives.

    A batch is read once for all folds: the records columns are the union of theirs, each (record filter,
    population, record keys) gets one :class:`Batch` (folds sharing all three share it), and a partial asked
    by several folds (or by two tables with one partial, acts and skips) is computed once.  A population's
    batch is the source's batch cut to its searches; one it leaves empty is not folded (a select of those
    searches would not have read it), unless no batch is left at all (then one empty batch is, as a source
    with no records gives).  (A selection that reads an empty batch of an input holding none of its
    searches, as :class:`~treediff.store.source.CombinedSource` does, has ebf_ply's main-visit columns
    blanked by that batch; a population here is not.)

    ``background``: how to run work in another process (:func:`treediff.run.forked.in_background`, which the
    CLI passes: this layer does not import it); with it, the later half of the searches (by their records) is
    folded there while this process folds the earlier half.  The partials are the same lists either way.
    """
    searches = source.searches
    if len(searches) == 0:
        raise InputError("no searches in the input")
    columns: dict[str, None] = {}
    for fold in folds:
        for spec in fold.specs:
            columns.update(dict.fromkeys(spec.columns))
        columns.update(dict.fromkeys(columns_for((), fold.keys, optional=False)))
        if fold.keep is not None:
            columns.update(dict.fromkeys(fold.keep.columns))
    read = list(columns)
    optional = [c for fold in folds for spec in fold.specs for c in getattr(spec, "optional_columns", ())
                if c not in columns]
    row_of = _row_of(searches)
    whole = _Population(searches, row_of, None)
    populations = [_population(source, fold.rows, whole) for fold in folds]
    record_keys = [tuple(k for k in RECORD_KEYS if k in fold.keys) for fold in folds]
    # Folds sharing a record filter, a population and record keys share their Batch (and so its partials).
    batch_keys = [(id(fold.keep) if fold.keep is not None else None, id(population), keys)
                  for fold, population, keys in zip(folds, populations, record_keys)]
    # A batch some table reads the full move-try derivation of derives it once, for the light readers too.
    full_tries = {key for key, fold in zip(batch_keys, folds)
                  if any(getattr(spec, "full_tries", False) for spec in fold.specs)}
    def fold_range(reading: Source, target: int) -> _Folding:
        """Every batch of ``reading`` (``source`` or a selection of it: rows are numbered in ``source``)."""
        partials: list[list[list[Any]]] = [[[] for _ in fold.specs] for fold in folds]
        cells: list[list[pd.DataFrame]] = [[] for _ in folds]
        last_empty: pd.DataFrame | None = None
        for records in _batches(reading, read, list(dict.fromkeys(optional)), target):
            records = _check_columns(records, read)
            srow = _search_rows(records, row_of)
            last_empty = records.iloc[:0]
            batches: dict[tuple[Any, ...], Batch | None] = {}
            cell_frames: dict[tuple[Any, ...], pd.DataFrame] = {}
            kept: dict[int, np.ndarray] = {}  # per record filter: its mask of this batch's records
            tasks: dict[tuple[Any, ...], tuple[Table, Batch]] = {}  # (batch key, partial key) -> what computes it
            wanted: list[tuple[list[Any], tuple[Any, ...]]] = []  # (a table's partials, its partial's key), in order
            for i, fold in enumerate(folds):
                key = batch_keys[i]
                if key not in batches:
                    made = _fold_batch(records, srow, fold.keep, populations[i], record_keys[i], kept)
                    if made is not None:
                        made.wants_full_tries = key in full_tries
                    batches[key] = made
                batch = batches[key]
                if batch is None:
                    continue
                if key not in cell_frames:
                    cell_frames[key] = batch.cell_frame(np.arange(batch.n_cells))
                cells[i].append(cell_frames[key])
                for spec, parts in zip(fold.specs, partials[i]):
                    pkey = (key, _partial_key(spec))
                    if pkey not in tasks:
                        tasks[pkey] = (spec, batch)
                    wanted.append((parts, pkey))
            done = _partials(tasks)
            for parts, pkey in wanted:
                parts.append(done[pkey])
        return _Folding(partials, cells, last_empty)

    folding: _Folding | None = None
    halves = _halves(source) if background is not None else None
    if background is not None and halves is not None:
        # The later searches are folded in a forked child while this process folds the earlier ones (each with
        # half the batch target: two processes' batches are alive at once); partials and cells are joined in
        # search order, as one process folding every batch would list them.  Where it does not fork, the
        # whole source is folded here as always.
        first, second = halves
        half = max(1, target // 2)
        with background(lambda progress: fold_range(second, half)) as job:
            if job.forked:
                folding = fold_range(first, half).then(job.result())
    if folding is None:
        folding = fold_range(source, target)
    partials, cells, last_empty = folding.partials, folding.cells, folding.last_empty
    out = []
    for i, fold in enumerate(folds):
        if not cells[i] and last_empty is not None:  # every batch held none of its searches: one empty batch
            batch = Batch(last_empty, populations[i].searches, populations[i].row_of, record_keys[i])
            cells[i].append(batch.cell_frame(np.arange(batch.n_cells)))
            for spec, parts in zip(fold.specs, partials[i]):
                parts.append(spec.partial(batch))
        out.append(Folded(partials[i], concat(cells[i], ["srow", "iter", "key"]), populations[i].searches))
    return out


#: Threads computing a batch's partials when TREEDIFF_REPORT_THREADS does not say: one, the calling thread.
#: Two cost no CPU and halve the main thread's, but `report --table all` of the 20M-line bench log peaked at
#: 2.98 GB with two against 1.35 GB with one (above the default --memory-limit of 2 GB; 53 s wall against 56 s,
#: machine loaded): the helper thread's allocations are not handed back between batches.  Opt in with 2.
DEFAULT_REPORT_THREADS = 1


def _threads() -> int:
    """Threads computing a batch's partials (TREEDIFF_REPORT_THREADS; 1: all on the calling thread, in order)."""
    value = os.environ.get("TREEDIFF_REPORT_THREADS", "")
    if value.strip():
        try:
            return max(1, int(value))
        except ValueError:
            raise InputError(f"TREEDIFF_REPORT_THREADS={value!r}: not a number of threads") from None
    return DEFAULT_REPORT_THREADS


def _partials(tasks: dict[tuple[Any, ...], tuple[Table, Batch]]) -> dict[tuple[Any, ...], Any]:
    """Each task's ``spec.partial(batch)``, on :func:`_threads` threads (the caller's and helpers).

    A partial depends on its batch alone, and the numpy, pandas, Arrow and polars work under the tables, like
    the move-try kernel, lets go of the GIL for much of its time, so two tables of a batch can count at
    once.  The derivations the tables read are made first, as a task of their own (treediff.report.tries
    holds one derivation a batch under a lock): the tables that do not read one go on beside it.  Every
    partial is the one the sequential loop gives; the first error in task order is raised.
    """
    threads = _threads()
    if threads <= 1 or len(tasks) < 2:  # the tables in order on this thread, as the loop always did
        return {key: spec.partial(batch) for key, (spec, batch) in tasks.items()}
    jobs: list[tuple[Any, Callable[[], Any]]] = []
    derived: set[int] = set()
    for key, (spec, batch) in tasks.items():
        if getattr(spec, "reads_tries", False) and id(batch) not in derived:
            derived.add(id(batch))
            jobs.append((None, functools.partial(_derive_ahead, batch)))
    # While one thread derives, the other counts the tables that do not read the derivation; longest first
    # within each part, so that the last job a thread takes is a short one.
    ordered = sorted(tasks.items(), key=lambda item: (bool(getattr(item[1][0], "reads_tries", False)),
                                                      -float(getattr(item[1][0], "cost", 0.0))))
    jobs += [(key, functools.partial(spec.partial, batch)) for key, (spec, batch) in ordered]
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)
    taken = itertools.count()  # next() of a count is atomic under the GIL: each job is taken once

    def work() -> None:
        for j in iter(lambda: next(taken), None):
            if j >= len(jobs):
                return
            try:
                results[j] = jobs[j][1]()
            except BaseException as error:  # raised on the calling thread below
                errors[j] = error

    helpers = [threading.Thread(target=work, name="treediff-tables", daemon=True) for _ in range(threads - 1)]
    for helper in helpers:
        helper.start()
    work()
    for helper in helpers:
        helper.join()
    failed = {key: error for (key, _), error in zip(jobs, errors) if error is not None and key is not None}
    for key in tasks:  # the first table's error in task order, as the sequential loop would raise
        if key in failed:
            raise failed[key]
    return {key: result for (key, _), result in zip(jobs, results) if key is not None}


def _derive_ahead(batch: Batch) -> None:
    """The batch's move-try derivation (as its first reader would ask it), when it has the columns."""
    from treediff.report.tries import COLUMNS, derive

    if not all(c in batch.records for c in COLUMNS):
        return
    try:
        derive(batch, full=False)
    except Exception:  # noqa: BLE001 - not cached: the table that reads it derives again and raises there
        return


def _plain_index(records: pd.DataFrame) -> bool:
    """Whether ``records``' index is 0, 1, 2, ... (what ``records[mask].reset_index(drop=True)`` gives)."""
    index = records.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _fold_batch(records: pd.DataFrame, srow: np.ndarray, keep: RecordFilter | None, population: _Population,
                record_keys: tuple[str, ...], kept: dict[int, np.ndarray]) -> Batch | None:
    """The :class:`Batch` of one fold's records of a source batch (None: its population has none there).

    The population's records are cut first, then ``keep`` (its mask computed once per batch for every fold
    using it), as folding over the selected source would.
    """
    row_of = population.row_of
    mask: np.ndarray | None = None
    if population.member is not None and len(records):
        mask = population.member[srow]
        if not mask.any():
            return None
    if keep is not None and len(records):
        if id(keep) not in kept:
            kept[id(keep)] = np.asarray(keep.mask(records), dtype=bool)
        mask = kept[id(keep)] if mask is None else mask & kept[id(keep)]
    if mask is not None and _plain_index(records) and bool(mask.all()):
        mask = None  # every record kept (a cut above every iteration of the batch): no copy of the batch
    if population.member is not None:  # srow indexes the source's searches: the population's own rows here
        return Batch(records[mask].reset_index(drop=True) if mask is not None else records, population.searches,
                     row_of, record_keys)
    if mask is not None:
        records, srow = records[mask].reset_index(drop=True), srow[mask]
    return Batch(records, population.searches, row_of, record_keys, srow=srow)


def report_frames(records: pd.DataFrame, searches: pd.DataFrame, tables: Sequence[str] | str | None = TABLES,
                  by: Sequence[str] | str | None = None, options: ReportOptions | None = None,
                  keep: RecordFilter | None = None) -> Report:
    """:func:`build_report` of records and searches DataFrames already in memory (the Python API's frames)."""
    return build_report(FrameSource(records, searches), tables, by, options=options, keep=keep)

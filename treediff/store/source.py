"""One :class:`Source` for every input kind: the searches table, records in batches, selection.

A consumer (a report table, compare, the aligner) asks a source three things
and never which kind of input it is:

* :attr:`Source.searches`: one row per search (pandas; small), ``search``
  numbers unique within the source;
* :meth:`Source.batches`: the records of whole searches, a batch at a time,
  only the columns asked for (``engine`` and ``search`` always included);
  an input held in memory is simply one batch;
* :meth:`Source.select`: the same source restricted to some searches rows
  (an engine, a position), nothing read.

The kinds here need nothing above the store layer: :class:`FrameSource`
(DataFrames already in memory), :class:`ArrowSource` (Arrow tables, e.g. a
parsed log), :class:`GroupedSource` (records read group by group: a ``treediff parse`` pair through
:func:`parquet_source`, whose class is also named :class:`ParquetSource`, or a log spilled by
:mod:`treediff.store.spill`),
:class:`DatasetSource` (a ``treediff batch`` directory, read a few searches'
files at a time) and :class:`CombinedSource` (several inputs, ``search``
renumbered to stay unique).  Logs are parsed by the parse layer, whose
:func:`treediff.parse.source.open_source` opens any path.
"""
from __future__ import annotations

import abc
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from treediff.model.errors import InputError
from treediff.model.schema import searches_path_for
from treediff.store.categorical import dictionary_categorical
from treediff.store.dataset import concat_keeping_categories, finish_searches, read_dataset_searches
from treediff.store.heap import give_back_freed_heap, trim_freed_heap_now_and_then
from treediff.store.layout import is_dataset_dir, records_file, searches_file
from treediff.store.validate import (
    REQUIRED_RECORDS,
    check_finite,
    check_records_schema,
    check_searches_schema,
    open_parquet,
    read_parquet,
)

if TYPE_CHECKING:
    import pandas as pd

#: Records per batch a :class:`DatasetSource` aims at (whole searches; a bigger search is one batch alone).
BATCH_RECORDS = 1_000_000
#: Records columns every batch carries, whatever was asked.
ALWAYS = ("engine", "search")


def _wanted(columns: Sequence[str] | None) -> list[str] | None:
    return None if columns is None else list(dict.fromkeys([*ALWAYS, *columns]))


def release_freed_memory() -> None:
    """Make Arrow allocate from the system allocator (``malloc``) from now on, not its default mimalloc pool.

    compare reads its inputs batch after batch; mimalloc keeps the pages of freed batches for reuse, which
    held ~150 MB more at a 300 MB ``--memory-limit`` (1M + 1M lines: 484 -> 337 MB peak, same CPU) and
    more over long runs, memory the limit never counted.  The system allocator hands freed memory back, and
    from now on the heap's free pages go back between batches (:func:`treediff.store.heap.give_back_freed_heap`).
    Buffers already allocated stay with their pool; nothing else changes (same numbers)."""
    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
    give_back_freed_heap()  # (and malloc gives back the free pages amid its heap: store/heap.py)


def records_frame(table: pa.Table) -> pd.DataFrame:
    """A records table as the pandas frame :meth:`Source.batches` yields.

    Bool columns (``null_move``, ``fh``) become pandas' nullable ``boolean`` dtype, nulls ``pd.NA``: a plain
    ``to_pandas`` makes a bool column with nulls (``null_move`` is null on the root's records: no last move) an
    object column of Python True/False/None, ~50 ms per 1M records to build and ~45 ms more for each flag read
    of it (:func:`treediff.report.table.flag_values`), against ~12 and ~1 ms this way.  Dictionary columns
    (``tag``, ``act``, ``kind``, ...) become the Categoricals ``to_pandas`` would give, by one compiled pass
    each where it is built (:mod:`treediff.store.categorical`: ~10x less CPU).  Other columns as ``to_pandas``
    gives them."""
    import pandas as pd

    converted = {}
    for name, column in zip(table.column_names, table.columns):
        categorical = dictionary_categorical(column)
        if categorical is not None:
            converted[name] = categorical
    types_mapper = {pa.bool_(): pd.BooleanDtype()}.get
    if not converted or len(set(table.column_names)) != len(table.column_names):
        return table.to_pandas(types_mapper=types_mapper)
    rest = table.select([i for i, name in enumerate(table.column_names) if name not in converted])
    frame = rest.to_pandas(types_mapper=types_mapper)
    return pd.DataFrame({name: converted[name] if name in converted else frame[name] for name in table.column_names},
                        index=frame.index, copy=False)


class Source(abc.ABC):
    """An input (or several) as a searches table and batches of records; see the module docstring."""

    #: What opening the input warned about (a log's parse warnings); empty for stored tables.
    warnings: list[str]

    @property
    @abc.abstractmethod
    def searches(self) -> pd.DataFrame:
        """One row per search; ``search`` unique within the source."""

    @abc.abstractmethod
    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        """Records of whole searches (never split across batches), about ``target`` records a batch.

        Only ``columns`` (plus ``engine`` and ``search``) are read; None reads every column.
        """

    def arrow_batches(self, columns: Sequence[str] | None = None,
                      target: int = BATCH_RECORDS) -> Iterator[pa.Table]:
        """:meth:`batches` as Arrow tables (string columns as dictionaries where the batch has categoricals).

        Sources that hold Arrow (a parsed log, a Parquet pair) give their tables without the pandas
        conversion; this default converts each pandas batch."""
        for batch in self.batches(columns, target):
            yield pa.Table.from_pandas(batch, preserve_index=False)

    @abc.abstractmethod
    def select(self, keep: np.ndarray) -> Source:
        """The source restricted to the searches rows where ``keep`` is true (same ``search`` numbers)."""

    @abc.abstractmethod
    def with_searches(self, searches: pd.DataFrame) -> Source:
        """The same rows (order and ``search`` numbers) with other column values, e.g. filled positions."""

    def iteration_profile(self) -> pd.DataFrame | None:
        """Every search's iteration profile (:mod:`treediff.store.iterations`: per (search, iter) holding
        records, its RESULT and root RESULT records and deepest root depth) when the source knows it without
        reading its records (a spilled log counted it as it was written), else None.  It may list searches
        the source does not hold (a selection keeps its input's profile): readers keep the ones of
        :attr:`searches`."""
        return None

    def records(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Every batch as one DataFrame (for consumers that need a search's records whole, as the aligner)."""
        frames = list(self.batches(columns, target=np.iinfo(np.int64).max))
        if not frames:
            return _empty_records(columns)
        return concat_keeping_categories(frames)

    def rows_of_position(self, position: str) -> np.ndarray:
        """Searches rows of one position id."""
        return np.flatnonzero(self.searches["position"].astype("object").to_numpy() == position)

    def select_position(self, position: str) -> Source:
        keep = np.zeros(len(self.searches), dtype=bool)
        keep[self.rows_of_position(position)] = True
        return self.select(keep)


def _empty_records(columns: Sequence[str] | None) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({c: [] for c in (_wanted(columns) or list(ALWAYS))})


def _rows(keep: np.ndarray, n: int) -> np.ndarray:
    keep = np.asarray(keep, dtype=bool)
    if len(keep) != n:
        raise ValueError(f"select needs one flag per searches row ({len(keep)} for {n})")
    return np.flatnonzero(keep)


class _KeptIds:
    """The search ids a selection kept, and filtering by them (Arrow or pandas)."""

    def __init__(self, ids: np.ndarray | None):
        self.ids = ids
        #: (least, greatest) when the ids are every integer between them (a selection of consecutive searches,
        #: e.g. every search of one engine's log): a batch whose searches all lie in that range is kept whole,
        #: found by one min/max pass instead of a hash lookup per record.
        self._range: tuple[int, int] | None = None
        if ids is not None and len(ids):
            distinct = np.unique(np.asarray(ids, dtype=np.int64))
            if int(distinct[-1]) - int(distinct[0]) + 1 == len(distinct):
                self._range = (int(distinct[0]), int(distinct[-1]))

    def arrow(self, table: pa.Table) -> pa.Table:
        if self.ids is None:
            return table
        search = table.column("search")
        if self._range is not None and table.num_rows and not search.null_count:
            extremes = pc.min_max(search)
            least, greatest = extremes["min"], extremes["max"]
            if self._range[0] <= least.as_py() and greatest.as_py() <= self._range[1]:
                return table  # every record's search is kept: the filter would copy the table unchanged
        return table.filter(pc.is_in(search, value_set=pa.array(self.ids, type=pa.int32())))

    def frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        if self.ids is None:
            return frame
        return frame[frame["search"].astype(np.int64).isin(self.ids)].reset_index(drop=True)


class ArrowSource(Source):
    """Records held as (or read on demand into) one Arrow table: a parsed log or a Parquet pair; one batch.

    ``read_records(columns)`` returns the records table with those columns
    (None: all); it is called once per :meth:`batches` call.
    """

    def __init__(self, read_records: Callable[[list[str] | None], pa.Table], searches: pd.DataFrame,
                 warnings: list[str] | None = None, kept: _KeptIds | None = None):
        self._read = read_records
        self._searches = searches.reset_index(drop=True)
        self.warnings = list(warnings or [])
        self._kept = kept or _KeptIds(None)

    @property
    def searches(self) -> pd.DataFrame:
        return self._searches

    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        for table in self.arrow_batches(columns, target):
            yield records_frame(table)

    def arrow_batches(self, columns: Sequence[str] | None = None,
                      target: int = BATCH_RECORDS) -> Iterator[pa.Table]:
        yield self._kept.arrow(self._read(_wanted(columns)))

    def select(self, keep: np.ndarray) -> Source:
        rows = _rows(keep, len(self._searches))
        ids = self._searches["search"].to_numpy(dtype=np.int64)[rows]
        return ArrowSource(self._read, self._searches.iloc[rows], self.warnings, _KeptIds(ids))

    def with_searches(self, searches: pd.DataFrame) -> Source:
        _same_rows(searches, self._searches)
        return ArrowSource(self._read, searches, self.warnings, self._kept)

    @classmethod
    def from_tables(cls, records: pa.Table, searches: pa.Table, warnings: list[str] | None = None) -> ArrowSource:
        """A source over Arrow tables in memory (the records and searches tables of a parse)."""

        def read(columns: list[str] | None) -> pa.Table:
            if columns is None:
                return records
            return records.select([c for c in columns if c in records.column_names])

        return cls(read, searches.to_pandas(), warnings)


class FrameSource(Source):
    """Records and searches already held as pandas DataFrames (the Python API's own frames); one batch."""

    def __init__(self, records: pd.DataFrame, searches: pd.DataFrame, kept: _KeptIds | None = None):
        self._records = records
        self._searches = searches.reset_index(drop=True)
        self._kept = kept or _KeptIds(None)
        self.warnings = []

    @property
    def searches(self) -> pd.DataFrame:
        return self._searches

    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        records = self._kept.frame(self._records)
        wanted = _wanted(columns)
        if wanted is not None:
            records = records[[c for c in wanted if c in records.columns]]
        yield records

    def select(self, keep: np.ndarray) -> Source:
        rows = _rows(keep, len(self._searches))
        ids = self._searches["search"].to_numpy(dtype=np.int64)[rows]
        return FrameSource(self._records, self._searches.iloc[rows], _KeptIds(ids))

    def with_searches(self, searches: pd.DataFrame) -> Source:
        _same_rows(searches, self._searches)
        return FrameSource(self._records, searches, self._kept)


def _same_rows(new: pd.DataFrame, old: pd.DataFrame) -> None:
    if len(new) != len(old):
        raise ValueError("with_searches needs the same rows")


def read_searches(spath: Path) -> pd.DataFrame:
    """A pair's searches table (``X.searches.parquet``), read whole and checked: its schema, and one
    number per search."""
    searches_table = read_parquet(spath, "searches")
    check_searches_schema(spath, searches_table.schema)
    ids = searches_table.column("search")
    if pc.count_distinct(ids).as_py() != len(ids) or ids.null_count:
        raise InputError(f"{spath}: search numbers repeat (or are missing) in the searches table: each search "
                         "has its own number (write the pair again with `treediff parse`)")
    return searches_table.to_pandas()


def parquet_source(path: str | Path) -> GroupedSource:
    """A ``treediff parse`` output: ``X.parquet`` (records, read column by column and row group by row
    group on demand) and ``X.searches.parquet`` (read whole)."""
    path = Path(path)
    spath = Path(searches_path_for(str(path)))
    if not spath.exists():
        raise InputError(f"{path}: its searches table {spath.name} is missing (write both with `treediff parse`)")
    searches = read_searches(spath)
    parquet = open_parquet(path, "records")
    schema = parquet.schema_arrow
    check_records_schema(path, schema)
    names = set(schema.names)
    # Each read opens the file with the footer parsed here: parsing it again per read cost ~4 CPU-ms for a
    # footer of 184 row groups, 0.7 CPU-s of `report` over a 20M-record file read group by group.
    footer = parquet.metadata

    def read(columns: list[str] | None, groups: Sequence[int] | None = None) -> pa.Table:
        # Columns a file written by an older treediff lacks (e.g. visit, parent_visit) are left out, not an
        # error: consumers check what they require, and the aligner works visits out without them.
        present = None if columns is None else [c for c in columns if c in names]
        if groups is None:
            table = read_parquet(path, "records", columns=present)
        else:
            try:
                if not groups:  # pyarrow < 20 fails on an empty list of row groups (asks for row group -1)
                    empty = schema.empty_table()
                    table = empty if present is None else empty.select(present)
                else:
                    table = pq.ParquetFile(path, metadata=footer).read_row_groups(list(groups), columns=present)
            except (pa.ArrowException, OSError) as exc:
                raise InputError(f"{path}: not a readable Parquet records file ({str(exc).splitlines()[0][:200]})"
                                 ) from None
        check_finite(path, table)
        return table

    return GroupedSource(read, searches, row_group_spans(parquet))


def row_group_spans(parquet: pq.ParquetFile) -> list[tuple[int, int, int]] | None:
    """(rows, smallest search, largest search) of each row group, from the footer's ``search`` statistics;
    None when a row group has none (then the file is read as one batch)."""
    meta = parquet.metadata
    if "search" not in parquet.schema_arrow.names:
        return None
    index = parquet.schema_arrow.get_field_index("search")
    spans = []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max:
            return None
        spans.append((meta.row_group(group).num_rows, int(stats.min), int(stats.max)))
    return spans


def plan_row_groups(spans: Sequence[tuple[int, int, int]], target: int,
                    wanted: np.ndarray | None = None) -> list[list[int]] | None:
    """Row groups read together, at most ``target`` rows a read unless one search needs more, never
    splitting a search.

    A cut between row groups i and i + 1 is safe when every search of i is below every search of i + 1
    (``max_i < min_{i+1}``): a search then lies in one read whatever the order inside a row group.  None
    when the row groups' search ranges are not increasing (then the file is one read).  ``wanted``: the
    search numbers asked for (sorted); row groups holding none of them are skipped.
    """
    for (_, _, hi), (_, lo, _) in zip(spans, spans[1:]):
        if lo < hi:
            return None
    # Segments: runs of row groups between safe cuts (a search never crosses one), packed whole into reads,
    # so a read is at most ``target`` rows or one segment (the segment's searches), as a dataset's batch.
    segments: list[list[int]] = []
    for group, (_, lo, _) in enumerate(spans):
        if wanted is not None:
            first = int(np.searchsorted(wanted, lo))
            if first == len(wanted) or wanted[first] > spans[group][2]:
                continue
        if segments and segments[-1][-1] == group - 1 and spans[group - 1][2] >= lo:
            segments[-1].append(group)
        else:
            segments.append([group])
    reads: list[list[int]] = []
    rows = 0
    for segment in segments:
        size = sum(spans[g][0] for g in segment)
        if reads and rows + size <= target:
            reads[-1].extend(segment)
            rows += size
        else:
            reads.append(list(segment))
            rows = size
    return reads


def batch_cuts(search: np.ndarray, target: int) -> list[int]:
    """Where to cut rows (their ``search`` numbers, any order within a search's rows) into batches of whole
    searches of at most ``target`` rows: cut points ``p1 < p2 < ...``, each the last point within ``target``
    rows of the previous cut (0 at first) where every search before it is below every search after it, or,
    when a search is longer than ``target``, the end of that search (a batch of one search).  Cutting stops
    once fewer than ``target`` rows are left: those are carried on, since later row groups hold only searches
    >= this one's largest (the plan checked the footer's ranges) but may continue the last search."""
    n = len(search)
    target = max(1, target)
    if n < 2:
        return []
    step = np.diff(search)
    if bool((step >= 0).all()):  # (searches in order, as a parser writes them: a boundary is a change)
        safe = np.flatnonzero(step) + 1
    else:
        before = np.maximum.accumulate(search[:-1])
        after = np.minimum.accumulate(search[::-1])[::-1][1:]
        safe = np.flatnonzero(before < after) + 1  # the points p (0 < p < n) no search spans
    cuts: list[int] = []
    previous = 0
    while n - previous >= target:
        within = int(np.searchsorted(safe, previous + target, side="right"))  # safe[:within] <= previous + target
        if within and safe[within - 1] > previous:
            previous = int(safe[within - 1])
        elif within < len(safe):  # a search longer than the target: it alone
            previous = int(safe[within])
        else:
            break
        cuts.append(previous)
    return cuts


_T = TypeVar("_T")


def read_ahead(items: Iterator[_T]) -> Iterator[_T]:
    """The items of ``items``, each produced on a thread while the consumer holds the one before.

    At most two items are alive (the one the consumer holds and the next, built or being built): the thread
    starts item k + 1 only once item k was taken.  An exception raised producing an item is raised to the
    consumer in its place; a consumer that stops early stops the thread (after the item it is building).
    """
    slot: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    break
                slot.put((True, item))
                del item  # the consumer holds it now
                slot.join()  # taken: only then build the next one
                if stop.is_set():
                    break
        except BaseException as exc:  # raised to the consumer, in the item's place
            slot.put((False, exc))
            return
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
        slot.put((False, None))

    thread = threading.Thread(target=produce, name="treediff-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            ok, value = slot.get()
            slot.task_done()
            if not ok:
                if value is not None:
                    raise value
                return
            yield value
            value = None
            trim_freed_heap_now_and_then()  # (the consumer is done with the last batch: see store/heap.py)
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting to hand over an item nobody will take
            try:
                slot.get(timeout=0.05)
                slot.task_done()
            except queue.Empty:
                pass
        thread.join()


class GroupedSource(ArrowSource):
    """Records stored in groups (a Parquet pair's row groups, a spilled log's IPC parts) read group by group
    into batches of about ``target`` records (whole searches: cut where no search spans), only the columns
    asked for, the next batch built on a thread (:func:`read_ahead`) while the current one is counted.

    ``read_records(columns, groups)`` reads those groups (None: all); ``spans`` are the groups' sizes and
    search ranges (:func:`row_group_spans`, :mod:`treediff.store.spill`; None: read everything as one batch).
    Memory is then bounded by the batch, not the file (issue 17).  :class:`ParquetSource` is its old name.
    """

    def __init__(self, read_records: Callable[..., pa.Table], searches: pd.DataFrame,
                 spans: list[tuple[int, int, int]] | None, warnings: list[str] | None = None,
                 kept: _KeptIds | None = None, profile: pd.DataFrame | None = None):
        super().__init__(read_records, searches, warnings, kept)
        self._read_groups: Callable[..., pa.Table] = read_records  # the same object as _read
        self._spans = spans
        self._profile = profile  # (a spill's, counted as it was written; a Parquet pair has none)

    def iteration_profile(self) -> pd.DataFrame | None:
        return self._profile

    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        return self._batches(columns, target, pandas=True)

    def arrow_batches(self, columns: Sequence[str] | None = None,
                      target: int = BATCH_RECORDS) -> Iterator[pa.Table]:
        return self._batches(columns, target, pandas=False)

    def _batches(self, columns: Sequence[str] | None, target: int, pandas: bool) -> Iterator[Any]:
        wanted = _wanted(columns)
        ids = None if self._kept.ids is None else np.sort(np.asarray(self._kept.ids, dtype=np.int64))
        spans = self._spans
        plan = None if spans is None else plan_row_groups(spans, target, ids)
        groups = None if spans is None or plan is None else [g for read in plan for g in read]
        if groups is None or spans is None or sum(spans[g][0] for g in groups) <= target:
            # One batch: the whole file (its groups' searches go back, or it has no statistics), or groups that
            # hold no more than the target (a group larger than the target is cut inside: a log's spill may be
            # a single part, larger than a small --memory-limit's batches).
            table = self._kept.arrow(self._read_groups(wanted, groups))
            yield records_frame(table) if pandas else table
            return
        # The batches are built (read, cut, converted to pandas) on a thread one batch ahead of the consumer:
        # Parquet decoding, the conversion and the consumer's compiled passes release the GIL, so reading
        # batch k + 1 overlaps counting batch k instead of waiting for it (issue 13).  (The generator runs on
        # that thread: the conversion too.)
        tables = self._cut_batches(wanted, groups, target)
        yield from read_ahead((records_frame(table) for table in tables) if pandas else tables)

    def _cut_batches(self, wanted: list[str] | None, groups: list[int], target: int) -> Iterator[pa.Table]:
        """Batches of the groups ``groups``, each group read once: once ``target`` rows are read, batches are
        cut inside a group where no search spans (:func:`batch_cuts`: at most ``target`` rows, or one longer
        search; the parser's groups end mid-search, so cuts between groups alone would rarely exist), the rest
        carried into the next batch.  A cut holding none of a selection's searches (a group's
        rows of the next selection's, at its end) is not a batch: the consumer gets no empty batch, unless no
        batch has rows at all (then one empty batch, as a source without records gives)."""
        carry: pa.Table | None = None
        empty: pa.Table | None = None
        yielded = False
        for group in groups:
            table = self._read_groups(wanted, [group])
            if carry is not None:
                table = pa.concat_tables([carry, table])
            start = 0
            if table.num_rows >= target:
                for cut in batch_cuts(table.column("search").to_numpy(), target):
                    batch = self._kept.arrow(table.slice(start, cut - start))
                    if batch.num_rows:
                        yield batch
                        yielded = True
                    else:
                        empty = batch
                    start = cut
            carry = table.slice(start) if start else table
        rest = self._kept.arrow(carry) if carry is not None else None
        if rest is not None and rest.num_rows:
            yield rest
        elif not yielded:
            last = rest if rest is not None else empty
            if last is not None:
                yield last

    def select(self, keep: np.ndarray) -> Source:
        rows = _rows(keep, len(self._searches))
        ids = self._searches["search"].to_numpy(dtype=np.int64)[rows]
        return GroupedSource(self._read, self._searches.iloc[rows], self._spans, self.warnings, _KeptIds(ids),
                             self._profile)

    def with_searches(self, searches: pd.DataFrame) -> Source:
        _same_rows(searches, self._searches)
        return GroupedSource(self._read, searches, self._spans, self.warnings, self._kept, self._profile)


#: A ``treediff parse`` Parquet pair's source (:func:`parquet_source`): a :class:`GroupedSource` whose
#: groups are row groups (the name callers and tests have always used).
ParquetSource = GroupedSource


class DatasetSource(Source):
    """A ``treediff batch`` dataset directory: the searches (read whole) and, per row, its records file.

    ``files[i]`` is the records file of searches row ``i`` (None when the
    search has none, e.g. an engine without TREEDUMP).  Batches read a few
    files at a time, whole searches, the next one prefetched on a thread
    (Parquet decoding releases the GIL), so memory is bounded by the largest
    batch, not by the dataset.
    """

    def __init__(self, searches: pd.DataFrame, files: list[str | None]):
        self._searches = searches.reset_index(drop=True)
        self.files = list(files)
        self.warnings = []

    @classmethod
    def open(cls, path: str | Path) -> DatasetSource:
        p = Path(path)
        if not is_dataset_dir(p):
            raise InputError(f"{path}: not a treediff dataset (expected records/ and searches/ inside)")
        srch = read_dataset_searches(p).to_pandas()
        if len(srch) and "task" not in srch.columns:
            raise InputError(f"{path}: its searches table has no task column (not written by treediff batch)")
        _refuse_repeated_searches(p, srch)
        files: list[str | None] = []
        for engine, task in zip(srch["engine"].astype("object"), srch["task"].astype("object") if len(srch) else []):
            f = records_file(p, str(engine), str(task))
            files.append(str(f) if f.exists() else None)
        return cls(finish_searches([srch]), files)

    @property
    def searches(self) -> pd.DataFrame:
        return self._searches

    def select(self, keep: np.ndarray) -> Source:
        rows = _rows(keep, len(self._searches))
        return DatasetSource(self._searches.iloc[rows], [self.files[i] for i in rows])

    def with_searches(self, searches: pd.DataFrame) -> Source:
        _same_rows(searches, self._searches)
        return DatasetSource(searches, self.files)

    def chunks(self, target: int = BATCH_RECORDS) -> list[list[int]]:
        """Searches rows grouped into reads of about ``target`` records (a search is never split)."""
        sizes = (self._searches["records"].fillna(0).to_numpy(dtype=np.int64) if "records" in self._searches.columns
                 else np.ones(len(self._searches), dtype=np.int64))
        out: list[list[int]] = []
        current: list[int] = []
        total = 0
        for row in range(len(self._searches)):
            if self.files[row] is None:
                continue
            if current and total + sizes[row] > target:
                out.append(current)
                current, total = [], 0
            current.append(row)
            total += int(sizes[row])
        if current:
            out.append(current)
        return out

    def read(self, rows: Sequence[int], columns: Sequence[str] | None) -> pd.DataFrame:
        """Records of the given searches rows, ``engine`` (categorical) first and ``search`` from the searches rows."""
        wanted = None if columns is None else [c for c in columns if c not in ALWAYS]
        search_ids = self._searches["search"].to_numpy(dtype=np.int64)
        engines = self._searches["engine"].astype("object").to_numpy()
        tables = []
        for row in rows:
            file = self.files[row]
            if file is None:
                continue
            parquet = open_parquet(file, "records")
            schema = parquet.schema_arrow
            check_records_schema(file, schema, required=[c for c in REQUIRED_DATASET_RECORDS if c != "search"])
            _check_search_number(file, parquet, int(search_ids[row]))
            present = None if wanted is None else [c for c in wanted if c in schema.names]
            table = read_parquet(file, "records", columns=present)
            check_finite(file, table)
            # The file's own search number (if any) is replaced by the searches row's: numbers are per source.
            table = table.drop_columns([c for c in ALWAYS if c in table.column_names])
            table = table.append_column("search", pa.array(np.full(table.num_rows, search_ids[row], dtype=np.int32)))
            table = table.append_column("engine", pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(table.num_rows, dtype=np.int32)), pa.array([str(engines[row])])))
            tables.append(table)
        if not tables:
            return _empty_records(columns)
        frame = records_frame(pa.concat_tables(tables, promote_options="default"))
        return frame[["engine", *[c for c in frame.columns if c != "engine"]]]

    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        chunks = self.chunks(target)
        if not chunks:
            return
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(self.read, chunks[0], columns)
            for nxt in chunks[1:]:
                current = pending.result()
                pending = pool.submit(self.read, nxt, columns)
                yield current
            yield pending.result()


#: The records columns a dataset's records file must have (``engine`` is its partition directory).
REQUIRED_DATASET_RECORDS = tuple(c for c in REQUIRED_RECORDS if c != "engine")


def _refuse_repeated_searches(dataset: Path, searches: pd.DataFrame) -> None:
    """Search numbers are unique in a dataset: a searches file copied into another engine's (or task's)
    place would count one search twice.  Refused, naming both files."""
    if not len(searches) or "search" not in searches.columns:
        return
    repeated = searches["search"].duplicated(keep=False)
    if not repeated.any():
        return
    rows = searches[repeated].sort_values("search", kind="stable").head(2)
    files = [searches_file(dataset, str(e), str(t)) for e, t in zip(rows["engine"], rows["task"])]
    raise InputError(f"{files[0]} and {files[1]}: both hold search {int(rows['search'].iloc[0])}; search numbers "
                     "are unique in a dataset (one was copied over from another engine or task?): remove the "
                     "copy, or run `treediff batch --resume` into a fresh directory")


def _check_search_number(file: str, parquet: pq.ParquetFile, search: int) -> None:
    """A records file holds the search its searches row names: its ``search`` statistics say (free: the
    footer is read anyway), else nothing is checked.  A records file copied from another engine fails."""
    names = parquet.schema_arrow.names
    if "search" not in names or parquet.metadata.num_row_groups == 0:
        return
    index = parquet.schema_arrow.get_field_index("search")
    for group in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max:
            return
        if stats.min != search or stats.max != search:
            other = stats.min if stats.min != search else stats.max
            raise InputError(f"{file}: holds the records of search {other}, but its searches row is search "
                             f"{search} (copied from another engine or task?): remove it, or rerun that task")


class CombinedSource(Source):
    """Several sources as one: searches concatenated, ``search`` renumbered to offset + rank per input.

    Input i's search ids (sorted) become ``offset_i, offset_i + 1, ...`` in
    its searches rows and in every batch of its records, so numbers stay
    unique across inputs and dense from 0.
    """

    def __init__(self, parts: list[tuple[Source, np.ndarray, int]], searches: pd.DataFrame):
        self._parts = parts          # (source, its original ids sorted, offset)
        self._searches = searches.reset_index(drop=True)
        self.warnings = [w for source, _, _ in parts for w in source.warnings]

    @classmethod
    def of(cls, sources: Sequence[Source]) -> CombinedSource:
        if not sources:
            raise InputError("no input given")
        parts, frames, offset = [], [], 0
        for source in sources:
            srch = source.searches.copy()
            ids = np.unique(srch["search"].to_numpy(dtype=np.int64))
            if len(srch):
                srch["search"] = (np.searchsorted(ids, srch["search"].to_numpy(dtype=np.int64)) + offset).astype("int32")
            parts.append((source, ids, offset))
            frames.append(srch)
            offset += len(ids)
        return cls(parts, finish_searches(frames))

    @property
    def searches(self) -> pd.DataFrame:
        return self._searches

    def _part_rows(self) -> list[np.ndarray]:
        sizes = [len(source.searches) for source, _, _ in self._parts]
        bounds = np.cumsum([0, *sizes])
        return [np.arange(bounds[i], bounds[i + 1]) for i in range(len(sizes))]

    def batches(self, columns: Sequence[str] | None = None, target: int = BATCH_RECORDS) -> Iterator[pd.DataFrame]:
        for source, ids, offset in self._parts:
            for batch in source.batches(columns, target):
                if len(batch):
                    search = batch["search"].to_numpy()
                    if not (batch["search"].dtype == np.int32 and self._unchanged(search, ids, offset)):
                        batch["search"] = self._renumbered(search.astype(np.int64, copy=False), ids, offset)
                yield batch

    def arrow_batches(self, columns: Sequence[str] | None = None,
                      target: int = BATCH_RECORDS) -> Iterator[pa.Table]:
        for source, ids, offset in self._parts:
            for table in source.arrow_batches(columns, target):
                if table.num_rows:
                    at = table.schema.get_field_index("search")
                    column = table.column(at)
                    search = column.to_numpy()
                    if column.type == pa.int32() and self._unchanged(search, ids, offset):
                        renumbered: pa.ChunkedArray | pa.Array = column  # (the same numbers: no copy)
                    else:
                        renumbered = pa.array(self._renumbered(search, ids, offset))
                    table = table.set_column(at, pa.field("search", pa.int32()), renumbered)
                yield table

    @staticmethod
    def _unchanged(search: np.ndarray, ids: np.ndarray, offset: int) -> bool:
        """Whether renumbering ``search`` gives the same numbers: an input whose ids are 0, 1, ... n - 1 at offset
        0 (a single log, every search of it) and a batch within them (one min/max, not a search per record)."""
        n = len(ids)
        return (offset == 0 and n > 0 and int(ids[0]) == 0 and int(ids[-1]) == n - 1 and len(search) > 0
                and int(search.min()) >= 0 and int(search.max()) <= n - 1)

    def iteration_profile(self) -> pd.DataFrame | None:
        """The inputs' profiles, each input's searches renumbered as its records are (None: an input has none)."""
        import pandas as pd

        frames = []
        for source, ids, offset in self._parts:
            profile = source.iteration_profile()
            if profile is None:
                return None
            search = profile["search"].to_numpy(dtype=np.int64)
            mine = np.isin(search, ids)  # (an input's profile may list searches its selection dropped)
            part = profile[mine].copy()
            part["search"] = self._renumbered(search[mine], ids, offset).astype(np.int64)
            frames.append(part)
        return pd.concat(frames, ignore_index=True) if frames else None

    @staticmethod
    def _renumbered(search: np.ndarray, ids: np.ndarray, offset: int) -> np.ndarray:
        """An input's search ids as the combined source numbers them (offset + rank), int32."""
        return (np.searchsorted(ids, search.astype(np.int64, copy=False)) + offset).astype("int32")

    def select(self, keep: np.ndarray) -> Source:
        keep = np.asarray(keep, dtype=bool)
        rows = _rows(keep, len(self._searches))
        parts = [(source.select(keep[r]), ids, offset) for (source, ids, offset), r in zip(self._parts, self._part_rows())]
        out = CombinedSource.__new__(CombinedSource)
        out._parts, out._searches, out.warnings = parts, self._searches.iloc[rows].reset_index(drop=True), self.warnings
        return out

    def with_searches(self, searches: pd.DataFrame) -> Source:
        _same_rows(searches, self._searches)
        out = CombinedSource.__new__(CombinedSource)
        out._parts, out._searches, out.warnings = self._parts, searches.reset_index(drop=True), self.warnings
        return out

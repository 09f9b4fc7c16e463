"""A parsed log's records spilled to a scratch directory as Arrow IPC files, read back memory-mapped.

A command that reads a log (compare, report, browse, ...) parses it once into a scratch directory and
reads the records back in batches, several times (compare: four passes a side).  Only this process
reads those files, so they need no Parquet encoding: Arrow IPC (the file format) is written and read at
about memory speed (docs/PERFORMANCE.md, spilling a log).

Layout of a spill directory:

* ``records-NNNNNN.arrow``: one IPC file per record batch the parser wrote (a chunk of the log), in log
  order.  One file per batch because the parser gives every chunk its own dictionaries (``move``,
  ``position``, ...) and the IPC file format cannot replace a dictionary between batches; a file per
  batch keeps each batch's dictionary exactly as written, so pandas gets the categories (and their
  order) a Parquet pair's row groups give.  Each file's schema metadata holds the batch's rows and
  smallest and largest ``search`` (its "span", as a Parquet row group's statistics give it).
* ``records.searches.parquet``: the searches table, as a ``treediff parse`` pair has it (it is small).
* ``records.iterations.parquet``: every search's iteration profile (:mod:`treediff.store.iterations`), counted
  from the parts as they were written: compare pairs searches by it without reading the records for it.

:class:`SpillWriter` writes one; :func:`spill_source` reads it as a
:class:`~treediff.store.source.GroupedSource` (the batching of a Parquet pair: a part is a row group).
``treediff parse`` output stays Parquet: that is the user's file.
"""
from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from treediff.model.errors import InputError
from treediff.store.files import is_write_failure, write_error
from treediff.store.iterations import PROFILE_RECORD_COLUMNS, Counts, merge_counts, profile_counts, profile_table
from treediff.store.source import GroupedSource, read_searches
from treediff.store.validate import check_finite

if TYPE_CHECKING:  # (the writer runs in a log's parse, which imports no pandas)
    import pandas as pd

__all__ = ["SPILL_COMPRESSION", "SPILL_PLAIN_BYTES", "SpillWriter", "available_memory", "plain_allowance",
           "spill_iterations_path", "spill_searches_path", "spill_source"]

#: How the parts are compressed (``pa.ipc.IpcWriteOptions(compression=...)``).  Measured on the 1M-line
#: stockfish log's 10 chunks (docs/PERFORMANCE.md): uncompressed 153 MB (19x the Parquet spill's 7.9 MB),
#: lz4 28 MB (3.6x), zstd 14 MB (1.8x); writing 0.055 / 0.124 / 0.230 CPU-s against Parquet's 0.340,
#: compare's four read passes 0.54 / 0.75 / 0.91 against Parquet's 1.05.  lz4 keeps the disk near the 3x
#: a scratch file may take for two thirds of the CPU saved: it is used past :func:`plain_allowance`.
SPILL_COMPRESSION: str | None = "lz4"
#: At most this many bytes of parts a spill writes uncompressed before it compresses the rest; less where
#: the free space or the memory is short (:func:`plain_allowance`: an eighth of either).  An uncompressed
#: part costs no compression when written and is read by a copy out of the page cache (or viewed in place
#: when read whole), where a compressed one is decompressed at every read (docs/PERFORMANCE.md, sixteenth
#: session): the spill parse of the 20M-line stockfish bench log took 7.6-7.9 CPU-s all plain against 9.0-9.5
#: with 256 MiB plain (0.38-0.40 against 0.45-0.47 CPU-us a line), compare 20M + 20M 19.9 against 21.2 s and
#: 1,052 against 1,155 MB (summed RSS), for ~2.9 GB of scratch a log against ~0.8 GB.  Sixth to fifteenth
#: sessions: 256 MiB.
SPILL_PLAIN_BYTES = 4 << 30
#: Where the memory figures :func:`available_memory` reads are (Linux; absent elsewhere).
_MEMINFO = Path("/proc/meminfo")
#: A memory cgroup's limit, usage and statistics files, and the statistic of its usage that is page cache
#: the kernel reclaims first (not memory taken: what ``docker stats`` and the kubelet leave out too).
_CGROUP_V2 = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current"),
              Path("/sys/fs/cgroup/memory.stat"), "inactive_file")
_CGROUP_V1 = (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"), Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
              Path("/sys/fs/cgroup/memory/memory.stat"), "total_inactive_file")
#: Schema metadata keys of a part: its rows and its smallest and largest ``search`` (decimal text).
META_ROWS = b"treediff.spill.rows"
META_MIN_SEARCH = b"treediff.spill.min_search"
META_MAX_SEARCH = b"treediff.spill.max_search"
_PART_PREFIX = "records-"
_PART_SUFFIX = ".arrow"


def spill_searches_path(directory: str | os.PathLike[str]) -> Path:
    """Where a spill directory keeps its searches table (Parquet, as a ``treediff parse`` pair's)."""
    return Path(directory) / "records.searches.parquet"


def spill_iterations_path(directory: str | os.PathLike[str]) -> Path:
    """Where a spill directory keeps its searches' iteration profile (Parquet; written with the searches)."""
    return Path(directory) / "records.iterations.parquet"


def plain_allowance(directory: str | os.PathLike[str]) -> int:
    """Bytes of uncompressed parts a spill in ``directory`` may write: :data:`SPILL_PLAIN_BYTES`, at most an
    eighth of the space free there (a small ``TMPDIR`` keeps room) and an eighth of :func:`available_memory`;
    0 when the free space cannot be read.

    Why the memory: the parts are written to the page cache and read back from it, memory-mapped.  Past what
    memory holds, the writes wait for the disk (the kernel throttles a writer whose dirty pages pass a fifth
    of the memory, by default) and the reads go to it, where compressed parts are a third of the bytes.
    """
    try:
        stat = os.statvfs(directory)
    except (OSError, AttributeError):  # (AttributeError: no statvfs on this platform)
        return 0
    return max(0, min(SPILL_PLAIN_BYTES, stat.f_bavail * stat.f_frsize // 8, available_memory() // 8))


def available_memory() -> int:
    """Bytes of memory this process could still use without taking it from others: the kernel's
    ``MemAvailable``, less where the memory cgroup (v2 or v1, as mounted) leaves less (its limit less its
    usage, the inactive page cache not counted as used); 0 when neither can be read (not Linux), so that
    nothing is counted on it."""
    kib = _named_figure(_MEMINFO, "MemAvailable")  # (meminfo's figures are KiB)
    figures = [None if kib is None else kib * 1024]
    for limit_path, usage_path, stat_path, reclaimable in (_CGROUP_V2, _CGROUP_V1):
        limit, usage = _read_int(limit_path), _read_int(usage_path)
        if limit is not None and usage is not None:
            cache = _named_figure(stat_path, reclaimable) or 0
            figures.append(max(0, limit - max(0, usage - cache)))
    known = [f for f in figures if f is not None]
    return min(known) if known else 0


def _named_figure(path: Path, name: str) -> int | None:
    """The number on the line of ``path`` named ``name``: ``/proc/meminfo``'s ``MemAvailable:  123 kB`` or a
    cgroup ``memory.stat``'s ``inactive_file 123``; None if the file or the line is absent or not a number."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.replace(":", " ", 1).split()
        if len(fields) >= 2 and fields[0] == name and fields[1].isdigit():
            return int(fields[1])
    return None


def _read_int(path: Path) -> int | None:
    """A cgroup file's one number (bytes); None if absent or not a number (v2's ``max``: no limit)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _part_paths(directory: Path) -> list[Path]:
    """The directory's part files in the order written (their names number them)."""
    return sorted(p for p in directory.iterdir() if p.name.startswith(_PART_PREFIX) and p.name.endswith(_PART_SUFFIX))


class SpillWriter:
    """Writes records tables into a spill directory, each record batch its own IPC file (see the module).

    Used as a context manager; :meth:`write` takes the parser's tables in log order.  Nothing is atomic:
    the directory is a scratch directory, read only after the parse succeeded and removed whatever
    happened (:func:`treediff.parse.source.scratch_dir`).  A write that fails (disk full) is an
    :class:`~treediff.store.files.OutputError` naming the part.
    """

    def __init__(self, directory: str | os.PathLike[str], schema: pa.Schema,
                 compression: str | None = SPILL_COMPRESSION, plain_bytes: int | None = None) -> None:
        """``compression``: the parts' codec once ``plain_bytes`` of them (default :func:`plain_allowance`)
        were written uncompressed."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self._options = pa.ipc.IpcWriteOptions(compression=compression)
        self._plain_options = pa.ipc.IpcWriteOptions(compression=None)
        #: Bytes of uncompressed parts still allowed.
        self._plain_left = plain_allowance(self.directory) if plain_bytes is None else plain_bytes
        self.parts = 0
        self.rows = 0
        #: Each part's iteration profile, merged and written with the searches table (None: the schema
        #: lacks a column it is counted from).
        self._profiles: list[Counts] | None = (
            [] if all(name in schema.names for name in PROFILE_RECORD_COLUMNS) else None)

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        """Append ``table``'s rows: one part per non-empty record batch (a chunk of the parser)."""
        batches = [table] if isinstance(table, pa.RecordBatch) else table.to_batches()
        for batch in batches:
            if batch.num_rows:
                self._write_part(batch)

    def _write_part(self, batch: pa.RecordBatch) -> None:
        search = pc.min_max(batch.column("search"))
        span = {META_ROWS: str(batch.num_rows).encode(), META_MIN_SEARCH: str(search["min"].as_py()).encode(),
                META_MAX_SEARCH: str(search["max"].as_py()).encode()}
        schema = self.schema.with_metadata({**(self.schema.metadata or {}), **span})
        path = self.directory / f"{_PART_PREFIX}{self.parts:06d}{_PART_SUFFIX}"
        plain = batch.nbytes <= self._plain_left
        options = self._plain_options if plain else self._options
        try:
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema, options=options) as writer:
                writer.write_batch(batch)
        except BaseException as exc:
            if is_write_failure(exc):
                raise write_error(path, exc) from None
            raise
        # (the first parts only: once one is compressed, the rest are too)
        self._plain_left = self._plain_left - batch.nbytes if plain else 0
        self.parts += 1
        self.rows += batch.num_rows
        if self._profiles is not None:
            self._profiles.append(profile_counts(batch))

    def write_searches(self, searches: pa.Table) -> None:
        """The searches table, as a ``treediff parse`` pair's searches file but not fsynced: a scratch file
        is never read after a crash (``treediff parse``'s fsyncs cost ~10 ms a small log's report).  Called
        once every part is written: the parts' iteration profile is written beside it."""
        if self._profiles is not None:
            profile = profile_table(merge_counts(self._profiles))
            self._write_parquet(spill_iterations_path(self.directory), profile, compression=None)
        self._write_parquet(spill_searches_path(self.directory), searches, compression="zstd")

    @staticmethod
    def _write_parquet(path: Path, table: pa.Table, compression: str | None) -> None:
        try:
            pq.write_table(table, str(path), compression=compression)
        except BaseException as exc:
            if is_write_failure(exc):
                raise write_error(path, exc) from None
            raise

    def __enter__(self) -> SpillWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Nothing to close (each part is closed as written); a failed parse's parts go with its directory."""


def _part_span(path: Path) -> tuple[pa.Schema, tuple[int, int, int]]:
    """A part's schema (without the span keys) and span (rows, smallest search, largest search)."""
    with pa.memory_map(str(path)) as mapped:
        schema = pa.ipc.open_file(mapped).schema
    meta = dict(schema.metadata or {})
    span = (int(meta.pop(META_ROWS)), int(meta.pop(META_MIN_SEARCH)), int(meta.pop(META_MAX_SEARCH)))
    return schema.with_metadata(meta), span


def spill_source(directory: str | os.PathLike[str]) -> GroupedSource:
    """A spill directory (:class:`SpillWriter`'s parts and its searches table) as a Source.

    Records are read part by part into batches of about ``target`` records, whole searches, only the
    columns asked for, exactly as a Parquet pair's row groups are (:class:`~treediff.store.source.GroupedSource`);
    each part is memory-mapped and only the columns asked for are read out of it (:func:`read_parts`).
    """
    directory = Path(directory)
    searches = read_searches(spill_searches_path(directory))
    profile = _read_profile(spill_iterations_path(directory))
    parts = _part_paths(directory)
    if parts:
        spans = []
        for part in parts:
            schema, span = _part_span(part)
            spans.append(span)
    else:
        from treediff.model.schema import RECORDS_SCHEMA

        schema, spans = RECORDS_SCHEMA, []
    def read(columns: list[str] | None, groups: Sequence[int] | None = None) -> pa.Table:
        # Columns the schema lacks are left out, not an error, as a Parquet pair's read does.
        present = None if columns is None else [c for c in columns if c in schema.names]
        table = read_parts([parts[g] for g in (range(len(parts)) if groups is None else groups)], schema, present)
        check_finite(directory, table)
        return table

    return GroupedSource(read, searches, spans, profile=profile)


def _read_profile(path: Path) -> pd.DataFrame | None:
    """The spill's iteration profile; None when it has none (a writer whose schema lacked its columns)."""
    if not path.exists():
        return None
    try:
        return pq.read_table(str(path)).to_pandas()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: a scratch file of this run is unreadable ({str(exc).splitlines()[0][:200]})"
                         ) from None


def _own_dictionaries(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every dictionary column's dictionary copied out of the part's mapping (the indices are
    left as they are).

    A dictionary is a few hundred values, but whatever keeps one alive (pandas categories are views of it,
    and a table's categories are kept past its batch) kept the whole part mapped, and every page of it that
    had been read counted in the process's memory.  The budget counts the record buffers a kept slice holds,
    not those: with parts written uncompressed, `compare` of the 5M-line bench logs kept 14 parts mapped
    (142 MB) where 1 was needed, and compare 100M + 100M peaked 1.1 GB higher (docs/PERFORMANCE.md,
    sixteenth session).  A copy is ~2 µs a column.
    """
    columns = batch.columns
    copied = False
    for i, field in enumerate(batch.schema):
        if pa.types.is_dictionary(field.type):
            column = columns[i]
            # (safe=False: the indices were valid when written; checking them again is a pass over every row)
            columns[i] = pa.DictionaryArray.from_arrays(column.indices, pa.concat_arrays([column.dictionary]),
                                                        ordered=field.type.ordered, safe=False)
            copied = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if copied else batch


def read_parts(paths: Sequence[Path], schema: pa.Schema, columns: list[str] | None) -> pa.Table:
    """The record batches of the parts ``paths`` as one table (a chunk a part), only ``columns`` (in that
    order; None: all).  Memory-mapped: an uncompressed part read whole is viewed in place; of some columns
    (``included_fields``), pyarrow 26 copies the buffers it reads out of the mapping; a compressed part's
    are decompressed into fresh memory.  A mapping is unmapped once no buffer refers to it, and the
    dictionaries are copies (:func:`_own_dictionaries`), so a batch read of some columns lets its parts go
    as soon as it is read."""
    indices = None if columns is None else sorted(schema.get_field_index(c) for c in columns)
    options = pa.ipc.IpcReadOptions(included_fields=indices)
    batches: list[pa.RecordBatch] = []
    for path in paths:
        try:
            with pa.memory_map(str(path)) as mapped:  # (closing it leaves the mapping to the buffers)
                reader = pa.ipc.open_file(mapped, options=options)
                batches.extend(_own_dictionaries(reader.get_batch(i)) for i in range(reader.num_record_batches))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{path}: a scratch file of this run is unreadable ({str(exc).splitlines()[0][:200]})"
                             ) from None
    selected = schema if indices is None else pa.schema([schema.field(i) for i in indices], schema.metadata)
    table = pa.Table.from_batches([b.replace_schema_metadata(selected.metadata) for b in batches], schema=selected)
    return table if columns is None else table.select(columns)

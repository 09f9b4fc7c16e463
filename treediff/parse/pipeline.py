"""Parse TREEDUMP logs into the normalized records and searches tables, as a pipeline of threads.

The log is read in chunks of whole lines (:mod:`treediff.parse.chunks`).
Four threads share the work, each on a different chunk:

1. *tokenize*: splitting a chunk into lines and tokenizing it column-wise
   (without the GIL), with every other step that needs no state;
2. the caller's thread: the state machine (:mod:`treediff.parse.state`)
   gives each record its search, iteration and context, and paths are made
   UCI (:mod:`treediff.parse.paths`, SAN partly in a worker process);
3. *convert*: building the chunk's Arrow table (:mod:`treediff.parse.assemble`),
   then numbering node visits (:class:`~treediff.parse.visits.VisitStage`: the
   records of the iteration still open wait for the next chunk);
4. *writer*: encoding it to Parquet (:func:`parse_to_parquet` only).

Memory is bounded by the chunk size and the largest iteration, not by the log.  The searches table
and its warnings are made at the end (:mod:`treediff.parse.summary`).
"""
from __future__ import annotations

import functools
import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable

import polars as pl
import pyarrow as pa

from treediff.model.errors import InputError
from treediff.model.positions import PositionBook, read_epd
from treediff.model.schema import (
    RECORDS_FORMAT,
    RECORDS_SCHEMA,
    SEARCHES_FORMAT,
    dialects_of,
    format_metadata,
    searches_path_for,
    with_format,
)
from treediff.parse import assemble
from treediff.parse.chunks import ChunkReader, PreparedChunk, prepare_chunk, release_buffers
from treediff.parse.paths import PathNormalizer
from treediff.parse.problems import Problems
from treediff.parse.state import ParseOptions, SearchState, SearchStates, count_records
from treediff.parse.summary import searches_table, strict_failures
from treediff.parse.visits import VisitStage
from treediff.store.files import AtomicParquetWriter, input_size, open_log, write_table_atomic

#: How the records file is encoded (measured in docs/PERFORMANCE.md: about 30% less CPU than the
#: defaults for a file 8% smaller): zstd level 1, dictionaries only where the schema has them,
#: min/max statistics only for numeric columns (strings such as paths are costly and useless to filter on),
#: and delta encoding for the counters that grow by one or step by one (line, seq, ply): a quarter
#: of the compression time of the plain encoding for a hundredth of the size.  The visit columns
#: (half null, almost all 1) get no statistics: nobody filters on them, and computing them cost
#: about as much as encoding the two columns (0.5 CPU-s on 5M records).
_NO_STATISTICS = ("visit", "parent_visit")
RECORDS_PARQUET_OPTIONS = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": [f.name for f in RECORDS_SCHEMA if pa.types.is_dictionary(f.type)],
    "write_statistics": [
        f.name for f in RECORDS_SCHEMA
        if not (pa.types.is_dictionary(f.type) or pa.types.is_string(f.type)) and f.name not in _NO_STATISTICS
    ],
    "column_encoding": {"line": "DELTA_BINARY_PACKED", "seq": "DELTA_BINARY_PACKED", "ply": "DELTA_BINARY_PACKED"},
}


@dataclass
class ParseResult:
    """What :func:`parse_logs` returns: Arrow tables plus the warnings shown to the user."""

    records: pa.Table
    searches: pa.Table
    warnings: list[str]


class TreedumpParser:
    """Streaming parser; feed it logs with :meth:`parse_stream`, then call :meth:`finish`.

    ``sink`` receives each chunk's records as an Arrow table (in order); without
    a sink they are kept in memory and returned by :meth:`finish`.
    """

    def __init__(
        self,
        options: ParseOptions | None = None,
        sink: Callable[[pa.Table], None] | None = None,
        deferred_sink: Callable[[Callable[[], list[pa.Table]]], None] | None = None,
    ):
        self.options = options or ParseOptions()
        self._sink = sink
        # Receives a zero-argument function that builds the chunk's table, so the conversion to
        # Arrow runs on the conversion thread instead of this one.
        self._deferred_sink = deferred_sink
        self._tables: list[pa.Table] = []
        self.warnings: list[str] = []
        self._states = SearchStates(self.options)  # (raises InputError for an unknown --engine)
        # --strict also replays UCI paths on boards (each distinct path once): several times the cost of
        # the parse, so not by default (docs/TREEDUMP_FORMAT.md, bad input).
        self._paths = PathNormalizer(check_uci=self.options.strict)
        # Touched only by the table builders, which run in order on one thread (see _write).
        self._visits = VisitStage(all_contexts=self.options.all_contexts)
        #: Searches cut by the end of a truncated input and dropped (``--keep-complete``).
        self.dropped: set[int] = set()

    @property
    def searches(self) -> list[SearchState]:
        """Every search read so far, in log order (``search`` numbers them)."""
        return self._states.searches

    # ------------------------------------------------------------------ input
    def parse_stream(self, stream, source: str, progress: Callable[[int], None] | None = None,
                     first_line: int = 1) -> None:
        """Parse one log from a binary stream; ``progress`` gets the bytes read.

        ``first_line``: the line number of the stream's first line (a part of a file read from a later line
        on, e.g. one search's lines: :mod:`treediff.parse.index`).
        """
        problems = Problems()
        self._states.begin_file()
        searches_before = len(self.searches)
        reader = ChunkReader(stream, source, progress, keep_complete=self.options.keep_complete)
        line_base = self._read_chunks(reader, source, problems, first_line)
        open_search = self._states.current
        self._states.end_file(line_base - 1)
        self._hand_on(self._visits.flush)  # a search never spans two files: nothing stays open
        self._release_finished_searches(None)
        if reader.tail.strip() and reader.truncated is None:
            problems.add("truncated (no newline at end of file; dropped)", line_base)
        if len(self.searches) == searches_before:
            raise InputError(f"{source}: no TREEDUMP header found (empty file or not a TREEDUMP log)")
        if reader.truncated is not None:
            self.warnings.append(self._keep_complete(source, reader.truncated, open_search, searches_before))
        self.warnings.extend(problems.messages(source))
        if self.options.strict and problems:
            raise InputError("--strict: " + "; ".join(problems.messages(source)))

    def _keep_complete(self, source: str, truncated: Exception, open_search: SearchState | None,
                       searches_before: int) -> str:
        """``--keep-complete`` on a file cut short: drop the search the cut ends unless its END was read."""
        cut = open_search if open_search is not None and not open_search.ends else None
        if cut is not None:
            self.dropped.add(cut.search)
        kept = len(self.searches) - searches_before - (cut is not None)
        what = (f"dropped the search at line {cut.first_line} ({cut.position}), which the cut ends; the "
                "searches after it are numbered on without a gap"
                if cut is not None else "the cut came after the last search's END")
        return f"{source}: {truncated}: kept the {kept} searches read completely; {what} (--keep-complete)"

    def _read_chunks(self, reader: ChunkReader, source: str, problems: Problems, first_line: int = 1) -> int:
        """Process every chunk of ``reader``; returns the number of the line after the last whole one.

        Splitting a chunk into lines, tokenizing it (without the GIL) and every
        other stateless step (:func:`~treediff.parse.chunks.prepare_chunk`) run
        on a helper thread while the previous chunk's state is applied here.
        At most one chunk is prepared ahead, which bounds memory.
        """
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treediff-tokenize")
        finished = False
        line_base = first_line  # number of the chunk's first line
        try:
            ahead: Future | None = None
            for tail, block, cut in reader:
                future = pool.submit(prepare_chunk, tail, block, cut)
                if ahead is not None:
                    line_base = self._process_chunk(ahead.result(), line_base, source, problems)
                ahead = future
            if ahead is not None:
                line_base = self._process_chunk(ahead.result(), line_base, source, problems)
            self._paths.account_unresolved(wait=True)
            finished = True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self._paths.close(abort=not finished)
            release_buffers()
        return line_base

    # ------------------------------------------------------------------ chunks
    def _process_chunk(self, chunk: PreparedChunk, line_base: int, source: str, problems: Problems) -> int:
        """Apply the parser's state to one prepared chunk; returns the number of the line after it."""
        problems.merge(chunk.problems, line_base)
        events = self._states.read_events(chunk.events, line_base, source, problems)
        spread = self._states.spread(chunk.rows, events, line_base, problems)
        if spread is not None:
            self._emit(*spread, line_base, problems)
        self._release_finished_searches(self._states.current)
        return line_base + chunk.n_lines

    def _release_finished_searches(self, open_search: SearchState | None) -> None:
        self._states.release_finished(open_search)

    def _emit(self, rows: pl.DataFrame, by_id: dict[int, SearchState], line_base: int, problems: Problems) -> None:
        """Number, check and complete the chunk's records, count them, and hand them on."""
        rows, runs = assemble.number_records(rows, by_id, line_base)
        rows = assemble.check_numbers(rows, problems)
        rows = assemble.check_ply(rows, problems)
        rows = assemble.with_search_columns(rows, by_id, runs.present)
        uci_paths = self._paths.normalize(rows, by_id, problems)
        rows, kinds = assemble.kinds_of_chunk(rows, by_id, runs.present)
        count_records(rows, by_id, runs)
        self._write(rows, by_id, runs.present, uci_paths, kinds)

    def _write(
        self,
        rows: pl.DataFrame,
        by_id: dict[int, SearchState],
        present: list[int],
        uci_paths: assemble.UciPaths,
        kinds: dict[str, str] | None,
    ) -> None:
        """Hand the chunk's records on; the conversion only needs each search's constants, taken here.

        ``uci_paths`` may wait for the SAN worker, so it runs with the
        conversion, on the conversion thread when there is one.  ``kinds``
        (act -> kind) is given when ``kind`` is still to be made; the acts it
        does not know are then counted when the table is built.
        """
        table = functools.partial(
            assemble.records_table, rows, assemble.search_constants(by_id, present), present, uci_paths, kinds
        )
        current = self._states.current
        open_search = current.search if current is not None else None
        primary = {s: by_id[s].primary_label for s in present} if self.options.all_contexts else None
        visits = self._visits

        def build() -> list[pa.Table]:
            # Runs on the conversion thread; other_acts is read only by finish(), after the drain.
            records, other = table()
            for search, act, n in other:
                by_id[search].other_acts[act] += n
            return visits.push(records, open_search, primary)

        self._hand_on(build)

    def _hand_on(self, build: Callable[[], list[pa.Table]]) -> None:
        """Give a table builder to the sink (or build it here); it gives the chunks complete so far."""
        if self._deferred_sink is not None:
            self._deferred_sink(build)
            return
        for table in build():
            if self._sink is not None:
                self._sink(table)
            else:
                self._tables.append(table)

    # ------------------------------------------------------------------ finish
    def finish(self) -> ParseResult:
        """Close the parse: per-search warnings, the searches table, and (without a sink) the records."""
        kept = [s for s in self.searches if s.search not in self.dropped]
        for number, state in enumerate(kept):
            state.search = number  # closed up over dropped searches, as the records (dense_searches)
        searches, warnings = searches_table(kept, self.options.all_contexts)
        self.warnings.extend(warnings)
        if self.options.strict:
            serious = strict_failures(self.warnings)
            if serious:
                raise InputError("--strict: " + "; ".join(serious))
        records = assemble.concat_records(self._tables)
        if self.dropped:
            records = dense_searches(drop_searches(records, self.dropped), self.dropped)
        return ParseResult(records=records, searches=searches, warnings=list(self.warnings))


def _options(engine: str, positions, strict: bool, all_contexts: bool, keep_complete: bool = False) -> ParseOptions:
    book = read_epd(os.fspath(positions)) if isinstance(positions, (str, os.PathLike)) else positions
    return ParseOptions(engine=engine or "auto", positions=book, strict=strict, all_contexts=all_contexts,
                        keep_complete=keep_complete)


def drop_searches(records: pa.Table, dropped: set[int]) -> pa.Table:
    """``records`` without the rows of the ``dropped`` searches."""
    import pyarrow.compute as pc

    keep = pc.invert(pc.is_in(records.column("search"), pa.array(sorted(dropped), records.schema.field("search").type)))
    return records.filter(keep)


def dense_searches(table: pa.Table, dropped: set[int]) -> pa.Table:
    """``table`` with its ``search`` numbers closed up over the ``dropped`` ones (``--keep-complete``).

    Each search moves down by the number of dropped searches before it, so a parse of several
    files numbers its searches 0..n-1 as ``docs/TREEDUMP_FORMAT.md`` says, and as reading the
    same files as separate inputs does (``CombinedSource``: offset + rank).
    """
    if not dropped or table.num_rows == 0:
        return table
    import numpy as np

    search = table.column("search").to_numpy()
    shift = np.searchsorted(np.array(sorted(dropped), dtype=np.int64), search, side="left")
    if not shift.any():
        return table
    at = table.schema.get_field_index("search")
    field = table.schema.field(at)
    return table.set_column(at, field, pa.array(search - shift, type=field.type))


class _HoldOpenSearch:
    """A sink that holds back the rows of the newest search until a later search's rows (or :meth:`finish`)
    come, so a search found cut at the end of a truncated input can still be left out (``--keep-complete``).

    ``dropped`` is the parser's set, filled when a truncated file ends, before any row of a later file
    is built: the held rows of a dropped search are discarded, and later searches numbered on without
    a gap (:func:`dense_searches`).  Tables come in line order, so ``search`` never decreases; memory
    grows to one search's records.
    """

    def __init__(self, sink: Callable[[pa.Table], None]) -> None:
        self._out = sink
        #: The parser's :attr:`TreedumpParser.dropped` (given to it: it fills the set).
        self.dropped: set[int] = set()
        self._held: list[pa.Table] = []
        self._held_search: int | None = None

    def _sink(self, table: pa.Table) -> None:
        self._out(dense_searches(table, set(self.dropped)))

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        searches = table.column("search")
        first, last = searches[0].as_py(), searches[-1].as_py()
        if self._held and first != self._held_search:
            self._release()
        if first == last:
            self._held.append(table)
        else:
            import numpy as np

            cut = int(np.searchsorted(searches.to_numpy(), last, side="left"))
            if self._held:
                self._held.append(table.slice(0, cut))
                self._release()
            else:
                self._sink(table.slice(0, cut))
            self._held.append(table.slice(cut))
        self._held_search = last

    def _release(self) -> None:
        if self._held_search not in self.dropped:  # (a dropped search's rows go nowhere)
            for held in self._held:
                self._sink(held)
        self._held.clear()

    def finish(self) -> None:
        self._release()


def parse_logs(
    paths: Iterable[str | os.PathLike],
    engine: str = "auto",
    positions: str | os.PathLike | PositionBook | None = None,
    strict: bool = False,
    all_contexts: bool = False,
    progress: Callable[[int], None] | None = None,
    keep_complete: bool = False,
) -> ParseResult:
    """Parse logs in memory: records and searches as Arrow tables, plus warnings.

    ``positions`` is an EPD file (or a :class:`PositionBook`) giving ids and
    phase labels.  ``progress`` gets the bytes read.  Raises
    :class:`~treediff.model.errors.InputError` for unreadable input (and,
    with ``strict``, for any problem).  A compressed log cut short is an
    error naming the byte where it ends; with ``keep_complete`` its complete
    searches are kept, the one the cut ends is dropped, and a warning says so.
    """
    parser = TreedumpParser(_options(engine, positions, strict, all_contexts, keep_complete))
    for path in paths:
        with open_log(path) as stream:
            parser.parse_stream(stream, str(path), progress)
    return parser.finish()


def parse_to_parquet(
    paths: Iterable[str | os.PathLike],
    out: str | os.PathLike,
    engine: str = "auto",
    positions: str | os.PathLike | PositionBook | None = None,
    strict: bool = False,
    all_contexts: bool = False,
    progress: Callable[[int], None] | None = None,
    keep_complete: bool = False,
) -> ParseResult:
    """Parse logs straight to ``out`` (records) and its ``.searches.parquet`` sibling, streaming.

    Both files appear only if the whole parse succeeds.  The returned result's
    ``records`` table is empty (the rows went to disk).  ``keep_complete``: as
    in :func:`parse_logs` (the newest search's rows are then held back until
    the next search starts, so memory grows to one search's records).
    """
    parser_options = _options(engine, positions, strict, all_contexts, keep_complete)
    out = str(out)
    # Two stages after the parser, each on its own thread: building the Arrow table of a chunk,
    # then encoding it to Parquet; both take about as long as the parser itself.
    with AtomicParquetWriter(out, RECORDS_SCHEMA, **RECORDS_PARQUET_OPTIONS) as writer:
        held = _HoldOpenSearch(writer.write) if keep_complete else None
        result = _parse_into(paths, functools.partial(write_table_atomic, path=searches_path_for(out)), parser_options,
                             progress, held.write if held else writer.write, held)
        # The schema's metadata, plus the dialects found (known only now; in the footer's key-value metadata).
        writer.add_metadata(format_metadata(RECORDS_FORMAT, dialects_of(result.searches)))
    return result


def _parse_into(paths: Iterable[str | os.PathLike], write_searches: Callable[[pa.Table], None],
                parser_options: ParseOptions, progress: Callable[[int], None] | None,
                sink: Callable[[pa.Table], None], held: _HoldOpenSearch | None) -> ParseResult:
    """Parse ``paths`` into ``sink`` (the records, a chunk at a time, on a writer thread), then give the
    searches table (its format metadata set) to ``write_searches``."""
    with _BackgroundSink(sink, name="treediff-writer") as encode, \
            _BackgroundSink(encode.put, name="treediff-convert") as convert:
        parser = TreedumpParser(parser_options, deferred_sink=convert.put)
        if held is not None:
            parser.dropped = held.dropped  # filled by the parser, read by the held sink
        for path in paths:
            with open_log(path) as stream:
                parser.parse_stream(stream, str(path), progress)
        convert.drain()
        encode.drain()
        result = parser.finish()
        if held is not None:
            held.finish()
        # Written before the records file is renamed into place, so a reader never sees records alone.
        write_searches(with_format(result.searches, SEARCHES_FORMAT, dialects_of(result.searches)))
    return result


def parse_to_spill(
    paths: Iterable[str | os.PathLike],
    directory: str | os.PathLike,
    engine: str = "auto",
    positions: str | os.PathLike | PositionBook | None = None,
    strict: bool = False,
    all_contexts: bool = False,
    progress: Callable[[int], None] | None = None,
    keep_complete: bool = False,
) -> ParseResult:
    """Parse logs into a scratch ``directory`` as Arrow IPC parts (:mod:`treediff.store.spill`), streaming.

    What a command reading a log does (:func:`treediff.parse.source.open_source`): the same parse as
    :func:`parse_to_parquet`, written at memory speed instead of Parquet-encoded (only this process
    reads it), the searches table as Parquet beside.  Read back with
    :func:`treediff.store.spill.spill_source`.  The options are :func:`parse_to_parquet`'s.
    """
    from treediff.store.spill import SpillWriter

    parser_options = _options(engine, positions, strict, all_contexts, keep_complete)
    with SpillWriter(directory, RECORDS_SCHEMA) as writer:
        held = _HoldOpenSearch(writer.write) if keep_complete else None
        return _parse_into(paths, writer.write_searches, parser_options, progress,
                           held.write if held else writer.write, held)


class _BackgroundSink:
    """Runs a sink on a worker thread so Parquet encoding overlaps with parsing the next chunk.

    At most ``depth`` chunks wait in the queue, which bounds memory.  An error in
    the worker is raised in the caller at the next ``put`` or at ``drain``.
    """

    def __init__(self, sink: Callable[[pa.Table], None], depth: int = 2, name: str = "treediff-writer"):
        self._sink = sink
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is None:
                try:
                    # A builder gives the tables complete so far (maybe none), in order.
                    for table in (item() if callable(item) else [item]):
                        self._sink(table)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    self._error = exc

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, item: "pa.Table | Callable[[], list[pa.Table]]") -> None:
        """Queue a table, or a function that builds tables (called on the worker thread)."""
        self._check()
        self._queue.put(item)

    def drain(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._check()

    def __enter__(self) -> "_BackgroundSink":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


def total_input_bytes(paths: Iterable[str]) -> int | None:
    """The inputs' total size on disk in bytes (compressed size for .gz/.zst), None if one is unknown (stdin).

    The bytes :func:`parse_logs`' ``progress`` counts up to, for uncompressed logs.
    """
    sizes = [input_size(p) for p in paths]
    known = [s for s in sizes if s is not None]
    return sum(known) if len(known) == len(sizes) else None

"""Parse TREEDUMP logs into the normalized records and searches tables.

The log is read in chunks of whole lines.  Each chunk is tokenized column-wise
(:mod:`treediff.parse.tokenizer`); the few lines that carry state (headers,
``ITER``, ``END``) are handled one by one and the state they set (search,
iteration, context) is spread over the chunk's records with vectorized
operations.  Memory is bounded by the chunk size, not by the log.
"""
from __future__ import annotations

import collections
import functools
import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.errors import InputError
from treediff.store.files import AtomicParquetWriter, input_size, open_log, write_table_atomic
from treediff.parse.dialects import DIALECTS, Dialect, Notation, get_dialect
from treediff.model.notation import NULL_UCI, UCI_PATH_PATTERN
from treediff.parse.moves import PathResolver, normalize_coord_paths, resolve_paths
from treediff.parse.san_worker import SanWorker, SanWorkerError
from treediff.model.positions import (
    PositionBook,
    fen_hash_id,
    material_phase,
    normalize_phase,
    read_epd,
)
from treediff.parse.tokenizer import (
    FAST_FIELDS,
    INT_KEYS,
    PATH_ROOT,
    PATH_SHAPE,
    PATH_UCI,
    ROW_KEYS,
    is_int,
    split_lines,
    tokenize_chunk,
    tokenize_line,
)
from treediff.model.schema import (
    DICT_STR,
    RECORDS_SCHEMA,
    SEARCHES_SCHEMA,
    Kind,
    searches_path_for,
)

#: Bytes read per chunk.  8 MiB: the same CPU per line as 16 MiB with a third less peak memory
#: (about 0.5 GB instead of 0.75 GB; one chunk is tokenized ahead and two wait for the writer).
CHUNK_BYTES = 8 * 1024 * 1024

#: SAN paths resolved (about 5 µs each) before a worker process is worth its start-up (~0.5 s):
#: small logs never start one.
SAN_WORKER_AFTER_PATHS = 100_000
#: A search's paths in one chunk from which some go to the worker: below it, pickling costs more.
SAN_SPLIT_MIN_PATHS = 2_000
#: The worker's share of a split: the main thread also assembles the chunk, the worker only resolves.
SAN_WORKER_SHARE = 0.7

#: How the records file is encoded (measured in docs/PERFORMANCE.md: about 30% less CPU than the
#: defaults for a file 8% smaller): zstd level 1, dictionaries only where the schema has them,
#: min/max statistics only for numeric columns (strings such as paths are costly and useless to filter on),
#: and delta encoding for the counters that grow by one or step by one (line, seq, ply): a quarter
#: of the compression time of the plain encoding for a hundredth of the size.
RECORDS_PARQUET_OPTIONS = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": [f.name for f in RECORDS_SCHEMA if pa.types.is_dictionary(f.type)],
    "write_statistics": [
        f.name for f in RECORDS_SCHEMA if not (pa.types.is_dictionary(f.type) or pa.types.is_string(f.type))
    ],
    "column_encoding": {"line": "DELTA_BINARY_PACKED", "seq": "DELTA_BINARY_PACKED", "ply": "DELTA_BINARY_PACKED"},
}
_FIRST_LINES_SHOWN = 5
ROOT_MOVE_PROBLEM = "with a MOVE at the root (path=- names no move; dropped)"
_NO_CTX = ""  # the effective context of lines that name none


@dataclass
class ParseOptions:
    """How to parse: dialect override, EPD labels, strictness, contexts kept."""

    engine: str = "auto"
    positions: PositionBook | None = None
    strict: bool = False
    all_contexts: bool = False


class Problems:
    """Counts of unusable or suspicious lines, with the first line numbers of each."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.first: dict[str, list[int]] = collections.defaultdict(list)

    def add(self, reason: str, line: int, count: int = 1) -> None:
        self.counts[reason] += count
        if len(self.first[reason]) < _FIRST_LINES_SHOWN:
            self.first[reason].append(line)

    def add_many(self, reason: str, lines: np.ndarray) -> None:
        if len(lines) == 0:
            return
        self.counts[reason] += int(len(lines))
        room = _FIRST_LINES_SHOWN - len(self.first[reason])
        if room > 0:
            self.first[reason].extend(int(x) for x in lines[:room])

    def merge(self, other: "Problems", offset: int) -> None:
        """Add ``other``'s problems, whose lines are numbered from 0, to lines from ``offset`` on."""
        for reason, count in other.counts.items():
            self.counts[reason] += count
            room = _FIRST_LINES_SHOWN - len(self.first[reason])
            if room > 0:
                self.first[reason].extend(line + offset for line in other.first[reason][:room])

    def messages(self, source: str) -> list[str]:
        out = []
        for reason, count in self.counts.items():
            lines = ", ".join(str(x) for x in sorted(self.first[reason]))
            more = "" if count <= len(self.first[reason]) else ", ..."
            noun = "line" if count == 1 else "lines"
            out.append(f"{source}: {count} {noun} {reason} (line {lines}{more})")
        return out

    def __bool__(self) -> bool:
        return bool(self.counts)


@dataclass
class SearchState:
    """What the parser knows about one search while reading it."""

    search: int
    dialect: Dialect
    unit: int
    position: str
    fen: str | None
    phase: str | None
    phase_source: str | None
    producer: str | None
    source: str
    first_line: int
    #: The context kept: the header's ctx=, else the label of the search's first record (None: unlabelled).
    primary_label: str | None = None
    primary_known: bool = False
    #: Lines read so far that carry state, keyed by raw context label ("" = unlabelled).
    order: int = 0
    ctx_counts: collections.Counter = field(default_factory=collections.Counter)
    iter_counts: collections.Counter = field(default_factory=collections.Counter)
    max_iter: dict = field(default_factory=dict)
    ends: dict = field(default_factory=dict)
    records: int = 0
    moves: int = 0
    result_nodes: int = 0
    seq: int = 0
    other_acts: collections.Counter = field(default_factory=collections.Counter)
    unresolved: list = field(default_factory=list)
    unresolved_count: int = 0
    warnings: list = field(default_factory=list)
    _resolver: PathResolver | None = None

    @property
    def resolver(self) -> PathResolver:
        if self._resolver is None:
            self._resolver = PathResolver(self.fen)
        return self._resolver


@dataclass
class ParseResult:
    """What :func:`parse_logs` returns: Arrow tables plus the warnings shown to the user."""

    records: pa.Table
    searches: pa.Table
    warnings: list[str]


class _ChunkReader:
    """Iterates over a stream in chunks of whole lines, as ``(tail, block, cut)``.

    The chunk is ``tail + block[:cut]``: the bytes left over from the previous
    block, then this block up to its last newline.  Joining and splitting them
    is left to the consumer (a helper thread).  After the loop, ``tail`` holds
    the bytes after the last newline.
    """

    def __init__(self, stream, source: str, progress: Callable[[int], None] | None):
        self._stream = stream
        self._source = source
        self._progress = progress
        self.tail = b""

    def __iter__(self):
        while True:
            try:
                block = self._stream.read(CHUNK_BYTES)
            except (OSError, EOFError) as exc:
                raise InputError(f"{self._source}: cannot read ({exc})") from None
            if not block:
                return
            if self._progress is not None:
                self._progress(len(block))
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this block (a very long line)
                self.tail += block
                continue
            tail, self.tail = self.tail, block[cut:]
            yield tail, block, cut


class TreedumpParser:
    """Streaming parser; feed it logs with :meth:`parse_stream`, then call :meth:`finish`.

    ``sink`` receives each chunk's records as an Arrow table (in order); without
    a sink they are kept in memory and returned by :meth:`finish`.
    """

    def __init__(
        self,
        options: ParseOptions | None = None,
        sink: Callable[[pa.Table], None] | None = None,
        deferred_sink: Callable[[Callable[[], pa.Table]], None] | None = None,
    ):
        self.options = options or ParseOptions()
        self._sink = sink
        # Receives a zero-argument function that builds the chunk's table, so the conversion to
        # Arrow runs on the writer's thread instead of the main one.
        self._deferred_sink = deferred_sink
        self._tables: list[pa.Table] = []
        self.searches: list[SearchState] = []
        self.warnings: list[str] = []
        self._current: SearchState | None = None
        self._released = 0  # searches before this index have dropped their move resolvers
        self._san_worker: SanWorker | None = None
        self._san_pool: ThreadPoolExecutor | None = None  # talks to the worker, one request at a time
        self._san_worker_failed = False
        self._san_aborting = False
        # (problems, search, source lines, parts) per search part of each chunk, in order, until counted.
        self._san_pending: collections.deque = collections.deque()
        self._san_paths = 0  # paths resolved against a board so far
        # (search, raw ctx label) -> (order, current ITER depth), carried from chunk to chunk.
        self._iter_carry: dict[tuple[int, str], tuple[int, int]] = {}
        self._forced: Dialect | None = None
        if self.options.engine and self.options.engine != "auto":
            try:
                self._forced = get_dialect(self.options.engine)
            except KeyError:
                raise InputError(
                    f"unknown engine dialect {self.options.engine!r} (known: {', '.join(DIALECTS)})"
                ) from None

    # ------------------------------------------------------------------ input
    def parse_stream(self, stream, source: str, progress: Callable[[int], None] | None = None) -> None:
        """Parse one log from a binary stream; ``progress`` gets the bytes read.

        Splitting a chunk into lines, tokenizing it (without the GIL) and every
        other stateless step (:func:`_prepare_chunk`) run on a helper thread
        while the previous chunk's state is assembled here.  At most one chunk
        is prepared ahead, which bounds memory.
        """
        problems = Problems()
        self._current = None  # a search never spans two files
        searches_before = len(self.searches)
        reader = _ChunkReader(stream, source, progress)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treediff-tokenize")
        finished = False
        line_base = 1  # number of the chunk's first line
        try:
            ahead: Future | None = None
            for tail, block, cut in reader:
                future = pool.submit(_prepare_chunk, tail, block, cut)
                if ahead is not None:
                    line_base = self._process_chunk(ahead.result(), line_base, source, problems)
                ahead = future
            if ahead is not None:
                line_base = self._process_chunk(ahead.result(), line_base, source, problems)
            self._account_unresolved(wait=True)
            finished = True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self._close_san_worker(abort=not finished)
        self._release_finished_searches(None)  # a search never spans two files
        if reader.tail.strip():
            problems.add("truncated (no newline at end of file; dropped)", line_base)
        if len(self.searches) == searches_before:
            raise InputError(f"{source}: no TREEDUMP header found (empty file or not a TREEDUMP log)")
        self.warnings.extend(problems.messages(source))
        if self.options.strict and problems:
            raise InputError("--strict: " + "; ".join(problems.messages(source)))

    # ------------------------------------------------------------------ chunks
    def _process_chunk(self, chunk: "PreparedChunk", line_base: int, source: str, problems: Problems) -> int:
        """Apply the parser's state to one prepared chunk; returns the number of the line after it."""
        problems.merge(chunk.problems, line_base)
        self._apply(chunk.rows, chunk.events, line_base, source, problems)
        self._release_finished_searches(self._current)
        return line_base + chunk.n_lines

    def _release_finished_searches(self, open_search: "SearchState | None") -> None:
        """Drop the move resolvers (boards and path caches) of every search but ``open_search``.

        Searches are finished in log order, so only the newest can still get
        records.  Keeps memory flat in logs of many SAN searches; ``finish``
        recreates a resolver when it needs one for an END ``best=``.
        """
        while self._released < len(self.searches) and self.searches[self._released] is not open_search:
            self.searches[self._released]._resolver = None
            self._released += 1

    # ------------------------------------------------------------------ state
    def _start_search(self, fields: dict, line_no: int, source: str, problems: Problems) -> SearchState:
        name = fields.get("engine")
        if self._forced is not None:
            dialect = self._forced
        elif not name:
            raise InputError(f"{source}:{line_no}: TREEDUMP header has no engine= key; give --engine")
        else:
            try:
                dialect = get_dialect(name)
            except KeyError:
                raise InputError(
                    f"{source}:{line_no}: unknown engine dialect {name!r} "
                    f"(known: {', '.join(DIALECTS)}); give --engine to read it as one of them"
                ) from None
        warnings = []
        version = fields.get("v")
        if version not in (None, "1"):
            warnings.append(f"format version v={version} is not 1; reading it as v=1")
        unit = dialect.unit
        if "unit" in fields:
            if is_int(fields["unit"]) and int(fields["unit"]) > 0:
                unit = int(fields["unit"])
            else:
                problems.add("with a bad unit= (the dialect's default used)", line_no)
        fen = fields.get("fen") or None
        if fen is None:
            warnings.append("header has no fen=: position and phase cannot be derived from it")
        position = fields.get("id") or None
        phase = normalize_phase(fields.get("phase"))
        phase_source = "header" if phase else None
        book = self.options.positions
        if book is not None:
            entry = book.lookup(position, fen)
            if entry is not None:
                position = position or entry.id
                if phase is None and entry.phase:
                    phase, phase_source = entry.phase, "epd"
                fen = fen or entry.fen
        if phase is None and fen:
            phase = material_phase(fen)
            phase_source = "material" if phase else None
            if phase is None:
                warnings.append(f"fen {fen!r} is not a valid position")
        if position is None:
            position = fen_hash_id(fen) if fen else f"search-{len(self.searches)}"
        state = SearchState(
            search=len(self.searches),
            dialect=dialect,
            unit=unit,
            position=position,
            fen=fen,
            phase=phase,
            phase_source=phase_source,
            producer=fields.get("producer"),
            source=source,
            first_line=line_no,
            primary_label=fields.get(dialect.context_key),
            primary_known=dialect.context_key in fields,
            warnings=warnings,
        )
        self.searches.append(state)
        return state

    def _apply(self, rows: pl.DataFrame, events: list, line_base: int, source: str, problems: Problems) -> None:
        """Assign search, iteration and context to the chunk's records, then convert and emit them."""
        # Walk the stateful lines in order; remember where each search starts in this chunk.
        carry_before = dict(self._iter_carry)
        starts: list[int] = []        # chunk index of each header
        chunk_searches: list[SearchState] = []
        iter_events = []              # (idx, search, ctx, d)
        for idx, tag, fields in sorted(events, key=lambda e: e[0]):
            line_no = line_base + idx
            if tag == "TREEDUMP":
                self._current = self._start_search(fields, line_no, source, problems)
                starts.append(idx)
                chunk_searches.append(self._current)
                continue
            state = self._current
            if state is None:
                problems.add(f"with {tag} before any TREEDUMP header (ignored)", line_no)
                continue
            # Raw label; which one is kept is known only at the search's first record.
            ctx = fields.get(state.dialect.context_key) or _NO_CTX
            state.order += 1
            if tag == "ITER":
                d = fields.get("d")
                if d is None or not is_int(d):
                    problems.add("with an ITER record without a numeric d=", line_no)
                    continue
                depth = int(d)
                iter_events.append((idx, state, ctx, depth))
                self._iter_carry[(state.search, ctx)] = (state.order, depth)
                state.iter_counts[ctx] += 1
                state.max_iter[ctx] = max(state.max_iter.get(ctx, 0), depth)
            else:  # END
                nodes = fields.get("nodes")
                if nodes is not None and not is_int(nodes):
                    problems.add("with an END record with non-numeric nodes=", line_no)
                    nodes = None
                score = fields.get("score")
                state.ends[ctx] = (
                    int(nodes) if nodes is not None else None,
                    fields.get("best"),
                    int(score) if score is not None and is_int(score) else None,
                    state.order,
                )

        if rows.height == 0:
            return
        idx = rows.get_column("idx").to_numpy().astype(np.int64)
        # Search of each record: the last header before it in this chunk, else the carried one.
        carried = self._search_before_chunk(chunk_searches)
        pos = np.searchsorted(np.asarray(starts, dtype=np.int64), idx, side="right") - 1
        search_states: list[SearchState | None] = [carried] + chunk_searches
        local = pos + 1  # index into search_states
        if carried is None:
            orphan = local == 0
            if orphan.any():
                problems.add_many("with a record before any TREEDUMP header (dropped)", idx[orphan] + line_base)
                keep = ~orphan
                rows, idx, local = rows.filter(pl.Series(keep)), idx[keep], local[keep]
                if rows.height == 0:
                    return
        state_ids = np.array([s.search if s is not None else -1 for s in search_states], dtype=np.int64)
        search_ids = state_ids[local]
        rows = rows.with_columns(
            pl.Series("search", search_ids, dtype=pl.Int32),
            pl.Series("local", local, dtype=pl.Int32),
        )
        # Records come in line order, so ``local`` never decreases: each search's records are one run.
        run_starts = _run_starts(local)
        no_ctx = rows.get_column("ctx").null_count() == rows.height  # the usual case: one context
        # A search without a header ctx= keeps the context of its first record.
        if no_ctx:
            firsts = [(int(local[i]), None) for i in run_starts]
        else:
            firsts = rows.group_by("local", maintain_order=True).agg(pl.col("ctx").first()).iter_rows()
        for loc, label in firsts:
            state = search_states[loc]
            if state is not None and not state.primary_known:
                state.primary_label, state.primary_known = label, True
        if no_ctx:
            rows = rows.with_columns(pl.lit(_NO_CTX).alias("ctx_eff"))
        else:
            primary = [s.primary_label if s is not None else None for s in search_states]
            rows = rows.with_columns(
                pl.when(
                    pl.col("ctx").is_null()
                    | (pl.col("ctx") == pl.col("local").replace_strict(
                        list(range(len(primary))), primary, return_dtype=pl.String))
                )
                .then(pl.lit(_NO_CTX))
                .otherwise(pl.col("ctx"))
                .alias("ctx_eff")
            )

        # Iteration: forward-fill ITER depths per (search, context), seeded by earlier chunks.
        if iter_events and _single_context(rows, iter_events):
            rows = rows.with_columns(_iterations_by_search(rows, iter_events))
        elif iter_events:
            iters = pl.DataFrame(
                {
                    "idx": [e[0] for e in iter_events],
                    "search": [e[1].search for e in iter_events],
                    "ctx_eff": [_effective(e[1], e[2]) for e in iter_events],
                    "iter_val": [e[3] for e in iter_events],
                },
                schema={"idx": pl.UInt32, "search": pl.Int32, "ctx_eff": pl.String, "iter_val": pl.Int32},
            )
            merged = (
                pl.concat([rows.with_columns(pl.lit(None, pl.Int32).alias("iter_val")), iters], how="diagonal_relaxed")
                .sort("idx")
                .with_columns(pl.col("iter_val").forward_fill().over(["search", "ctx_eff"]).alias("iter"))
            )
            rows = merged.filter(pl.col("tag").is_not_null()).drop("iter_val")
        else:
            rows = rows.with_columns(pl.lit(None, pl.Int32).alias("iter"))
        if carry_before:
            rows = self._carry_iterations(rows, carry_before, {s.search for s in search_states if s is not None})
        rows = rows.with_columns(pl.col("iter").fill_null(0))

        # Contexts: count them all; keep the search's primary context unless --all-contexts.
        if no_ctx:
            run_ends = np.append(run_starts[1:], len(local))
            counts = ((int(search_ids[i]), _NO_CTX, int(e - i)) for i, e in zip(run_starts, run_ends))
        else:
            counts = rows.group_by(["search", "ctx_eff"], maintain_order=True).len().iter_rows()
        by_id = {s.search: s for s in search_states if s is not None}
        for search, ctx, n in counts:
            by_id[search].ctx_counts[ctx] += n
        if not self.options.all_contexts and not no_ctx:
            # (Records that name no context are all in the kept one: no copy needed then.)
            rows = rows.filter(pl.col("ctx_eff") == _NO_CTX)
        if rows.height == 0:
            return
        self._emit(rows, by_id, line_base, problems)

    def _carry_iterations(
        self, rows: pl.DataFrame, carry_before: dict[tuple[int, str], tuple[int, int]], present: set[int]
    ) -> pl.DataFrame:
        """Records before the chunk's first ITER of their (search, context) get the ITER carried from earlier chunks."""
        # Several raw labels can map to the kept context: the latest ITER among them wins.
        latest: dict[tuple[int, str], tuple[int, int]] = {}
        for (search, label), (order, depth) in carry_before.items():
            if search not in present:
                continue
            key = (search, _effective(self.searches[search], label))
            if key not in latest or latest[key][0] < order:
                latest[key] = (order, depth)
        if not latest:
            return rows
        if len(latest) <= 16:
            # A few (search, context) pairs: conditions are cheaper than a join.
            carried = pl.lit(None, pl.Int32)
            for (search, ctx), (_, depth) in latest.items():
                carried = pl.when((pl.col("search") == search) & (pl.col("ctx_eff") == ctx)).then(
                    pl.lit(depth, pl.Int32)).otherwise(carried)
            return rows.with_columns(pl.coalesce(pl.col("iter"), carried).alias("iter"))
        carry = pl.DataFrame(
            {
                "search": [k[0] for k in latest],
                "ctx_eff": [k[1] for k in latest],
                "iter_carry": [v[1] for v in latest.values()],
            },
            schema={"search": pl.Int32, "ctx_eff": pl.String, "iter_carry": pl.Int32},
        )
        return rows.join(carry, on=["search", "ctx_eff"], how="left", maintain_order="left").with_columns(
            pl.coalesce("iter", "iter_carry").alias("iter")
        ).drop("iter_carry")

    def _search_before_chunk(self, chunk_searches: list[SearchState]) -> SearchState | None:
        """The search that was open when this chunk started."""
        if not chunk_searches:
            return self._current
        first = chunk_searches[0].search
        # The search just before the chunk's first header, if it came from the same file.
        if first > 0 and self.searches[first - 1].source == chunk_searches[0].source and self._opened_before(first):
            return self.searches[first - 1]
        return None

    def _opened_before(self, search: int) -> bool:
        return self.searches[search - 1].first_line < self.searches[search].first_line

    # ------------------------------------------------------------------ output
    def _emit(self, rows: pl.DataFrame, by_id: dict[int, SearchState], line_base: int, problems: Problems) -> None:
        search_col = rows.get_column("search").to_numpy()
        run_starts = _run_starts(search_col)  # one run per search (records are in line order)
        present = search_col[run_starts].tolist()
        # Sequence within the search, continuing from earlier chunks.
        run_lengths = np.diff(np.append(run_starts, len(search_col)))
        offset = np.repeat(np.array([by_id[s].seq for s in present], dtype=np.int64) - run_starts, run_lengths)
        rows = rows.with_columns(
            pl.Series("seq", np.arange(len(search_col), dtype=np.int64) + offset),
            (pl.col("idx").cast(pl.Int64) + line_base).alias("line"),
        )
        # The fast path accepts any printable value; a value that is not an integer is flagged here.
        keys = sorted(INT_KEYS)
        ints = rows.select([pl.col(k).cast(pl.Int64, strict=False) for k in keys])
        # A value that does not cast is bad; counting nulls is cheaper than comparing every row.
        if any(ints.get_column(k).null_count() != rows.get_column(k).null_count() for k in keys):
            bad = rows.select(
                [(pl.col(k).is_not_null() & ints.get_column(k).is_null()).alias(k) for k in keys]
            )
            problem = pl.col("problem")
            for k in reversed(keys):
                mask = bad.get_column(k)
                if mask.any():
                    problems.add_many(f"with a non-numeric {k}=", rows.get_column("line").filter(mask).to_numpy())
                    problem = pl.when(pl.lit(mask)).then(pl.lit(f"bad-number:{k}")).otherwise(problem)
            rows = rows.with_columns(problem.alias("problem"))
        rows = rows.with_columns(ints)

        # Per-search constants, as lookups from the search number.
        units = {s: by_id[s].unit for s in present}
        dialects = {s: by_id[s].dialect.name for s in present}
        rows = rows.with_columns(
            pl.col("search").replace_strict(list(units), list(units.values()), return_dtype=pl.Float64).alias("_unit"),
            pl.col("search").replace_strict(list(dialects), list(dialects.values()), return_dtype=pl.String).alias("_dialect"),
        )
        rows, finish_paths = self._normalize_paths(rows, by_id, problems)

        # Kind from act: the (dialect, act) pairs every dialect declares; anything else is OTHER.
        # With one dialect in the chunk (the usual case) it is made from the act column's dictionary
        # when the chunk's table is built (see _kinds_from_acts); else here, row by row.
        dialect_names = set(dialects.values())
        kinds: dict[str, str] | None = None
        if len(dialect_names) == 1:
            kinds = self._acts_of(next(iter(dialect_names)))
        else:
            rows = rows.with_columns(self._kind_expr().alias("kind"))
            other = rows.filter(pl.col("kind") == Kind.OTHER.value).group_by(["search", "act"], maintain_order=True).len()
            for search, act, n in other.iter_rows():
                by_id[search].other_acts[act] += n
        is_move = (rows.get_column("tag") == "MOVE").to_numpy()
        moves = np.add.reduceat(is_move.astype(np.int64), run_starts).tolist()  # per search (one run each)
        for search, n, m in zip(present, run_lengths.tolist(), moves):
            state = by_id[search]
            state.records += n
            state.moves += m
            state.result_nodes += n - m  # records are MOVE or RESULT
            state.seq += n

        self._write(rows, by_id, present, finish_paths, kinds)

    def _resolve_many(self, state: SearchState, paths: list[str]) -> list["list[str | None] | Future"]:
        """UCI paths for one search's paths (None where a move does not resolve), as consecutive parts.

        SAN resolution holds the GIL, so in large logs a long list is split:
        the tail (:data:`SAN_WORKER_SHARE`) goes to a worker process (started
        on first need) and comes back as a :class:`Future`, which the
        conversion thread waits for, so this thread goes on with the next chunk.  Results
        are the same either way: a path's UCI form depends only on the search's FEN.
        """
        self._san_paths += len(paths)
        worker = self._san_worker_for(len(paths))
        if worker is None:
            return [state.resolver.resolve_many(paths)]
        split = int(len(paths) * (1 - SAN_WORKER_SHARE))
        assert self._san_pool is not None
        tail = self._san_pool.submit(self._worker_round_trip, worker, state.search, state.fen, paths[split:])
        return [state.resolver.resolve_many(paths[:split]), tail]

    def _worker_round_trip(self, worker: SanWorker, search: int, fen: str | None, paths: list[str]) -> list[str | None]:
        """Runs on the SAN thread: one request to the worker; if the worker fails, resolved right here."""
        try:
            worker.submit(search, fen, paths)
            return worker.result()
        except SanWorkerError:
            if self._san_aborting:
                raise
            self._san_worker_failed = True  # no further requests: the main thread resolves everything
            return resolve_paths(fen, paths)

    def _san_worker_for(self, count: int) -> SanWorker | None:
        """The SAN worker if ``count`` paths are worth splitting (started on first need), else None."""
        if count < SAN_SPLIT_MIN_PATHS or self._san_paths < SAN_WORKER_AFTER_PATHS or self._san_worker_failed:
            return None
        if self._san_worker is None:
            try:
                self._san_worker = SanWorker()
            except OSError:
                self._san_worker_failed = True
                return None
            self._san_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treediff-san")
        return self._san_worker

    def _account_unresolved(self, wait: bool) -> None:
        """Count unresolved moves of the chunks whose paths are all resolved, in chunk order.

        ``wait``: block until every pending part is back (at the end of a log).
        """
        pending = self._san_pending
        while pending:
            problems, state, lines, parts = pending[0]
            if not wait and not all(_part_done(p) for p in parts):
                return
            pending.popleft()
            values = _joined_parts(parts)
            unresolved = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
            if not unresolved.any():
                continue
            bad_lines = lines[unresolved]
            problems.add_many("with a move that does not resolve in its position", bad_lines)
            state.unresolved_count += len(bad_lines)
            room = _FIRST_LINES_SHOWN - len(state.unresolved)
            if room > 0:
                state.unresolved.extend(int(x) for x in bad_lines[:room])

    def _close_san_worker(self, abort: bool = False) -> None:
        """Stop and reap the SAN worker process and its thread, if they were started.

        ``abort``: the parse failed, so pending answers are not wanted; the
        worker is killed first, which also frees a thread blocked reading it.
        """
        worker, pool = self._san_worker, self._san_pool
        self._san_worker, self._san_pool = None, None
        if abort:
            self._san_aborting = True
            if worker is not None:
                worker.kill()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if worker is not None:
            worker.close()
        self._san_aborting = False
        self._san_pending.clear()

    def _acts_of(self, name: str) -> dict[str, str]:
        """The act vocabulary of dialect ``name``: act -> kind value (an act not in it is OTHER)."""
        acts = {a: k.value for d in DIALECTS.values() if d.name == name for a, k in d.acts.items()}
        if self._forced is not None and self._forced.name == name:
            acts.update({a: k.value for a, k in self._forced.acts.items()})
        return acts

    def _kind_expr(self) -> pl.Expr:
        """``kind`` from ``_dialect`` and ``act`` row by row, for chunks of several dialects: the
        (dialect, act) pairs every dialect declares; anything else is OTHER."""
        pairs = {f"{d.name}|{a}": k.value for d in DIALECTS.values() for a, k in d.acts.items()}
        if self._forced is not None:
            pairs.update({f"{self._forced.name}|{a}": k.value for a, k in self._forced.acts.items()})
        looked_up = pl.concat_str([pl.col("_dialect"), pl.col("act")], separator="|").replace_strict(
            list(pairs), list(pairs.values()), default=Kind.OTHER.value, return_dtype=pl.String
        )
        return pl.when(pl.col("act").is_null()).then(pl.lit(None, pl.String)).otherwise(looked_up)

    def _normalize_paths(
        self, rows: pl.DataFrame, by_id: dict[int, SearchState], problems: Problems
    ) -> tuple[pl.DataFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
        """Paths to UCI.  Only the paths that are not UCI already get work here.

        Returns the rows and a function that makes the path columns (``path``,
        ``move``, ``null_move``, ``ply``, ``problem``) from what is found here,
        run by whoever builds the chunk's table: on the conversion thread when
        there is one.  SAN paths sent to the worker are futures it waits for.
        """
        self._account_unresolved(wait=False)
        raw = rows.get_column("path")
        # The tokenizer has told what each fast-path line's path looks like; slow-path lines have no shape.
        shape = rows.get_column(PATH_SHAPE)
        ok = (shape == PATH_UCI) | (shape == PATH_ROOT)
        if shape.null_count():
            unknown = shape.is_null().arg_true()
            ok = ok.scatter(unknown, raw.gather(unknown).str.contains(UCI_OR_ROOT_PATTERN))
        if bool(ok.all()):
            return rows, _root_as_empty_path
        todo = rows.select("search", "path", "_dialect").with_row_index("_i").filter(~ok)
        coord = _coordinate_paths(todo.get_column("path"), todo.get_column("_dialect"))
        good = coord.str.contains(UCI_PATH_PATTERN).fill_null(False)
        coord_index = todo.get_column("_i").filter(good)
        coord_paths = coord.filter(good)
        # Only what is neither UCI nor coordinates (SAN, odd spellings) is replayed on a board.
        hard = todo.filter(~good)
        hard_index: list[int] = []
        parts: list[list[str | None] | Future] = []
        line_col = rows.get_column("line")
        for (search,), part in hard.group_by(["search"], maintain_order=True):
            state = by_id[search]
            index = part.get_column("_i").to_list()
            search_parts = self._resolve_many(state, part.get_column("path").to_list())
            hard_index.extend(index)
            parts.extend(search_parts)
            self._san_pending.append((problems, state, line_col.gather(index).to_numpy(), search_parts))
        self._account_unresolved(wait=False)
        return rows, functools.partial(
            _finish_paths, coord_index=coord_index, coord_paths=coord_paths, hard_index=hard_index, parts=parts
        )

    def _write(
        self,
        rows: pl.DataFrame,
        by_id: dict[int, SearchState],
        present: list[int],
        finish_paths: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
        kinds: dict[str, str] | None = None,
    ) -> None:
        """Hand the chunk's records on; the conversion only needs each search's constants, taken here.

        ``finish_paths`` makes the path columns (see :meth:`_normalize_paths`);
        it may wait for the SAN worker, so it runs with the conversion, on the
        conversion thread when there is one.  ``kinds`` (act -> kind) is given
        when ``kind`` is still to be made (see :func:`_kinds_from_acts`); the
        acts it does not know are then counted when the table is built.
        """
        constants = {
            name: {s: _search_constant(by_id[s], name) for s in present}
            for name in ("engine", "position", "fen", "phase")
        }
        table = functools.partial(_records_table, rows, constants, present, finish_paths, kinds)

        def build() -> pa.Table:
            # Runs on the conversion thread; other_acts is read only by finish(), after the drain.
            records, other = table()
            for search, act, n in other:
                by_id[search].other_acts[act] += n
            return records

        if self._deferred_sink is not None:
            self._deferred_sink(build)
        elif self._sink is not None:
            self._sink(build())
        else:
            self._tables.append(build())

    # ------------------------------------------------------------------ finish
    def finish(self) -> ParseResult:
        """Close the parse: per-search warnings, the searches table, and (without a sink) the records."""
        rows = []
        for st in self.searches:
            primary_name = st.primary_label or ""
            kept_labels = {label for label in st.iter_counts | dict.fromkeys(st.ends, 0) if _effective(st, label) == _NO_CTX}
            if self.options.all_contexts:
                kept_labels = set(st.iter_counts) | set(st.ends)
            warnings = list(st.warnings)
            where = f"search {st.search} ({st.position}, line {st.first_line})"
            if len(st.ctx_counts) > 1:
                detail = ", ".join(f"{c or primary_name or '(none)'}: {n}" for c, n in st.ctx_counts.items())
                if self.options.all_contexts:
                    warnings.append(f"several search contexts in one search ({detail}); all kept (--all-contexts)")
                else:
                    warnings.append(
                        f"several search contexts in one search ({detail}): a second search (e.g. pondering) "
                        f"wrote into the same log; kept only {primary_name or '(unlabelled)'}, the context of its first line "
                        "(--all-contexts keeps all)"
                    )
            if st.records == 0:
                warnings.append(
                    "0-node search: no MOVE/RESULT records (an engine fed by a closing pipe can lose its input "
                    "before it starts searching; hold stdin open until it answers)"
                )
            for act, n in st.other_acts.most_common():
                warnings.append(f"unknown act={act} ({n} records) is not in the {st.dialect.name} vocabulary: kind OTHER")
            kept_ends = [st.ends[label] for label in kept_labels if label in st.ends]
            end = max(kept_ends, key=lambda e: e[3]) if kept_ends else None
            end_nodes = end[0] if end else None
            if self.options.all_contexts and kept_ends:
                # Every context's records are kept, so every context's own count adds up.
                end_nodes = sum(e[0] for e in kept_ends if e[0] is not None)
            if end_nodes is not None and end_nodes != st.result_nodes:
                warnings.append(f"END nodes={end_nodes} but {st.result_nodes} RESULT records")
            if st.unresolved_count:
                warnings.append(
                    f"{st.unresolved_count} records with a move that does not resolve in its position "
                    f"(flagged problem=unresolved-move; first at line {', '.join(map(str, st.unresolved))})"
                )
            end_best = None
            if end and end[1]:
                best = end[1]
                if st.dialect.notation == Notation.SAN or not _looks_uci(best):
                    end_best = st.resolver.resolve_move(best) or best
                else:
                    end_best = best.lower() if best not in st.dialect.null_moves else NULL_UCI
            for w in warnings:
                self.warnings.append(f"{st.source}: {where}: {w}")
            rows.append(
                {
                    "engine": st.dialect.name,
                    "search": st.search,
                    "position": st.position,
                    "fen": st.fen,
                    "phase": st.phase,
                    "phase_source": st.phase_source,
                    "unit": st.unit,
                    "producer": st.producer,
                    "source": st.source,
                    "first_line": st.first_line,
                    "contexts": ",".join(f"{c or primary_name}:{n}" for c, n in st.ctx_counts.items()),
                    "kept_context": "*" if self.options.all_contexts else primary_name,
                    "iterations": sum(st.iter_counts[label] for label in kept_labels),
                    "max_iter": max((st.max_iter.get(label, 0) for label in kept_labels), default=0),
                    "records": st.records,
                    "moves": st.moves,
                    "result_nodes": st.result_nodes,
                    "end_nodes": end_nodes,
                    "end_best": end_best,
                    "end_score": end[2] if end else None,
                    "node_source": "result",
                    "warnings": "\n".join(warnings) if warnings else None,
                }
            )
        searches = _table_from_rows(rows, SEARCHES_SCHEMA)
        if self.options.strict:
            serious = [w for w in self.warnings if "unknown act=" in w or "does not resolve" in w]
            if serious:
                raise InputError("--strict: " + "; ".join(serious))
        records = (
            pa.concat_tables(self._tables).unify_dictionaries().combine_chunks() if self._tables
            else pa.Table.from_batches([], schema=RECORDS_SCHEMA)  # (empty_table() imports pandas)
        )
        if self._tables:
            records = records.cast(RECORDS_SCHEMA) if records.schema != RECORDS_SCHEMA else records
        return ParseResult(records=records, searches=searches, warnings=list(self.warnings))


_POLARS_TYPE_OF = {pa.string(): pl.String, pa.int16(): pl.Int16, pa.int32(): pl.Int32, pa.int64(): pl.Int64}


def _table_from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` through polars, for flat schemas of strings and ints.

    pyarrow's own converters import pandas the first time (0.15 s of every
    `treediff parse`), and nothing else on the parse path needs it.
    """
    frame = pl.DataFrame(rows, schema={f.name: _POLARS_TYPE_OF[f.type] for f in schema}, orient="row")
    return frame.to_arrow().cast(schema)


def _coordinate_paths(paths: pl.Series, dialect_names: pl.Series) -> pl.Series:
    """Paths in coordinate notation made UCI (see :func:`normalize_coord_paths`); null for SAN dialects.

    One vectorized pass per dialect in the chunk (usually one).
    """
    out = pl.Series("coord", [None] * len(paths), dtype=pl.String)
    for name in dialect_names.unique(maintain_order=True).to_list():
        dialect = get_dialect(name)
        if dialect.notation is Notation.SAN:
            continue
        mask = dialect_names == name
        if mask.all():
            return normalize_coord_paths(paths, dialect.null_moves).alias("coord")
        out = out.scatter(mask.arg_true(), normalize_coord_paths(paths.filter(mask), dialect.null_moves))
    return out


def _last_uci_move(paths: pl.Series) -> pl.Series:
    """The last move of each UCI path (4 or 5 characters after the last ``/``); null for the root ``""``.

    Only for paths that match :data:`UCI_PATH_PATTERN`; cheaper than a regex.
    """
    tail = paths.str.slice(-5)
    return pl.select(
        pl.when(tail == "")
        .then(None)
        .when(tail.str.starts_with("/"))
        .then(tail.str.slice(1))
        .otherwise(tail)
    ).to_series()


def _single_context(rows: pl.DataFrame, iter_events: list) -> bool:
    """True when neither the records nor the ITER lines of the chunk name an effective context."""
    no_ctx = rows.get_column("ctx").null_count() == rows.height
    return no_ctx and all(_effective(state, ctx) == _NO_CTX for _, state, ctx, _ in iter_events)


def _iterations_by_search(rows: pl.DataFrame, iter_events: list) -> pl.Series:
    """ITER depth (plies) in force at each record, when every line has one context; null before the first ITER.

    ITER lines and records both come in line order and searches never interleave,
    so the ITER in force is the last one before the record if it belongs to the same search.
    """
    ev_idx = np.fromiter((e[0] for e in iter_events), dtype=np.int64, count=len(iter_events))
    ev_search = np.fromiter((e[1].search for e in iter_events), dtype=np.int64, count=len(iter_events))
    ev_depth = np.fromiter((e[3] for e in iter_events), dtype=np.int32, count=len(iter_events))
    row_idx = rows.get_column("idx").to_numpy()
    before = np.searchsorted(ev_idx, row_idx, side="right") - 1
    safe = np.maximum(before, 0)
    valid = (before >= 0) & (ev_search[safe] == rows.get_column("search").to_numpy())
    values = pl.Series("iter", ev_depth[safe], dtype=pl.Int32)
    return pl.select(pl.when(pl.Series(valid)).then(values).otherwise(None).alias("iter")).to_series()


@dataclass
class PreparedChunk:
    """A chunk after every step that needs no parser state (see :func:`_prepare_chunk`)."""

    #: Lines in the chunk.
    n_lines: int
    #: Its MOVE/RESULT records, fast and slow path together, in line order (``idx``: line in the chunk).
    rows: pl.DataFrame
    #: Its TREEDUMP/ITER/END lines: (line in the chunk, tag, fields).
    events: list
    #: What was wrong with its lines, numbered from 0 (see :meth:`Problems.merge`).
    problems: "Problems"


def _prepare_chunk(tail: bytes, block: bytes, cut: int) -> PreparedChunk:
    """Split ``tail + block[:cut]`` (whole lines) and do all that needs no parser state; runs on a helper thread."""
    data = tail + memoryview(block)[:cut] if tail else memoryview(block)[:cut]
    lines, _ = split_lines(data)
    tokens = tokenize_chunk(lines)
    problems = Problems()
    text, bad_utf8, fast = tokens.text, tokens.bad_utf8, tokens.fast
    fast_mask = fast.get_column("tag").is_not_null().to_numpy()
    if bad_utf8.any():
        fast_mask &= ~bad_utf8
        problems.add_many("with garbage (non-UTF-8) bytes", np.flatnonzero(bad_utf8))
    slow_idx = np.flatnonzero(~fast_mask & ~bad_utf8)

    # Slow path: headers, ITER, END, comments and odd records.
    events: list[tuple[int, str, dict]] = []  # (chunk index, kind, fields)
    slow_rows: list[dict] = []
    for i in slow_idx.tolist():
        token = tokenize_line(text[i])
        if token is None:
            continue
        if token.tag in ("MOVE", "RESULT"):
            row = _slow_row(token, i, problems)
            if row is not None:
                slow_rows.append(row)
        elif token.tag in ("TREEDUMP", "ITER", "END"):
            if token.bad:
                problems.add(f"with a malformed {token.tag} record", i)
            events.append((i, token.tag, token.fields))
        else:
            problems.add("with an unknown record tag", i)

    fast_rows = fast.with_row_index("idx").filter(pl.Series(fast_mask))
    missing_path = fast_rows.get_column("path").is_null()
    is_move = fast_rows.get_column("tag") == "MOVE"
    missing_act = is_move & fast_rows.get_column("act").is_null()
    # A MOVE decides a move, so its path names at least one; "-" is the root (RESULT only).
    root_move = is_move & (fast_rows.get_column("path") == "-").fill_null(False)
    if missing_path.any() or missing_act.any() or root_move.any():
        idx_all = fast_rows.get_column("idx").to_numpy()
        problems.add_many("missing required key path= (dropped)", idx_all[missing_path.to_numpy()])
        problems.add_many(
            "missing required key act= (dropped)", idx_all[(missing_act & ~missing_path).to_numpy()]
        )
        problems.add_many(ROOT_MOVE_PROBLEM, idx_all[(root_move & ~missing_act).to_numpy()])
        fast_rows = fast_rows.filter(~(missing_path | missing_act | root_move))
    if slow_rows:
        slow_frame = pl.DataFrame(
            slow_rows,
            schema={"idx": pl.UInt32, **{k: pl.String for k in FAST_FIELDS}, PATH_SHAPE: pl.UInt8,
                    "extra": pl.String, "problem": pl.String},
        )
        rows = pl.concat(
            [fast_rows.with_columns(pl.lit(None, pl.String).alias("extra"), pl.lit(None, pl.String).alias("problem")),
             slow_frame],
            how="vertical_relaxed",
        ).sort("idx")
    else:
        rows = fast_rows.with_columns(
            pl.lit(None, pl.String).alias("extra"), pl.lit(None, pl.String).alias("problem")
        )

    return PreparedChunk(n_lines=len(lines), rows=rows, events=events, problems=problems)


def _slow_row(token, idx: int, problems: Problems) -> dict | None:
    """A MOVE/RESULT record read by the slow path, as a row of string fields (None: dropped).

    ``idx`` is the line in the chunk; problems are numbered by it too.
    """
    fields = token.fields
    required = ("path", "act") if token.tag == "MOVE" else ("path",)
    for key in required:
        if key not in fields or not fields[key]:
            problems.add(f"missing required key {key}= (dropped)", idx)
            return None
    if token.tag == "MOVE" and fields["path"] == "-":
        problems.add(ROOT_MOVE_PROBLEM, idx)
        return None
    if token.bad:
        problems.add("with a malformed key=value token", idx)
    row: dict = {"idx": idx, "tag": token.tag}
    extra = []
    problem = None
    for key, value in fields.items():
        if key in ROW_KEYS:
            if key in INT_KEYS and not is_int(value):
                problems.add(f"with a non-numeric {key}=", idx)
                problem = problem or f"bad-number:{key}"
                continue
            row[key] = value
        else:
            extra.append(f"{key}={value}")
    row["extra"] = " ".join(extra) if extra else None
    row["problem"] = problem
    return row


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts, for values that never decrease (e.g. search numbers in line order)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts = np.concatenate(([0], change))
    if len(change) and (values[change] < values[change - 1]).any():
        raise AssertionError("records out of line order")  # would break one-run-per-search
    return starts


def _part_done(part: "list | Future") -> bool:
    return isinstance(part, list) or part.done()


def _joined_parts(parts: "list[list[str | None] | Future]") -> list[str | None]:
    """Resolved paths, in order, from parts that are lists or futures of lists (waits for the futures)."""
    out: list[str | None] = []
    for part in parts:
        out.extend(part if isinstance(part, list) else part.result())
    return out


def _finish_paths(
    rows: pl.DataFrame,
    coord_index: pl.Series,
    coord_paths: pl.Series,
    hard_index: list[int],
    parts: "list[list[str | None] | Future]",
) -> pl.DataFrame:
    """The path columns of a chunk whose paths are not all UCI.

    Rows at ``coord_index`` take the normalized coordinate paths
    ``coord_paths``; rows at ``hard_index`` the SAN resolutions ``parts`` (in
    order).  Unresolved records keep their path as written and are flagged
    ``problem=unresolved-move`` (they are counted by the parser, in order).
    Pure apart from waiting for the futures: safe on the conversion thread.
    """
    raw = rows.get_column("path")
    uci = _root_as_empty(raw)
    if len(coord_index):
        uci = uci.scatter(coord_index, coord_paths)
    if not hard_index:
        return _with_uci_paths(rows, uci)
    patch = pl.Series("v", _joined_parts(parts), dtype=pl.String)
    uci = uci.scatter(hard_index, patch)  # type: ignore[arg-type]
    unresolved = pl.Series([False] * len(uci)).scatter(hard_index, patch.is_null())
    if not bool(unresolved.any()):
        return _with_uci_paths(rows, uci)
    uci = pl.select(pl.when(unresolved).then(raw).otherwise(uci)).to_series()
    return _with_uci_paths(rows, uci, unresolved)


#: :data:`UCI_PATH_PATTERN`, or ``-`` (the root as RESULT lines write it).
UCI_OR_ROOT_PATTERN = "^(?:-|" + UCI_PATH_PATTERN.removeprefix("^").removesuffix("$") + ")$"


def _root_as_empty(raw: pl.Series) -> pl.Series:
    return pl.select(pl.when(raw == "-").then(pl.lit("")).otherwise(raw)).to_series()


def _root_as_empty_path(rows: pl.DataFrame) -> pl.DataFrame:
    """:func:`_with_uci_paths` for rows whose paths are all UCI already (the root written ``-``)."""
    return _with_uci_paths(rows, _root_as_empty(rows.get_column("path")))


def _with_uci_paths(rows: pl.DataFrame, uci: pl.Series, unresolved: pl.Series | None = None) -> pl.DataFrame:
    """``path``, ``move``, ``null_move``, ``ply`` and ``problem`` from the UCI paths (``unresolved``: flagged rows)."""
    last_move = _last_uci_move(uci) if unresolved is None else uci.str.extract(r"([^/]+)$")
    problem = pl.col("problem")
    if unresolved is not None:
        problem = pl.when(unresolved).then(pl.lit("unresolved-move")).otherwise(problem)
    ply = pl.col("ply")
    if rows.get_column("ply").null_count():
        ply = pl.coalesce(ply, pl.when(uci == "").then(0).otherwise(uci.str.count_matches("/") + 1))
    return rows.with_columns(
        uci.alias("path"),
        last_move.alias("move"),
        (last_move == NULL_UCI).alias("null_move"),
        ply.alias("ply"),
        problem.alias("problem"),
    )


def _records_table(
    rows: pl.DataFrame,
    constants: dict[str, dict[int, str | None]],
    present: list[int],
    finish_paths: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    kinds: dict[str, str] | None = None,
) -> tuple[pa.Table, list[tuple[int, str, int]]]:
    """One chunk's assembled rows as a RECORDS_SCHEMA table (depths to plies, strings dictionary-encoded).

    ``constants`` gives, per per-search column (engine, position, fen, phase),
    each present search's value; ``finish_paths`` completes the path columns
    first (see :meth:`TreedumpParser._write`).  With ``kinds`` (act -> kind),
    ``kind`` is made here from ``act`` and the second result lists the acts it
    does not know as (search, act, records); without, the rows have ``kind``
    and the list is empty.  Pure: safe to run on another thread.
    """
    if finish_paths is not None:
        rows = finish_paths(rows)
    unit = pl.col("_unit")
    frame = rows.select(
        pl.col("search").cast(pl.Int32),
        pl.col("iter").cast(pl.Int16),
        pl.col("seq"),
        pl.col("line"),
        pl.col("tag"),
        pl.col("ctx"),
        pl.col("path"),
        pl.col("ply").cast(pl.Int16, strict=False),
        pl.col("move"),
        pl.col("null_move"),
        pl.col("mn").cast(pl.Int16, strict=False),
        (pl.col("d") / unit).cast(pl.Float32).alias("depth"),
        (pl.col("nd") / unit).cast(pl.Float32).alias("new_depth"),
        (pl.col("red") / unit).cast(pl.Float32).alias("reduction"),
        pl.col("act"),
        pl.col("kind") if kinds is None else pl.lit(None, pl.String).alias("kind"),
        pl.col("a").cast(pl.Int32, strict=False).alias("alpha"),
        pl.col("b").cast(pl.Int32, strict=False).alias("beta"),
        pl.col("score").cast(pl.Int32, strict=False),
        pl.col("bound"),
        pl.col("nt").alias("node_type"),
        pl.col("see").cast(pl.Int32, strict=False),
        pl.col("hist"),
        pl.col("why"),
        pl.col("extra"),
        pl.col("problem"),
    )
    # Newest Arrow layout: strings stay string views (no copy); only the few plain string columns
    # are cast to the schema's string type below, and dictionary encoding reads views as fast.
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    # From polars: pyarrow's ChunkedArray.to_numpy imports pandas (0.15 s of start-up).
    search_arr = frame.get_column("search").to_numpy().astype(np.int64)
    base = min(present)
    columns = {}
    for name in ("engine", "position", "fen", "phase"):
        # One dictionary entry per distinct value (several searches often share an engine or phase).
        per_search = constants[name]
        values = list(dict.fromkeys(per_search.values()))
        code_of = {v: i for i, v in enumerate(values)}
        codes = np.full(max(present) - base + 1, -1, dtype=np.int32)
        for s, v in per_search.items():
            codes[s - base] = code_of[v]
        row_codes = codes[search_arr - base]
        # Arrays made by polars: pa.array() imports pandas (0.15 s of start-up) the first time.
        indices = pl.Series(row_codes, dtype=pl.Int32)
        if any(v is None for v in values):
            # A null value is a null index, not a null dictionary entry (Arrow cannot unify those).
            indices = pl.select(pl.when(indices == code_of[None]).then(None).otherwise(indices)).to_series()
            values = [v if v is not None else "" for v in values]
        dictionary = pl.Series(values, dtype=pl.String).to_arrow().cast(pa.string())
        indices = indices.to_arrow()
        columns[name] = pa.DictionaryArray.from_arrays(indices, dictionary)
    other: list[tuple[int, str, int]] = []
    for fld in RECORDS_SCHEMA:
        if fld.name in columns:
            continue
        if fld.name == "kind" and kinds is not None:
            columns["kind"], unknown = _kinds_from_acts(columns["act"], kinds)
            if unknown:
                counted = frame.filter(pl.col("act").is_in(unknown)).group_by(["search", "act"], maintain_order=True).len()
                other = [(int(s), str(a), int(n)) for s, a, n in counted.iter_rows()]
            continue
        col = table.column(fld.name)
        if fld.type == DICT_STR:
            # Encoded before the cast, so only the (small) dictionary is converted to string.
            col = pc.dictionary_encode(col).cast(DICT_STR)
        elif col.type != fld.type:
            col = col.cast(fld.type)
        columns[fld.name] = col
    return pa.Table.from_arrays([columns[f.name] for f in RECORDS_SCHEMA], schema=RECORDS_SCHEMA), other


def _kinds_from_acts(acts: pa.ChunkedArray, kinds: dict[str, str]) -> tuple[pa.ChunkedArray, list[str]]:
    """``kind`` from the dictionary-encoded ``act`` column, and the acts ``kinds`` does not know (OTHER).

    A chunk has a handful of distinct acts: each dictionary entry is looked up
    once and the rows follow their act's index (``take``), instead of a lookup
    per row.  The kinds' dictionary lists the kinds present, in order of first
    appearance, as dictionary-encoding the strings would; null act, null kind.
    """
    chunks, unknown = [], []
    for chunk in acts.chunks:
        act_values = chunk.dictionary.to_pylist()
        kind_values = [kinds.get(a, Kind.OTHER.value) for a in act_values]
        unknown.extend(a for a in act_values if a not in kinds and a not in unknown)
        present = list(dict.fromkeys(kind_values))
        code_of = {k: i for i, k in enumerate(present)}
        lookup = np.array([code_of[k] for k in kind_values], dtype=np.int32)
        # (Arrays built from buffers: pa.array() would import pandas.)
        lookup_array = pa.Array.from_buffers(pa.int32(), len(lookup), [None, pa.py_buffer(lookup)])
        dictionary = pl.Series(present, dtype=pl.String).to_arrow().cast(pa.string())
        chunks.append(pa.DictionaryArray.from_arrays(pc.take(lookup_array, chunk.indices), dictionary))
    return pa.chunked_array(chunks, type=DICT_STR), unknown


def _search_constant(state: SearchState, name: str) -> str | None:
    return {"engine": state.dialect.name, "position": state.position, "fen": state.fen, "phase": state.phase}[name]


def _effective(state: SearchState, label: str) -> str:
    """The context key of a raw label: "" for the kept context (and unlabelled lines), else the label."""
    if label == _NO_CTX or (state.primary_known and label == (state.primary_label or _NO_CTX)):
        return _NO_CTX
    return label


def _looks_uci(move: str) -> bool:
    return len(move) in (4, 5) and move[0] in "abcdefgh" and move[1] in "12345678"


def _options(engine: str, positions, strict: bool, all_contexts: bool) -> ParseOptions:
    book = read_epd(positions) if isinstance(positions, (str, os.PathLike)) else positions
    return ParseOptions(engine=engine or "auto", positions=book, strict=strict, all_contexts=all_contexts)


def parse_logs(
    paths: Iterable[str | os.PathLike],
    engine: str = "auto",
    positions: str | os.PathLike | PositionBook | None = None,
    strict: bool = False,
    all_contexts: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ParseResult:
    """Parse logs in memory: records and searches as Arrow tables, plus warnings.

    ``positions`` is an EPD file (or a :class:`PositionBook`) giving ids and
    phase labels.  Raises :class:`~treediff.model.errors.InputError` for unreadable
    input (and, with ``strict``, for any problem).
    """
    parser = TreedumpParser(_options(engine, positions, strict, all_contexts))
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
) -> ParseResult:
    """Parse logs straight to ``out`` (records) and its ``.searches.parquet`` sibling, streaming.

    Both files appear only if the whole parse succeeds.  The returned result's
    ``records`` table is empty (the rows went to disk).
    """
    parser_options = _options(engine, positions, strict, all_contexts)
    out = str(out)
    # Two stages after the parser, each on its own thread: building the Arrow table of a chunk,
    # then encoding it to Parquet; both take about as long as the parser itself.
    with AtomicParquetWriter(out, RECORDS_SCHEMA, **RECORDS_PARQUET_OPTIONS) as writer, \
            _BackgroundSink(writer.write, name="treediff-writer") as encode, \
            _BackgroundSink(encode.put, name="treediff-convert") as convert:
        parser = TreedumpParser(parser_options, deferred_sink=convert.put)
        for path in paths:
            with open_log(path) as stream:
                parser.parse_stream(stream, str(path), progress)
        convert.drain()
        encode.drain()
        result = parser.finish()
        # Written before the records file is renamed into place, so a reader never sees records alone.
        write_table_atomic(result.searches, searches_path_for(out))
    return result


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
                    self._sink(item() if callable(item) else item)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    self._error = exc

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, item: "pa.Table | Callable[[], pa.Table]") -> None:
        """Queue a table, or a function that builds one (called on the worker thread)."""
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
    sizes = [input_size(p) for p in paths]
    return None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[misc]

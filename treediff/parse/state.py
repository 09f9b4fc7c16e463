"""The parser's state machine: headers open searches, ITER sets the iteration, END closes a context.

Only the few stateful lines (``TREEDUMP``, ``ITER``, ``END``) are read one by
one (:meth:`SearchStates.read_events`); the state they set is then spread
over a chunk's records column-wise (:meth:`SearchStates.spread`): the search
of each record, its context (the search's primary one, or another search
writing into the same log), and the ``ITER`` depth in force.  State carries
from chunk to chunk, never from file to file.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import numpy as np
import polars as pl
import pyarrow as pa

from treediff.model.errors import InputError
from treediff.model.positions import PositionBook, fen_hash_id, material_phase, normalize_phase, position_key
from treediff.parse.dialects import DIALECTS, Dialect, get_dialect
from treediff.parse.problems import Problems
from treediff.parse.tokenizer import is_int

if TYPE_CHECKING:  # imported on first use: it loads python-chess (~30 ms), which UCI logs never need
    from treediff.parse.moves import PathResolver

NO_CTX = ""  # the effective context of lines that name none

#: (search, raw context label) -> (order of the ITER line in its search, depth in plies as written).
IterCarry = dict[tuple[int, str], tuple[int, int]]


@dataclass
class ParseOptions:
    """How to parse: dialect override, EPD labels, strictness, contexts kept."""

    engine: str = "auto"
    positions: PositionBook | None = None
    strict: bool = False
    all_contexts: bool = False
    #: A compressed log cut short: keep the searches read completely (and warn) instead of failing.
    keep_complete: bool = False


@dataclass
class SearchState:
    """What the parser knows about one search while reading it."""

    search: int
    dialect: Dialect
    #: Depth ticks per ply (the header's unit=, else the dialect's).
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
    #: Raw context label -> (nodes, best, score, order) of its last END.
    ends: dict = field(default_factory=dict)
    #: Raw context label -> the line numbers of its END records (more than one: interleaved searches).
    end_lines: dict = field(default_factory=dict)
    #: The search's last line (the line before the next header of its file, else the file's last line).
    last_line: int | None = None
    records: int = 0
    moves: int = 0
    result_nodes: int = 0
    #: Sequence number of the search's next record.
    seq: int = 0
    other_acts: collections.Counter = field(default_factory=collections.Counter)
    #: First line numbers (and count) of records whose move does not resolve.
    unresolved: list = field(default_factory=list)
    unresolved_count: int = 0
    warnings: list = field(default_factory=list)
    _resolver: PathResolver | None = None

    @property
    def resolver(self) -> PathResolver:
        if self._resolver is None:
            from treediff.parse.moves import PathResolver

            self._resolver = PathResolver(self.fen)
        return self._resolver


def effective(state: SearchState, label: str) -> str:
    """The context key of a raw label: "" for the kept context (and unlabelled lines), else the label."""
    if label == NO_CTX or (state.primary_known and label == (state.primary_label or NO_CTX)):
        return NO_CTX
    return label


@dataclass
class ChunkEvents:
    """What a chunk's stateful lines did (see :meth:`SearchStates.read_events`)."""

    #: Chunk index (line in the chunk) of each header, and the search it opened.
    starts: list[int]
    searches: list[SearchState]
    #: (chunk index, search, raw ctx label, ITER depth as written) of each valid ITER line.
    iters: list[tuple[int, SearchState, str, int]]
    #: The ITER depths carried from earlier chunks, as they were before this chunk.
    carry_before: IterCarry


@dataclass
class Runs:
    """A chunk's records, which come in line order, as one run per search."""

    #: Row where each search's run starts, and its length (records).
    starts: np.ndarray
    lengths: np.ndarray
    #: The search number of each run.
    present: list[int]


def last_at_or_before(marks: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each of ``rows`` (ascending line indices), the index of the last of ``marks`` (ascending lines) at or
    before it, -1 before the first: ``np.searchsorted(marks, rows, side="right") - 1`` (int64).

    A chunk has ~10^5 rows and a few marks (headers, ITER lines): the marks are placed among the rows (a
    search per mark), and each mark's number repeated over its rows, instead of a binary search per row
    (one array made: a bincount and its running sum made three, ~0.5 ms a chunk each)."""
    if len(marks) == 0 or len(rows) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    first_row = np.searchsorted(rows, marks, side="left")  # the first row at or after each mark (nondecreasing)
    # Rows from first_row[k] up to the next mark's first row follow mark k; those before the first, none (-1).
    lengths = np.diff(first_row, prepend=0, append=len(rows))
    return np.repeat(np.arange(-1, len(marks), dtype=np.int64), lengths)


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts, for values that never decrease (e.g. search numbers in line order)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(values[1:] != values[:-1]) + 1
    starts = np.concatenate(([0], change))
    if len(change) and (values[change] < values[change - 1]).any():
        raise AssertionError("records out of line order")  # would break one-run-per-search
    return starts


class SearchStates:
    """Every search read so far, the open one, and the state carried from chunk to chunk."""

    def __init__(self, options: ParseOptions):
        self.options = options
        self.searches: list[SearchState] = []
        self.current: SearchState | None = None
        self._released = 0  # searches before this index have dropped their move resolvers
        # (search, raw ctx label) -> (order, current ITER depth), carried from chunk to chunk.
        self._iter_carry: IterCarry = {}
        self.forced: Dialect | None = None
        if options.engine and options.engine != "auto":
            try:
                self.forced = get_dialect(options.engine)
            except KeyError:
                raise InputError(
                    f"unknown engine dialect {options.engine!r} (known: {', '.join(DIALECTS)})"
                ) from None

    def begin_file(self) -> None:
        self.current = None  # a search never spans two files

    def end_file(self, last_line: int) -> None:
        """The file read so far ended at ``last_line``: its open search ends there."""
        if self.current is not None:
            self.current.last_line = last_line

    def release_finished(self, open_search: SearchState | None) -> None:
        """Drop the move resolvers (boards and path caches) of every search but ``open_search``.

        Searches are finished in log order, so only the newest can still get
        records.  Keeps memory flat in logs of many SAN searches; the summary
        recreates a resolver when it needs one for an END ``best=``.
        """
        while self._released < len(self.searches) and self.searches[self._released] is not open_search:
            self.searches[self._released]._resolver = None
            self._released += 1

    # ------------------------------------------------------------------ headers
    def _dialect_of(self, fields: dict, line_no: int, source: str) -> Dialect:
        """The header's dialect: --engine's, else its engine= key's."""
        if self.forced is not None:
            return self.forced
        name = fields.get("engine")
        if not name:
            raise InputError(f"{source}:{line_no}: TREEDUMP header has no engine= key; give --engine")
        try:
            return get_dialect(name)
        except KeyError:
            raise InputError(
                f"{source}:{line_no}: unknown engine dialect {name!r} "
                f"(known: {', '.join(DIALECTS)}); give --engine to read it as one of them"
            ) from None

    def start_search(self, fields: dict, line_no: int, source: str, problems: Problems) -> SearchState:
        """Open the search a TREEDUMP header starts (it becomes the current one)."""
        dialect = self._dialect_of(fields, line_no, source)
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
        position, fen, phase, phase_source = self._identify(fields, warnings)
        if self.current is not None:
            self.current.last_line = line_no - 1
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
        self.current = state
        return state

    def _identify(self, fields: dict, warnings: list[str]) -> tuple[str, str | None, str | None, str | None]:
        """A header's position id, FEN, phase and where the phase came from (header, EPD, material)."""
        fen = fields.get("fen") or None
        if fen is None:
            warnings.append("header has no fen=: position and phase cannot be derived from it")
        position = fields.get("id") or None
        phase = normalize_phase(fields.get("phase"))
        phase_source = "header" if phase else None
        book = self.options.positions
        entry = book.lookup(position, fen) if book is not None else None
        if entry is not None and fen and position is not None and position_key(entry.fen) != position_key(fen):
            # Matched by id, but the EPD line is another position: its label would describe the wrong board.
            warnings.append(f"--positions: id {position!r} is {entry.fen!r} in the EPD file but this search's "
                            f"header has fen {fen!r}; the EPD line is not used for it")
            entry = book.lookup(None, fen) if book is not None else None
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
        return position, fen, phase, phase_source

    # ------------------------------------------------------------------ stateful lines
    def read_events(self, events: list, line_base: int, source: str, problems: Problems) -> ChunkEvents:
        """Walk a chunk's stateful lines in order; remember where each search starts in the chunk."""
        chunk = ChunkEvents(starts=[], searches=[], iters=[], carry_before=dict(self._iter_carry))
        for idx, tag, fields in sorted(events, key=lambda e: e[0]):
            line_no = line_base + idx
            if tag == "TREEDUMP":
                chunk.starts.append(idx)
                chunk.searches.append(self.start_search(fields, line_no, source, problems))
                continue
            state = self.current
            if state is None:
                problems.add(f"with {tag} before any TREEDUMP header (ignored)", line_no)
                continue
            # Raw label; which one is kept is known only at the search's first record.
            ctx = fields.get(state.dialect.context_key) or NO_CTX
            state.order += 1
            if tag == "ITER":
                self._on_iter(state, ctx, fields, idx, line_no, chunk, problems)
            else:
                _on_end(state, ctx, fields, line_no, problems)
        return chunk

    def _on_iter(
        self, state: SearchState, ctx: str, fields: dict, idx: int, line_no: int, chunk: ChunkEvents, problems: Problems
    ) -> None:
        d = fields.get("d")
        if d is None or not is_int(d):
            problems.add("with an ITER record without a numeric d=", line_no)
            return
        depth = int(d)
        chunk.iters.append((idx, state, ctx, depth))
        self._iter_carry[(state.search, ctx)] = (state.order, depth)
        state.iter_counts[ctx] += 1
        state.max_iter[ctx] = max(state.max_iter.get(ctx, 0), depth)

    # ------------------------------------------------------------------ records
    def spread(
        self, rows: pl.DataFrame, chunk: ChunkEvents, line_base: int, problems: Problems
    ) -> tuple[pl.DataFrame, dict[int, SearchState]] | None:
        """Give the chunk's records their search, context and iteration; None when no record is left.

        Adds the columns ``search``, ``local`` (index into the chunk's
        searches, the one open before it first), ``ctx_eff`` and ``iter``
        (plies as written by ITER, 0 before the first), counts each search's
        contexts, and keeps only the primary context unless ``--all-contexts``.
        Also returns the searches present, by number.
        """
        if rows.height == 0:
            return None
        assigned = self._assign_searches(rows, chunk, line_base, problems)
        if assigned is None:
            return None
        rows, local, search_states = assigned
        starts = run_starts(local)
        rows, no_ctx = _assign_contexts(rows, local, starts, search_states)
        rows = self._assign_iterations(rows, chunk, search_states)
        by_id = {s.search: s for s in search_states if s is not None}
        _count_contexts(rows, no_ctx, starts, by_id)
        if not self.options.all_contexts and not no_ctx:
            # (Records that name no context are all in the kept one: no copy needed then.)
            rows = rows.filter(pl.col("ctx_eff") == NO_CTX)
        return (rows, by_id) if rows.height else None

    def _assign_searches(
        self, rows: pl.DataFrame, chunk: ChunkEvents, line_base: int, problems: Problems
    ) -> tuple[pl.DataFrame, np.ndarray, list[SearchState | None]] | None:
        """Search of each record: the last header before it in this chunk, else the carried one.

        Records before any header are dropped.  Returns the rows (with
        ``search`` and ``local``), ``local`` and the chunk's searches, or None
        if no record is left.
        """
        idx = rows.get_column("idx").to_numpy()
        carried = self._search_before_chunk(chunk.searches)
        search_states: list[SearchState | None] = [carried, *chunk.searches]
        # Rows come in line order, so each search's rows are one stretch: those after its header and before the
        # next (what last_at_or_before(headers, rows) + 1 numbers), made by repeating each stretch's number.
        first_row = np.searchsorted(idx, np.asarray(chunk.starts, dtype=np.int64), side="left")
        lengths = np.diff(first_row, prepend=0, append=len(idx))  # rows of search_states[0], [1], ...
        if carried is None and lengths[0]:
            # The rows before the chunk's first header (a prefix), when no search was open.
            orphans = int(lengths[0])
            problems.add_many("with a record before any TREEDUMP header (dropped)",
                              idx[:orphans].astype(np.int64) + line_base)
            rows, lengths[0] = rows.slice(orphans), 0
            if rows.height == 0:
                return None
        local = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)  # index into search_states
        state_ids = np.array([s.search if s is not None else -1 for s in search_states], dtype=np.int32)
        rows = rows.with_columns(
            pl.Series("search", np.repeat(state_ids, lengths), dtype=pl.Int32),
            pl.Series("local", local, dtype=pl.Int32),
        )
        return rows, local, search_states

    def _search_before_chunk(self, chunk_searches: list[SearchState]) -> SearchState | None:
        """The search that was open when this chunk started."""
        if not chunk_searches:
            return self.current
        first = chunk_searches[0].search
        # The search just before the chunk's first header, if it came from the same file.
        if first > 0 and self.searches[first - 1].source == chunk_searches[0].source and self._opened_before(first):
            return self.searches[first - 1]
        return None

    def _opened_before(self, search: int) -> bool:
        return self.searches[search - 1].first_line < self.searches[search].first_line

    def _assign_iterations(
        self, rows: pl.DataFrame, chunk: ChunkEvents, search_states: list[SearchState | None]
    ) -> pl.DataFrame:
        """``iter``: forward-fill ITER depths per (search, context), seeded by earlier chunks; 0 before any."""
        iter_events = chunk.iters
        if _single_context(rows, iter_events):
            single = self._iterations_single_context(rows, iter_events, chunk.carry_before, search_states)
            if single is not None:
                return rows.with_columns(single)
        if iter_events and _single_context(rows, iter_events):
            rows = rows.with_columns(_iterations_by_search(rows, iter_events))
        elif iter_events:
            rows = _iterations_by_context(rows, iter_events)
        else:
            rows = rows.with_columns(pl.lit(None, pl.Int32).alias("iter"))
        if chunk.carry_before:
            present = {s.search for s in search_states if s is not None}
            rows = self._carry_iterations(rows, chunk.carry_before, present)
        return rows.with_columns(pl.col("iter").fill_null(0))

    def _iterations_single_context(
        self, rows: pl.DataFrame, iter_events: list, carry_before: IterCarry, search_states: list[SearchState | None]
    ) -> pl.Series | None:
        """The whole ``iter`` column (Int32, no nulls) when no record nor ITER line names a context, in numpy:
        :func:`_iterations_by_search`, then the ITER carried from earlier chunks (:meth:`_carry_iterations`, whose
        ``ctx_eff == ""`` test every row passes here), then 0.  None (the general steps) for a depth outside int32.

        One array made instead of a when/then per carried search, a coalesce and a fill (about 2 ms a chunk).
        """
        # The column is constant between two boundaries: a search's first row, and the first row after an ITER
        # line.  Each stretch's value is found once (a few dozen a chunk), then repeated: one array is made.
        row_search = rows.get_column("search").to_numpy()
        n = len(row_search)
        present = {s.search for s in search_states if s is not None}
        carried = {search: depth for (search, ctx), (_, depth) in self._latest_carry(carry_before, present).items()
                   if ctx == NO_CTX}
        ev_idx = np.fromiter((e[0] for e in iter_events), dtype=np.int64, count=len(iter_events))
        # The first row after each ITER line (a row's ITER in force is the last one whose first row it is at or after).
        ev_row = np.searchsorted(rows.get_column("idx").to_numpy(), ev_idx, side="left").tolist()
        runs = run_starts(row_search).tolist()
        boundaries = sorted(set(runs) | {r for r in ev_row if r < n})
        values: list[int] = []
        k = -1  # the last event whose first row is at or before the stretch
        for start in boundaries:
            while k + 1 < len(ev_row) and ev_row[k + 1] <= start:
                k += 1
            search = int(row_search[start])
            if k >= 0 and iter_events[k][1].search == search:
                values.append(iter_events[k][3])
            else:
                values.append(carried.get(search, 0))
        limits = np.iinfo(np.int32)
        if any(v < limits.min or v > limits.max for v in values):
            return None
        lengths = np.diff(np.append(np.asarray(boundaries, dtype=np.int64), n))
        column = np.repeat(np.asarray(values, dtype=np.int32), lengths) if n else np.zeros(0, dtype=np.int32)
        return pl.Series("iter", column, dtype=pl.Int32)

    def _latest_carry(self, carry_before: IterCarry, present: set[int]) -> IterCarry:
        """The ITER carried into the chunk per (present search, effective context): several raw labels can map to
        the kept context, and the latest ITER among them wins."""
        latest: IterCarry = {}
        for (search, label), (order, depth) in carry_before.items():
            if search not in present:
                continue
            key = (search, effective(self.searches[search], label))
            if key not in latest or latest[key][0] < order:
                latest[key] = (order, depth)
        return latest

    def _carry_iterations(self, rows: pl.DataFrame, carry_before: IterCarry, present: set[int]) -> pl.DataFrame:
        """Records before the chunk's first ITER of their (search, context) get the ITER carried from earlier chunks."""
        latest = self._latest_carry(carry_before, present)
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


def _on_end(state: SearchState, ctx: str, fields: dict, line_no: int, problems: Problems) -> None:
    """Remember an END line's nodes, best move and score for its context (the last END wins)."""
    nodes = fields.get("nodes")
    if nodes is not None and not is_int(nodes):
        problems.add("with an END record with non-numeric nodes=", line_no)
        nodes = None
    score = fields.get("score")
    state.end_lines.setdefault(ctx, []).append(line_no)
    state.ends[ctx] = (
        int(nodes) if nodes is not None else None,
        fields.get("best"),
        int(score) if score is not None and is_int(score) else None,
        state.order,
    )


def _assign_contexts(
    rows: pl.DataFrame, local: np.ndarray, starts: np.ndarray, search_states: list[SearchState | None]
) -> tuple[pl.DataFrame, bool]:
    """``ctx_eff`` of each record (:func:`effective`); also whether no record names a context.

    A search without a header ctx= keeps the context of its first record.
    """
    no_ctx = rows.get_column("ctx").null_count() == rows.height  # the usual case: one context
    firsts: Iterable[tuple[int, str | None]]
    if no_ctx:
        firsts = [(int(local[i]), None) for i in starts]
    else:
        firsts = rows.group_by("local", maintain_order=True).agg(pl.col("ctx").first()).iter_rows()
    for loc, label in firsts:
        state = search_states[loc]
        if state is not None and not state.primary_known:
            state.primary_label, state.primary_known = label, True
    if no_ctx:
        return rows.with_columns(pl.lit(NO_CTX).alias("ctx_eff")), True
    primary = [s.primary_label if s is not None else None for s in search_states]
    return rows.with_columns(
        pl.when(
            pl.col("ctx").is_null()
            | (pl.col("ctx") == pl.col("local").replace_strict(
                list(range(len(primary))), primary, return_dtype=pl.String))
        )
        .then(pl.lit(NO_CTX))
        .otherwise(pl.col("ctx"))
        .alias("ctx_eff")
    ), False


def _count_contexts(rows: pl.DataFrame, no_ctx: bool, starts: np.ndarray, by_id: dict[int, SearchState]) -> None:
    """Add the chunk's records to each search's count per effective context (all of them, kept or not)."""
    counts: Iterable[tuple[int, str, int]]
    if no_ctx:
        search_ids = rows.get_column("search").to_numpy()
        ends = np.append(starts[1:], len(search_ids))
        counts = ((int(search_ids[i]), NO_CTX, int(e - i)) for i, e in zip(starts, ends))
    else:
        counts = rows.group_by(["search", "ctx_eff"], maintain_order=True).len().iter_rows()
    for search, ctx, n in counts:
        by_id[search].ctx_counts[ctx] += n


def _single_context(rows: pl.DataFrame, iter_events: list) -> bool:
    """True when neither the records nor the ITER lines of the chunk name an effective context."""
    no_ctx = rows.get_column("ctx").null_count() == rows.height
    return no_ctx and all(effective(state, ctx) == NO_CTX for _, state, ctx, _ in iter_events)


def _iterations_by_search(rows: pl.DataFrame, iter_events: list) -> pl.Series:
    """ITER depth (plies) in force at each record, when every line has one context; null before the first ITER.

    ITER lines and records both come in line order and searches never interleave,
    so the ITER in force is the last one before the record if it belongs to the same search.
    """
    ev_idx = np.fromiter((e[0] for e in iter_events), dtype=np.int64, count=len(iter_events))
    ev_search = np.fromiter((e[1].search for e in iter_events), dtype=np.int64, count=len(iter_events))
    ev_depth = np.fromiter((e[3] for e in iter_events), dtype=np.int32, count=len(iter_events))
    row_idx = rows.get_column("idx").to_numpy()
    before = last_at_or_before(ev_idx, row_idx)
    safe = np.maximum(before, 0)
    valid = (before >= 0) & (ev_search[safe] == rows.get_column("search").to_numpy())
    return _int32_where(ev_depth[safe], valid, "iter")


def _int32_where(values: np.ndarray, valid: np.ndarray, name: str) -> pl.Series:
    """``values`` as an Int32 Series, null where not ``valid`` (from Arrow buffers: no polars when/then)."""
    data = np.ascontiguousarray(values, dtype=np.int32)
    nulls = len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    array = pa.Array.from_buffers(pa.int32(), len(data), [bitmap, pa.py_buffer(data)], null_count=nulls)
    series = pl.from_arrow(array)
    assert isinstance(series, pl.Series)  # (an array gives a Series; for mypy)
    return series.alias(name)


def _iterations_by_context(rows: pl.DataFrame, iter_events: list) -> pl.DataFrame:
    """``iter`` (null before the first ITER) when contexts are mixed: ITER lines merged in and filled forward
    per (search, effective context)."""
    iters = pl.DataFrame(
        {
            "idx": [e[0] for e in iter_events],
            "search": [e[1].search for e in iter_events],
            "ctx_eff": [effective(e[1], e[2]) for e in iter_events],
            "iter_val": [e[3] for e in iter_events],
        },
        schema={"idx": pl.UInt32, "search": pl.Int32, "ctx_eff": pl.String, "iter_val": pl.Int32},
    )
    merged = (
        pl.concat([rows.with_columns(pl.lit(None, pl.Int32).alias("iter_val")), iters], how="diagonal_relaxed")
        .sort("idx")
        .with_columns(pl.col("iter_val").forward_fill().over(["search", "ctx_eff"]).alias("iter"))
    )
    return merged.filter(pl.col("tag").is_not_null()).drop("iter_val")


def count_records(rows: pl.DataFrame, by_id: dict[int, SearchState], runs: Runs) -> None:
    """Add a chunk's records (MOVE, RESULT, SHADOW) to its searches' counts, and move their ``seq`` on.

    ``records`` counts MOVE and RESULT rows; a SHADOW row (typhoon_py's ``--shadow``) is no node and no
    decision, but it has its ``seq``."""
    tag = rows.get_column("tag")
    is_move = (tag == "MOVE").to_numpy()
    is_shadow = (tag == "SHADOW").to_numpy()
    moves = np.add.reduceat(is_move.astype(np.int64), runs.starts).tolist()  # per search (one run each)
    shadows = np.add.reduceat(is_shadow.astype(np.int64), runs.starts).tolist()
    for search, n, m, s in zip(runs.present, runs.lengths.tolist(), moves, shadows):
        state = by_id[search]
        state.records += n - s
        state.moves += m
        state.result_nodes += n - m - s  # the others are RESULT records
        state.seq += n

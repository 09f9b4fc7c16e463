"""A chunk's paths made UCI, the parser-facing side of move normalization.

Most paths are UCI already (the tokenizer says so per line).  Coordinate
dialects' paths are normalized column-wise
(:func:`~treediff.model.notation.normalize_coord_paths`); only what is neither
(SAN, odd spellings) is replayed on boards: by the compiled
``_cmoves.SanResolver`` (treediff/parse/_cmoves.c: the UCI checker's board stack,
python-chess's legality and :mod:`treediff.parse.moves`' reading of each token,
about 0.1 µs a path, the paths handed over as Arrow string views), else
(not built, ``TREEDIFF_SAN=python``, several kings of a side) by python-chess
(:class:`~treediff.parse.moves.PathResolver`, about 5 µs a path), in large logs
partly in a worker process (:mod:`treediff.parse.san_worker`) so that SAN logs
use a second core.  Both give the same answers (tests/parse/test_san_*.py).
:class:`PathNormalizer` owns the resolvers and that worker, and counts the
moves that do not resolve, in chunk order.

Paths that are UCI already (or coordinates made UCI) are validated against
the search's position too: by the compiled checker :mod:`treediff.parse._cmoves`
on every parse (each path's moves after the previous path's shared prefix are
tested, about one move a line), or, when it was not built, by python-chess
under ``--strict`` only (each distinct path replayed: several times the
parse's cost).  A path with an illegal move is flagged ``unresolved-move``
with its line, as a SAN move that does not resolve.
"""
from __future__ import annotations

import collections
import functools
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from treediff.model.notation import UCI_OR_ROOT_PATTERN, UCI_PATH_PATTERN, normalize_coord_paths
from treediff.parse.assemble import UciPaths
from treediff.parse.checker import (ILLEGAL_REASONS, MOVE_CHECK_ENV, SAN_ENV, CheckerArgs,  # noqa: F401 (re-exported)
                                    _cmoves, _string_views, board_checker_args, checker_at, compiled_checker,
                                    compiled_checker_available, compiled_san_available, fen_checker_args,
                                    legal_counts_compiled, several_kings)
from treediff.parse.dialects import Notation, get_dialect
from treediff.parse.problems import FIRST_LINES_SHOWN, Problems
from treediff.parse.san_worker import SanWorker, SanWorkerError
from treediff.parse.state import SearchState
from treediff.parse.tokenizer import PATH_ROOT, PATH_SHAPE, PATH_UCI

# python-chess (~30 ms of start-up) and treediff.parse.moves, which needs it, are imported where a board is
# replayed: a parse of UCI logs with the compiled checker never does (issue 17 item 4).

#: SAN paths resolved (about 5 µs each) before a worker process is worth its start-up (~0.5 s):
#: small logs never start one.
SAN_WORKER_AFTER_PATHS = 100_000
#: A search's paths in one chunk from which some go to the worker: below it, pickling costs more.
SAN_SPLIT_MIN_PATHS = 2_000
#: The worker's share of a split: the main thread also assembles the chunk, the worker only resolves.
SAN_WORKER_SHARE = 0.7

#: Resolved paths of one search part: a list (None where a move does not resolve), a future of one, or a
#: String Series (null where a move does not resolve) from the compiled resolver.
Part = list[str | None] | Future[list[str | None]] | pl.Series

#: The reason the flagged records are counted under, for SAN moves and illegal UCI moves alike.
UNRESOLVED_REASON = "with a move that does not resolve in its position"


def resolve_root_move(state: SearchState, token: str) -> str | None:
    """One move of the search's root position (an END's ``best=``) in UCI; None if it does not resolve.

    The compiled ``SanResolver`` where SAN paths use it (:func:`compiled_san_available`, a readable FEN with one
    king a side), else the search's python-chess :class:`~treediff.parse.moves.PathResolver`: the same
    answers (tests/parse/test_san_*.py), without a python-chess board (~0.25 ms) and import (~30 ms) per
    parse of a SAN log.
    """
    if not token:
        return None
    if state.fen and compiled_san_available():
        args = fen_checker_args(state.fen)
        if args is not None and not several_kings(args[0]):
            assert _cmoves is not None
            return _cmoves.SanResolver(*args).resolve([token])[0]
    return state.resolver.resolve_move(token)

#: The checker of a search whose position the compiled checker does not model (python-chess checks its moves).
_BY_PYTHON_CHESS = object()


def check_paths_compiled(checker: Any, paths: pl.Series, skip: np.ndarray | None = None) -> np.ndarray:
    """The compiled checker's reason code (uint8, 0 legal; :data:`ILLEGAL_REASONS`) of each of one search's
    UCI ``paths`` (``""`` or ``-`` the root), in order; rows where ``skip`` is true (and nulls) get 0.
    Coordinate moves are read as the coordinate dialects' normalization reads them: in any case, and
    every spelling of :data:`~treediff.model.notation.NULL_SPELLINGS` a null move.

    The paths are handed over as Arrow string views, without a copy.
    """
    codes = np.zeros(len(paths), dtype=np.uint8)
    if not len(paths):
        return codes
    views, data, skip = _string_views(paths.to_arrow(compat_level=pl.CompatLevel.newest()), skip)
    checker.check(views, data, codes, None if skip is None else np.ascontiguousarray(skip, dtype=np.uint8))
    return codes


class PathNormalizer:
    """Normalizes each chunk's paths (:meth:`normalize`); owns the SAN worker and the unresolved counts.

    Call :meth:`account_unresolved` with ``wait=True`` at the end of a log,
    then :meth:`close`.
    """

    def __init__(self, check_uci: bool = False) -> None:
        #: Validate UCI paths with the compiled checker (every parse) ...
        self._compiled = compiled_checker_available()
        #: ... or, without it, replay them on python-chess boards (``--strict`` only: several times the parse).
        self._check_uci = self._compiled or check_uci
        self._checkers: dict[int, Any] = {}  # search -> compiled checker, for the searches of the last chunk
        #: SAN paths resolved by the compiled resolver (else by python-chess, partly in the worker process).
        self._san_compiled = compiled_san_available()
        self._san: dict[int, Any] = {}  # search -> compiled SAN resolver (or _BY_PYTHON_CHESS), last chunk's
        self._worker: SanWorker | None = None
        self._pool: ThreadPoolExecutor | None = None  # talks to the worker, one request at a time
        self._worker_failed = False
        self._aborting = False
        # (problems, search, source lines, parts, unresolved rows or None) per search part of each chunk, in
        # order, until counted.
        self._pending: collections.deque = collections.deque()
        self._paths = 0  # paths resolved against a board so far
        #: The compiled checker's work, off the parser's main thread: one thread, so that a search's checker
        #: (it keeps the last path's board) checks its chunks in order (docs/PERFORMANCE.md, fourteenth
        #: session: ~100 ns a path, a third of the main thread's time).  Each chunk's answer is counted in
        #: chunk order (:meth:`_count_checks`), before anything else is counted: as if it were counted here.
        self._check_pool: ThreadPoolExecutor | None = None
        self._checks: collections.deque = collections.deque()  # (problems, future, segments, line) per chunk
        self._counting_checks = False

    def normalize(self, rows: pl.DataFrame, by_id: dict[int, SearchState], problems: Problems) -> UciPaths:
        """Paths to UCI.  Only the paths that are not UCI already get work here.

        Returns a function that gives the chunk's UCI paths (and the rows
        whose move does not resolve) from its rows, run by whoever builds the
        chunk's table: on the conversion thread when there is one.  SAN paths
        sent to the worker are futures it waits for.  UCI paths (as written or
        from coordinates) are validated here: always with the compiled checker, else under ``--strict``.
        """
        self.account_unresolved(wait=False)
        raw = rows.get_column("path")
        # The tokenizer has told what each fast-path line's path looks like; slow-path lines have no shape.
        shape = rows.get_column(PATH_SHAPE)
        if _all_uci_or_root(shape):  # (the usual case, told by two reductions: no mask made)
            ok = None
        else:
            ok = (shape == PATH_UCI) | (shape == PATH_ROOT)
            if shape.null_count():
                unknown = shape.is_null().arg_true()
                ok = ok.scatter(unknown, raw.gather(unknown).str.contains(UCI_OR_ROOT_PATTERN))
        if ok is None or bool(ok.all()):
            if not self._check_uci:
                return _uci_already
            illegal = self._flag_illegal(rows, raw, None, by_id, problems)
            if illegal is None:
                return _uci_already
            return functools.partial(_with_illegal, build=_uci_already, illegal=illegal)
        todo = rows.select("search", "path", "_dialect").with_row_index("_i").filter(~ok)
        coord = _coordinate_paths(todo.get_column("path"), todo.get_column("_dialect"))
        good = coord.str.contains(UCI_PATH_PATTERN).fill_null(False)
        # Only what is neither UCI nor coordinates (SAN, odd spellings) is replayed on a board.
        hard = todo.filter(~good)
        hard_index, parts = self._resolve_on_boards(hard, rows.get_column("line"), by_id, problems)
        self.account_unresolved(wait=False)
        coord_index = todo.get_column("_i").filter(good)
        coord_paths = coord.filter(good)
        build: UciPaths = functools.partial(
            _patched_paths, coord_index=coord_index, coord_paths=coord_paths, hard_index=hard_index, parts=parts,
        )
        if self._check_uci and len(hard) < rows.height:
            # The UCI and coordinate paths; the SAN ones are resolved on boards already.  The compiled
            # checker reads coordinates as written (any case, every null spelling), python-chess their UCI.
            uci = raw if self._compiled or not len(coord_index) else raw.scatter(coord_index, coord_paths)
            skip = None
            if len(hard):
                skip = np.zeros(rows.height, dtype=bool)
                skip[hard.get_column("_i").to_numpy()] = True
            illegal = self._flag_illegal(rows, uci, skip, by_id, problems)
            if illegal is not None:
                return functools.partial(_with_illegal, build=build, illegal=illegal)
        return build

    def _flag_illegal(self, rows: pl.DataFrame, uci: pl.Series, skip: np.ndarray | None,
                      by_id: dict[int, SearchState], problems: Problems) -> Future[np.ndarray | None] | None:
        """Rows (bool array, None when none) whose UCI path ``uci`` (the root ``-`` or ``""``) has an illegal
        move, as a future (None: nothing is checked).

        Rows where ``skip`` is true are not looked at; neither are the searches with no position
        (no or a bad ``fen=``: nothing to check against; the header is warned about).  The compiled checker
        runs on the check thread; python-chess (a position of several kings, or no compiled checker) here.
        The flagged rows are counted with their lines, as moves that do not resolve, in chunk order
        (:meth:`_count_checks`).
        """
        searches = rows.get_column("search").to_numpy()
        bounds = np.flatnonzero(searches[1:] != searches[:-1]) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        stops = np.concatenate((bounds, [len(searches)])).tolist()
        bad = np.zeros(rows.height, dtype=bool)
        checkers: dict[int, Any] = {}
        compiled: list[tuple[Any, int, int]] = []  # (checker, lo, hi): the check thread's work
        segments: list[tuple[SearchState, int, int]] = []
        for lo, hi in zip(starts, stops):
            search = int(searches[lo])
            state = by_id[search]
            if self._compiled:
                checker = checkers.get(search, self._checkers.get(search))
                if checker is None:
                    args = fen_checker_args(state.fen) if state.fen else None
                    if args is None:
                        continue
                    checker = _BY_PYTHON_CHESS if several_kings(args[0]) else checker_at(args)
                checkers[search] = checker
                if checker is not _BY_PYTHON_CHESS:
                    compiled.append((checker, lo, hi))
                    segments.append((state, lo, hi))
                    continue
            if state.resolver.board is not None:
                bad[lo:hi] = _illegal_by_python_chess(state, uci.slice(lo, hi - lo),
                                                      None if skip is None else skip[lo:hi])
                segments.append((state, lo, hi))
        self._checkers = checkers  # a search's lines are consecutive: the others are over
        if not segments:
            return None
        future: Future[np.ndarray | None]
        if compiled:
            if self._check_pool is None:
                self._check_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treediff-check")
            future = self._check_pool.submit(_check_segments, compiled, uci, skip, bad)
        else:
            future = Future()
            future.set_result(bad if bad.any() else None)
        self._checks.append((problems, future, segments, rows.get_column("line")))  # (to numpy where one is bad)
        if problems.before_new_reason is None:
            problems.before_new_reason = self._count_checks
        return future

    def _count_checks(self) -> None:
        """Count the checked chunks' illegal moves, in chunk order, waiting for the check thread: before
        anything else is counted (another chunk's SAN moves, a reason seen for the first time), so that the
        counts, the first lines kept and the order of the warnings are those of counting each chunk at once."""
        if self._counting_checks:
            return  # (counting adds a reason, which calls here again)
        self._counting_checks = True
        try:
            while self._checks:
                problems, future, segments, line_col = self._checks.popleft()
                bad = future.result()
                if bad is None:
                    continue
                lines = line_col.to_numpy()
                for state, lo, hi in segments:
                    rows_bad = np.flatnonzero(bad[lo:hi])
                    if len(rows_bad):
                        _count_unresolved(problems, state, lines[lo:hi][rows_bad])
        finally:
            self._counting_checks = False

    def _resolve_on_boards(
        self, hard: pl.DataFrame, line_col: pl.Series, by_id: dict[int, SearchState], problems: Problems
    ) -> tuple[pl.Series, list[Part]]:
        """Resolve ``hard``'s paths search by search; returns their rows and the resolved parts, in order.

        The searches in their order of first appearance, each search's rows in chunk order (as
        ``group_by(maintain_order=True)``; a search's rows are consecutive unless contexts interleave them).
        """
        searches = hard.get_column("search").to_numpy()
        if len(searches) > 1 and not bool((searches[1:] >= searches[:-1]).all()):
            _, first, inverse = np.unique(searches, return_index=True, return_inverse=True)
            rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
            order = np.argsort(rank[inverse], kind="stable")
            hard = hard[order]
            searches = searches[order]
        bounds = np.flatnonzero(searches[1:] != searches[:-1]) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        stops = np.concatenate((bounds, [len(searches)])).tolist()
        hard_index = hard.get_column("_i")
        path_col = hard.get_column("path")
        all_paths: list[str] | None = None  # as Python strings, for python-chess only
        all_lines = line_col.gather(hard_index).to_numpy()
        parts: list[Part] = []
        resolvers: dict[int, Any] = {}
        for lo, hi in zip(starts, stops):
            if lo == hi:
                continue
            state = by_id[int(searches[lo])]
            resolver = self._san_resolver(state, resolvers) if self._san_compiled else None
            unresolved = None
            if resolver is not None:
                unresolved = np.zeros(hi - lo, dtype=np.bool_)
                search_parts: list[Part] = [resolve_san_compiled(resolver, path_col.slice(lo, hi - lo), unresolved)]
            else:
                if all_paths is None:
                    all_paths = path_col.to_list()
                search_parts = self._resolve_many(state, all_paths[lo:hi])
            parts.extend(search_parts)
            self._pending.append((problems, state, all_lines[lo:hi], search_parts, unresolved))
        self._san = resolvers  # a search's lines are consecutive: the others are over
        return hard_index, parts

    def _san_resolver(self, state: SearchState, resolvers: dict[int, Any]) -> Any:
        """The compiled SAN resolver of ``state``'s search (kept from the last chunk), or None where python-chess
        resolves: no or a bad ``fen=`` (nothing resolves but the root: cheap either way) and positions with
        several kings of a side (python-chess's own reading of check and castling, see :func:`several_kings`)."""
        resolver = resolvers.get(state.search, self._san.get(state.search))
        if resolver is None:
            args = fen_checker_args(state.fen) if state.fen else None
            if args is None or several_kings(args[0]):
                resolver = _BY_PYTHON_CHESS
            else:
                assert _cmoves is not None
                resolver = _cmoves.SanResolver(*args)
        resolvers[state.search] = resolver
        return None if resolver is _BY_PYTHON_CHESS else resolver

    def _resolve_many(self, state: SearchState, paths: list[str]) -> list[Part]:
        """UCI paths for one search's paths (None where a move does not resolve), as consecutive parts.

        SAN resolution holds the GIL, so in large logs a long list is split:
        the tail (:data:`SAN_WORKER_SHARE`) goes to a worker process (started
        on first need) and comes back as a :class:`Future`, which the
        conversion thread waits for, so this thread goes on with the next chunk.  Results
        are the same either way: a path's UCI form depends only on the search's FEN.
        """
        self._paths += len(paths)
        worker = self._worker_for(len(paths))
        if worker is None:
            return [state.resolver.resolve_many(paths)]
        split = int(len(paths) * (1 - SAN_WORKER_SHARE))
        assert self._pool is not None
        tail = self._pool.submit(self._worker_round_trip, worker, state.search, state.fen, paths[split:])
        return [state.resolver.resolve_many(paths[:split]), tail]

    def _worker_round_trip(self, worker: SanWorker, search: int, fen: str | None, paths: list[str]) -> list[str | None]:
        """Runs on the SAN thread: one request to the worker; if the worker fails, resolved right here."""
        try:
            worker.submit(search, fen, paths)
            return worker.result()
        except SanWorkerError:
            if self._aborting:
                raise
            self._worker_failed = True  # no further requests: the main thread resolves everything
            from treediff.parse.moves import resolve_paths

            return resolve_paths(fen, paths)

    def _worker_for(self, count: int) -> SanWorker | None:
        """The SAN worker if ``count`` paths are worth splitting (started on first need), else None."""
        if count < SAN_SPLIT_MIN_PATHS or self._paths < SAN_WORKER_AFTER_PATHS or self._worker_failed:
            return None
        if self._worker is None:
            try:
                self._worker = SanWorker()
            except OSError:
                self._worker_failed = True
                return None
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="treediff-san")
        return self._worker

    def account_unresolved(self, wait: bool) -> None:
        """Count unresolved moves of the chunks whose paths are all resolved, in chunk order.

        ``wait``: block until every pending part is back (at the end of a log).  The checked chunks are
        counted first (:meth:`_count_checks`): their checks were counted before these parts' in chunk order.
        """
        self._count_checks()
        pending = self._pending
        while pending:
            problems, state, lines, parts, unresolved = pending[0]
            if not wait and not all(_part_done(p) for p in parts):
                return
            pending.popleft()
            if unresolved is None:  # python-chess's answers (the compiled resolver marks them as it goes)
                values = _joined_parts(parts)
                unresolved = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
            if not unresolved.any():
                continue
            _count_unresolved(problems, state, lines[unresolved])

    def close(self, abort: bool = False) -> None:
        """Stop and reap the SAN worker process and its thread, if they were started.

        ``abort``: the parse failed, so pending answers are not wanted; the
        worker is killed first, which also frees a thread blocked reading it.
        """
        worker, pool = self._worker, self._pool
        self._worker, self._pool = None, None
        check_pool, self._check_pool = self._check_pool, None
        if check_pool is not None:  # (a running check ends: it is compiled code working on its chunk)
            check_pool.shutdown(wait=True, cancel_futures=True)
        self._checks.clear()
        if abort:
            self._aborting = True
            if worker is not None:
                worker.kill()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if worker is not None:
            worker.close()
        self._aborting = False
        self._pending.clear()


def _all_uci_or_root(shape: pl.Series) -> bool:
    """Whether every row's :data:`PATH_SHAPE` is ``PATH_UCI`` or ``PATH_ROOT`` (consecutive values): its least
    and greatest values, no null (a slow-path row has none: its path is then looked at)."""
    if not len(shape) or shape.null_count():
        return False
    low, high = shape.min(), shape.max()
    return isinstance(low, int) and isinstance(high, int) and PATH_UCI <= low and high <= PATH_ROOT


def _count_unresolved(problems: Problems, state: SearchState, bad_lines: np.ndarray) -> None:
    """Count records of ``state`` whose move does not resolve (or is illegal), at ``bad_lines``."""
    problems.add_many(UNRESOLVED_REASON, bad_lines)
    state.unresolved_count += len(bad_lines)
    room = FIRST_LINES_SHOWN - len(state.unresolved)
    if room > 0:
        state.unresolved.extend(int(x) for x in bad_lines[:room])


def _illegal_by_python_chess(state: SearchState, uci: pl.Series, skip: np.ndarray | None) -> np.ndarray:
    """Rows of one search's UCI paths with an illegal move, by python-chess (the fallback of the compiled checker).

    Each distinct path is replayed once on the search's resolver, which keeps the positions
    reached and the moves tried in each, so a (parent, move) is tested once.
    """
    paths = _root_as_empty(uci)
    if skip is not None:
        paths = pl.select(pl.when(pl.Series(skip)).then(pl.lit("")).otherwise(paths)).to_series()
    distinct = paths.drop_nulls().unique(maintain_order=True)
    distinct = distinct.filter(distinct != "")
    resolved = state.resolver.resolve_many(distinct.to_list())
    illegal = distinct.filter(pl.Series([r is None for r in resolved], dtype=pl.Boolean))
    if not len(illegal):
        return np.zeros(len(uci), dtype=bool)
    # A Python list: polars 1.10 (the declared bound) reads an imploded Series as one value per row.
    return paths.is_in(illegal.to_list()).fill_null(False).to_numpy()


def _with_illegal(rows: pl.DataFrame, build: UciPaths,
                  illegal: Future[np.ndarray | None]) -> tuple[pl.Series, pl.Series | None]:
    """``build``'s UCI paths and flags, with the rows the check (``illegal``, awaited) found flagged too."""
    uci, unresolved = build(rows)
    bad = illegal.result()
    if bad is None:
        return uci, unresolved
    flagged = pl.Series("bad", bad)
    return uci, flagged if unresolved is None else (unresolved | flagged)


def _check_segments(compiled: list[tuple[Any, int, int]], uci: pl.Series, skip: np.ndarray | None,
                    bad: np.ndarray) -> np.ndarray | None:
    """The check thread's work for one chunk: each search segment's paths through its compiled checker,
    marked in ``bad`` (which holds python-chess's answers already); ``bad``, or None when no row is bad."""
    for checker, lo, hi in compiled:
        bad[lo:hi] = check_paths_compiled(checker, uci.slice(lo, hi - lo), None if skip is None else skip[lo:hi]) != 0
    return bad if bad.any() else None


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


def resolve_san_compiled(resolver: Any, paths: pl.Series, unresolved: np.ndarray) -> pl.Series:
    """One search's ``paths`` (String, no nulls) made UCI by the compiled ``resolver`` (``_cmoves.SanResolver``),
    in order: a String Series, null where a move does not resolve (those rows also set in ``unresolved``,
    a bool array of ``len(paths)``).  The paths go over as Arrow string views and come back as Arrow buffers:
    no Python object per path."""
    views, data, skip = _string_views(paths.to_arrow(compat_level=pl.CompatLevel.newest()), None)
    if skip is not None:  # (a null path: the parser hands over none)
        raise ValueError("resolve_san_compiled: a null path")
    offsets, chars = resolver.resolve_views(views, data, unresolved)
    nulls = int(np.count_nonzero(unresolved))
    validity = pa.py_buffer(np.packbits(~unresolved, bitorder="little")) if nulls else None
    array = pa.Array.from_buffers(pa.large_string(), len(unresolved),
                                  [validity, pa.py_buffer(offsets), pa.py_buffer(chars)], null_count=nulls)
    return pl.Series("v", array, dtype=pl.String)


def _part_done(part: Part) -> bool:
    return not isinstance(part, Future) or part.done()


def _joined_parts(parts: list[Part]) -> list[str | None]:
    """Resolved paths, in order, from parts that are lists, futures of lists or Series (waits for the futures)."""
    out: list[str | None] = []
    for part in parts:
        out.extend(part.result() if isinstance(part, Future) else part)
    return out


def _parts_series(parts: list[Part]) -> pl.Series:
    """Resolved paths, in order, as one String Series (null where a move does not resolve; waits for the futures)."""
    pieces = [part if isinstance(part, pl.Series)
              else pl.Series("v", part.result() if isinstance(part, Future) else part, dtype=pl.String)
              for part in parts]
    return pieces[0] if len(pieces) == 1 else pl.concat(pieces, rechunk=True)


def _root_as_empty(raw: pl.Series, shape: pl.Series | None = None) -> pl.Series:
    """``raw`` (a new Series: ``raw`` itself is left as it is) with the root ``-`` written ``""``.

    ``shape``: the rows' :data:`~treediff.parse.tokenizer.PATH_SHAPE` (``PATH_ROOT`` is exactly ``-``),
    read instead of comparing every path when no row lacks one.  The few root rows are overwritten in
    a copy: a when/then over the whole column rebuilt every string view (about 4 ms a chunk, 0.6 here).
    """
    if shape is not None and not shape.null_count():
        roots = (shape == PATH_ROOT).arg_true()
    else:
        roots = (raw == "-").fill_null(False).arg_true()
    out = raw.clone()  # (no copy: the scatter below copies on write, so raw keeps its "-")
    if len(roots):
        out.scatter(roots, "")
    return out


def _shapes(rows: pl.DataFrame) -> pl.Series | None:
    """The rows' path shapes, where they still have them."""
    return rows.get_column(PATH_SHAPE) if PATH_SHAPE in rows.columns else None


def _uci_already(rows: pl.DataFrame) -> tuple[pl.Series, None]:
    """The UCI paths of rows whose paths are all UCI already (the root written ``-``)."""
    return _root_as_empty(rows.get_column("path"), _shapes(rows)), None


def _patched_paths(
    rows: pl.DataFrame,
    coord_index: pl.Series,
    coord_paths: pl.Series,
    hard_index: pl.Series,
    parts: list[Part],
) -> tuple[pl.Series, pl.Series | None]:
    """The UCI paths of a chunk whose paths are not all UCI, and the rows whose move does not resolve.

    Rows at ``coord_index`` take the normalized coordinate paths
    ``coord_paths``; rows at ``hard_index`` the SAN resolutions ``parts`` (in
    order).  Unresolved records keep their path as written (they are flagged
    ``problem=unresolved-move`` and counted by :meth:`PathNormalizer.account_unresolved`,
    in order).  Pure apart from waiting for the futures: safe on the conversion thread.
    """
    raw = rows.get_column("path")
    uci = _root_as_empty(raw, _shapes(rows))
    if len(coord_index):
        uci = uci.scatter(coord_index, coord_paths)
    if not len(hard_index):
        return uci, None
    patch = _parts_series(parts)
    uci = uci.scatter(hard_index, patch)
    unresolved = pl.repeat(False, len(uci), dtype=pl.Boolean, eager=True).alias("").scatter(hard_index, patch.is_null())
    if not bool(unresolved.any()):
        return uci, None
    return pl.select(pl.when(unresolved).then(raw).otherwise(uci)).to_series(), unresolved

"""A chunk's paths made UCI, the parser-facing side of move normalization.

Most paths are UCI already (the tokenizer says so per line).  Coordinate
dialects' paths are normalized column-wise
(:func:`~treediff.parse.moves.normalize_coord_paths`); only what is neither
(SAN, odd spellings) is replayed on boards (:class:`~treediff.parse.moves.PathResolver`),
in large logs partly in a worker process (:mod:`treediff.parse.san_worker`)
so that SAN logs use a second core.  :class:`PathNormalizer` owns that
worker and counts the moves that do not resolve, in chunk order.
"""
from __future__ import annotations

import collections
import functools
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import polars as pl

from treediff.model.notation import UCI_OR_ROOT_PATTERN, UCI_PATH_PATTERN
from treediff.parse.assemble import UciPaths
from treediff.parse.dialects import Notation, get_dialect
from treediff.parse.moves import normalize_coord_paths, resolve_paths
from treediff.parse.problems import FIRST_LINES_SHOWN, Problems
from treediff.parse.san_worker import SanWorker, SanWorkerError
from treediff.parse.state import SearchState
from treediff.parse.tokenizer import PATH_ROOT, PATH_SHAPE, PATH_UCI

#: SAN paths resolved (about 5 µs each) before a worker process is worth its start-up (~0.5 s):
#: small logs never start one.
SAN_WORKER_AFTER_PATHS = 100_000
#: A search's paths in one chunk from which some go to the worker: below it, pickling costs more.
SAN_SPLIT_MIN_PATHS = 2_000
#: The worker's share of a split: the main thread also assembles the chunk, the worker only resolves.
SAN_WORKER_SHARE = 0.7

#: Resolved paths of one search part: a list (None where a move does not resolve), or a future of one.
Part = list[str | None] | Future[list[str | None]]


class PathNormalizer:
    """Normalizes each chunk's paths (:meth:`normalize`); owns the SAN worker and the unresolved counts.

    Call :meth:`account_unresolved` with ``wait=True`` at the end of a log,
    then :meth:`close`.
    """

    def __init__(self, check_uci: bool = False) -> None:
        #: Replay paths that are UCI already on boards too, flagging illegal moves (``--strict``).
        self._check_uci = check_uci
        self._worker: SanWorker | None = None
        self._pool: ThreadPoolExecutor | None = None  # talks to the worker, one request at a time
        self._worker_failed = False
        self._aborting = False
        # (problems, search, source lines, parts) per search part of each chunk, in order, until counted.
        self._pending: collections.deque = collections.deque()
        self._paths = 0  # paths resolved against a board so far

    def normalize(self, rows: pl.DataFrame, by_id: dict[int, SearchState], problems: Problems) -> UciPaths:
        """Paths to UCI.  Only the paths that are not UCI already get work here.

        Returns a function that gives the chunk's UCI paths (and the rows
        whose move does not resolve) from its rows, run by whoever builds the
        chunk's table: on the conversion thread when there is one.  SAN paths
        sent to the worker are futures it waits for.
        """
        self.account_unresolved(wait=False)
        raw = rows.get_column("path")
        # The tokenizer has told what each fast-path line's path looks like; slow-path lines have no shape.
        shape = rows.get_column(PATH_SHAPE)
        ok = (shape == PATH_UCI) | (shape == PATH_ROOT)
        if shape.null_count():
            unknown = shape.is_null().arg_true()
            ok = ok.scatter(unknown, raw.gather(unknown).str.contains(UCI_OR_ROOT_PATTERN))
        if bool(ok.all()):
            if self._check_uci:
                return self._checked_uci(rows, by_id, problems)
            return _uci_already
        todo = rows.select("search", "path", "_dialect").with_row_index("_i").filter(~ok)
        coord = _coordinate_paths(todo.get_column("path"), todo.get_column("_dialect"))
        good = coord.str.contains(UCI_PATH_PATTERN).fill_null(False)
        # Only what is neither UCI nor coordinates (SAN, odd spellings) is replayed on a board.
        hard_index, parts = self._resolve_on_boards(todo.filter(~good), rows.get_column("line"), by_id, problems)
        self.account_unresolved(wait=False)
        return functools.partial(
            _patched_paths, coord_index=todo.get_column("_i").filter(good), coord_paths=coord.filter(good),
            hard_index=hard_index, parts=parts,
        )

    def _checked_uci(self, rows: pl.DataFrame, by_id: dict[int, SearchState], problems: Problems) -> UciPaths:
        """UCI paths as they are, each distinct one of each search replayed on its board (the resolver keeps
        the positions reached and the moves tried in each, so a (parent, move) is tested once); the records
        of a path with an illegal move are flagged ``unresolved-move`` and counted with their lines."""
        paths = rows.get_column("path")
        bad = np.zeros(rows.height, dtype=bool)
        frame = rows.select("search", "path").with_row_index("_i")
        for (search,), part in frame.group_by(["search"], maintain_order=True):
            distinct = part.get_column("path").unique(maintain_order=True)
            distinct = distinct.filter(distinct != "-")
            resolved = by_id[search].resolver.resolve_many(distinct.to_list())
            illegal = distinct.filter(pl.Series([r is None for r in resolved], dtype=pl.Boolean))
            if len(illegal):
                bad[part.filter(pl.col("path").is_in(illegal.implode()))["_i"].to_numpy()] = True
        if not bad.any():
            return _uci_already
        lines = rows.get_column("line").to_numpy()
        for (search,), part in frame.filter(pl.Series(bad)).group_by(["search"], maintain_order=True):
            state = by_id[search]
            bad_lines = lines[part.get_column("_i").to_numpy()]
            problems.add_many("with a move that does not resolve in its position", bad_lines)
            state.unresolved_count += len(bad_lines)
            room = FIRST_LINES_SHOWN - len(state.unresolved)
            if room > 0:
                state.unresolved.extend(int(x) for x in bad_lines[:room])
        flagged = pl.Series("bad", bad)
        return lambda chunk_rows: (_root_as_empty(paths), flagged)

    def _resolve_on_boards(
        self, hard: pl.DataFrame, line_col: pl.Series, by_id: dict[int, SearchState], problems: Problems
    ) -> tuple[list[int], list[Part]]:
        """Resolve ``hard``'s paths search by search; returns their rows and the resolved parts, in order."""
        hard_index: list[int] = []
        parts: list[Part] = []
        for (search,), part in hard.group_by(["search"], maintain_order=True):
            state = by_id[search]
            index = part.get_column("_i").to_list()
            search_parts = self._resolve_many(state, part.get_column("path").to_list())
            hard_index.extend(index)
            parts.extend(search_parts)
            self._pending.append((problems, state, line_col.gather(index).to_numpy(), search_parts))
        return hard_index, parts

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

        ``wait``: block until every pending part is back (at the end of a log).
        """
        pending = self._pending
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
            room = FIRST_LINES_SHOWN - len(state.unresolved)
            if room > 0:
                state.unresolved.extend(int(x) for x in bad_lines[:room])

    def close(self, abort: bool = False) -> None:
        """Stop and reap the SAN worker process and its thread, if they were started.

        ``abort``: the parse failed, so pending answers are not wanted; the
        worker is killed first, which also frees a thread blocked reading it.
        """
        worker, pool = self._worker, self._pool
        self._worker, self._pool = None, None
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


def _part_done(part: Part) -> bool:
    return isinstance(part, list) or part.done()


def _joined_parts(parts: list[Part]) -> list[str | None]:
    """Resolved paths, in order, from parts that are lists or futures of lists (waits for the futures)."""
    out: list[str | None] = []
    for part in parts:
        out.extend(part if isinstance(part, list) else part.result())
    return out


def _root_as_empty(raw: pl.Series) -> pl.Series:
    return pl.select(pl.when(raw == "-").then(pl.lit("")).otherwise(raw)).to_series()


def _uci_already(rows: pl.DataFrame) -> tuple[pl.Series, None]:
    """The UCI paths of rows whose paths are all UCI already (the root written ``-``)."""
    return _root_as_empty(rows.get_column("path")), None


def _patched_paths(
    rows: pl.DataFrame,
    coord_index: pl.Series,
    coord_paths: pl.Series,
    hard_index: list[int],
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
    uci = _root_as_empty(raw)
    if len(coord_index):
        uci = uci.scatter(coord_index, coord_paths)
    if not hard_index:
        return uci, None
    patch = pl.Series("v", _joined_parts(parts), dtype=pl.String)
    uci = uci.scatter(hard_index, patch)
    unresolved = pl.Series([False] * len(uci)).scatter(hard_index, patch.is_null())
    if not bool(unresolved.any()):
        return uci, None
    return pl.select(pl.when(unresolved).then(raw).otherwise(uci)).to_series(), unresolved

"""The two sides of ``treediff diff`` and ``treediff browse``: open, pair by position, read (no commands here).

Both commands align one search of A with one search of B: each input is
opened as a Source (nothing read), cut to one engine when asked, the pair is
chosen by position (:func:`treediff.align.select.choose_pair`), and only those
two searches' records are read.  A plain log of several searches is not parsed
whole: its searches are found by a byte scan and only the chosen search's lines
are parsed (:func:`treediff.parse.source.open_one_search`; its warnings are
shown once it is read).  ``TREEDIFF_DIFF_FULL_PARSE=1`` parses every log whole.
"""
from __future__ import annotations

from typing import Any, Iterator

from treediff.model.errors import InputError


def open_sides(a: str, b: str, engine_a: str | None, engine_b: str | None, keep_complete: bool = False,
               dialect: str = "auto", positions: str | None = None):
    """A and B as Sources (logs read with ``dialect`` / ``positions``), each restricted to its engine.

    Both inputs are opened at the same time (:func:`treediff.parse.source.open_each`: a log's byte scan,
    or its parse, on its own thread), the warnings shown in input order, A's errors first.
    """
    with OpeningSides(a, b, engine_a, engine_b, keep_complete, dialect, positions) as opening:
        return opening.sides()


class OpeningSides:
    """:func:`open_sides` begun when entered (``diff``: before it imports the aligner) and ended by
    :meth:`sides`.  Small logs (below ``store.budget.FORK_MIN_LOG_BYTES`` together) that are parsed whole (a
    search each, as a diff's usually are) are parsed in a child forked at once (:class:`~treediff.cli.opening
    .ForkedParse`), while this process imports; the others are opened by :meth:`sides`, as before.  Leaving the
    block stops a child still parsing."""

    def __init__(self, a: str, b: str, engine_a: str | None, engine_b: str | None, keep_complete: bool = False,
                 dialect: str = "auto", positions: str | None = None):
        import contextlib

        self.paths = (a, b)
        self.engines = (engine_a, engine_b)
        self.options: dict[str, Any] = {"engine": dialect, "positions": positions or None,
                                        "keep_complete": keep_complete}
        self._steps = contextlib.ExitStack()
        self._ticks: list = []
        self._forked: Any = None  # a ForkedParse while the child parses

    def __enter__(self) -> OpeningSides:
        import os

        from treediff.cli.opening import ForkedParse
        from treediff.parse.source import is_plain_log
        from treediff.render.progress import parsing
        from treediff.store import budget

        a, b = self.paths
        with self._steps as steps:  # a byte count per input on a terminal only (ticks None otherwise)
            self._ticks = [steps.enter_context(parsing([path])) for path in self.paths]
            if is_plain_log(a) and is_plain_log(b) and \
                    os.path.getsize(a) + os.path.getsize(b) < budget.FORK_MIN_LOG_BYTES:
                options = {k: v for k, v in self.options.items() if v is not None}
                forked = ForkedParse.start([a, b], self._ticks, options, whole_only=True)
                self._forked = steps.enter_context(forked) if forked is not None else None
            self._steps = steps.pop_all()
        return self

    def sides(self):
        """A and B as Sources, each cut to its engine (warnings shown in input order, A's errors first)."""
        from treediff.cli.common import echo_warnings
        from treediff.cli.opening import raised
        from treediff.parse.source import IndexedLogSource, open_each, open_one_search

        sides = []
        opened: Iterator[Any]
        with self._steps:
            if self._forked is not None:
                found = self._forked.sources()  # (an error raised in its place: after the inputs before it)
                opened = (raised(entry) if entry is not None else open_one_search(path, **self.options)
                          for entry, path in zip(found + [None] * (2 - len(found)), self.paths))
            else:
                opened = open_each(list(self.paths), progresses=self._ticks, opener=open_one_search, **self.options)
            for source, label, engine in zip(opened, ("A", "B"), self.engines):
                if not isinstance(source, IndexedLogSource):  # (a log read search by search warns once it is read)
                    echo_warnings(source.warnings)
                sides.append(_engine_only(source, label, engine))
        return sides[0], sides[1]

    def __exit__(self, *exc_info) -> None:
        self._steps.__exit__(*exc_info)


def open_side(path: str, label: str, engine: str | None, keep_complete: bool = False, dialect: str = "auto",
              positions: str | None = None):
    """One side as a Source (a log parsed with ``dialect`` / ``positions``), restricted to ``engine``."""
    from treediff.cli.common import echo_warnings
    from treediff.parse.source import IndexedLogSource, open_one_search
    from treediff.render.progress import parsing

    with parsing([path]) as tick:  # a byte count on a terminal only (tick None otherwise)
        source = open_one_search(path, engine=dialect, positions=positions or None, keep_complete=keep_complete,
                                 progress=tick)
    if not isinstance(source, IndexedLogSource):  # (a log read search by search warns once it is read)
        echo_warnings(source.warnings)
    return _engine_only(source, label, engine)


def _engine_only(source, label: str, engine: str | None):
    """``source`` restricted to the searches of ``engine`` (None: all); an engine it lacks is an error."""
    if engine is not None:
        names = source.searches["engine"].astype(str)
        if not (names == engine).any():
            held = ", ".join(dict.fromkeys(names))
            raise InputError(f"{label} holds no engine {engine!r}; it has: {held}")
        source = source.select((names == engine).to_numpy())
    return source


def choose_pair(source_a, source_b, position: str | None, paths: tuple[str, str] = ("A", "B")):
    """Both sources cut to the one search each that is aligned, paired by position; and the position label."""
    import numpy as np

    from treediff.align.select import choose_pair as choose_rows

    for label, path, source in (("A", paths[0], source_a), ("B", paths[1], source_b)):
        if len(source.searches) == 0:
            raise InputError(f"{label} ({path}) has no search (a 0-node search?)")
    row_a, row_b, name = choose_rows(source_a.searches, source_b.searches, position)
    picked = []
    for source, row, path in ((source_a, row_a, paths[0]), (source_b, row_b, paths[1])):
        keep = np.zeros(len(source.searches), dtype=bool)
        keep[row] = True
        picked.append(_parsed(source.select(keep), path))
    return picked[0], picked[1], name


def _parsed(source, path: str):
    """``source`` with its searches parsed: a log read search by search parses the chosen one's lines (only), and
    its warnings are shown."""
    from treediff.cli.common import echo_warnings
    from treediff.parse.source import IndexedLogSource
    from treediff.render.progress import step

    if not isinstance(source, IndexedLogSource):
        return source
    searches = source.searches["search"].tolist()
    label = f"reading search {searches[0]} of {path}" if len(searches) == 1 else f"reading {path}"
    with step(label, total=source.span_bytes(), unit="bytes") as tick:
        parsed = source.parsed(progress=tick)
    echo_warnings(parsed.warnings)
    return parsed


def check_budget(source_a, source_b, budget, paths: tuple[str, str]) -> None:
    """Refuse (exit 2, naming the files and the position) a chosen pair larger than ``--memory-limit``, before
    reading it: the searches table counts each search's records."""
    if budget is None:
        return
    counts = []
    for source in (source_a, source_b):
        searches = source.searches
        counts.append(int(searches["records"].fillna(0).sum()) if "records" in searches.columns else 0)
    position = source_a.searches["position"].astype(str).iloc[0] if len(source_a.searches) else "?"
    budget.check_pair(position, counts[0], counts[1], paths)


def read_side(source, path: str, label: str):
    """The side's records (the aligner's ``LOAD_COLUMNS`` and ``line``) of the searches ``source`` holds."""
    from treediff.align import LOAD_COLUMNS

    records = source.records(tuple(dict.fromkeys((*LOAD_COLUMNS, "line"))))  # line: line_a / line_b
    if len(records) == 0:
        position = source.searches["position"].astype(str).iloc[0] if len(source.searches) else "?"
        raise InputError(f"{label} searched position {position} but recorded no MOVE/RESULT: {path} holds that "
                         "search without MOVE/RESULT records (a 0-node search?)")
    return records


def fen_of(records, search: int) -> str | None:
    """The FEN of search ``search`` in ``records`` (None when the records do not carry one)."""
    if "fen" not in records.columns or not len(records):
        return None
    match = records["fen"][records["search"].to_numpy() == search]
    return str(match.iloc[0]) if len(match) and match.notna().iloc[0] else None


def _memory_limit(ctx, param, value):
    """click callback: ``--memory-limit`` text -> a :class:`~treediff.store.budget.MemoryBudget`."""
    import click

    if ctx.resilient_parsing:  # shell completion: not run, so no aligner (and pandas: ~1 s a TAB) to import
        return None
    from treediff.store.budget import MemoryBudget, parse_memory_limit

    try:
        return MemoryBudget(parse_memory_limit(value))
    except InputError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1]) from None


def memory_limit_option(f):
    """``--memory-limit SIZE`` (compare, diff): what reading and aligning may hold at once (default 2GB)."""
    import click

    return click.option(
        "--memory-limit", "memory_limit", default="2GB", show_default=True, metavar="SIZE", callback=_memory_limit,
        help="Memory the aligner may hold at once (e.g. 2GB, 512MB): inputs are read in batches and positions "
             "waiting for the other input are spilled to TMPDIR; a position pair larger than this is an error.")(f)

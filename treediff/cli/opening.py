"""Opening a command's inputs with the logs among them parsed in a forked child (``report``, ``compare``,
``whatif``, ``diff``): the child imports the parser and polars and parses into spills while the command imports
pandas and its tables (docs/SCALING.md, "report of a log"; docs/PERFORMANCE.md, fourteenth session)."""
from __future__ import annotations

import contextlib
import os
from typing import Callable

from treediff.cli.common import echo_warnings, importing


class Opening:
    """A command's inputs being opened as one Source (``report``, ``whatif``; or each as its own, :meth:`each`:
    ``compare``'s small logs).  Entered at the command's start: the logs
    among the inputs are parsed in a forked child from then on (:class:`ForkedParse`), while this process
    imports the tables and checks the other options; :meth:`source` takes the spills (and echoes the warnings).

    Forked first, so that the two processes import at the same time (~0.25 s each: the child the parser and
    polars, this process pandas and the tables; imported here first, a small log's report waited for both,
    docs/PERFORMANCE.md, fourteenth session), and so that polars never starts its threads in this process:
    the fold may then run its later half in a child of its own (``build_report``'s ``background``).  Without
    a fork (``fork=False``, ``TREEDIFF_FORK=0``, another thread running) the logs are parsed here by
    :meth:`source`.  Leaving the block stops a child still parsing and removes the spills not opened."""

    def __init__(self, inputs, engine: str, positions: str | None, keep_complete: bool = False, fork: bool = True,
                 per_input: bool = False):
        self.inputs = list(inputs)
        self._per_input = per_input  # a progress step per input (compare's), else one for all (report's)
        self.options: dict = {"engine": engine, "keep_complete": keep_complete}
        if positions:
            self.options["positions"] = positions
        self._fork = fork
        self._steps = contextlib.ExitStack()
        self._ticks: list[Callable[[int], None] | None] = []
        self._parse: ForkedParse | None = None
        self._logs: list[int] = []

    def __enter__(self) -> Opening:
        from treediff.parse.source import is_plain_log
        from treediff.render.progress import parsing

        with self._steps as steps:  # (an error while starting: what was entered is left again)
            # a byte count on a terminal only (ticks None otherwise)
            groups = [[path] for path in self.inputs] if self._per_input else [self.inputs]
            self._ticks = [steps.enter_context(parsing(group)) for group in groups]
            if self._fork:
                self._logs = [i for i, path in enumerate(self.inputs) if is_plain_log(path)]
            if self._logs:
                ticks = [self._ticks[i] for i in self._logs] if self._per_input else self._ticks
                parse = ForkedParse.start([self.inputs[i] for i in self._logs], ticks, self.options)
                if parse is not None:
                    self._parse = steps.enter_context(parse)
            self._steps = steps.pop_all()
        return self

    @property
    def forked(self) -> bool:
        """Whether a child parses the logs (else :meth:`source` parses them here)."""
        return self._parse is not None

    def source(self):
        """The inputs as one Source (the child's parse awaited; a log that cannot be parsed raises here)."""
        from treediff.parse.source import open_sources

        with self._steps:
            source = open_sources(self.inputs, spilled=self._spilled(), progress=self._ticks[0], **self.options)
        echo_warnings(source.warnings)
        return source

    def each(self) -> list:
        """Each input as its own Source, in order, warnings echoed in input order (``compare``): an input that
        cannot be opened raises its error after the warnings of those before it, as opening them one by one."""
        from treediff.parse.source import open_source

        sources = []
        with self._steps:
            spilled = self._spilled(raising=False) or {}
            ticks = self._ticks if self._per_input else self._ticks * len(self.inputs)
            for i, path in enumerate(self.inputs):
                source = raised(spilled[i]) if i in spilled else open_source(path, progress=ticks[i], **self.options)
                echo_warnings(source.warnings)
                sources.append(source)
        return sources

    def _spilled(self, raising: bool = True) -> dict | None:
        """The logs the child parsed, as sources by their place among the inputs (None: no child); the first
        log's error raised (``raising``), else in its place (those after it left out)."""
        if self._parse is None:
            return None
        found = self._parse.sources()
        if raising:
            for entry in found:
                raised(entry)
        return dict(zip(self._logs, found))

    def __exit__(self, *exc_info) -> None:
        self._steps.__exit__(*exc_info)


class ForkedParse:
    """Logs parsed in a forked child (:func:`treediff.run.forked.in_background`) into scratch directories this
    process made and owns, while this process goes on; :meth:`sources` opens the spills when it is done.  Used
    as a context manager: leaving it stops the child if it still runs and removes the directories of spills
    not opened."""

    def __init__(self, job, directories: list, ticks: list, sizes: list[int]):
        self._job, self._directories = job, directories
        self._ticks = ticks
        self._sizes = sizes  # each log's bytes: the child's count (all logs in order) is shared out by them
        self._shown = [0] * len(ticks)
        self._opened = False

    @classmethod
    def start(cls, logs: list, ticks: list, options: dict, imports_first: bool = False,
              whole_only: bool = False) -> ForkedParse | None:
        """The child parsing ``logs`` (its progress, bytes, to ``ticks``: one for all logs, or one a log, each
        None off a terminal); None when this process may not fork.

        ``whole_only`` (``diff``): only the logs ``open_one_search`` parses whole are parsed (one search, ...);
        a log it reads search by search is left to this process (:meth:`sources` gives None for it: its
        bytes counted as read).

        ``imports_first``: what a parse imports (the parser, polars, the spill) is imported here first, once,
        and the child inherits it: for a process that parses logs itself as well (``compare``'s large logs;
        ~0.25 s of CPU it would otherwise import twice beside this process's own parse; a test lists what the
        child's parse imports).  Otherwise the child imports them while this process imports its own (pandas,
        the tables): a log's parse imports no pandas (tests/parse/test_parse_imports_no_pandas.py)."""
        if imports_first:
            with importing():
                import numpy.ma  # noqa: F401  (polars reads it, lazily, making a Series of a numpy array)

                import treediff.parse.pipeline  # noqa: F401
                import treediff.store.iterations  # noqa: F401
                import treediff.store.spill  # noqa: F401
        from treediff.parse.source import parse_logs_into, parse_whole_logs_into, scratch_dir
        from treediff.render.progress import paused
        from treediff.run.forked import fork_allowed, in_background, portable

        with paused():  # (a process running another thread never forks: the display's are stopped meanwhile)
            if not fork_allowed(uses_polars=True):
                return None
            directories = [scratch_dir("log") for _ in logs]

            def parse(progress):
                with importing():  # (the child's own imports, with the collector paused as this process's)
                    import treediff.parse.pipeline  # noqa: F401
                    import treediff.store.spill  # noqa: F401
                read = [0]

                def bytes_read(n: int) -> None:  # the parser counts bytes; the child's progress is (done, total)
                    read[0] += n
                    progress(read[0], 2**62)

                parser = parse_whole_logs_into if whole_only else parse_logs_into
                found: list = []
                for log, directory in zip(logs, directories):  # (one at a time: a log's error ends the rest)
                    try:
                        found.extend(parser([log], [directory], progress=bytes_read if progress is not None else None,
                                            **options))
                    except Exception as exc:  # noqa: BLE001 - raised here in input order, after the logs before it
                        found.append(_Failed(portable(exc, "process parsing the logs")))
                        break
                return found

            sizes = [os.path.getsize(log) for log in logs]
            return cls(in_background(parse, uses_polars=True, name="process parsing the logs"), directories, ticks,
                        sizes)

    def _advance(self, done: int, total: int) -> None:
        """``done`` bytes of all the logs read: one tick gets them all, ticks a log each their log's share."""
        if len(self._ticks) == 1:
            shares = [done]
        else:  # (the logs are parsed in order: the first ones' sizes are read whole first)
            starts = [0]
            for size in self._sizes[:-1]:
                starts.append(starts[-1] + size)
            shares = [min(max(done - start, 0), size) for start, size in zip(starts, self._sizes)]
            shares[-1] = max(done - starts[-1], 0)  # (what the last log's size does not hold, still counted)
        for i, (tick, share) in enumerate(zip(self._ticks, shares)):
            if tick is not None and share > self._shown[i]:
                tick(share - self._shown[i])
                self._shown[i] = share

    def _shows_progress(self) -> bool:
        return any(tick is not None for tick in self._ticks)

    def show_progress(self) -> None:
        """The child's progress so far, to the ticks (from any one thread at a time, before :meth:`sources`)."""
        if self._shows_progress():
            self._job.pass_progress(self._advance)

    def sources(self) -> list:
        """The parsed logs as sources, in order: None for a log the child left to this process
        (``whole_only``); the error of the first log that could not be parsed, as an exception object, in its
        place (and nothing after it), for the caller to raise in input order (:func:`raised`)."""
        from treediff.parse.source import remove_scratch, spilled_source

        found = self._job.result(self._advance if self._shows_progress() else None)
        self._opened = True
        sources: list = []
        failed = False
        for i, directory in enumerate(self._directories):
            entry = None if failed or i >= len(found) else found[i]
            if isinstance(entry, _Failed):
                failed = True
                remove_scratch(directory)
                sources.append(entry.error)
            elif failed:  # a log after the failed one: not parsed
                remove_scratch(directory)
            elif entry is None:  # left to this process (``whole_only``)
                remove_scratch(directory)
                sources.append(None)
            else:
                sources.append(spilled_source(directory, entry))
        return sources

    def __enter__(self) -> ForkedParse:
        return self

    def __exit__(self, *exc_info) -> None:
        from treediff.parse.source import remove_scratch

        try:
            self._job.__exit__(*exc_info)
        finally:
            if not self._opened:
                for directory in self._directories:
                    remove_scratch(directory)


class _Failed:
    """A log's error in the child's answer (:meth:`ForkedParse.sources` gives the exception in its place)."""

    def __init__(self, error: BaseException):
        self.error = error


def raised(entry):
    """``entry`` of :meth:`ForkedParse.sources`, raised when it is a log's error."""
    if isinstance(entry, BaseException):
        raise entry
    return entry

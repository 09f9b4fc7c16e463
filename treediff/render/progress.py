"""Progress on a terminal: a transient rich display on stderr for the steps that take more than about a second.

Steps (``with step("aligning p1", total=3, unit="positions") as tick``): parsing a log (bytes), aligning
and attributing (positions), counting the report's tables, writing the HTML page.  Nothing is shown,
and rich is not even imported, unless stderr is a terminal (:func:`enabled`): pipes, CI and tests get
``tick = None``, and the callers pass that on as "no progress callback", so the steps run exactly as
without progress.  On a terminal a step appears only once it has run :data:`DELAY` seconds (a timer
starts the display), so fast commands never flash a bar; the display is transient (cleared when the
step ends).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator

#: Seconds a step runs before the display appears ("every step over about a second").
DELAY = 1.0


def enabled() -> bool:
    """Progress is shown only when stderr is a terminal."""
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


class Tick:
    """What a step's work reports through: ``tick(n)`` adds n done; ``tick.set(done, total)`` sets both."""

    def __init__(self, display: "Display", task: Any):
        self._display = display
        self._task = task

    def __call__(self, n: int = 1) -> None:
        self._display.progress.advance(self._task, n)

    def set(self, done: int, total: int | None = None) -> None:
        self._display.progress.update(self._task, completed=done, total=total)


class Display:
    """One rich ``Progress`` on stderr shared by the steps of a command; started :data:`DELAY` s after a step
    begins (if it is still running), stopped when the last running step ends."""

    def __init__(self, delay: float | None = None):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.delay = DELAY if delay is None else delay
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 _AmountColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True,
                                 refresh_per_second=4)  # the redraw thread takes the GIL from the parser's
        self._lock = threading.Lock()
        self._running = 0
        self._started = False
        self._timers: set[threading.Timer] = set()  # the steps' pending start timers

    def _start_timer(self) -> threading.Timer:
        timer = threading.Timer(self.delay, self._start)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()
        return timer

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No thread of the display runs inside the block (its redraw thread and pending timers are stopped
        and waited for): :mod:`treediff.run.forked` forks only a process running no other thread.  The
        display comes back as it was (a pending start with a new full delay)."""
        with self._lock:
            started, self._started = self._started, False
            live = getattr(self.progress, "live", None)
            redraw = getattr(live, "_refresh_thread", None)  # (rich's: stop() does not wait for it)
            if started:
                self.progress.stop()
            timers, self._timers = list(self._timers), set()
        for timer in timers:
            timer.cancel()
            timer.join()
        if redraw is not None:
            redraw.join()
        try:
            yield
        finally:
            with self._lock:
                running = self._running
                if started and running:
                    self.progress.start()
                    self._started = True
            if running and not started:
                self._start_timer()

    def _start(self) -> None:
        with self._lock:
            if self._running and not self._started:
                self.progress.start()
                self._started = True

    @contextlib.contextmanager
    def step(self, label: str, total: int | None = None, unit: str = "") -> Iterator[Tick]:
        task = self.progress.add_task(label, total=total, unit=unit)
        with self._lock:
            self._running += 1
        timer = self._start_timer()
        try:
            yield Tick(self, task)
        finally:
            timer.cancel()
            with self._lock:
                self._timers.discard(timer)
                self._running -= 1
                self.progress.remove_task(task)
                if not self._running:  # (a pause may have replaced this step's timer by one of its own)
                    for pending in self._timers:
                        pending.cancel()
                    self._timers.clear()
                if self._started and not self._running:
                    self.progress.stop()
                    self._started = False


def _amount_column():
    from rich.progress import ProgressColumn
    from rich.text import Text

    class AmountColumn(ProgressColumn):
        """``12.3/45.6 MB`` for bytes, ``3/20 positions`` for counted steps, nothing for a spinner."""

        def render(self, task) -> Text:
            unit = task.fields.get("unit", "")
            if unit == "bytes":
                from rich.filesize import decimal

                done = decimal(int(task.completed))
                return Text(f"{done}/{decimal(int(task.total))}" if task.total else done)
            if unit and task.total:
                return Text(f"{int(task.completed)}/{int(task.total)} {unit}")
            return Text("")

    return AmountColumn()


def _AmountColumn():  # noqa: N802 - built lazily so that importing this module does not import rich
    return _amount_column()


_display: Display | None = None


def display() -> Display | None:
    """The command's display when stderr is a terminal (created on first use), else None."""
    global _display
    if not enabled():
        return None
    if _display is None:
        _display = Display()
    return _display


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """:meth:`Display.paused` of the command's display, if it has one."""
    if _display is None:
        yield
        return
    with _display.paused():
        yield


@contextlib.contextmanager
def step(label: str, total: int | None = None, unit: str = "") -> Iterator[Tick | None]:
    """A step of ``total`` ``unit`` (``bytes``, ``positions``; none: a spinner); yields a :class:`Tick`, or
    None when stderr is not a terminal (then nothing else happens)."""
    shown = display()
    if shown is None:
        yield None
        return
    with shown.step(label, total, unit) as tick:
        yield tick


def log_bytes(paths) -> int | None:
    """The bytes parsing ``paths`` reads (the parser's progress counts them): the sizes of the plain logs
    among them (Parquet files and datasets are not parsed); None when a log is compressed or stdin (its
    decompressed size is unknown: the display then counts bytes without a bar)."""
    import os
    from pathlib import Path

    from treediff.store.magic import is_parquet_file

    total = 0
    for path in paths:
        text = str(path)
        if text == "-" or text.endswith((".gz", ".zst")):
            return None
        if os.path.isdir(text) or not os.path.isfile(text) or is_parquet_file(Path(text)):
            continue
        total += os.path.getsize(text)
    return total


@contextlib.contextmanager
def parsing(paths, label: str = "reading") -> Iterator[Tick | None]:
    """:func:`step` for opening ``paths`` (the logs among them are parsed): yields the parser's ``progress``
    callback (bytes read), None off a terminal."""
    if not enabled():
        yield None
        return
    names = ", ".join(str(p) for p in paths)
    with step(f"{label} {names}" if len(names) <= 60 else f"{label} {len(list(paths))} inputs",
              total=log_bytes(paths), unit="bytes") as tick:
        yield tick

"""SIGTERM and SIGHUP handled like Ctrl-C, and cleanup that a signal cannot cut short.

Python runs signal handlers in the main thread between two bytecodes, so an
exception raised by a handler can land in the middle of a ``finally`` that
is killing an engine or removing a temporary directory.  :func:`deferred`
marks such a section: a signal arriving inside it is raised when the
section ends (if nothing else is propagating by then).

:func:`interrupting` installs the handlers (main thread only): SIGINT raises
``KeyboardInterrupt`` (when Python's own handler was in place), SIGTERM and
SIGHUP raise :class:`Terminated`, a ``KeyboardInterrupt`` carrying the
signal number, so every cleanup Ctrl-C runs also runs for them; the exit
status is :func:`interrupt_status` (130, 143, 129).

This module imports nothing heavy: the CLI imports it before it knows the command.
"""
from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterator, Sequence

#: The signals handled like Ctrl-C (besides SIGINT itself).
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_state = threading.local()
#: Signals that arrived inside a :func:`deferred` section, with the exception each raises.
_pending: list[tuple[int, Callable[[int], BaseException]]] = []
_received: list[int] = []
_depth = 0
#: The signals sent again (:func:`_redelivering`) in the current :func:`interrupting` block; after how long
#: (seconds), and how many times at most.
_again: list[int] = []
_AGAIN_AFTER = 0.001
_AGAIN_AT_MOST = 5
#: The interrupts raised in the current :func:`interrupting` block, and those Python dropped.
_raised: list[BaseException] = []
_dropped: list[BaseException] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupt_status(exc: BaseException) -> int:
    """The exit status for an interrupt: 130 for Ctrl-C, ``128 + signum`` for :class:`Terminated`."""
    return 128 + int(getattr(exc, "signum", signal.SIGINT))


def received() -> int | None:
    """The first interrupting signal this process received while :func:`interrupting` was active, else None."""
    return _received[0] if _received else None


def _exception_for(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raising(exc: BaseException) -> BaseException:
    """``exc``, an interrupt about to be raised, noted (:func:`_redelivering` tells the dropped ones apart)."""
    _raised.append(exc)
    return exc


def _handle(signum: int, frame: object) -> None:
    if not _received:
        _received.append(signum)
    if signum != signal.SIGINT:
        # Once: a second SIGTERM/SIGHUP must not cut short the cleanup the first one started.
        for sig in TERMINATING_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
    if _depth > 0:
        _pending.append((signum, _exception_for))
        return
    raise _raising(_exception_for(signum))


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A section no interrupting signal may cut short: one arriving inside is raised at its end."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers only ever run in the main thread
        return
    _depth += 1
    propagating = True
    try:
        yield
        propagating = False
    finally:
        _depth -= 1
        if _depth == 0 and _pending:
            signum, factory = _pending[0]
            _pending.clear()
            if not propagating:
                raise _raising(factory(signum))


def run_deferred(fn: Callable[[], None]) -> None:
    """Call ``fn`` inside :func:`deferred`."""
    with deferred():
        fn()


@contextlib.contextmanager
def interrupting(sigint: bool = True) -> Iterator[None]:
    """While the block runs (main thread only), SIGTERM and SIGHUP (and SIGINT) raise as described above.

    SIGINT is taken over only from Python's own handler (a job started in the
    background with SIGINT ignored keeps ignoring it).  The previous handlers
    are restored afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = list(TERMINATING_SIGNALS)
    if sigint and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signals.append(signal.SIGINT)
    previous = {sig: signal.getsignal(sig) for sig in signals}
    _received.clear()
    _raised.clear()
    _dropped.clear()
    for sig in signals:
        signal.signal(sig, _handle)
    previous_hook = sys.unraisablehook
    hook = _redelivering(previous_hook, signals)
    sys.unraisablehook = hook
    try:
        yield
    finally:
        if sys.unraisablehook is hook:
            sys.unraisablehook = previous_hook
        _again.clear()  # (a signal not sent yet is not sent once the handlers are restored)
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _send_again(signum: int, nth: int) -> None:
    """On a bare thread: ``signum`` to this process in a moment, unless the :func:`interrupting` block that
    asked for it ended meanwhile.  (Nothing here may use ``threading``: this thread is not one of its own.)"""
    time.sleep(_AGAIN_AFTER)
    if len(_again) >= nth:
        os.kill(os.getpid(), signum)


def _redelivering(previous: Callable[[Any], Any], signals: Sequence[int]) -> Callable[[Any], Any]:
    """``sys.unraisablehook`` while :func:`interrupting`: a signal's exception that Python dropped is delivered
    again, the rest goes to ``previous``.

    Python runs a handler between two bytecodes wherever they are, and an exception raised where it cannot
    propagate (a weakref callback, e.g. the import system's module locks' while a command imports pandas; a
    finalizer; an at-fork function) is printed as "Exception ignored in ..." and dropped.  A SIGTERM there was
    lost (its handler had also set the terminating signals to be ignored): the command ran on, or waited for
    a forked child to the end (docs/RUNNER.md).  The signal is sent again instead, its handler put back, so
    its exception is raised at the next place that can raise, and nothing is printed."""

    def hook(unraisable: Any) -> Any:
        exc = getattr(unraisable, "exc_value", None)
        if not isinstance(exc, KeyboardInterrupt):
            return previous(unraisable)
        signum = int(getattr(exc, "signum", signal.SIGINT))
        if signum not in signals or not _received or threading.current_thread() is not threading.main_thread():
            return previous(unraisable)
        if not any(exc is raised for raised in _raised):  # (not one the handler raised)
            return previous(unraisable)
        _dropped.append(exc)
        if any(not any(raised is dropped for dropped in _dropped) for raised in _raised):
            # An interrupt raised before it was not dropped: it stopped the command, whose cleanup may be what
            # runs now (a finalizer raising it again as it unwinds): nothing to send.
            return None
        if len(_again) >= _AGAIN_AT_MOST:  # (a signal dropped again and again: leave it to the end check)
            return previous(unraisable)
        signal.signal(signum, _handle)  # (the first one set the terminating signals to be ignored)
        # Sent from another thread a moment later: sent from here, the handler would run here at once, inside
        # this hook, and its exception would be dropped again.  (Should it land where Python drops it again,
        # this hook sends it once more.)  A bare thread, not threading's: this hook runs wherever the handler
        # came, maybe where this thread holds one of threading's own locks (Thread.start takes them).
        _again.append(signum)
        _thread.start_new_thread(_send_again, (signum, len(_again)))
        return None

    return hook


def worker_handler(exc_factory: Callable[[int], BaseException]) -> Callable[[int, object], None]:
    """A handler for a worker process: raises ``exc_factory(signum)``, deferred inside :func:`deferred`."""

    def handle(signum: int, frame: object) -> None:
        if _depth > 0:
            _pending.append((signum, exc_factory))
            return
        raise exc_factory(signum)

    return handle

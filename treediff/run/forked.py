"""A computation run in a forked child process while this process does another: :func:`in_background`.

Why: ``compare`` has two passes over its parsed inputs that need nothing from each other, the tables
(:func:`treediff.report.compare.compare_sources`) and the divergences
(:func:`treediff.align.summaries.divergences`), and ``report`` folds its tables over batches that need
nothing from each other (:func:`treediff.report.core.fold_many`: the later half of the searches beside the
earlier).  Each pass keeps about 1.1-1.4 of this machine's two cores busy (its numpy, Arrow and compiled
work lets go of the GIL, its Python glue does not), so on threads of one process they contend for the GIL
and are slower together than one after the other (measured: docs/PERFORMANCE.md).  In a forked child a
pass needs no pickling of its inputs (the child has the parent's sources as they are), and only its result
crosses back, pickled, through a pipe.

How, and what is guaranteed:

* **Fork only when it is safe.**  The fork happens only when this process runs no other Python thread
  (a lock another thread holds would stay locked in the child forever); else, or where ``os.fork`` does
  not exist, or with ``TREEDIFF_FORK=0`` in the environment, the work runs in this process when its result
  is asked for, exactly as before.  polars' thread pool does not survive a fork: work that calls polars
  forks only while the pool has not started here (``uses_polars``: report's tables); compare's divergences
  make no polars call (tests/report/test_compare_forked.py checks it on five kinds of input).
* **The child is always reaped.**  Leaving the ``with`` block (normally, by an error, or by Ctrl-C, SIGTERM
  or SIGHUP, which the CLI raises as exceptions) stops a child still running (SIGTERM, then SIGKILL after
  :data:`STOP_GRACE` seconds) and waits for it, inside :func:`treediff.run.signals.deferred`.  The child
  gets SIGTERM if this process dies (``PR_SET_PDEATHSIG``, Linux), and ignores SIGINT (a Ctrl-C reaches
  the whole process group; this process stops the child itself).
* **The child leaves nothing behind and touches nothing of the parent's.**  It forgets the parent's
  scratch directories (the parent removes those) and removes its own when it ends; it ends with
  ``os._exit``, so no ``atexit`` handler or buffered output of the parent's runs twice.
* **Errors cross back.**  An exception in the child is raised by :meth:`Background.result` (an
  :class:`~treediff.model.errors.InputError` with its own message); one that cannot be pickled becomes a
  :class:`BackgroundFailed` with its type and message; a child that dies without an answer (the OOM
  killer) is a :class:`BackgroundFailed` naming the signal.
* **A stuck child is replaced.**  A child that uses no CPU time while this process waits
  (:data:`STALL_POLLS` one-second polls in a row) is stopped, and the work is done in this process: the
  answer is the same, only later (a library whose worker threads did not survive the fork would otherwise
  leave the child waiting forever; /proc gives the CPU time, so this is Linux's).
* **Progress crosses back too**: the child's ``progress(done, total)`` calls reach the callback given to
  :meth:`Background.result` (a reader thread drains the pipe while this process works, so the child never
  waits on a full pipe).
"""
from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
import time
from typing import Any, Callable, Generic, TypeVar

from treediff.model.errors import TreediffError
from treediff.run.contain import cpu_ticks, set_parent_death_signal
from treediff.run.signals import Terminated, deferred

_T = TypeVar("_T")

#: Seconds a stopped child has to end (it unwinds: its scratch directories are removed) before SIGKILL.
STOP_GRACE = 5.0
#: The environment variable that turns forking off (``0``): the work then runs in this process.
FORK_VARIABLE = "TREEDIFF_FORK"
#: Seconds between two progress messages the child sends (the last one is always sent).
_PROGRESS_EVERY = 0.05
#: Seconds :meth:`Background.result` waits for a message before it looks at the child's CPU time.
_POLL = 1.0
#: Polls in a row (while this process waits for the answer) in which the child used no CPU time at all,
#: after which it is taken to be stuck: it is stopped and the work is done in this process instead.
STALL_POLLS = 30
#: Seconds :func:`fork_allowed` waits, in all, for other threads that are ending.
_SETTLE = 0.25

Progress = Callable[[int, int], None]


class BackgroundFailed(TreediffError):
    """The child process ended without an answer, or its error could not be carried back as it was."""


def fork_allowed(settle: float = _SETTLE, uses_polars: bool = False) -> bool:
    """Whether :func:`in_background` would fork now: ``os.fork`` exists, ``TREEDIFF_FORK`` is not ``0`` and
    no other Python thread runs in this process.  Threads that are ending are given up to ``settle`` seconds
    in all (a progress display's redraw thread and timer are told to stop but not waited for).
    ``uses_polars``: the work calls polars, so polars must not have started its thread pool here yet (a
    child inherits a started pool without its threads and waits for them forever; an unstarted one it
    starts itself)."""
    if not hasattr(os, "fork") or os.environ.get(FORK_VARIABLE, "").strip() == "0":
        return False
    if uses_polars and polars_pool_started():
        return False
    deadline = time.monotonic() + settle
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return threading.active_count() == 1


def polars_pool_started() -> bool:
    """Whether polars has started its thread pool in this process (threads named ``polars-N``: polars starts
    them on its first parallel operation, not on import); True where the threads cannot be listed (/proc)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as fh:
                name = fh.read().strip()
        except OSError:
            continue
        if name.startswith("polars-") and name[len("polars-"):].isdigit():
            return True
    return False


class Background(Generic[_T]):
    """``work(progress)`` started by :func:`in_background`; use as a context manager, ask :meth:`result`."""

    def __init__(self, work: Callable[[Progress | None], _T], fork: bool, name: str = "background process"):
        self._work = work
        #: What the child does, for errors ("the process parsing the logs was killed by SIGKILL ...").
        self.name = name
        self.pid: int | None = None
        self._fd: int | None = None
        self._messages: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._status: int | None = None  # the child's wait status once reaped
        #: Whether the child was stopped as stuck and the work done in this process (:data:`STALL_POLLS`).
        self.stalled = False
        if fork:
            self._start()

    @property
    def forked(self) -> bool:
        """Whether the work runs in a child process (else it runs here, in :meth:`result`)."""
        return self.pid is not None

    # -- parent side -----------------------------------------------------------------------------------
    def _start(self) -> None:
        read_fd, write_fd = os.pipe()  # (not inherited by anything this process starts later: O_CLOEXEC)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's side is tested through its effects (tests/run/test_forked.py)
            os.close(read_fd)
            _child(self._work, write_fd, parent, self.name)
        os.close(write_fd)
        self.pid, self._fd = pid, read_fd
        self._reader = threading.Thread(target=self._read, name="treediff-background-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Every message of the child, in order, then ("eof", None).  Messages are pickles one after the other,
        read as they stream in (a large answer is never held whole as bytes as well as objects)."""
        assert self._fd is not None
        with os.fdopen(self._fd, "rb", closefd=False) as pipe:
            try:
                while True:
                    self._messages.put(pickle.load(pipe))
            except EOFError:  # (the child's end closed between two messages, or inside one: no answer)
                pass
            except Exception as exc:  # noqa: BLE001 - carried to result(): a message that cannot be read
                self._messages.put(("failed", f"its answer could not be read ({type(exc).__name__}: {exc})"))
        self._messages.put(("eof", None))

    def result(self, progress: Progress | None = None) -> _T:
        """The work's result (computed now when it was not forked), its progress passed to ``progress``;
        raises what the work raised."""
        if not self.forked:
            return self._work(progress)
        assert self.pid is not None
        idle_polls, cpu = 0, cpu_ticks(self.pid)
        while True:
            try:
                kind, value = self._messages.get(timeout=_POLL)
            except queue.Empty:
                # A child that uses no CPU for STALL_POLLS polls in a row is stuck (a library whose threads
                # did not survive the fork would wait for them forever): stop it and do the work here.
                now = cpu_ticks(self.pid)
                idle_polls = idle_polls + 1 if now is not None and now == cpu else 0
                cpu = now
                if idle_polls >= STALL_POLLS:
                    self._reap()
                    self.stalled = True
                    return self._work(progress)
                continue
            if kind == "progress":
                if progress is not None:
                    progress(*value)
                continue
            self._reap()
            if kind == "ok":
                return value
            if kind == "error":
                raise value
            if kind == "failed":
                raise BackgroundFailed(f"the {self.name} failed: {value}")
            raise BackgroundFailed(f"the {self.name} {self._ended()}")

    def _ended(self) -> str:
        """How the child ended without an answer (with a hint where one helps)."""
        status = self._status
        if status is None:
            return "ended without an answer"
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            hint = " (out of memory? try a lower --memory-limit)" if os.WTERMSIG(status) == signal.SIGKILL else ""
            return f"was killed by {name} without an answer{hint}"
        return f"exited with status {os.WEXITSTATUS(status)} without an answer"

    def _reap(self) -> None:
        """Stop the child if it still runs (SIGTERM, then SIGKILL), wait for it, let the reader finish."""
        if self.pid is None or self._status is not None:
            return
        with deferred():
            pid = self.pid
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                _signal(pid, signal.SIGTERM)
                _signal(pid, signal.SIGCONT)  # (a stopped child, Ctrl-Z, would not see the SIGTERM)
                deadline = time.monotonic() + STOP_GRACE
                while not done and time.monotonic() < deadline:
                    time.sleep(0.01)
                    done, status = os.waitpid(pid, os.WNOHANG)
                if not done:
                    _signal(pid, signal.SIGKILL)
                    done, status = os.waitpid(pid, 0)
            self._status = status
            if self._reader is not None:
                self._reader.join()  # the child's end of the pipe is closed: the reader has read to its end
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Background[_T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._reap()


def in_background(work: Callable[[Progress | None], _T], fork: bool | None = None,
                  uses_polars: bool = False, name: str = "background process") -> Background[_T]:
    """``work(progress)`` in a forked child process when ``fork`` (None: :func:`fork_allowed`), else in this
    process when its :meth:`~Background.result` is asked (never, if it is not asked); always used as
    ``with in_background(work) as job: ...``.  ``fork=True`` where :func:`fork_allowed` says no does not fork.
    ``uses_polars``: see :func:`fork_allowed`.  ``name``: what the child does, as its errors name it (e.g.
    "process parsing the logs")."""
    allowed = fork_allowed(uses_polars=uses_polars)
    return Background(work, allowed if fork is None else fork and allowed, name)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # (ended meanwhile; waitpid reaps it)
        pass


# -- child side ----------------------------------------------------------------------------------------
def _child(work: Callable[[Progress | None], Any], fd: int, parent: int,
           name: str = "background process") -> None:  # pragma: no cover - in the child
    """Run ``work`` and send its answer; never returns (``os._exit``)."""
    status = 1
    try:
        from treediff.parse.source import forget_scratch, remove_all_scratch

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _raise_terminated)
        set_parent_death_signal(signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)
        forget_scratch()
        try:
            with os.fdopen(fd, "wb", closefd=False) as pipe:
                last = [0.0]

                def progress(done: int, total: int) -> None:
                    now = time.monotonic()
                    if now - last[0] >= _PROGRESS_EVERY or done + 1 >= total:
                        last[0] = now
                        _send(pipe, ("progress", (done, total)))

                try:
                    answer: tuple[str, Any] = ("ok", work(progress))
                except BaseException as exc:  # noqa: BLE001 - carried to the parent, which raises it
                    answer = ("error", _portable(exc, name))
                _send(pipe, answer)
                status = 0
        finally:
            remove_all_scratch()
    except BaseException:  # noqa: BLE001 - the parent reports a child that ends without an answer
        pass
    finally:
        os._exit(status)


def _raise_terminated(signum: int, frame: object) -> None:  # pragma: no cover - runs in the forked child
    raise Terminated(signum)


def _send(pipe: Any, message: tuple[str, Any]) -> None:  # pragma: no cover - runs in the forked child
    pickle.dump(message, pipe, protocol=pickle.HIGHEST_PROTOCOL)  # (streamed in frames: no whole copy in bytes)
    pipe.flush()


def _portable(exc: BaseException, name: str = "background process") -> BaseException:
    """``exc`` if it survives pickling as it is, else a :class:`BackgroundFailed` with its type and message."""
    try:
        back = pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 - any failure: carried as text
        pass
    return BackgroundFailed(f"the {name} failed: {type(exc).__name__}: {exc}")

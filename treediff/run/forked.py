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
  :data:`STOP_GRACE` seconds) and waits for it, inside :func:`treediff.run.signals.deferred`.  A child whose
  ``with`` block was never entered (a signal between the fork and the caller's ``with``) is stopped and
  reaped the same way by an ``atexit`` handler, before the scratch directories are removed.  The fork itself
  runs inside :func:`~treediff.run.signals.deferred` (a signal handled inside an at-fork callback would be
  dropped: Python prints such an exception and goes on).  The child
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
* **This process can help once its own pass is done** (``helping=True``): the work is then called as
  ``work(progress, helper)``, and the child may hand pieces of it to this process through
  :meth:`Helper.offer` while :meth:`Background.help` runs here (compare's tables end before its
  divergences: measured, docs/PERFORMANCE.md, tenth session).  A piece is offered only once this process has
  said it is ready, and at most :data:`HELP_IN_FLIGHT` at a time, so the child never waits on this process
  and this process never on the child (each side reads the other's pipe on a thread of its own).  What this
  process returns for a piece goes back to the child, which joins it into its answer.  Not forked, or
  after the stuck child was replaced, ``helper`` is None and the work does every piece itself.
"""
from __future__ import annotations

import atexit
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

#: Children forked and not yet reaped (pid -> their Background), reaped at exit whatever happened: a signal
#: that comes after the fork but before the caller's ``with`` (the CLI raises it as an exception) would
#: otherwise leave the child running once this process is gone (until ``PR_SET_PDEATHSIG`` ends it, later).
_UNREAPED: dict[int, "Background[Any]"] = {}
_REAPED_AT_EXIT = False


def _reap_unreaped() -> None:
    """Stop and reap every child still unreaped (an ``atexit`` handler: both of the CLI's exits run it)."""
    for job in list(_UNREAPED.values()):
        job._reap()


def _reap_at_exit() -> None:
    """Register :func:`_reap_unreaped` once, after the scratch directories' removal (handlers run last
    registered first: a child still writing into a scratch directory is stopped before it is removed)."""
    global _REAPED_AT_EXIT
    if not _REAPED_AT_EXIT:
        import treediff.parse.source  # noqa: F401  (registers its scratch removal first)

        atexit.register(_reap_unreaped)
        _REAPED_AT_EXIT = True


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
#: Pieces of work handed to the helping parent and not yet answered, at most: one it works on, one waiting
#: for it, so that it never waits for the child between two pieces.
HELP_IN_FLIGHT = 2

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
        if thread is threading.current_thread():
            continue
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
        except (AssertionError, RuntimeError):
            # A thread Python did not start (a "dummy" thread: one a library started that once ran Python code)
            # cannot be joined: it counts as running, so this process does not fork (a test once failed with
            # "internal error: cannot join a dummy thread" here).
            continue
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

    def __init__(self, work: Callable[..., _T], fork: bool, name: str = "background process",
                 helping: bool = False):
        self._work = work
        #: What the child does, for errors ("the process parsing the logs was killed by SIGKILL ...").
        self.name = name
        #: Whether the work takes a :class:`Helper` (``work(progress, helper)``) and :meth:`help` serves it.
        self.helping = helping
        self.pid: int | None = None
        self._fd: int | None = None
        self._messages: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._status: int | None = None  # the child's wait status once reaped
        #: Whether the child was stopped as stuck and the work done in this process (:data:`STALL_POLLS`).
        self.stalled = False
        #: Polls in a row the child used no CPU, while this process waited for it (help, then result).
        self._idle_polls = 0
        #: A message of the child's pipe :meth:`help` took out of the queue that is not progress (the answer).
        self._early: tuple[str, Any] | None = None
        #: The pipes of the helping (this process's ends): pieces of work in, their answers out.
        self._pieces_fd: int | None = None
        self._answers_fd: int | None = None
        #: Pieces this process worked on for the child (:meth:`help`).
        self.helped = 0
        self._help_reader: threading.Thread | None = None
        if fork:
            self._start()

    @property
    def forked(self) -> bool:
        """Whether the work runs in a child process (else it runs here, in :meth:`result`)."""
        return self.pid is not None

    # -- parent side -----------------------------------------------------------------------------------
    def _start(self) -> None:
        read_fd, write_fd = os.pipe()  # (not inherited by anything this process starts later: O_CLOEXEC)
        # The helping's pipes: pieces (child -> here) and answers (here -> child).
        pieces = os.pipe() if self.helping else None
        answers = os.pipe() if self.helping else None
        parent = os.getpid()
        _reap_at_exit()
        # A signal during the fork is raised after it, once the child is registered: Python runs its handler
        # where it comes, and an exception raised inside an at-fork callback (logging's, e.g.) is printed and
        # dropped, so a SIGTERM there was lost and the command ran to its end (status 0).
        with deferred():
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's side is tested through its effects (test_forked.py)
                _UNREAPED.clear()  # (the parent's children: not this process's to reap)
                os.close(read_fd)
                helper = None
                if pieces is not None and answers is not None:
                    os.close(pieces[0])
                    os.close(answers[1])
                    helper = Helper(pieces[1], answers[0])
                _child(self._work, write_fd, parent, self.name, helper, self.helping)
            self.pid = pid
            _UNREAPED[pid] = self
        os.close(write_fd)
        if pieces is not None and answers is not None:
            os.close(pieces[1])
            os.close(answers[0])
            self._pieces_fd, self._answers_fd = pieces[0], answers[1]
        self._fd = read_fd
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

    def _here(self, progress: Progress | None) -> _T:
        """The work done in this process (not forked, or the child replaced): every piece of it here."""
        return self._work(progress, None) if self.helping else self._work(progress)

    def _stuck(self, cpu: int | None) -> tuple[bool, int | None]:
        """After a poll without a message: whether the child is now taken to be stuck (no CPU time used over
        :data:`STALL_POLLS` polls in a row, counted across :meth:`help` and :meth:`result`), and its CPU."""
        assert self.pid is not None
        now = cpu_ticks(self.pid)
        self._idle_polls = self._idle_polls + 1 if now is not None and now == cpu else 0
        return self._idle_polls >= STALL_POLLS, now

    def help(self, function: Callable[[Any], Any], progress: Progress | None = None) -> None:
        """Work on the pieces the child offers (``function(piece)``, its return value sent back) until it has
        none left, has ended, or is stuck; the child's progress passed to ``progress`` meanwhile.  Nothing to
        do when the work was not forked with ``helping`` (it then does every piece itself, in :meth:`result`).
        What ``function`` raises is raised here (leaving the ``with`` block stops the child)."""
        if not self.forked or self._pieces_fd is None or self._answers_fd is None:
            return
        cpu = cpu_ticks(self.pid) if self.pid is not None else None
        if not _write_message(self._answers_fd, ("ready", None)):  # (the child has ended: nothing to help with)
            return
        pieces: queue.Queue[Any] = queue.Queue()
        # (joined by _reap before the pipe is closed: the child's end is closed by then, so it has ended)
        self._help_reader = threading.Thread(target=_read_pieces, args=(self._pieces_fd, pieces), daemon=True,
                                             name="treediff-help-reader")
        self._help_reader.start()
        while True:
            self.pass_progress(progress)
            try:
                kind, piece = pieces.get(timeout=_POLL)
            except queue.Empty:
                stuck, cpu = self._stuck(cpu)
                if stuck:
                    return
                continue
            self._idle_polls = 0
            if kind != "piece":  # ("end", None): no more pieces, or the child's end of the pipe closed
                return
            answer = function(piece)
            self.helped += 1
            if not _write_message(self._answers_fd, ("answer", answer)):
                return  # the child has ended (its error, or it was killed): result() says which

    def pass_progress(self, progress: Progress | None) -> None:
        """The child's progress messages queued so far, to ``progress`` (without waiting); another message
        (its answer) kept for :meth:`result`.  Not at the same time as :meth:`result` or :meth:`help`."""
        while self._early is None:
            try:
                kind, value = self._messages.get_nowait()
            except queue.Empty:
                return
            if kind == "progress":
                if progress is not None:
                    progress(*value)
                continue
            self._early = (kind, value)

    def result(self, progress: Progress | None = None) -> _T:
        """The work's result (computed now when it was not forked), its progress passed to ``progress``;
        raises what the work raised."""
        if not self.forked:
            return self._here(progress)
        assert self.pid is not None
        cpu = cpu_ticks(self.pid)
        while True:
            if self._early is not None:
                (kind, value), self._early = self._early, None
            else:
                try:
                    kind, value = self._messages.get(timeout=_POLL)
                except queue.Empty:
                    # A child that uses no CPU for STALL_POLLS polls in a row is stuck (a library whose threads
                    # did not survive the fork would wait for them forever): stop it and do the work here.
                    stuck, cpu = self._stuck(cpu)
                    if stuck:
                        self._reap()
                        self.stalled = True
                        return self._here(progress)
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
            _UNREAPED.pop(pid, None)
            for reader in (self._reader, self._help_reader):
                if reader is not None:
                    reader.join()  # the child's ends of the pipes are closed: each reader has read to its end
            for name in ("_fd", "_pieces_fd", "_answers_fd"):
                fd = getattr(self, name)
                if fd is not None:
                    os.close(fd)
                    setattr(self, name, None)

    def __enter__(self) -> Background[_T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._reap()


def in_background(work: Callable[..., _T], fork: bool | None = None,
                  uses_polars: bool = False, name: str = "background process",
                  helping: bool = False) -> Background[_T]:
    """``work(progress)`` in a forked child process when ``fork`` (None: :func:`fork_allowed`), else in this
    process when its :meth:`~Background.result` is asked (never, if it is not asked); always used as
    ``with in_background(work) as job: ...``.  ``fork=True`` where :func:`fork_allowed` says no does not fork.
    ``uses_polars``: see :func:`fork_allowed`.  ``name``: what the child does, as its errors name it (e.g.
    "process parsing the logs").  ``helping``: ``work(progress, helper)``, where the child's ``helper`` (a
    :class:`Helper`; None when not forked) hands pieces to this process's :meth:`~Background.help`."""
    allowed = fork_allowed(uses_polars=uses_polars)
    return Background(work, allowed if fork is None else fork and allowed, name, helping)


def _write_message(fd: int, message: tuple[str, Any]) -> bool:
    """``message`` pickled onto the pipe ``fd`` whole (unbuffered: nothing is left to flush when the reader has
    gone); False when the reader's end is closed."""
    data = memoryview(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # BrokenPipeError (SIGPIPE is ignored in Python)
        return False
    return True


def _read_pieces(fd: int, into: queue.Queue[tuple[str, Any]]) -> None:
    """Every message the child sends on the pieces' pipe (("piece", piece) ... ("end", None)), and ("end",
    None) at the pipe's end."""
    with os.fdopen(fd, "rb", closefd=False) as pipe:
        try:
            while True:
                into.put(pickle.load(pipe))
        except Exception:  # noqa: BLE001 - EOF (the child ended), or a piece cut short: no more pieces
            pass
    into.put(("end", None))


class Helper:
    """The child's side of the helping (:meth:`Background.help`): pieces of its work offered to the parent.

    The parent says when it is ready; until then (and for pieces beyond :data:`HELP_IN_FLIGHT`) an offer is
    refused and the child does the piece itself.  A writer thread sends the pieces and a reader thread takes
    the answers, so the child's own work never waits on the pipes.
    """

    def __init__(self, pieces_fd: int, answers_fd: int):
        self._pieces_fd, self._answers_fd = pieces_fd, answers_fd
        self._outgoing: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._incoming: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._started = False
        self.ready = False
        #: Whether the parent's end of the answers' pipe has closed (it helps no more).
        self.gone = False
        self.in_flight = 0
        #: Pieces handed to the parent.
        self.offered = 0

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        threading.Thread(target=self._write, daemon=True, name="treediff-help-writer").start()
        threading.Thread(target=self._read, daemon=True, name="treediff-help-answers").start()

    def _write(self) -> None:
        while True:
            message = self._outgoing.get()
            if not _write_message(self._pieces_fd, message) or message[0] == "end":
                return  # (not written: the parent is gone; it stops this process itself)

    def _read(self) -> None:
        with os.fdopen(self._answers_fd, "rb", closefd=False) as pipe:
            try:
                while True:
                    self._incoming.put(pickle.load(pipe))  # ("ready", None), then ("answer", value) ...
            except Exception:  # noqa: BLE001 - EOF: the parent closed its end
                pass
        self._incoming.put(("gone", None))

    def _take(self, block: bool) -> list[Any]:
        """The answers arrived (waiting for one when ``block``); notes the parent's readiness."""
        answers: list[Any] = []
        while True:
            if self.gone and block and not answers and self.in_flight:  # (answers never lost otherwise: the
                # reader queues every answer before it notes the pipe's end)
                raise BackgroundFailed("the parent process stopped helping before it answered")
            try:
                kind, value = self._incoming.get(block=block and not answers)
            except queue.Empty:
                return answers
            if kind == "ready":
                self.ready = True
            elif kind == "answer":
                self.in_flight -= 1
                answers.append(value)
            else:  # ("gone", None): the parent closed its end
                self.ready, self.gone = False, True
            block = block and not answers

    def answers(self) -> list[Any]:
        """The parent's answers arrived so far (without waiting)."""
        self._start()
        return self._take(block=False)

    def free(self) -> bool:
        """Whether the parent takes a piece now: it said it is ready, and fewer than :data:`HELP_IN_FLIGHT`
        of its pieces are unanswered (as of the last :meth:`answers`)."""
        return self.ready and not self.gone and self.in_flight < HELP_IN_FLIGHT

    def offer(self, piece: Any) -> bool:
        """Hand ``piece`` to the parent when it is :meth:`free` (True), else leave it to the caller."""
        self._start()
        if not self.free():
            return False
        self.in_flight += 1
        self.offered += 1
        self._outgoing.put(("piece", piece))
        return True

    def finish(self) -> list[Any]:
        """Tell the parent there are no more pieces; the answers not taken yet, once all have arrived."""
        self._start()
        self._outgoing.put(("end", None))
        answers = self._take(block=False)
        while self.in_flight > 0:
            answers += self._take(block=True)
        return answers


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # (ended meanwhile; waitpid reaps it)
        pass


# -- child side ----------------------------------------------------------------------------------------
def _child(work: Callable[..., Any], fd: int, parent: int, name: str = "background process",
           helper: Helper | None = None, helping: bool = False) -> None:  # pragma: no cover - in the child
    """Run ``work`` (``work(progress, helper)`` when ``helping``) and send its answer; never returns
    (``os._exit``)."""
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
                    answer: tuple[str, Any] = ("ok", work(progress, helper) if helping else work(progress))
                except BaseException as exc:  # noqa: BLE001 - carried to the parent, which raises it
                    answer = ("error", portable(exc, name))
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


def portable(exc: BaseException, name: str = "background process") -> BaseException:
    """``exc`` if it survives pickling as it is, else a :class:`BackgroundFailed` with its type and message
    (what a child sends back of an error; also inside an answer, e.g. one input's error among others')."""
    try:
        back = pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 - any failure: carried as text
        pass
    return BackgroundFailed(f"the {name} failed: {type(exc).__name__}: {exc}")

"""Every position × engine, on a pluggable executor: :func:`plan_batch` and :func:`run_batch`.

An executor is anything with ``map_unordered(fn, tasks)`` yielding each
task's :class:`~treediff.run.task.TaskResult` as it finishes, and
``abort()`` to stop early.  The work itself is always
:func:`~treediff.run.task.run_task`, which writes its own result into the
dataset; an executor only decides where it runs.  Provided here:
:class:`SerialExecutor` (``-j 1``, in this process) and
:class:`LocalExecutor` (a pool of worker processes).  A cluster executor
(e.g. Dask: ``client.map(run_task, tasks)`` + ``as_completed``) needs nothing
more.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import multiprocessing
import os
import select
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, NoReturn, Protocol, Sequence

from treediff import __version__
from treediff.model.errors import InputError, TreediffError
from treediff.store.layout import (
    DatasetLock,
    make_dataset_dir,
    make_manifest,
    positions_digest,
    prepare_dataset,
    remove_temporary_files,
    scan_done,
)
from treediff.run.contain import set_parent_death_signal, start_time, sweep_stale_cgroups
from treediff.run.engines import EngineSpec
from treediff.model.positions import Position
from treediff.run.search import Limits
from treediff.run.signals import deferred, worker_handler
from treediff.run.task import Task, TaskResult, run_task, sweep_workdirs

TaskFn = Callable[[Task], TaskResult]


class Executor(Protocol):
    """Runs tasks somewhere and yields their results in completion order."""

    def map_unordered(self, fn: TaskFn, tasks: Sequence[Task]) -> Iterator[TaskResult]: ...

    def abort(self) -> None: ...


class SerialExecutor:
    """Runs tasks one after another in this process."""

    def map_unordered(self, fn: TaskFn, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        for task in tasks:
            yield fn(task)

    def abort(self) -> None:
        pass


class WorkerLost(TreediffError):
    """A worker process died (killed, out of memory): the batch stopped; every completed search is saved.

    ``summary`` is the :class:`BatchSummary` so far (set by :func:`run_batch`).
    """

    summary: "BatchSummary | None" = None


class _Terminated(BaseException):
    """SIGTERM in a pool worker: unwinds the running task (engine killed, temp directory removed)."""


def _worker_init(parent: int | None = None, parent_start: str | None = None) -> None:  # pragma: no cover - workers
    # Ctrl-C and a terminal's hang-up reach the whole foreground group: the parent alone decides, and stops
    # workers with SIGTERM, which unwinds the running task (never inside its cleanup: see signals.deferred).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, worker_handler(_terminated))
    # The batch's main process may die without a word (kill -9); the pool never tells its workers (each holds
    # both ends of its queues), so each watches the main itself and leaves, its engine killed, writing nothing.
    set_parent_death_signal(signal.SIGTERM)  # spawned workers: the parent is the main
    if parent is not None:
        _watch_main(parent, parent_start)


#: In a pool worker: a task is running (then leaving must unwind it, its engine killed).
_TASK_RUNNING = threading.Event()


def _terminated(signum: int) -> BaseException:  # pragma: no cover - runs in pool workers
    """SIGTERM in a pool worker: :class:`_Terminated`, which unwinds the running task, or, between tasks, an exit
    at once.  Outside :func:`_run_in_worker`'s ``try``, the exception reaches the pool's own loop: raised just
    after a task (in its ``finally``, before this change), the loop takes it for the task's error, sends it
    back and waits for the next task, for good once the batch's main is gone (the worker holds both ends of
    the task queue: no end of file), until :func:`_leave_without_main`'s 5 s fallback; raised while waiting,
    it ends the worker with a traceback and status 1.  The likely cause of a once-seen "rest gone after
    5.19 s" (``test_batch_main_sigkilled_writes_nothing_more``, not reproduced)."""
    if not _TASK_RUNNING.is_set():
        _exit_terminated()
    return _Terminated()


def _exit_terminated() -> NoReturn:  # pragma: no cover - runs in pool workers
    """Leave the worker with status 143 now (os._exit skips atexit: remove any temporary file a signal caught
    between its creation and its try block first)."""
    from treediff.store.files import remove_live_temporaries

    remove_live_temporaries()
    os._exit(143)


def _main_alive(pid: int, start: str | None) -> bool:
    from treediff.run.contain import process_state

    return start_time(pid) == start and process_state(pid) not in (None, "Z")


def _watch_main(pid: int, start: str | None) -> None:  # pragma: no cover - runs in pool workers
    """A thread that ends this worker as soon as the batch's main process is gone."""
    try:
        pidfd: int | None = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        pidfd = None
    if not _main_alive(pid, start):
        os._exit(143)

    def watch() -> None:
        if pidfd is not None:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            while not poller.poll(1000) and _main_alive(pid, start):
                pass
        else:
            while _main_alive(pid, start):
                time.sleep(0.2)
        _leave_without_main()

    threading.Thread(target=watch, name="treediff-watch-main", daemon=True).start()


def _leave_without_main() -> None:  # pragma: no cover - runs in pool workers
    from treediff.run.process import abandon_all

    from treediff.store.files import remove_live_temporaries

    abandon_all()  # the running task's engine dies now, and the task writes nothing
    if not _TASK_RUNNING.is_set():
        os._exit(143)
    os.kill(os.getpid(), signal.SIGTERM)  # unwinds the task: working directory removed, then exit 143
    time.sleep(5.0)
    remove_live_temporaries()
    os._exit(143)


def _run_in_worker(fn: TaskFn, task: Task) -> TaskResult:  # pragma: no cover - runs in pool workers
    _TASK_RUNNING.set()
    try:
        try:
            return fn(task)
        finally:
            _TASK_RUNNING.clear()  # (a SIGTERM raised here is still caught below: never in the pool's loop)
    except _Terminated:
        _exit_terminated()  # the task's cleanup has run; leave now instead of taking the next queued task


class _Stoppable(Protocol):
    def abort(self) -> None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def abort_on_exit(executor: "_Stoppable") -> Iterator[None]:
    """Around an executor's result loop: any exit but the normal end aborts the executor first
    (queued work dropped, engines killed), and every exit closes it, both shielded from a second
    Ctrl-C/SIGTERM (``deferred``) so the clean-up itself cannot be interrupted half way."""
    try:
        yield
    except BaseException:  # GeneratorExit too: the caller stopped reading the results
        with deferred():
            executor.abort()
        raise
    finally:
        with deferred():
            executor.close()


def _worker_lost() -> WorkerLost:
    """The error of a batch whose worker process died (the pool is broken: no task runs any more)."""
    # A SIGTERM/SIGHUP sent to the whole group also stops the workers: give this process's own handler the
    # chance to raise first, so the batch reports an interrupt.
    time.sleep(0.2)
    return WorkerLost("a batch worker process died (killed, or out of memory); every completed search is "
                      "saved: rerun with --resume to continue")


class LocalExecutor:
    """A pool of ``jobs`` worker processes on this machine.

    Workers are started by a fork server (spawn where there is none), never by
    a plain fork: a forked child of a process whose thread pools (polars,
    Arrow) are running can deadlock.  At most ``2 * jobs`` tasks are queued at
    a time, so a 600k-task batch costs no memory up front.  One use.
    """

    def __init__(self, jobs: int):
        self.jobs = max(1, jobs)
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if ctx.get_start_method() == "forkserver":
            # Imported once in the fork server (which runs no threads), so each worker starts warm.
            ctx.set_forkserver_preload(["treediff.run.task", "treediff.parse.core"])
        _start_helpers_shielded(ctx.get_start_method())
        main = os.getpid()
        self._pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            self.jobs, mp_context=ctx, initializer=_worker_init, initargs=(main, start_time(main)))

    def map_unordered(self, fn: TaskFn, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        pool = self._pool
        if pool is None:
            raise RuntimeError("LocalExecutor is single-use")
        pending = iter(tasks)
        running: set[Future] = set()
        broken = False  # a worker died: the pool refused a task (no more are submitted)

        def submit(task: Task) -> None:
            nonlocal broken
            try:
                running.add(pool.submit(_run_in_worker, fn, task))
            except BrokenProcessPool:  # (a worker died since the last result was read: the pool refuses tasks)
                broken = True

        with abort_on_exit(self):
            for task in itertools.islice(pending, 2 * self.jobs):
                if not broken:
                    submit(task)
            while running:
                # Never block without a timeout: Ctrl-C may land on another thread, and the handler only
                # runs when this (main) thread executes Python code again.
                finished, running = wait(running, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in finished:
                    nxt = None if broken else next(pending, None)
                    if nxt is not None:
                        submit(nxt)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        raise _worker_lost() from None
                    yield result  # (a task done before the worker died: its search is counted)
            if broken:
                raise _worker_lost()

    def abort(self, grace: float = 5.0) -> None:
        """Stop now: queued tasks are dropped; running ones are unwound by SIGTERM (engines killed).

        A worker can be mid-start (the pool spawns them on demand) when this
        runs, so the workers are looked up again until all are gone; one that
        has not exited ``grace`` seconds after SIGTERM gets SIGKILL.
        """
        pool = self._pool
        if pool is None:
            return
        # The pool's own table of workers (shutdown below drops the attribute, not the table).
        processes = getattr(pool, "_processes", None) or {}
        # No new workers or tasks from here on; pending tasks are cancelled.
        pool.shutdown(wait=False, cancel_futures=True)
        # ProcessPoolExecutor has no public way to stop running work before Python 3.14.
        signalled: dict[int, float] = {}
        deadline = time.monotonic() + grace
        while True:
            alive = [p for p in list(processes.values()) if p.is_alive()]
            if not alive:
                break
            for process in alive:
                if process.pid not in signalled:
                    process.terminate()
                    signalled[process.pid] = time.monotonic()
                elif time.monotonic() > deadline:
                    process.kill()
            time.sleep(0.05)
        pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def close(self) -> None:
        """Wait for the workers to exit."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc) -> None:
        with deferred():
            if exc[0] is not None:
                self.abort()
            self.close()


def _start_helpers_shielded(method: str) -> None:
    """Start multiprocessing's resource tracker and fork server with SIGHUP and SIGTERM ignored.

    They run in the batch's process group: a terminal's hang-up (or a SIGTERM
    to the group) would kill them under the running workers, and the batch
    would report a dead worker instead of an interrupt.  They still exit
    with the batch (their pipes to it close); the ignored dispositions are
    inherited by the workers, which set their own handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    shielded = (signal.SIGHUP, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in shielded}
    try:
        for sig in shielded:
            signal.signal(sig, signal.SIG_IGN)
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        if method == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def make_executor(jobs: int) -> Executor:
    return SerialExecutor() if jobs <= 1 else LocalExecutor(jobs)


@dataclass
class BatchPlan:
    """The tasks still to run and what was found already done."""

    dataset: Path
    tasks: list[Task]
    total: int              #: positions × engines
    already_done: int       #: skipped by --resume (completed, plus failed unless retried)
    engines: list[EngineSpec]
    positions: list[Position]
    #: The dataset's writer lock, held from planning until :func:`run_batch` ends.
    lock: DatasetLock | None = None
    tmp_root: str | None = None

    def release(self) -> None:
        """Give the dataset lock back (done by :func:`run_batch`; for a plan that is not run)."""
        if self.lock is not None:
            self.lock.release()


def plan_batch(positions: Sequence[Position], engines: Sequence[EngineSpec], depth: int, dataset: str | Path,
               limits: Limits = Limits(), resume: bool = False, retry_failed: bool = False,
               keep_logs: str = "all", keep_traces: bool = False, tmp_root: str | None = None,
               source: str = "") -> BatchPlan:
    """Prepare the dataset (manifest checked on resume) and list the tasks to run.

    Task ``search`` numbers are ``position index * len(engines) + engine index``;
    file keys are the zero-padded position index.
    """
    dataset = Path(dataset)
    names = [e.name for e in engines]
    if len(set(names)) != len(names):
        dup = collections.Counter(names).most_common(1)[0][0]
        raise InputError(f"engine {dup!r} given twice; name one of them with LABEL@{dup}")
    digest = positions_digest([(p.id, p.fen, p.phase) for p in positions])
    manifest = make_manifest(depth, [e.describe() for e in engines], len(positions), digest, source)
    manifest["treediff"] = __version__
    make_dataset_dir(dataset)
    # Held until the batch ends: a second writer (another batch, a second --resume) is refused.
    lock = DatasetLock(dataset)
    try:
        prepare_dataset(dataset, manifest, resume)
        if resume:
            remove_temporary_files(dataset)  # left by a writer that was killed; none can be running now
        done = scan_done(dataset, names)
    except BaseException:
        lock.release()
        raise
    width = max(6, len(str(len(positions) - 1)))
    tasks: list[Task] = []
    skipped = 0
    for p_index, position in enumerate(positions):
        key = f"{p_index:0{width}d}"
        for e_index, engine in enumerate(engines):
            if resume and done.is_done(engine.name, key, retry_failed):
                skipped += 1
                continue
            tasks.append(Task(key=key, search=p_index * len(engines) + e_index, engine=engine, position=position,
                              depth=depth, dataset=str(dataset), limits=limits, keep_logs=keep_logs,
                              keep_traces=keep_traces, tmp_root=tmp_root))
    return BatchPlan(dataset, tasks, len(positions) * len(engines), skipped, list(engines), list(positions),
                     lock=lock, tmp_root=tmp_root)


@dataclass
class EngineTally:
    ok: int = 0
    failed: int = 0
    nodes: int = 0
    by_failure: collections.Counter = field(default_factory=collections.Counter)
    contaminated: int = 0    #: searches whose trace held more than one context (extra dropped by the parser)
    warned: int = 0


@dataclass
class BatchSummary:
    """The outcome of :func:`run_batch`."""

    plan: BatchPlan
    results: list[TaskResult] = field(default_factory=list)
    per_engine: dict[str, EngineTally] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: bool = False
    #: The signal that interrupted the batch (SIGINT for Ctrl-C; SIGTERM, SIGHUP).
    signal: int | None = None

    @property
    def ok(self) -> int:
        return sum(t.ok for t in self.per_engine.values())

    @property
    def failed(self) -> int:
        return sum(t.failed for t in self.per_engine.values())

    @property
    def not_run(self) -> int:
        return len(self.plan.tasks) - len(self.results)

    def failures(self) -> list[TaskResult]:
        return [r for r in self.results if not r.ok]


def run_batch(plan: BatchPlan, executor: Executor, on_result: Callable[[TaskResult], None] | None = None,
              task_fn: TaskFn = run_task) -> BatchSummary:
    """Run the plan's tasks on ``executor``; a failure never stops the batch.

    On KeyboardInterrupt (and the SIGTERM/SIGHUP the CLI turns into one) the
    executor is aborted, the summary is marked ``interrupted`` (``signal``
    says which) and returned (completed results are already on disk).  A
    dead worker raises :class:`WorkerLost` carrying the summary so far.  At the
    end the dataset lock is released and the working directories and cgroups
    of processes that died (killed workers) are removed.
    """
    summary = BatchSummary(plan=plan, per_engine={e.name: EngineTally() for e in plan.engines})
    t0 = time.perf_counter()
    try:
        _run(plan, executor, on_result, task_fn, summary)
    except WorkerLost as exc:
        exc.summary = summary
        raise
    finally:
        summary.seconds = time.perf_counter() - t0
        with deferred():
            sweep_workdirs(plan.tmp_root)
            sweep_stale_cgroups()
            plan.release()
    return summary


def _run(plan: BatchPlan, executor: Executor, on_result: Callable[[TaskResult], None] | None, task_fn: TaskFn,
         summary: BatchSummary) -> None:
    try:
        for result in executor.map_unordered(task_fn, plan.tasks):
            summary.results.append(result)
            tally = summary.per_engine[result.engine]
            if result.ok:
                tally.ok += 1
                tally.nodes += result.nodes or 0
            else:
                tally.failed += 1
                tally.by_failure[result.failure or "unknown"] += 1
            tally.contaminated += result.contexts > 1
            tally.warned += bool(result.warnings)
            if on_result is not None:
                on_result(result)
    except KeyboardInterrupt as exc:
        with deferred():
            executor.abort()
        summary.interrupted = True
        summary.signal = int(getattr(exc, "signum", signal.SIGINT))

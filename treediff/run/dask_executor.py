"""Running a batch on a Dask distributed cluster: :class:`DaskExecutor`.

Each task is :func:`~treediff.run.task.run_task`, submitted as one Dask
future; it writes its own result atomically into the dataset, so the
dataset directory must be a path every worker can reach (a shared
filesystem).  With no scheduler address a :class:`distributed.LocalCluster`
of ``jobs`` single-threaded worker processes is started on this machine and
closed afterwards.

Dask is an optional dependency (``pip install -e .[dask]``); importing this
module does not import it, :class:`DaskExecutor` does.

Process safety:

* local worker processes are started by a fork server (``spawn`` where there
  is none), never by a plain fork of a process whose polars/Arrow thread
  pools run, whatever the Dask configuration says;
* each task runs its engine under the runner's process-group code, so a
  timeout or trip-wire kills the engine's whole group, on the worker;
* the engine gets a parent-death signal: a worker killed outright (out of
  memory) takes its engine with it; its working directory is removed by the
  next task on this machine (or at the end of the batch, for a local cluster);
* when a worker is closed (Ctrl-C, SIGTERM or SIGHUP here, the cluster shut down) a worker plugin
  kills the engines still running there and their tasks write nothing
  (:func:`treediff.run.process.abandon_all`); ``--resume`` reruns them.
* a worker that dies (killed, out of memory) loses only its running task;
  Dask reruns it on another worker (at most ``allowed-failures`` times).
"""
from __future__ import annotations

import itertools
import logging
import multiprocessing
import signal
import uuid
from typing import Iterator, Sequence

from treediff.model.errors import InputError, TreediffError
from treediff.run.batch import TaskFn, WorkerLost, _start_helpers_shielded, abort_on_exit
from treediff.run.signals import deferred
from treediff.run.task import Task, TaskResult


def dask_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise InputError("--executor dask needs Dask: pip install 'treediff[dask]' "
                         "(or: pip install 'dask[distributed]')") from None
    return distributed


def _worker_plugin_class():
    from distributed.diagnostics.plugin import WorkerPlugin

    class TreediffWorkerPlugin(WorkerPlugin):
        """Warms the worker (imports) and kills the engines still running when the worker closes."""

        name = "treediff-runner"

        def setup(self, worker) -> None:  # pragma: no cover - runs in workers
            import treediff.parse.core  # noqa: F401 - imported once, not on the first task
            import treediff.run.task  # noqa: F401

            try:
                # A terminal's Ctrl-C (and its hang-up) reach the whole process group: the client alone decides.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
            except ValueError:  # not the main thread (an in-process worker)
                pass

        def teardown(self, worker) -> None:  # pragma: no cover - runs in workers
            from treediff.run.process import abandon_all

            abandon_all()

    return TreediffWorkerPlugin


class DaskExecutor:
    """Runs tasks as Dask futures; results are yielded as they complete.

    ``scheduler``: the address of a running scheduler (``tcp://host:8786``);
    None starts a :class:`distributed.LocalCluster` of ``jobs`` worker
    processes with one thread each (closed by :meth:`close`).  At most
    ``2 × workers`` tasks are submitted at a time, so a 600k-task batch costs
    the scheduler no memory up front.  One use.
    """

    def __init__(self, jobs: int, scheduler: str | None = None):
        distributed = _import_distributed()
        import dask

        self.jobs = max(1, jobs)
        self._cluster = None
        self._futures: set = set()
        # A fork server (a fresh interpreter with distributed preloaded, no polars/Arrow threads) starts workers
        # in half the time of spawn; never a plain fork of this process, whose polars/Arrow threads may run.
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        settings: dict[str, object] = {"distributed.worker.multiprocessing-method": method}
        if not scheduler:
            # Our own workers only wait on engines: no statistical profiler taking the GIL 100 times a second.
            settings["distributed.worker.profile.enabled"] = False
        if not scheduler:
            # The nannies and workers are forked by the fork server: started with SIGHUP/SIGTERM ignored, it
            # passes that on, so a terminal's hang-up reaches only this process, which closes the cluster.
            _start_helpers_shielded(method)
        with dask.config.set(settings):
            try:
                if scheduler:
                    self.client = distributed.Client(scheduler, timeout="30s")
                else:
                    self._cluster = distributed.LocalCluster(
                        # ":0": any free port for the scheduler's HTTP server (8787 may be another cluster's).
                        n_workers=self.jobs, threads_per_worker=1, processes=True, dashboard_address=":0",
                        silence_logs=logging.CRITICAL)
                    self.client = distributed.Client(self._cluster)
            except OSError as exc:
                self.close()
                raise TreediffError(f"cannot reach the Dask scheduler {scheduler or '(local)'}: {exc}") from None
        self.client.register_plugin(_worker_plugin_class()())

    def _capacity(self) -> int:
        try:
            threads = sum(self.client.nthreads().values())
        except Exception:  # noqa: BLE001 - a scheduler that cannot say: assume the local size
            threads = 0
        return 2 * max(threads, self.jobs if self._cluster is not None else 1)

    def map_unordered(self, fn: TaskFn, tasks: Sequence[Task]) -> Iterator[TaskResult]:
        from distributed import as_completed

        client = self.client
        if client is None:
            raise RuntimeError("DaskExecutor is single-use")
        pending = iter(tasks)
        batch_id = uuid.uuid4().hex[:8]

        def submit(task: Task):
            # pure=False and a unique key: a rerun of the same task must run again, never reuse a result.
            future = client.submit(fn, task, pure=False, key=f"treediff-{task.engine.name}-{task.key}-{batch_id}")
            self._futures.add(future)
            return future

        with abort_on_exit(self):
            first = [submit(t) for t in itertools.islice(pending, self._capacity())]
            completed = as_completed(first)
            for future in completed:
                self._futures.discard(future)
                nxt = next(pending, None)
                if nxt is not None:
                    completed.add(submit(nxt))
                try:
                    result = future.result()
                except TreediffError:
                    raise  # the task's own clear error (e.g. the dataset's disk is full)
                except Exception as exc:  # noqa: BLE001 - KilledWorker, a lost scheduler, ...
                    raise WorkerLost(
                        f"a Dask task failed ({type(exc).__name__}: {exc}); every completed search is saved: "
                        "rerun with --resume to continue") from None
                yield result

    def abort(self) -> None:
        """Cancel every submitted future and close the client (and the local cluster, killing its engines)."""
        if self.client is not None and self._futures:
            try:
                self.client.cancel(list(self._futures), force=True)
            except Exception:  # noqa: BLE001 - the scheduler may be gone already
                pass
        self._futures.clear()
        self.close()

    def close(self) -> None:
        client, cluster = getattr(self, "client", None), self._cluster
        self.client, self._cluster = None, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass
        if cluster is not None:
            try:
                cluster.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "DaskExecutor":
        return self

    def __exit__(self, *exc) -> None:
        with deferred():
            if exc[0] is not None:
                self.abort()
            self.close()


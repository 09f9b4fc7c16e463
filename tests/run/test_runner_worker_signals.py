"""A batch worker's SIGTERM: inside a task it unwinds the task and exits 143; between tasks it exits 143 at once
(unwinding the pool's own loop could hang on its result queue once the batch's main is gone)."""
from __future__ import annotations

import subprocess
import sys
import time

_WORKER = """
import os, signal, sys, time
from treediff.run import batch

batch._worker_init()  # the pool worker's handlers (no main to watch)
if sys.argv[1] == "idle":
    os.kill(os.getpid(), signal.SIGTERM)
else:
    def task(_):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            print("task unwound", flush=True)
    batch._run_in_worker(task, None)
time.sleep(5)
print("still here", flush=True)
"""


def _worker(mode: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _WORKER, mode], capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - t0


def test_sigterm_between_tasks_exits_143_at_once():
    done, took = _worker("idle")
    assert done.returncode == 143, done.stderr
    assert "still here" not in done.stdout and "Traceback" not in done.stderr
    assert took < 4.0


def test_sigterm_in_a_task_unwinds_it_then_exits_143():
    done, took = _worker("task")
    assert done.returncode == 143, done.stderr
    assert done.stdout.splitlines() == ["task unwound"]
    assert took < 4.0

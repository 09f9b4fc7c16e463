"""Waiting for the test process to run only its main thread (treediff.run.forked forks only then)."""
from __future__ import annotations

import threading
import time


def settle_threads(timeout: float = 10.0) -> list[str]:
    """Wait up to ``timeout`` seconds for every other thread of this process to end (a previous test's
    progress display or read-ahead thread finishing); the names of those still running."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t is not threading.current_thread()]

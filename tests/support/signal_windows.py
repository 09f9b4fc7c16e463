"""A real SIGTERM at the one moment a signal is hardest to clean up after: as a call that made something
(a temporary file, a directory) returns, before its caller can record it.

Python runs a handler between two bytecodes of the main thread, so the CLI's ``Terminated`` is raised there,
from inside the call as far as its caller can tell (``treediff.run.signals``).
"""
from __future__ import annotations

import contextlib
import os
import signal
from typing import Any, Callable, Iterator

from treediff.run.signals import interrupting


@contextlib.contextmanager
def sigterm_as_it_returns(owner: Any, name: str, when: Callable[..., bool]) -> Iterator[list]:
    """While the block runs, under the CLI's handlers, ``owner.name`` does its work, then, when ``when(*args)``
    holds, sends this process SIGTERM; yields the list of the arguments of each call that did (to check that
    the window was hit)."""
    real = getattr(owner, name)
    hit: list = []

    def wrapper(*args, **kwargs):
        result = real(*args, **kwargs)
        if when(*args):
            hit.append(args)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # (bytecodes: the handler runs among them)
                pass
        return result

    setattr(owner, name, wrapper)
    try:
        with interrupting():
            yield hit
    finally:
        setattr(owner, name, real)

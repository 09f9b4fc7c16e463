"""Fixtures of the runner tests."""
from __future__ import annotations

import os
import time

import pytest

from support.runner_helpers import children_of


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a child process (running or zombie) of this process behind."""
    before = {pid for pid, _ in children_of(os.getpid())}
    yield
    deadline = time.monotonic() + 2.0
    while True:
        left = [(p, s) for p, s in children_of(os.getpid()) if p not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not left, f"processes left behind: {left}"

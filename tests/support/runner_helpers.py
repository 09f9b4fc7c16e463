"""Helpers for the runner tests: fake engines, process inspection, real-engine skips."""
from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from treediff.run.engines import EngineSpec, presets

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "fixtures" / "engines" / "fake_engine.py"
STOCKFISH = "/usr/games/stockfish"
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
TACTIC = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"


def fake_argv(*args: str) -> tuple[str, ...]:
    return (sys.executable, str(FAKE), *args)


def fake_cmd(*args: str) -> str:
    return shlex.join(fake_argv(*args))


def fake_spec(*args: str, preset: str = "stockfish-treedump", name: str = "fake", **changes) -> EngineSpec:
    """A preset driven against the fake engine (``args`` go to fake_engine.py)."""
    return replace(presets()[preset], name=name, argv=fake_argv(*args), **changes)


#: multiprocessing's own long-lived helpers (one per interpreter, reused by every pool): not leftovers.
_MP_HELPERS = (b"multiprocessing.forkserver", b"multiprocessing.resource_tracker")


def children_of(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of every live or zombie child of ``pid``, from /proc (multiprocessing's helpers excluded)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except OSError:
                cmdline = b""
            if not any(helper in cmdline for helper in _MP_HELPERS):
                out.append((int(entry), fields[0]))
    return out


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stockfish_or_skip() -> str:
    if not os.access(STOCKFISH, os.X_OK):
        pytest.skip(f"Debian's stockfish is not installed at {STOCKFISH} (apt-get install stockfish; .ci/run does)")
    return STOCKFISH


def typhoon_py_or_skip() -> None:
    import importlib.util

    if importlib.util.find_spec("typhoon_py") is None or importlib.util.find_spec("typhoon_py.protocol") is None:
        pytest.skip("typhoon_py is not importable")


def wait_until(predicate, timeout: float, step: float = 0.02) -> bool:
    """Whether ``predicate()`` held within ``timeout`` seconds (polled every ``step``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def sigint_at_default() -> None:
    """A child's ``preexec_fn``: SIGINT at its default, as a command typed in a terminal has it.  A test run
    started in the background by a non-interactive shell (``cmd &``) has SIGINT ignored, which treediff would
    inherit and, by design, keep ignoring (Python then raises no KeyboardInterrupt for it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

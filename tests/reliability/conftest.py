"""The reliability suite's fixtures and its summary (cases tried and passed, measured times and memory).

Run alone with ``python -m pytest tests/reliability``; the summary is printed
at the end of any run that includes it.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from reliability.hostile import Cli, ours, pids_in

_OUTCOMES: dict[str, str] = {}
#: (case, what, measured, bound, unit) rows for the summary.
_MEASURED: list[tuple[str, str, float, float, str]] = []


def _is_ours(nodeid: str) -> bool:
    return "reliability/" in nodeid.replace("\\", "/")


def pytest_runtest_logreport(report):
    if not _is_ours(report.nodeid):
        return
    if report.when == "call" or report.outcome in ("failed", "skipped"):
        if report.nodeid not in _OUTCOMES or report.outcome == "failed":
            _OUTCOMES[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter):
    if not _OUTCOMES:
        return
    tr = terminalreporter
    counts = {k: sum(v == k for v in _OUTCOMES.values()) for k in ("passed", "failed", "skipped")}
    tr.section("reliability suite")
    tr.write_line(f"{len(_OUTCOMES)} cases tried: {counts['passed']} passed, {counts['failed']} failed, "
                  f"{counts['skipped']} skipped")
    for case, what, value, bound, unit in _MEASURED:
        tr.write_line(f"  {case:58s} {what:22s} {value:8.2f} {unit} (bound {bound:g} {unit})")


@pytest.fixture
def record():
    """``record(case, what, value, bound, unit="s")``: note a measurement for the summary and check its bound."""

    def note(case: str, what: str, value: float, bound: float, unit: str = "s") -> None:
        _MEASURED.append((case, what, value, bound, unit))
        assert value <= bound, f"{case}: {what} {value:.2f} {unit} > {bound:g} {unit}"

    return note


@pytest.fixture
def cli(tmp_path):
    """``cli(*args, **kw)`` starts ``treediff`` (see :class:`Cli`); every one, and every process the fake
    engines report in ``tmp_path`` pid files, is killed and reaped at the end, pass or fail."""
    started: list[Cli] = []

    def start(*args, **kw) -> Cli:
        kw.setdefault("cwd", tmp_path)
        c = Cli(*args, **kw)
        started.append(c)
        return c

    yield start
    for c in started:
        c.kill()
    for source in [*tmp_path.rglob("*.pid"), *tmp_path.rglob("pids")]:
        for pid in pids_in(source):
            if ours(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


@pytest.fixture(params=["cgroup", "subreaper"])
def containment(request):
    """The environment for each way of holding an engine's escaped descendants (both are tested)."""
    env = dict(os.environ)
    if request.param == "cgroup":
        from treediff.run.contain import cgroup_base

        if cgroup_base() is None:
            pytest.skip("no writable cgroup v2 here: the subreaper is the mechanism in use (tested too)")
        env.pop("TREEDIFF_CGROUP", None)
    else:
        env["TREEDIFF_CGROUP"] = "0"
    return request.param, env


@pytest.fixture
def work(tmp_path) -> Path:
    """The ``--tmpdir`` of the runs: must be empty afterwards (no working directory left)."""
    path = tmp_path / "work"
    path.mkdir()
    return path

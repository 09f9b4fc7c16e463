"""Progress (issue 16 item 6): a display only when stderr is a terminal, never in pipes, CI or tests."""
from __future__ import annotations

import io
import os
import sys
import time

import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.render import progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(progress, "_display", None)


@pytest.fixture
def no_display(monkeypatch):
    """Fail the test if a display is created."""

    def refuse(*args, **kwargs):
        raise AssertionError("a progress display was created off a terminal")

    monkeypatch.setattr(progress, "Display", refuse)


def test_no_display_when_stderr_is_not_a_terminal(monkeypatch, no_display):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress.enabled()
    assert progress.display() is None
    with progress.step("aligning", total=3, unit="positions") as tick:
        assert tick is None
    with progress.parsing(["x.log"]) as tick:
        assert tick is None


def test_display_created_on_a_terminal_and_shown_after_the_delay(monkeypatch):
    fake = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake)
    assert progress.enabled()
    shown = progress.display()
    assert isinstance(shown, progress.Display) and progress.display() is shown  # one per command
    # a quick step never starts the display (DELAY = 1 s)
    with progress.step("quick") as tick:
        assert tick is not None
    assert not shown.progress.live.is_started and shown.progress.tasks == []
    # a step that outlasts the delay does; it stops (and clears: transient) when the step ends
    shown.delay = 0.01
    with progress.step("aligning", total=4, unit="positions") as tick:
        assert tick is not None
        tick.set(2, 4)
        deadline = time.monotonic() + 5
        while not shown.progress.live.is_started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert shown.progress.live.is_started
        (task,) = shown.progress.tasks
        assert (task.description, task.completed, task.total) == ("aligning", 2, 4)
        tick(1)
        assert task.completed == 3
    assert not shown.progress.live.is_started and shown.progress.tasks == []


def test_cli_runs_without_a_display(fixtures_dir, tmp_path, no_display):
    log = fixtures_dir / "hand" / "report_stockfish.log"
    other = fixtures_dir / "hand" / "report_crafty.log"
    for args in (["report", log, "--table", "nodes"], ["compare", log, other], ["diff", log, other, "--position", "p1"]):
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 0, result.output


def test_cli_steps_on_a_terminal(fixtures_dir, monkeypatch):
    """On a terminal: a step per stage; the parse step counts the log's bytes, the alignment its positions."""
    log = fixtures_dir / "hand" / "report_stockfish.log"
    other = fixtures_dir / "hand" / "report_crafty.log"
    steps: list[tuple[str, object, str]] = []
    ticks: dict[str, list] = {}

    class Recorder:
        def __call__(self, label, total=None, unit=""):
            import contextlib

            @contextlib.contextmanager
            def run():
                steps.append((label, total, unit))
                seen = ticks.setdefault(label, [])

                class Tick:
                    def __call__(self, n=1):
                        seen.append(n)

                    def set(self, done, total=None):
                        seen.append((done, total))

                yield Tick()

            return run()

    monkeypatch.setattr(progress, "enabled", lambda: True)
    monkeypatch.setattr(progress, "step", Recorder())
    result = CliRunner().invoke(main, ["compare", str(log), str(other), "--format", "json"])
    assert result.exit_code == 0, result.output
    labels = [s[0] for s in steps]
    assert labels == [f"reading {log}", f"reading {other}", "comparing", "aligning and attributing"]
    assert steps[0][1:] == (os.path.getsize(log), "bytes")
    assert sum(ticks[f"reading {log}"]) == os.path.getsize(log)  # every byte of the log read once
    assert ticks["aligning and attributing"] == [(0, 2), (1, 2)]  # positions p1 and p2
    steps.clear()
    ticks.clear()
    result = CliRunner().invoke(main, ["diff", str(log), str(other), "--format", "json", "--position", "p1"])
    assert result.exit_code == 0, result.output
    # Each log holds two searches: a byte scan finds them (every byte read), then p1's lines alone are parsed.
    assert [s[0] for s in steps] == [f"reading {log}", f"reading {other}", f"reading search 0 of {log}",
                                     f"reading search 0 of {other}", "aligning", "attributing the divergences"]
    assert sum(ticks[f"reading {other}"]) == os.path.getsize(other)


def _other_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t is not threading.current_thread()]


@pytest.mark.parametrize("shown_before", [True, False], ids=["displayed", "pending"])
def test_paused_display_runs_no_thread_and_comes_back(monkeypatch, shown_before):
    """treediff.run.forked forks only a process running no other thread: a paused display runs none."""
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    shown = progress.display()
    shown.delay = 0.01 if shown_before else 30.0
    with progress.step("counting", total=2, unit="positions"):
        deadline = time.monotonic() + 5
        while shown_before and not shown.progress.live.is_started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert shown.progress.live.is_started == shown_before
        assert _other_threads(), "the display runs a thread (redraw or timer) before the pause"
        with progress.paused():
            assert _other_threads() == []
            assert not shown.progress.live.is_started
        if shown_before:
            assert shown.progress.live.is_started  # shown again at once
        else:
            assert len(shown._timers) == 1  # the start is pending again
        (task,) = shown.progress.tasks
        assert task.description == "counting"
        pending = list(shown._timers)
    assert not shown.progress.live.is_started and shown.progress.tasks == []
    for timer in pending:  # the pause's own timer ends with the last step, not DELAY (30 s here) later
        timer.join(timeout=5)
        assert not timer.is_alive()


def test_paused_without_a_display_does_nothing(monkeypatch, no_display):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress.paused():
        pass

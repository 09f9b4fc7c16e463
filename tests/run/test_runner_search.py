"""One search against fake engines: protocol scripts, limits, failures, process hygiene.

The fake engine's numbers are fixed by its docstring: a depth-D search of a
position with K >= 3 legal moves writes D*(K+1) = 4D RESULT nodes and reports
its own count 40*d for iteration d.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.runner_helpers import START, TACTIC, fake_spec, pid_alive
from treediff.run.search import Failure, Limits, run_search
from treediff.run.task import analyze
from treediff.model.positions import Position

FAST = Limits(timeout=5.0, quit_grace=1.0)


def _run(spec, tmp_path: Path, fen: str = START, depth: int = 3, limits: Limits = FAST):
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    return run_search(spec, fen, depth, workdir, limits)


def _sent(record: Path) -> list[str]:
    return record.read_text().splitlines()


def test_uci_script_and_engine_counts(tmp_path, no_leftovers):
    record = tmp_path / "sent.txt"
    out = _run(fake_spec("--record", str(record)), tmp_path)
    assert out.ok, out.detail
    assert out.bestmove == "a2a3"  # first legal move of the start position in UCI order
    assert out.iter_nodes == [(1, 40), (2, 80), (3, 120)]
    assert out.trace_path is not None and out.trace_lines == 1 + 3 * (1 + 3 * 2 + 1) + 1
    sent = _sent(record)
    assert sent[0] == "uci"
    assert "setoption name Threads value 1" in sent and "setoption name Hash value 16" in sent
    assert sent.index("ucinewgame") < sent.index(f"position fen {START}") < sent.index("go depth 3")
    assert sent[-1] == "quit"  # stdin was still open after bestmove: quit got through


def test_typhoon_xboard_script_sends_easy_before_go(tmp_path, no_leftovers):
    record = tmp_path / "sent.txt"
    out = _run(fake_spec("--record", str(record), preset="typhoon"), tmp_path, fen=TACTIC, depth=2)
    assert out.ok, out.detail
    sent = _sent(record)
    assert sent[:2] == ["xboard", "protover 2"]
    assert sent.index("easy") < sent.index("go")
    assert sent.index(f"setboard {TACTIC}") < sent.index("sd 2") < sent.index("go")
    assert out.iter_nodes == [(1, 40), (2, 80)]  # from the thinking lines


def test_crafty_script_sends_ponder_off_first(tmp_path, no_leftovers):
    record = tmp_path / "sent.txt"
    out = _run(fake_spec("--record", str(record), preset="crafty"), tmp_path, depth=1)
    assert out.ok, out.detail
    assert _sent(record)[0] == "ponder off"


def test_ponder_contaminates_without_easy(tmp_path, no_leftovers):
    spec = fake_spec("--mode", "ponder", preset="typhoon", init=())
    out = _run(spec, tmp_path, depth=2, limits=Limits(timeout=5, linger=0.3))
    assert out.ok
    text = out.trace_path.read_text()
    assert "ctx=ponder" in text
    position = Position("start", START)
    analysis = analyze(spec, position, 2, out)
    assert analysis.ok and analysis.contexts == 2
    assert any("several search contexts" in w for w in analysis.warnings)


def test_easy_prevents_ponder(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "ponder", preset="typhoon"), tmp_path, depth=2,
               limits=Limits(timeout=5, linger=0.3))
    assert out.ok and "ctx=ponder" not in out.trace_path.read_text()


@pytest.mark.parametrize("mode", ["silent", "hang"])
def test_timeout_kills_engine(tmp_path, mode, no_leftovers):
    t0 = time.monotonic()
    out = _run(fake_spec("--mode", mode), tmp_path, limits=Limits(timeout=1.0))
    elapsed = time.monotonic() - t0
    assert not out.ok and out.failure is Failure.TIMEOUT
    assert 1.0 <= elapsed < 3.0


def test_trace_tripwire(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "flood"), tmp_path, limits=Limits(timeout=10, max_trace_lines=50_000))
    assert out.failure is Failure.TRIPWIRE and "trace" in out.detail
    assert out.trace_lines > 50_000
    assert out.timings.exited < 5  # killed by the trip-wire, long before the timeout


def test_output_tripwire(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "spew"), tmp_path, limits=Limits(timeout=10, max_trace_lines=20_000))
    assert out.failure is Failure.TRIPWIRE and "output" in out.detail


def test_crash_mid_search(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "crash"), tmp_path)
    assert out.failure is Failure.CRASH and out.returncode == 3
    assert "status 3" in out.detail


def test_nonzero_exit_after_answer(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "exit1"), tmp_path)
    assert out.failure is Failure.EXIT_CODE and out.bestmove == "a2a3"


def test_garbage_output_and_trace(tmp_path, no_leftovers):
    spec = fake_spec("--mode", "garbage")
    out = _run(spec, tmp_path)
    assert out.ok  # the protocol itself was answered
    assert any("garbage" in line for line in out.transcript.splitlines())
    analysis = analyze(spec, Position("start", START), 3, out)
    assert not analysis.ok and analysis.failure is Failure.UNPARSEABLE


def test_zero_node_search_is_a_failure(tmp_path, no_leftovers):
    spec = fake_spec("--mode", "zero")
    out = _run(spec, tmp_path)
    analysis = analyze(spec, Position("start", START), 3, out)
    assert analysis.failure is Failure.ZERO_NODES and "0-node" in analysis.detail


def test_missing_trace(tmp_path, no_leftovers):
    out = _run(fake_spec("--mode", "notrace"), tmp_path)
    assert out.failure is Failure.NO_TRACE


def test_setboard_rejection_is_a_protocol_error(tmp_path, no_leftovers):
    # Only reachable by a spec whose search commands send a FEN the engine refuses.
    spec = fake_spec(preset="typhoon", search=("force", "setboard not/a/fen w - -", "sd 1", "go"))
    out = _run(spec, tmp_path)
    assert out.failure is Failure.PROTOCOL and "Illegal position" in out.detail


def test_whole_process_group_is_killed(tmp_path, no_leftovers):
    pidfile = tmp_path / "orphan.pid"
    out = _run(fake_spec("--mode", "orphan", "--orphan-pid", str(pidfile)), tmp_path)
    assert out.ok
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(child), "the engine's own child survived it"


def test_start_failure(tmp_path):
    spec = fake_spec()
    spec = spec.__class__(name="x", argv=("/nonexistent/engine",), protocol=spec.protocol)
    out = run_search(spec, START, 1, tmp_path, FAST)
    assert out.failure is Failure.START and "/nonexistent/engine" in out.detail


def test_inherited_treedump_env_is_ignored(tmp_path, monkeypatch, no_leftovers):
    shared = tmp_path / "shared.log"
    monkeypatch.setenv("TREEDUMP", str(shared))
    out = _run(fake_spec(), tmp_path)
    assert out.ok and not shared.exists()


def test_engine_count_lines():
    from treediff.run.engines import Protocol
    from treediff.run.search import _IterNodes

    uci = _IterNodes(Protocol.UCI)
    for line in ["info string NNUE evaluation enabled", "info depth 1 seldepth 1 multipv 1 score cp 20 nodes 20 pv e2e4",
                 "info depth 2 currmove e2e4 currmovenumber 1", "info depth 2 seldepth 2 score cp 5 lowerbound nodes 70",
                 "info depth 2 seldepth 2 score cp 8 nodes 95 nps 1000 pv e2e4 e7e5",
                 "info depth 3 seldepth 4 score mate 2 nodes 300 pv d1h5"]:
        uci.feed(line)
    assert uci.pairs() == [(1, 20), (2, 95), (3, 300)] and uci.score is None  # mate scores are not centipawns
    xb = _IterNodes(Protocol.XBOARD)
    for line in ["  1     25      0        31   Nf3", " 2&   -10   1   144  Nf3 Nf6", "3. 12 3 1002 e4 e5 Nf3",
                 "feature done=1", "move Nf3", "1 2"]:
        xb.feed(line)
    assert xb.pairs() == [(1, 31), (2, 144), (3, 1002)] and xb.score == 12


def test_xboard_moves_in_san_become_uci():
    from treediff.run.search import _to_uci

    assert _to_uci("Nf3", START) == "g1f3" and _to_uci("e2e4", START) == "e2e4"
    assert _to_uci("O-O", "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1") == "e1g1"
    assert _to_uci("garbage", START) == "garbage"


def test_xboard_without_protover(tmp_path, no_leftovers):
    record = tmp_path / "sent.txt"
    out = _run(fake_spec("--record", str(record), preset="typhoon", protover=False), tmp_path, depth=1)
    assert out.ok and "protover 2" not in _sent(record) and not out.warnings


def test_a_signal_as_the_working_directory_is_made_leaves_nothing(tmp_path):
    """SIGTERM raised as the search's working directory's ``mkdir`` returns: raised once the directory is
    known, and removed (before, the directory was orphaned)."""
    import os

    from support.signal_windows import sigterm_as_it_returns
    from treediff.run.signals import Terminated
    from treediff.run.task import run_one

    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(Terminated):
        with sigterm_as_it_returns(os, "mkdir", lambda path, *rest: str(path).startswith(str(work))) as hit:
            run_one(fake_spec(), Position("start", START), 2, tmp_path / "out.log", tmp_root=str(work))
    assert len(hit) == 1
    assert list(work.iterdir()) == [] and not (tmp_path / "out.log").exists()

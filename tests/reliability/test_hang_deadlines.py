"""Deadlines that hold and bounded memory (issue 15, deliverables 1 and 2).

`treediff run` against hostile fake engines, as a real process: it must end
within ``--timeout`` + 5 s in every case (start-up of the interpreter
included), kill everything the engine started (a ``setsid`` child too, by the
cgroup or the subreaper: both are run), leave no working directory, and
keep its peak memory bounded whatever the engine writes.
"""
from __future__ import annotations

import os

import pytest

from reliability.hostile import START, alive, fake, pids_in, wait_gone

TIMEOUT = 3.0
BOUND = TIMEOUT + 5.0
#: Peak RSS of `treediff run` (the fake engine included); a normal run takes about 80 MB.
RSS_BOUND_MB = 250.0


def _run(cli, tmp_path, work, engine, *extra, env=None, timeout=TIMEOUT, fen=START):
    c = cli("run", "--engine", engine, "--fen", fen, "--depth", "2", "--timeout", timeout,
            "-o", tmp_path / "out.log", "--tmpdir", work, *extra, env=env)
    c.wait(timeout + 60)
    return c


def _empty(work) -> bool:
    return not list(work.iterdir())


@pytest.mark.parametrize("mode", ["escape-hang", "escape", "doublefork"])
def test_setsid_child_is_killed_and_does_not_hold_the_run(cli, tmp_path, work, containment, mode, record):
    """An engine leaving a setsid() child that holds its output pipe: the run ends in time, the child dies."""
    how, env = containment
    pidfile = tmp_path / "escapee.pid"
    c = _run(cli, tmp_path, work, f"uci={fake('--mode', mode, '--orphan-pid', pidfile)}", env=env)
    escapees = pids_in(pidfile)
    assert escapees, c.output
    if mode == "escape-hang":
        assert c.proc.returncode == 1 and "FAILED (timeout)" in c.output, c.output
    else:
        assert c.proc.returncode == 0, c.output
        assert "outside its process group were killed" in c.output
    assert not wait_gone(escapees, 2.0), "the escaped child survived"
    assert _empty(work)
    record(f"run, {mode} engine ({how})", "ended after", c.seconds, BOUND)


@pytest.mark.parametrize("mode", ["fifo-trace", "devzero-trace"])
def test_trace_that_is_a_fifo_or_dev_zero(cli, tmp_path, work, mode, record):
    """The trace watcher never opens a FIFO (it would block) nor reads /dev/zero through a symlink."""
    c = _run(cli, tmp_path, work, "stockfish-treedump", "--cmd", fake("--mode", mode), timeout=10.0)
    assert c.proc.returncode == 1 and "FAILED (unparseable-trace)" in c.output, c.output
    assert "not read" in c.output
    assert _empty(work)
    record(f"run, trace is {mode.split('-')[0]}", "ended after", c.seconds, 10.0 + 5)
    record(f"run, trace is {mode.split('-')[0]}", "peak RSS", c.maxrss_mb, RSS_BOUND_MB, "MB")


def test_engine_that_never_reads_its_input(cli, tmp_path, work, record):
    """Commands larger than the pipe to an engine that reads nothing: the send gives up at the deadline."""
    cfg = tmp_path / "engines.toml"
    init = ", ".join(f'"setoption name Junk{i} value {"x" * 1000}"' for i in range(200))  # 200 kB > a 64 kB pipe
    cfg.write_text(f'[engines.deaf]\nprotocol = "uci"\ninit = [{init}]\n')
    c = _run(cli, tmp_path, work, f"deaf={fake('--mode', 'noread')}", "--engines-config", cfg)
    assert c.proc.returncode == 1 and "FAILED (timeout)" in c.output, c.output
    assert _empty(work)
    record("run, engine never reads stdin", "ended after", c.seconds, BOUND)


@pytest.mark.parametrize("mode, failure", [("hang", "timeout"), ("silent", "timeout"), ("closeout", "crash"),
                                           ("slowquit", None)])
def test_other_stalls(cli, tmp_path, work, mode, failure, record):
    c = _run(cli, tmp_path, work, f"uci={fake('--mode', mode)}")
    if failure is None:
        assert c.proc.returncode == 0, c.output
        assert "did not exit within" in c.output  # killed after the quit grace
    else:
        assert c.proc.returncode == 1 and f"FAILED ({failure})" in c.output, c.output
    assert _empty(work)
    record(f"run, {mode} engine", "ended after", c.seconds, BOUND)


@pytest.mark.parametrize("max_lines", [20_000, None])
def test_output_without_newlines(cli, tmp_path, work, max_lines, record):
    """A newline-free flood of output trips the byte trip-wire; memory stays small (3.9 GB before)."""
    extra = ["--max-trace-lines", max_lines] if max_lines else []
    c = _run(cli, tmp_path, work, f"uci={fake('--mode', 'nonewline-spew')}", *extra, timeout=30.0)
    assert c.proc.returncode == 1 and "FAILED (tripwire): output trip-wire" in c.output, c.output
    assert "output bytes" in c.output
    assert os.path.getsize(tmp_path / "out.log") < 20 * 1024 * 1024  # the transcript kept is capped too
    case = f"run, newline-free output (--max-trace-lines {max_lines or 'default'})"
    record(case, "peak RSS", c.maxrss_mb, RSS_BOUND_MB, "MB")
    record(case, "ended after", c.seconds, 30.0 + 5)


def test_trace_without_newlines(cli, tmp_path, work, record):
    """A newline-free trace trips the trip-wire on its bytes (a 640 MB one never tripped it before)."""
    c = _run(cli, tmp_path, work, "stockfish-treedump", "--cmd", fake("--mode", "nonewline-trace"),
             "--max-trace-lines", 20_000, timeout=30.0)
    assert c.proc.returncode == 1 and "trace trip-wire" in c.output and "trace bytes" in c.output, c.output
    assert os.path.getsize(tmp_path / "out.log") < 64 * 1024 * 1024
    record("run, newline-free trace (--max-trace-lines 20000)", "peak RSS", c.maxrss_mb, RSS_BOUND_MB, "MB")
    record("run, newline-free trace (--max-trace-lines 20000)", "ended after", c.seconds, 30.0 + 5)


def test_long_lines_are_cut_and_the_transcript_is_capped(cli, tmp_path, work, record):
    """60 MB of 60 kB lines, then a normal search: it succeeds; lines and transcript are capped in bytes."""
    transcript = tmp_path / "t.txt"
    c = _run(cli, tmp_path, work, f"uci={fake('--mode', 'longline', '--line-bytes', 60_000, '--repeat', 1000)}",
             "--transcript", transcript, timeout=30.0)
    assert c.proc.returncode == 0, c.output
    size = os.path.getsize(transcript)
    assert size <= 17 * 1024 * 1024 and "more lines" in transcript.read_text()[-200:]
    record("run, 1000 lines of 60 kB", "transcript kept", size / 2**20, 17.0, "MB")
    record("run, 1000 lines of 60 kB", "peak RSS", c.maxrss_mb, RSS_BOUND_MB, "MB")
    one = _run(cli, tmp_path, work, f"uci={fake('--mode', 'longline', '--line-bytes', 10_000_000)}",
               "--transcript", transcript, timeout=30.0)
    assert one.proc.returncode == 0, one.output
    text = transcript.read_text()
    assert "more bytes of this line not kept" in text and os.path.getsize(transcript) < 200_000
    assert not alive(one.pid)

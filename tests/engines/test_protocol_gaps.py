"""typhoon-py's protocol and command-line behaviour (issue 14 item 6), driven as a subprocess
(argv lists, deadlines): UCI clocks, `go ponder`/`ponderhit`/`stop`, the group options,
`--treedump -`, `--version`, and a crashed search thread."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import read_trace
from typhoon_py.protocol import DEFAULT_MOVES_TO_GO, MOVE_OVERHEAD_MS, time_budget

ENGINE = [sys.executable, "-m", "typhoon_py"]


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TREEDUMP", "TYPHOON_PY_FAULT")}
    env.update(extra)
    return env


class _Engine:
    """An interactive engine process; its stdout lines arrive on a queue with a deadline."""

    def __init__(self, cwd: Path, *args: str, env: dict | None = None) -> None:
        self.proc = subprocess.Popen(ENGINE + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd, env=env or _env())
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, *commands: str) -> None:
        assert self.proc.stdin is not None
        for c in commands:
            self.proc.stdin.write(c + "\n")
        self.proc.stdin.flush()

    def until(self, prefix: str, timeout: float = 30.0) -> tuple[str, list[str]]:
        """The first line starting with ``prefix`` and every line before it."""
        seen = []
        end = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            assert line is not None, f"engine exited before {prefix!r}: {seen}"
            if line.startswith(prefix):
                return line, seen
            seen.append(line)

    def quiet_for(self, seconds: float) -> list[str]:
        """Lines printed within ``seconds`` (none expected, usually)."""
        out = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            out.append(line)
        return out

    def close(self) -> int:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- the time manager
def test_time_budget_follows_its_documented_rule():
    # movetime: exactly that
    b = time_budget({"movetime": 250}, True)
    assert b.soft == b.hard == 0.25
    # a clock: (t - overhead) / movestogo + 3/4 inc, hard 3x, both capped at 80% of what is left
    t, inc = 60_000, 1_000
    b = time_budget({"wtime": t, "btime": 1, "winc": inc, "binc": 0}, True)
    soft = (t - MOVE_OVERHEAD_MS) / DEFAULT_MOVES_TO_GO + 0.75 * inc
    assert b.soft == pytest.approx(soft / 1000) and b.hard == pytest.approx(3 * soft / 1000)
    # black reads its own clock; movestogo 1 may use up to 80% of the rest
    b = time_budget({"wtime": 1, "btime": 10_000, "movestogo": 1}, False)
    assert b.soft == pytest.approx(0.8 * (10_000 - MOVE_OVERHEAD_MS) / 1000) == b.hard
    # no clock for the side to move: no limit
    assert time_budget({"btime": 5000}, True).soft is None


def test_uci_clock_limits_the_search(tmp_path):
    eng = _Engine(tmp_path, "--no-treedump")
    try:
        eng.send("uci", "position startpos")
        eng.until("uciok")
        # 3 s on the clock, 30 moves to go: soft ~0.1 s, hard ~0.3 s.  Without the clock the
        # search would have no depth limit at all.
        start = time.monotonic()
        eng.send("go wtime 3000 btime 3000 winc 0 binc 0")
        best, infos = eng.until("bestmove", timeout=20)
        elapsed = time.monotonic() - start
        assert elapsed < 5.0, elapsed
        assert chess.Move.from_uci(best.split()[1]) in chess.Board().legal_moves
        assert any(line.startswith("info depth ") for line in infos)
        # movetime
        start = time.monotonic()
        eng.send("go movetime 300")
        eng.until("bestmove", timeout=20)
        assert time.monotonic() - start < 5.0
    finally:
        assert eng.close() == 0


def test_go_ponder_waits_for_ponderhit_or_stop(tmp_path):
    eng = _Engine(tmp_path, "--no-treedump")
    try:
        eng.send("uci", "position startpos moves e2e4", "go ponder depth 2")
        eng.until("uciok")
        # The depth-2 search ends at once, but while pondering no bestmove may be sent.
        eng.until("info depth 2")
        assert not [line for line in eng.quiet_for(1.0) if line.startswith("bestmove")]
        eng.send("ponderhit")
        best, _ = eng.until("bestmove", timeout=20)
        board = chess.Board()
        board.push_uci("e2e4")
        assert chess.Move.from_uci(best.split()[1]) in board.legal_moves
        # stop while pondering (no depth limit): the bestmove comes at once
        eng.send("go ponder wtime 100000 btime 100000")
        assert not [line for line in eng.quiet_for(0.5) if line.startswith("bestmove")]
        eng.send("stop")
        eng.until("bestmove", timeout=10)
        # ponderhit turns it into a timed search, whose clock starts at the ponderhit
        eng.send("go ponder wtime 3000 btime 3000")
        eng.quiet_for(0.5)
        start = time.monotonic()
        eng.send("ponderhit")
        eng.until("bestmove", timeout=20)
        assert time.monotonic() - start < 5.0
        eng.send("isready")
        eng.until("readyok")
    finally:
        assert eng.close() == 0


def test_a_crashed_search_thread_ends_the_engine_at_once(tmp_path):
    for args in (["uci"], ["xboard"]):
        eng = _Engine(tmp_path, "--no-treedump", env=_env(TYPHOON_PY_FAULT="search"))
        start = time.monotonic()
        if args == ["uci"]:
            eng.send("uci", "position startpos", "go depth 4")
        else:
            eng.send("xboard", "protover 2", "new", "force", "sd 4", "go")
        # stdin stays open: the engine must not wait for more input
        rc = eng.proc.wait(timeout=20)
        assert rc == 3 and time.monotonic() - start < 20
        assert eng.proc.stderr is not None
        err = eng.proc.stderr.read()
        assert "typhoon_py: the search thread crashed: RuntimeError: injected fault" in err
        assert "Traceback" not in err
        eng.close()


# ---------------------------------------------------------------- the command line
def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(ENGINE + args, cwd=cwd, capture_output=True, text=True, timeout=60, env=_env(**env),
                          stdin=subprocess.DEVNULL)


def test_group_profile_option_is_honoured_by_every_subcommand(tmp_path):
    res = _cli(["--profile", "stockfish", "search", "--depth", "2", "--treedump", "g.log"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "g.log").read_text().startswith("TREEDUMP engine=stockfish v=1 unit=1 ")
    epd = tmp_path / "one.epd"
    epd.write_text('8/5pk1/6p1/8/3R4/6P1/5PKP/3r4 w - - id "re";\n')
    res = _cli(["--profile", "crafty", "--treedump", "b.log", "batch", "--epd", str(epd), "--depth", "2"],
               tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "b.log").read_text().startswith("TREEDUMP engine=crafty v=1 unit=1 id=re ")
    # the same value twice is fine; two different values are refused, naming the option
    assert _cli(["--profile", "crafty", "search", "--profile", "crafty", "--depth", "1", "--no-treedump"],
                tmp_path).returncode == 0
    res = _cli(["--profile", "stockfish", "search", "--profile", "crafty", "--depth", "1"], tmp_path)
    assert res.returncode == 2 and "--profile" in res.stderr and "Traceback" not in res.stderr
    # protocol mode: `typhoon-py --profile stockfish uci`
    proc = subprocess.run(ENGINE + ["--profile", "stockfish", "uci"], input="uci\nquit\n", cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0 and "id name typhoon_py (stockfish)" in proc.stdout


def test_treedump_dash_writes_the_trace_to_stdout(tmp_path):
    res = _cli(["search", "--profile", "stockfish", "--depth", "3", "--treedump", "-"], tmp_path)
    assert res.returncode == 0, res.stderr
    (search,) = read_trace(res.stdout)
    assert search.header["engine"] == "stockfish"
    # the result line goes to stderr, and it agrees with the trace's END
    (end,) = search.tagged("END")
    assert res.stderr.startswith("bestmove ") and f"nodes {end['nodes']} " in res.stderr
    assert not list(tmp_path.iterdir())  # no trace file anywhere
    # $TREEDUMP=- too; protocol mode refuses it (stdout carries the protocol)
    res = _cli(["search", "--depth", "1"], tmp_path, TREEDUMP="-")
    assert res.returncode == 0 and res.stdout.startswith("TREEDUMP engine=typhoon ")
    res = _cli(["--treedump", "-", "uci"], tmp_path)
    assert res.returncode == 2 and "protocol" in res.stderr and "Traceback" not in res.stderr
    proc = subprocess.run(ENGINE + ["--no-treedump"], input="uci\nsetoption name TreeDump value -\nquit\n",
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0 and "info string TreeDump - (standard output) does not work" in proc.stdout
    assert not (tmp_path / "-").exists()


def test_version(tmp_path):
    res = _cli(["--version"], tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("typhoon-py ")
    from importlib.metadata import version

    assert version("treediff") in res.stdout

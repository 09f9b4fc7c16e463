"""typhoon_py over real pipes: UCI and xboard, including the xboard ponder contamination trap."""
from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import read_trace

TACTICAL = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"
ENGINE = [sys.executable, "-m", "typhoon_py"]


def _run(commands: list[str], cwd: Path, *args: str) -> list[str]:
    """Feed ``commands`` then end of input; return stdout lines.  The process is always reaped."""
    proc = subprocess.run(ENGINE + list(args), input="".join(c + "\n" for c in commands), cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_uci_answers_and_finishes_the_search_at_end_of_input(tmp_path):
    out = _run(["uci", "isready", "setoption name TreeDump value uci.log", "setoption name Profile value stockfish",
                "position startpos moves e2e4 e7e5", "go depth 3"], tmp_path)
    assert "uciok" in out and "readyok" in out
    assert any(line.startswith("option name TreeDump type string") for line in out)
    best = [line for line in out if line.startswith("bestmove ")]
    assert len(best) == 1
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(best[0].split()[1]) in board.legal_moves
    assert not (tmp_path / "treedump.log").exists()
    (search,) = read_trace((tmp_path / "uci.log").read_text())
    assert search.header["engine"] == "stockfish" and search.header["fen"] == board.fen()
    assert search.header["ctx"] is None and all(g.get("ctx") is None for _, g in search.lines)
    assert len(search.tagged("RESULT")) == int(search.tagged("END")[0]["nodes"])
    info = [line for line in out if line.startswith("info depth ")]
    assert [int(line.split()[2]) for line in info] == [1, 2, 3]


def test_uci_go_nodes_and_default_trace_file(tmp_path):
    out = _run(["uci", "position fen " + TACTICAL, "go nodes 300", "quit"], tmp_path)
    best = [line for line in out if line.startswith("bestmove ")]
    assert len(best) == 1
    assert chess.Move.from_uci(best[0].split()[1]) in chess.Board(TACTICAL).legal_moves
    (search,) = read_trace((tmp_path / "treedump.log").read_text())
    assert len(search.tagged("RESULT")) == int(search.tagged("END")[0]["nodes"])


class _Pipe:
    """An interactive engine process with a line queue on its stdout."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(ENGINE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=cwd)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 30.0) -> tuple[str, list[str]]:
        seen = []
        while True:
            line = self.lines.get(timeout=timeout)
            assert line is not None, f"engine exited before {prefix!r}; saw {seen}"
            seen.append(line)
            if line.startswith(prefix):
                return line, seen

    def close(self) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def test_uci_isready_and_stop_during_an_infinite_search(tmp_path):
    eng = _Pipe(tmp_path)
    try:
        eng.send("uci")
        eng.expect("uciok")
        eng.send("position startpos")
        eng.send("go infinite")
        eng.send("isready")
        _, seen = eng.expect("readyok")
        assert not any(line.startswith("bestmove") for line in seen)
        eng.send("stop")
        line, _ = eng.expect("bestmove ")
        assert chess.Move.from_uci(line.split()[1]) in chess.Board().legal_moves
        eng.send("quit")
    finally:
        assert eng.close() == 0


def _xboard_trace(tmp_path: Path, extra: list[str], after_go: list[str] = ()) -> tuple[list[str], list]:
    cmds = ["xboard", "protover 2", *extra, "sd 3", "setboard " + TACTICAL, "go", *after_go]
    out = _run(cmds, tmp_path, "--profile", "typhoon")
    return out, read_trace((tmp_path / "treedump.log").read_text())


def _contexts(search) -> set:
    return {g.get("ctx") for _, g in search.lines}


def test_xboard_ponders_into_the_same_trace_by_default(tmp_path):
    out, searches = _xboard_trace(tmp_path, [])
    assert any(line.startswith("feature ") and "done=1" in line for line in out)
    move = [line for line in out if line.startswith("move ")]
    assert len(move) == 1 and chess.Move.from_uci(move[0].split()[1]) in chess.Board(TACTICAL).legal_moves
    (search,) = searches  # the ponder search writes no header: it lands inside the main search
    assert search.header["ctx"] == "main"
    assert _contexts(search) == {"main", "ponder"}
    main_results = search.tagged("RESULT", "main")
    ponder_results = search.tagged("RESULT", "ponder")
    assert ponder_results and len(main_results) == int(search.tagged("END", "main")[0]["nodes"])
    first_ponder = next(i for i, (_, g) in enumerate(search.lines) if g.get("ctx") == "ponder")
    assert search.lines[first_ponder - 1][0] == "END"  # after the main search's END


@pytest.mark.parametrize("setting", [["easy"], ["ponder off"]])
def test_xboard_easy_or_ponder_off_keeps_the_trace_clean(tmp_path, setting):
    out, searches = _xboard_trace(tmp_path, setting)
    assert any(line.startswith("move ") for line in out)
    (search,) = searches
    assert _contexts(search) == {"main"}


def test_xboard_hard_turns_pondering_back_on(tmp_path):
    _, searches = _xboard_trace(tmp_path, ["easy", "hard"])
    assert _contexts(searches[0]) == {"main", "ponder"}


def test_xboard_next_command_ends_pondering(tmp_path):
    out, searches = _xboard_trace(tmp_path, [], after_go=["ping 7"])
    assert out.index("pong 7") > next(i for i, line in enumerate(out) if line.startswith("move "))
    assert "ponder" not in _contexts(searches[0])


def test_xboard_plays_a_game_move(tmp_path):
    out = _run(["xboard", "protover 2", "easy", "new", "sd 2", "e2e4", "quit"], tmp_path)
    move = [line for line in out if line.startswith("move ")]
    board = chess.Board()
    board.push_uci("e2e4")
    assert len(move) == 1 and chess.Move.from_uci(move[0].split()[1]) in board.legal_moves


parse_core = pytest.importorskip("treediff.parse.core")


def test_parser_sees_the_ponder_contamination(tmp_path):
    _xboard_trace(tmp_path, [])
    dirty = parse_core.parse_logs([tmp_path / "treedump.log"])
    assert any("context" in w for w in dirty.warnings)
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    _xboard_trace(clean_dir, ["easy"])
    clean = parse_core.parse_logs([clean_dir / "treedump.log"])
    assert not clean.warnings
    # With contamination filtered, the kept node count is the main search's own END count.
    dirty_row = {n: dirty.searches.column(n).to_pylist()[0] for n in ("result_nodes", "end_nodes")}
    clean_row = {n: clean.searches.column(n).to_pylist()[0] for n in ("result_nodes", "end_nodes")}
    assert dirty_row == clean_row and clean_row["result_nodes"] == clean_row["end_nodes"] > 0


def test_uci_end_of_input_stops_an_infinite_search(tmp_path):
    out = _run(["uci", "position startpos", "go infinite"], tmp_path)
    assert sum(line.startswith("bestmove ") for line in out) == 1


def test_xboard_quit_ends_everything_without_a_ponder_context(tmp_path):
    out, searches = _xboard_trace(tmp_path, [], after_go=["quit"])
    assert any(line.startswith("move ") for line in out)
    assert "ponder" not in _contexts(searches[0])

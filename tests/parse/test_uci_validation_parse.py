"""UCI paths validated by the parser by default: illegal moves flagged ``unresolved-move`` with their lines.

The expected flags are computed here, independently of treediff: each line's path is replayed with
python-chess (``Board.is_legal``) from its header's ``fen=``.  The compiled checker and the python-chess
fallback (``TREEDIFF_MOVE_CHECK=python``, which validates under ``--strict`` only) flag the same records.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import chess
import pytest

from treediff.model.errors import InputError
from treediff.parse import chunks, pipeline
from treediff.parse.core import parse_logs
from treediff.parse.paths import MOVE_CHECK_ENV, PathNormalizer, compiled_checker_available
from support.illegal_uci import ILLEGAL_UCI_BODY, ILLEGAL_UCI_LINES

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
START = chess.STARTING_FEN

needs_compiled = pytest.mark.skipif(not compiled_checker_available(), reason="the compiled _cmoves is not built")


def _write(tmp_path: Path, text: str, name: str = "t.log") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _header(engine: str = "stockfish", fen: str = START, ident: str = "s") -> str:
    unit = 64 if engine == "typhoon" else 1
    return f"TREEDUMP engine={engine} v=1 unit={unit} id={ident} fen={fen}\n"


FOUR = _header() + ILLEGAL_UCI_BODY
FOUR_LINES = ILLEGAL_UCI_LINES


def _flagged_lines(result) -> list[int]:
    records = result.records.to_pydict()
    return [line for line, problem in zip(records["line"], records["problem"]) if problem == "unresolved-move"]


@needs_compiled
def test_the_four_examples_are_flagged_by_default(tmp_path):
    result = parse_logs([_write(tmp_path, FOUR)])
    assert _flagged_lines(result) == FOUR_LINES
    assert any("5 lines with a move that does not resolve in its position (line 4, 5, 6, 7, 9)" in w
               for w in result.warnings), result.warnings
    with pytest.raises(InputError, match=r"--strict: .*5 lines with a move that does not resolve"):
        parse_logs([_write(tmp_path, FOUR)], strict=True)


def test_the_fallback_checks_under_strict_only(tmp_path, monkeypatch):
    monkeypatch.setenv(MOVE_CHECK_ENV, "python")
    assert not compiled_checker_available()
    log = _write(tmp_path, FOUR)
    assert _flagged_lines(parse_logs([log])) == []  # the default stays fast without the compiled checker
    with pytest.raises(InputError, match=r"5 lines with a move that does not resolve in its position "
                                         r"\(line 4, 5, 6, 7, 9\)"):
        parse_logs([log], strict=True)


@needs_compiled
def test_coordinate_paths_are_validated_too(tmp_path):
    """typhoon writes nulls as (null) and promotions in capitals: its paths are made UCI, then checked."""
    fen = "4k3/P7/8/8/8/8/8/4K3 w - - 0 1"
    log = _write(tmp_path, _header("typhoon", fen) + "ITER d=1\n"
                 "MOVE path=a7a8Q ply=1 mn=1 d=64 nd=0 act=FULL\n"              # 3 legal
                 "MOVE path=a7a8Q/(null) ply=2 mn=0 d=64 nd=0 act=NMP\n"        # 4 legal
                 "MOVE path=a7a8Q/(null)/a8a1 ply=3 mn=1 d=64 nd=0 act=FULL\n"  # 5 legal: the queen slides
                 "MOVE path=a7a8Q/(null)/a8b6 ply=3 mn=2 d=64 nd=0 act=FULL\n"  # 6 illegal: not a queen's line
                 "MOVE path=a7a8K ply=1 mn=2 d=64 nd=0 act=FULL\n"              # 7 not UCI: resolved as SAN, fails
                 "MOVE path=a7a6 ply=1 mn=3 d=64 nd=0 act=FULL\n"               # 8 illegal: pawns go forward
                 "MOVE path=(null)/e8d8 ply=2 mn=0 d=64 nd=0 act=NMP\n"         # 9 legal
                 "RESULT path=- ply=0 d=64 score=0\nEND nodes=1\n")
    assert _flagged_lines(parse_logs([log])) == [6, 7, 8]


@needs_compiled
def test_a_search_without_fen_is_not_checked(tmp_path):
    log = _write(tmp_path, "TREEDUMP engine=stockfish v=1 unit=1 id=nofen\nITER d=1\n"
                 "MOVE path=e2e5 ply=1 mn=1 d=1 nd=0 act=FULL\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n"
                 + FOUR)
    result = parse_logs([log])
    assert _flagged_lines(result) == [i + 5 for i in FOUR_LINES]  # only the second search, which has a fen
    assert any("header has no fen=" in w for w in result.warnings)


# -- the traces with moves made illegal -----------------------------------------------------------------------

def _normalized(path: str) -> list[str]:
    """A trace path's moves in UCI (the test's own reading: lower case, (null) -> 0000)."""
    if path == "-":
        return []
    return ["0000" if m in ("(null)", "null", "--", "0000") else m.lower() for m in path.split("/")]


def _expected_illegal(text: str) -> list[int]:
    """Lines whose path has a move python-chess calls illegal, replayed from the header's fen."""
    out = []
    fen = None
    known: dict[tuple[str, ...], bool] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("TREEDUMP "):
            fen = re.search(r"fen=(.*)$", line).group(1)  # type: ignore[union-attr]
            known = {}
            continue
        m = re.match(r"(?:MOVE|RESULT) path=(\S+)", line)
        if not m:
            continue
        moves = tuple(_normalized(m.group(1)))
        if moves not in known:
            board = chess.Board(fen)
            legal = True
            for uci in moves:
                try:
                    move = chess.Move.null() if uci == "0000" else chess.Move.from_uci(uci)
                except chess.InvalidMoveError:  # e.g. a1a1: no move at all
                    legal = False
                    break
                if move and not board.is_legal(move):
                    legal = False
                    break
                board.push(move)
            known[moves] = legal
        if not known[moves]:
            out.append(number)
    return out


def _corrupted(text: str, seed: int, share: float = 0.03) -> str:
    """``text`` with a move of some paths replaced by a random UCI move (ply= still the path's length)."""
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = re.match(r"(MOVE|RESULT) path=(\S+)( .*)?$", line, flags=re.S)
        if not m or m.group(2) == "-" or rng.random() > share:
            continue
        moves = m.group(2).split("/")
        at = rng.randrange(len(moves))
        moves[at] = "".join((rng.choice("abcdefgh"), rng.choice("12345678"), rng.choice("abcdefgh"),
                             rng.choice("12345678")))
        lines[i] = f"{m.group(1)} path={'/'.join(moves)}{m.group(3) or ''}"
    return "".join(lines)


@pytest.mark.parametrize("name", ["stockfish_batch3", "typhoon_batch3", "stockfish_tactical-f6f7"])
@pytest.mark.parametrize("chunk_bytes", [None, 2000])
def test_corrupted_traces_flag_exactly_the_illegal_lines(tmp_path, monkeypatch, name, chunk_bytes):
    if chunk_bytes:
        monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)  # searches across many chunks
    text = _corrupted((TRACES / f"{name}.log").read_text(), seed=len(name))
    expected = _expected_illegal(text)
    assert len(expected) > 10
    log = _write(tmp_path, text)
    if compiled_checker_available():
        assert _flagged_lines(parse_logs([log])) == expected
    # The fallback: python-chess on the parser's resolvers (what --strict runs without the compiled checker).
    monkeypatch.setenv(MOVE_CHECK_ENV, "python")
    monkeypatch.setattr(pipeline, "PathNormalizer", lambda check_uci=False: PathNormalizer(check_uci=True))
    assert _flagged_lines(parse_logs([log])) == expected


def test_the_traces_as_written_are_legal():
    """typhoon_py's traces hold legal moves only: nothing is flagged (UCI and coordinate dialects)."""
    traces = sorted(TRACES.glob("stockfish_*.log")) + sorted(TRACES.glob("typhoon_*.log"))
    result = parse_logs(traces)
    assert _flagged_lines(result) == [] and not [w for w in result.warnings if "does not resolve" in w]
    for trace in traces:
        assert _expected_illegal(trace.read_text()) == []


def test_version_says_who_checks_uci_moves():
    import os
    import subprocess
    import sys

    def version(**env: str) -> str:
        return subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", "--version"],
                              capture_output=True, text=True, timeout=60, check=True,
                              env={**os.environ, **env}).stdout

    out = version()
    assert ("UCI moves checked by: compiled _cmoves, every parse" in out) == compiled_checker_available(), out
    assert "UCI moves checked by: python-chess under --strict only" in version(**{MOVE_CHECK_ENV: "python"})


@needs_compiled
@pytest.mark.parametrize("slow_check", [False, True], ids=["as-is", "check-thread-late"])
def test_checks_off_the_main_thread_are_counted_as_if_at_once(tmp_path, monkeypatch, slow_check):
    """The compiled checker runs on a thread of its own (parse/paths.py: ``_check_segments``) while the parser
    goes on with later chunks; its answers must still be counted in chunk order and before any reason the
    log shows later for the first time: the warnings' order is the order reasons first appear, and a
    search's first lines kept are its first ones.  A non-numeric ``mn=`` is put at lines around the first
    illegal move's (in its chunk, the next one, later ones); each log's warnings must be those of counting
    each chunk's answers at once (``_flag_illegal`` then ``_count_checks`` at once, as before the thread),
    also with the check thread made late (20 ms a chunk), and the flagged lines those python-chess finds."""
    from treediff.parse import paths

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 2000)  # searches across many chunks (~25 lines a chunk)
    text = _corrupted((TRACES / "stockfish_batch3.log").read_text(), seed=5)
    lines = text.splitlines(keepends=True)
    expected = _expected_illegal(text)
    assert expected[0] < 100 and len(expected) > 10

    real_flag = paths.PathNormalizer._flag_illegal

    def at_once(self, *args, **kwargs):
        future = real_flag(self, *args, **kwargs)
        self._count_checks()
        return future

    real_segments = paths._check_segments

    def late(*args, **kwargs):
        import time

        time.sleep(0.02)
        return real_segments(*args, **kwargs)

    checked = 0
    for at in range(max(expected[0] - 8, 2), expected[0] + 90, 9):  # (0-based: the line numbered at + 1)
        if not lines[at].startswith("MOVE ") or at + 1 in expected:
            continue
        log = _write(tmp_path, "".join(lines[:at] + [re.sub(r" mn=\d+", " mn=x", lines[at], count=1)]
                                        + lines[at + 1:]))
        with monkeypatch.context() as m:
            m.setattr(paths.PathNormalizer, "_flag_illegal", at_once)
            once = parse_logs([log])
        with monkeypatch.context() as m:
            if slow_check:
                m.setattr(paths, "_check_segments", late)
            threaded = parse_logs([log])
        assert _flagged_lines(threaded) == _flagged_lines(once) == expected
        assert threaded.warnings == once.warnings
        assert any(f"1 line with a non-numeric mn= (line {at + 1})" in w for w in once.warnings)
        checked += 1
    assert checked >= 6

"""A header position with two kings of one colour: the compiled checker does not model python-chess's
reading of it (castling with one king only, the other king's moves), so the parser checks such a search's
moves with python-chess, and flags what python-chess flags."""
from __future__ import annotations

from pathlib import Path

import chess
import pytest

from treediff.parse.core import parse_logs
from treediff.parse.paths import compiled_checker_available, fen_checker_args, several_kings

#: White kings on b1 and e1 with the h1 rook and the K right: python-chess castles the b1 king, not e1's.
FEN = "4k3/8/8/8/8/8/8/1K2K2R w K - 0 1"
MOVES = ["e1g1", "e1h1", "b1a1", "e1f1", "b1c2", "h1g1"]


def _log(tmp_path: Path) -> Path:
    lines = [f"TREEDUMP engine=stockfish v=1 unit=1 id=kings fen={FEN}", "ITER d=1"]
    lines += [f"MOVE path={m} ply=1 mn={i} d=1 nd=0 act=FULL" for i, m in enumerate(MOVES, start=1)]
    lines += [f"RESULT path={m} ply=1 d=0 score=0" for m in MOVES]
    lines += ["RESULT path=- ply=0 d=1 score=0", f"END nodes={len(MOVES) + 1}"]
    path = tmp_path / "kings.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _expected_lines() -> list[int]:
    """The log's lines python-chess calls illegal (the oracle): MOVE lines 3.., RESULT lines after them."""
    board = chess.Board(FEN)
    illegal = {m for m in MOVES if not board.is_legal(chess.Move.from_uci(m))}
    first_result = 3 + len(MOVES)
    return sorted([3 + i for i, m in enumerate(MOVES) if m in illegal]
                  + [first_result + i for i, m in enumerate(MOVES) if m in illegal])


def test_the_case_is_one_where_the_compiled_checker_disagrees():
    """Without the routing the compiled checker would answer otherwise (what makes the test below bite)."""
    args = fen_checker_args(FEN)
    assert args is not None and several_kings(args[0])
    if not compiled_checker_available():
        pytest.skip("the compiled _cmoves is not built")
    from treediff.parse._cmoves import Checker

    checker = Checker(*args)
    board = chess.Board(FEN)
    assert any((checker.check_one(m) == 0) != board.is_legal(chess.Move.from_uci(m)) for m in MOVES)


def test_two_kings_are_checked_as_python_chess_checks(tmp_path):
    expected = _expected_lines()
    assert expected, "python-chess flags some of the moves"
    result = parse_logs([_log(tmp_path)], strict=False)
    records = result.records.to_pydict()
    flagged = sorted(line for line, problem in zip(records["line"], records["problem"]) if problem == "unresolved-move")
    if compiled_checker_available():
        assert flagged == expected
    with pytest.raises(Exception, match="does not resolve"):
        parse_logs([_log(tmp_path)], strict=True)


def test_one_king_a_side_is_not_routed():
    assert not several_kings(fen_checker_args(chess.STARTING_FEN)[0])  # type: ignore[index]
    assert not several_kings(fen_checker_args("4k3/8/8/8/8/8/8/R3R3 w - - 0 1")[0])  # type: ignore[index]

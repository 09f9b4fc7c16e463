"""python-chess internals (``Board._slider_blockers``, ``Board._is_safe``) and their public-API fallback.

treediff/parse/moves.py uses the private helpers when python-chess has them (chess<2 pins the major
version, not the private API); these tests force the fallback and check it gives the same answers,
and both agree with python-chess's own ``board.is_legal`` / ``board.parse_san``.
"""
from __future__ import annotations

import random
from pathlib import Path

import chess
import pytest

from treediff.parse import moves

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _positions(n: int = 60, seed: int = 7) -> list[chess.Board]:
    """Positions from random legal games: pins, checks, en passant and castling rights all occur."""
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        board = chess.Board()
        for _ in range(rng.randrange(4, 60)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        found.append(board.copy(stack=False))
    found.append(chess.Board("4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1"))       # d2 pinned on the diagonal
    found.append(chess.Board("4k3/8/8/8/1b6/2N5/8/4K1N1 w - - 0 1"))    # Ne2: only g1's knight, c3's is pinned
    found.append(chess.Board("4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 1"))       # en passant would expose the king
    return found


def test_detection_sees_missing_internals():
    assert moves.chess_internals_usable(chess.Board) is moves.CHESS_INTERNALS

    class Renamed:  # a python-chess that renamed its private helpers
        def is_legal(self, move):
            return True

    assert moves.chess_internals_usable(Renamed) is False


def _legality_table() -> list[list[bool]]:
    table = []
    for board in _positions():
        legality = moves._Legality(board)
        table.append([legality(move) for move in board.pseudo_legal_moves])
    return table


def test_fallback_legality_is_identical_and_matches_python_chess(monkeypatch):
    expected = [[board.is_legal(m) for m in board.pseudo_legal_moves] for board in _positions()]
    with_internals = _legality_table()
    monkeypatch.setattr(moves, "CHESS_INTERNALS", False)
    without = _legality_table()
    assert with_internals == expected
    assert without == expected


def _every_san(board: chess.Board) -> tuple[list[str], list[str]]:
    """Every legal move of ``board`` in python-chess's SAN (disambiguated with pins in mind) and UCI."""
    legal = list(board.legal_moves)
    return [board.san(m) for m in legal], [m.uci() for m in legal]


def test_fallback_reads_every_san_move_as_python_chess_writes_it(monkeypatch):
    cases = [(board, *_every_san(board)) for board in _positions()]
    for internals in (True, False):
        monkeypatch.setattr(moves, "CHESS_INTERNALS", internals)
        for board, sans, ucis in cases:
            assert moves.resolve_paths(board.fen(), sans) == ucis, (internals, board.fen())


def _san_paths(log: Path) -> tuple[str, list[str]]:
    lines = log.read_text().splitlines()
    fen = lines[0].split(" fen=", 1)[1]
    paths = [line.split(" path=", 1)[1].split(" ", 1)[0] for line in lines if " path=" in line]
    return fen, [p for p in paths if p != "-"]


@pytest.mark.parametrize("log", ["crafty_tactical-f6f7.log", "crafty_start.log"])
def test_fallback_resolves_san_paths_identically(monkeypatch, log):
    fen, paths = _san_paths(TRACES / log)
    fast = moves.resolve_paths(fen, paths)
    monkeypatch.setattr(moves, "CHESS_INTERNALS", False)
    slow = moves.resolve_paths(fen, paths)
    assert slow == fast
    assert sum(p is not None for p in fast) == len(paths)  # every SAN move of the fixture resolves
    # python-chess's own SAN reading of a sample of the paths agrees.
    for path, uci in list(zip(paths, fast))[:: max(1, len(paths) // 200)]:
        board = chess.Board(fen)
        expected = []
        for token in path.split("/"):
            move = chess.Move.null() if token in ("--", "0000", "null") else board.parse_san(token)
            expected.append(move.uci())
            board.push(move)
        assert uci == "/".join(expected), path

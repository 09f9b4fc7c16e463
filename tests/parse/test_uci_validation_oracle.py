"""The compiled UCI legality checker (treediff/parse/_cmoves.c) against python-chess's ``Board.is_legal``.

python-chess is the oracle: every move of every square pair in hand-picked positions (castling through
and out of check, en passant pinned along a rank, promotions, pins, no king), then hypothesis games
that favour castling, en passant, promotions, captures, checks and null moves, with random UCI strings
tried at every position.  The python-chess fallback (:class:`~treediff.parse.moves.PathResolver`)
answers the same.  What the parser does with the answers is in tests/parse/test_uci_validation_parse.py.
"""
from __future__ import annotations

import random

import chess
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treediff.parse.moves import PathResolver

_cmoves = pytest.importorskip("treediff.parse._cmoves")

from treediff.parse.paths import ILLEGAL_REASONS, check_paths_compiled, compiled_checker  # noqa: E402

FENS = [
    chess.STARTING_FEN,
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",                                  # castling both ways
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "r3k2r/8/8/8/4r3/8/8/R3K2R w KQkq - 0 1",                                # in check: no castling
    "r3k2r/8/8/8/8/5r2/8/R3K2R w KQkq - 0 1",                                # f1 attacked: no O-O
    "1r2k2r/8/8/8/8/8/8/R3K2R w KQk - 0 1",                                  # b1 attacked: O-O-O still legal
    "r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1",                                    # one right each
    "r3k2r/8/8/8/8/8/8/RN2K1NR w KQkq - 0 1",                                # pieces in the way
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",         # en passant
    "8/8/8/K2pP2q/8/8/8/7k w - d6 0 1",                                      # en passant uncovers a rank
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",                             # perft position 3
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # kiwipete
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",      # perft position 4
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",             # perft position 5
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",                               # promotions, captures onto the last rank
    "4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1",                                     # check by a bishop
    "3r4/8/8/8/8/8/3R4/3K3k w - - 0 1",                                      # rook pinned on a file
    "4k3/8/8/8/8/8/8/R3R3 w - - 0 1",                                        # no white king
    "4k3/4r3/8/8/8/8/8/R3K2R w KQ - 0 1",                                    # in check on the e-file
    "4k3/8/8/2b5/8/8/8/R3K2R w KQ - 0 1",                                    # a bishop covers g1: no O-O
    "4k3/8/8/8/8/8/8/4K2R w K - 0 1",                                        # the right without the a-rook
    "r3k3/8/8/8/8/8/8/4K2R w KQq - 0 1",                                     # a right to a missing rook
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",                                     # black's en passant, pinned
    "8/8/8/4k3/2pP4/8/8/3K4 b - d3 0 1",                                     # en passant out of check
]

PROMOTIONS = (None, chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)


def _legal_by_compiled(board: chess.Board, path: list[str], move: str) -> bool:
    checker = compiled_checker(board)
    return checker.check_one("/".join([*path, move])) == 0


@pytest.mark.parametrize("fen", FENS)
def test_every_square_pair_agrees_with_python_chess(fen):
    board = chess.Board(fen)
    checker = compiled_checker(board)
    for from_sq in chess.SQUARES:
        for to_sq in chess.SQUARES:
            for promotion in PROMOTIONS:
                move = chess.Move(from_sq, to_sq, promotion=promotion)
                if not move:
                    continue  # a1a1 is spelled 0000, the null move (accepted, tested below)
                code = checker.check_one(move.uci())
                assert (code == 0) == board.is_legal(move), (fen, move.uci(), ILLEGAL_REASONS.get(code))
                assert code in range(len(ILLEGAL_REASONS) + 1)


def test_the_issues_four_examples_and_their_reasons():
    checker = compiled_checker(chess.Board())
    assert checker.check_one("e2e4") == 0
    assert ILLEGAL_REASONS[checker.check_one("e2e4/e2e4")] == "no piece of the side to move on the from-square"
    assert ILLEGAL_REASONS[checker.check_one("e2e5")] == "the piece does not move that way"
    assert ILLEGAL_REASONS[checker.check_one("e1g1")].startswith("castling without the right")
    assert ILLEGAL_REASONS[checker.check_one("a7a8q")] == "no piece of the side to move on the from-square"
    assert checker.check_one("-") == 0 and checker.check_one("") == 0
    # Below an illegal move, a path is illegal too; a null move is accepted, as the parser resolves it.
    assert checker.check_one("e2e4/e2e4/d2d4") != 0
    assert checker.check_one("e2e4/0000/d2d4") == 0
    assert checker.check_one("e2e4/e7e5/0000/0000/g1f3") == 0
    assert ILLEGAL_REASONS[checker.check_one("e2e4//e7e5")] == "not a UCI move"
    assert checker.check_one("d1d1") != 0 and checker.check_one("e1e1") != 0  # from = to is no move
    assert ILLEGAL_REASONS[checker.check_one("e2e4/f7f6/d1h5/e8f7")] == "leaves the mover's king in check"


ORDER_CASES = [
    (chess.STARTING_FEN,
     ["e2e4/e7e5/g1f3", "e2e4/e7e5/g1f3/b8c6", "e2e4/e7e5", "e2e4/e7e5/e1e2", "e2e4/e7e5/e1e2/e8e7",
      "d2d4", "e2e4/e7e5/g1f3/b8c6/f1c4/g8f6/e1g1", "e2e4/e7e5/g1f3/b8c6/f1c4/g8f6/e1h1",
      "e2e4/e7e5/g1f3/b8c6/e1g1", "e2e4/e2e4", "e2e4/e2e4/e7e5", "e2e4/e7e6", "-", "e2e4/0000/e2e4",
      "e2e4/0000", "e2e4/0000/d2d4"]),
    # Paths that share bytes but not moves: a move and the same squares with a promotion letter.
    ("8/P6k/8/8/8/8/8/K7 w - - 0 1",
     ["a7a8", "a7a8q", "a7a8q/h7g6", "a7a8/h7g6", "a7a8n", "a7a8n/h7g6", "a7a8q/h7h6/a8a1", "a7a8b/h7h6/a8a1",
      "a1b1", "a1b1/h7g7/a7a8r", "a1b1/h7g7/a7a8", "-"]),
]


@pytest.mark.parametrize("fen, paths", ORDER_CASES)
def test_a_checker_is_the_same_in_any_order(fen, paths):
    """The stack of the previous path's boards is only a shortcut: the answers do not depend on the order."""
    board = chess.Board(fen)

    def legal(path: str) -> bool:
        b = board.copy()
        for uci in ([] if path == "-" else path.split("/")):
            move = chess.Move.from_uci(uci)
            if move and not b.is_legal(move):
                return False
            b.push(move)
        return True

    expected = [legal(p) for p in paths]
    assert True in expected and False in expected
    for seed in range(30):
        order = list(range(len(paths))) * 2
        random.Random(seed).shuffle(order)
        checker = compiled_checker(board)
        for i in order:
            assert (checker.check_one(paths[i]) == 0) == expected[i], (paths[i], [paths[j] for j in order])


def test_the_buffer_interface_matches_one_by_one_and_skips():
    board = chess.Board()
    paths = pl.Series(["e2e4", "e2e4/e7e5/g1f3/b8c6/f1b5/a7a6", "e2e4/e2e4", "-", None, "e2e4/e7e5/g1f3/b8c6/f1b5/a7a6/b5c6",
                       "e2e4/e7e5/g1f3/b8c6/f1b5/a7a6/b5c6/b8c6", "e2e5"] * 50)
    one = compiled_checker(board)
    expected = [0 if p is None else one.check_one(p) for p in paths.to_list()]
    codes = check_paths_compiled(compiled_checker(board), paths)
    assert codes.tolist() == expected and sum(c != 0 for c in expected) == 150
    # A slice keeps its offset; skipped rows get 0.
    skip = np.zeros(len(paths) - 3, dtype=bool)
    skip[::2] = True
    codes = check_paths_compiled(compiled_checker(board), paths.slice(3), skip)
    assert codes.tolist() == [0 if s else e for e, s in zip(expected[3:], skip)]


def test_bad_arguments_are_errors_not_crashes():
    with pytest.raises(ValueError):
        _cmoves.Checker(b"\0" * 63, True, 0, -1)
    with pytest.raises(ValueError):
        _cmoves.Checker(b"\x09" * 64, True, 0, -1)
    with pytest.raises(ValueError):
        _cmoves.Checker(b"\0" * 64, True, 0, 64)
    checker = compiled_checker(chess.Board())
    views = np.zeros(16, dtype=np.uint8)
    views[0] = 40  # a 40-byte value in a buffer that does not hold it
    with pytest.raises(ValueError, match="outside its data buffer"):
        checker.check(views, (b"short",), np.zeros(1, dtype=np.uint8))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        checker.check(np.zeros(16, dtype=np.uint8), (), np.zeros(2, dtype=np.uint8))
    with pytest.raises(RuntimeError):
        _cmoves.Checker.__new__(_cmoves.Checker).check_one("e2e4")


# -- random games ------------------------------------------------------------------------------------------------

def _special(board: chess.Board, move: chess.Move) -> bool:
    return (board.is_castling(move) or board.is_en_passant(move) or move.promotion is not None
            or board.is_capture(move) or board.gives_check(move))


def _candidates(board: chess.Board, rng: random.Random) -> list[str]:
    """UCI strings to try in ``board``: its legal moves, their near misses, castling spellings, random strings."""
    legal = list(board.legal_moves)
    out = [m.uci() for m in rng.sample(legal, min(len(legal), 8))]
    for m in legal:
        if m.promotion:
            out += [m.uci()[:4], m.uci()[:4] + rng.choice("qrbn")]  # no promotion, another piece
    rank = "1" if board.turn == chess.WHITE else "8"
    out += [f"e{rank}{to}{rank}" for to in "gchab"]
    for _ in range(12):
        uci = "".join((rng.choice("abcdefgh"), rng.choice("12345678"), rng.choice("abcdefgh"), rng.choice("12345678")))
        out.append(uci + (rng.choice("qrbn") if rng.random() < 0.15 else ""))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fen=st.sampled_from(FENS), seed=st.integers(0, 2**32 - 1), plies=st.integers(1, 60))
def test_random_games_agree_with_python_chess(fen, seed, plies):
    rng = random.Random(seed)
    root = chess.Board(fen)
    board = root.copy()
    checker = compiled_checker(root)
    resolver = PathResolver(fen)
    path: list[str] = []
    for _ in range(plies):
        for uci in _candidates(board, rng):
            try:
                expected = board.is_legal(chess.Move.from_uci(uci))
            except chess.InvalidMoveError:  # from = to: not a move at all
                expected = False
            full = "/".join([*path, uci])
            code = checker.check_one(full)
            assert (code == 0) == expected, (fen, path, uci, ILLEGAL_REASONS.get(code))
            assert (resolver.resolve(full) is not None) == expected, (fen, path, uci)
        legal = list(board.legal_moves)
        if not legal:
            break
        special = [m for m in legal if _special(board, m)]
        if rng.random() < 0.08 and not board.is_check():
            move = chess.Move.null()
        elif special and rng.random() < 0.6:
            move = rng.choice(special)
        else:
            move = rng.choice(legal)
        path.append(move.uci())
        board.push(move)
        assert checker.check_one("/".join(path)) == 0
    # The whole game again, from a fresh checker, as one batch of paths through the buffer interface.
    prefixes = pl.Series(["-"] + ["/".join(path[:i]) for i in range(1, len(path) + 1)])
    assert not check_paths_compiled(compiled_checker(root), prefixes).any()


def test_coordinate_spellings_are_read_as_their_normalization_reads_them():
    """Coordinate dialects' paths go to the checker as written: promotions in any case, every null spelling."""
    from treediff.model.notation import NULL_SPELLINGS

    checker = compiled_checker(chess.Board("4k3/P7/8/8/8/8/8/4K3 w - - 0 1"))
    for spelling in sorted(NULL_SPELLINGS) + ["(NULL)", "NULL", "z0"]:
        assert checker.check_one(f"a7a8Q/{spelling}/a8a1") == 0, spelling
        assert checker.check_one(f"{spelling}/e8d8") == 0, spelling
    assert checker.check_one("A7A8q") == 0 and checker.check_one("a7a8K") != 0 and checker.check_one("nul") != 0
    assert checker.check_one("a7a8Q/(null)/a8b6") != 0 and checker.check_one("(nulll)") != 0


ODD_FENS = [
    "r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1",
    "r3k2r/8/8/8/8/8/8/1R2K1R1 w KQkq - 0 1",      # rights to rooks not on their corners
    "r3k2r/8/8/8/8/8/8/R4K1R w KQkq - 0 1",        # the king is not on e1
    "4k3/8/8/8/8/8/8/4K3 b - e3 0 1",              # an en-passant square nothing can take on
    "4k3/8/8/8/8/8/8/4K3 w HAha - 0 1",            # Shredder letters: python-chess reads them
    "4k3/8/8/8/8/8/8/4K3 w - -",                   # no move counters
    "4k3/8/8/8/8/8/8/4K3",                         # the placement only
    "4k3/8/8/8/8/8/8/4K3 w KQkq - 0",
    "4k3/8/8/8/8/8/8/4K2 w - - 0 1",               # a rank of 7 squares: refused
    "4k3/8/8/8/8/8/8/4K3p w - - 0 1",              # a rank of 9
    "4k3/8/8/8/8/8/8 w - - 0 1",                   # 7 ranks
    "4k3/8/8/8/8/8/8/44 w - - 0 1",                # two subsequent digits (8 squares): refused
    "4k3/8/8/8/8/8/8/4K12 w - - 0 1",              # the same after a piece
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".replace("/8/8/8/8/", "/8/8/26/8/"),
    "4k3/8/8/8/8/8/8/4K3 x - - 0 1",
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
]


@pytest.mark.parametrize("fen", FENS + ODD_FENS)
def test_the_fen_reader_gives_what_python_chess_reads(fen):
    from treediff.parse.paths import board_checker_args, fen_checker_args

    try:
        expected = board_checker_args(chess.Board(fen))
    except ValueError:
        expected = None
    assert fen_checker_args(fen) == expected


@settings(max_examples=60, deadline=None)
@given(fen=st.sampled_from(FENS), seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 40))
def test_the_fen_reader_on_random_positions(fen, seed, plies):
    from treediff.parse.paths import board_checker_args, fen_checker_args

    rng = random.Random(seed)
    board = chess.Board(fen)
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        board.push(rng.choice(legal))
    # board.fen() writes an en-passant square only when a capture is legal; the raw one is tried too.
    for text in {board.fen(), board.fen(en_passant="fen")}:
        assert fen_checker_args(text) == board_checker_args(chess.Board(text)), text

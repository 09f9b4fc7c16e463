"""typhoon_py plays sensible, legal, deterministic chess in every profile."""
from __future__ import annotations

import io
import random

import chess
import pytest

from support.typhoon_trace_tools import move_forces_mate_after, read_trace
from typhoon_py import make_config, read_epd, run_search
from typhoon_py.evaluation import blend, full_evaluation
from typhoon_py.search import MATE_BOUND, Searcher

from pathlib import Path

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
PROFILES = ("typhoon", "stockfish", "crafty")

MATE_IN_1 = [
    ("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "h5f7"),  # scholar's mate
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", "d1d8"),  # back rank
    ("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4"),  # fool's mate
]
MATE_IN_2 = [
    "2r3k1/5ppp/8/8/8/8/3R1PPP/3R2K1 w - - 0 1",  # Rd8+ Rxd8 Rxd8#
    "5r1k/6pp/7N/3Q4/8/8/8/6K1 w - - 0 1",  # Qg8+ Rxg8 Nf7# (smothered)
]
WIN_MATERIAL = [
    ("r3k3/8/8/1N6/8/8/8/4K3 w - - 0 1", "b5c7", 200),  # fork: from N vs R (-180) to N vs nothing
    ("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", "d2d5", 400),  # from R vs Q to R vs nothing
    ("4k3/8/8/8/3n4/8/2Q5/4K3 b - - 0 1", "d4c2", 250),  # from N vs Q to N vs nothing
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("policy", ["profile", "see-history"])
@pytest.mark.parametrize("fen,answer", MATE_IN_1)
def test_mate_in_one(profile, policy, fen, answer):
    outcome = run_search(chess.Board(fen), 3, make_config(profile, policy))
    assert outcome.best_move.uci() == answer
    assert outcome.score > MATE_BOUND


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("fen", MATE_IN_2)
def test_mate_in_two(profile, fen):
    board = chess.Board(fen)
    outcome = run_search(board, 4, make_config(profile))
    board.push(outcome.best_move)
    assert move_forces_mate_after(board, 2), f"{outcome.best_move} does not force mate in 2"
    assert outcome.score > MATE_BOUND


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("fen,answer,gain", WIN_MATERIAL)
def test_wins_material(profile, fen, answer, gain):
    outcome = run_search(chess.Board(fen), 4, make_config(profile))
    assert outcome.best_move.uci() == answer
    assert outcome.score >= gain


@pytest.mark.parametrize("profile", PROFILES)
def test_only_legal_moves_on_all_fixture_positions(profile):
    for pos in read_epd(EPD):
        for cfg in (make_config(profile), make_config(profile, "see-history", "node")):
            outcome = run_search(pos.board, 2, cfg)
            assert outcome.best_move in pos.board.legal_moves, pos.id


def test_no_move_positions():
    mated = chess.Board("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3")
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    buf = io.StringIO()
    assert run_search(mated, 2, make_config(), buf).best_move is None
    (search,) = read_trace(buf.getvalue())
    (end,) = search.tagged("END")
    assert end["best"] is None and int(end["score"]) < -MATE_BOUND
    assert run_search(stalemate, 2, make_config()).score == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_deterministic_trace(profile):
    board = chess.Board("2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1")
    texts = []
    for _ in range(2):
        buf = io.StringIO()
        run_search(board, 3, make_config(profile), buf, "tactical-f6f7", "middlegame")
        texts.append(buf.getvalue())
    assert texts[0] == texts[1] and len(texts[0]) > 1000


@pytest.mark.parametrize("fen,uci,expected", [
    ("4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 1", "e4d5", 100),      # free pawn
    ("4k3/8/2p5/3p4/4P3/8/8/4K3 w - - 0 1", "e4d5", 0),      # pawn for pawn
    ("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1", "d1d5", -850),    # queen for pawn
    ("4k3/8/2p5/3n4/8/8/3R4/3RK3 w - - 0 1", "d2d5", -80),   # R for N+P: 320 - 500 + 100
    ("4k3/8/8/8/2p5/8/8/2N1K3 w - - 0 1", "c1d3", -320),     # knight onto a pawn-guarded square
    ("4k3/8/8/8/2p5/8/8/2N1K3 w - - 0 1", "c1e2", 0),        # safe quiet move
])
def test_see_by_hand(fen, uci, expected):
    searcher = Searcher(chess.Board(fen), make_config())
    assert searcher.see(chess.Move.from_uci(uci)) == expected


@pytest.mark.parametrize("fen", [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # castling both ways
    "8/2P5/8/3pP3/8/8/5p2/4K2k w - d6 0 1",  # en passant and promotions
])
def test_incremental_eval_matches_full_evaluation(fen):
    rng = random.Random(7)
    for _ in range(20):
        searcher = Searcher(chess.Board(fen), make_config())
        for _ in range(40):
            moves = list(searcher.board.legal_moves)
            if not moves:
                break
            searcher.make(rng.choice(moves))
            mg, eg, ph, mat = full_evaluation(searcher.board)
            assert (searcher.mg, searcher.eg, searcher.ph, searcher.mat) == (mg, eg, ph, mat)
            # _eval inlines blend: the side to move's view of the same tapered score
            assert searcher._eval() == (blend(mg, eg, ph) if searcher.board.turn else -blend(mg, eg, ph))
        while searcher.board.move_stack:
            searcher.unmake()
        assert (searcher.mg, searcher.eg, searcher.ph, searcher.mat) == full_evaluation(chess.Board(fen))


def test_repetition_is_a_draw():
    # After these moves, black's h8g8... g8h8 would recreate a position seen twice before.
    board = chess.Board("7k/8/8/8/8/8/8/K7 w - - 0 1")
    for uci in ("a1b1", "h8g8", "b1a1", "g8h8", "a1b1", "h8g8", "b1a1"):
        board.push_uci(uci)
    buf = io.StringIO()
    run_search(board, 3, make_config("stockfish"), buf)
    repeats = [line for line in buf.getvalue().splitlines() if line.startswith("RESULT path=g8h8 ")]
    assert repeats and all(" score=0 " in line for line in repeats)

"""The compiled legal-move counter (``Checker.legal_counts`` / ``count_one`` in treediff/parse/_cmoves.c).

Three independent checks: the published perft numbers (leaf counts of the full move tree, summed from the
counts one ply above the leaves), positions whose legal moves are counted by hand below, and python-chess's
``Board.legal_moves.count()`` at every node of seeded random walks (null moves included) from positions
with en passant (pinned along a rank, out of check), pins, checks, double checks, promotions, castling
through and into check, stalemate and mate, and at every node of every fixture trace.  Unreadable and
illegal paths count -1.
"""
from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from treediff.parse.source import open_source

_cmoves = pytest.importorskip("treediff.parse._cmoves")

from treediff.parse.paths import compiled_checker, legal_counts_compiled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
POSITION_3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
POSITION_4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
POSITION_5 = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8"

WALK_FENS = [
    chess.STARTING_FEN,
    KIWIPETE,
    POSITION_3,
    POSITION_4,
    POSITION_5,
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",                          # castling both ways, both sides
    "r3k2r/8/8/8/8/5r2/8/R3K2R w KQkq - 0 1",                        # f1 attacked: no O-O
    "1r2k2r/8/8/8/8/8/8/R3K2R w KQk - 0 1",                          # b1 attacked: O-O-O still legal
    "r3k2r/8/8/8/4r3/8/8/R3K2R w KQkq - 0 1",                        # in check: no castling
    "4k3/8/8/2b5/8/8/8/R3K2R w KQ - 0 1",                            # g1 covered: O-O into check
    "8/8/8/K2pP2q/8/8/8/7k w - d6 0 1",                              # en passant pinned along the rank
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",                             # black's en passant, pinned
    "8/8/8/4k3/2pP4/8/8/3K4 b - d3 0 1",                             # en passant out of check
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
    "4k3/8/8/8/8/5n2/8/4K2r w - - 0 1",                              # double check
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",                       # promotions, captures onto the last rank
    "3r4/8/8/8/8/8/3R4/3K3k w - - 0 1",                              # a rook pinned on a file
    "4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1",                             # check by a bishop
    "7k/8/6QK/8/8/8/8/8 w - - 0 1",                                  # one move from stalemate
    "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",                             # one move from a back-rank mate
]


def _count(fen: str, path: str) -> int:
    return compiled_checker(chess.Board(fen)).count_one(path)


# ------------------------------------------------------------------------------------- independent numbers

@pytest.mark.parametrize(("fen", "depth", "nodes"), [
    (chess.STARTING_FEN, 3, 8_902),
    (KIWIPETE, 3, 97_862),
    (POSITION_3, 4, 43_238),
    (POSITION_4, 3, 9_467),
    (POSITION_5, 3, 62_379),
])
def test_perft_leaf_counts_are_the_published_ones(fen, depth, nodes):
    """perft(depth): the counts at every node depth - 1 plies deep, summed (the paths sorted, in one call)."""
    board = chess.Board(fen)
    frontier = [""]
    for _ in range(depth - 1):
        frontier = [f"{p}/{m.uci()}" if p else m.uci() for p in frontier
                    for m in _board_at(board, p).legal_moves]
    counts = legal_counts_compiled(compiled_checker(board), pa.array(sorted(frontier)))
    assert counts.min() >= 0
    assert int(counts.sum()) == nodes


def _board_at(root: chess.Board, path: str) -> chess.Board:
    board = root.copy(stack=False)
    for move in filter(None, path.split("/")):
        board.push(chess.Move.from_uci(move))
    return board


@pytest.mark.parametrize(("fen", "path", "count"), [
    (chess.STARTING_FEN, "", 20),
    (chess.STARTING_FEN, "e2e4", 20),                  # black's 16 pawn moves and 4 knight moves
    (chess.STARTING_FEN, "e2e4/e7e5", 29),             # 14 pawn, 5 knight, 5 bishop, 4 queen moves, Ke2
    (chess.STARTING_FEN, "f2f3/e7e5/g2g4/d8h4", 0),    # fool's mate
    (chess.STARTING_FEN, "0000", 20),                  # a null move: black's 20 moves
    ("7k/8/6QK/8/8/8/8/8 w - - 0 1", "g6f7", 0),       # stalemate: Kh8 has g8, g7, h7 covered
    ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8", 0),  # back-rank mate
    # Double check (Nf3 and Rh1): only king moves, and of d1 d2 e2 f1 f2 only e2 and f2 are safe.
    ("4k3/8/8/8/8/5n2/8/4K2r w - - 0 1", "", 2),
    # exd6 e.p. would uncover Qh5's rank: Ka4 Ka6 Kb4 Kb5 Kb6 and e6.
    ("8/8/8/K2pP2q/8/8/8/7k w - d6 0 1", "", 6),
    # Ra1: b1 c1 d1, a2..a7, xa8 (10); Rh1: g1 f1, h2..h7, xh8 (9); Kd1 Kd2 Ke2 Kf2 Kf1 (5); O-O, O-O-O (2).
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "", 26),
    # A black rook on f3 covers f1 and f2: Ra1 10, Rh1 9, Kd1 Kd2 Ke2 (3), O-O-O only (O-O crosses f1).
    ("r3k2r/8/8/8/8/5r2/8/R3K2R w KQkq - 0 1", "", 23),
    # a8=Q/R/B/N (4) and Kc2 Kd1 Kd2 (3): b1 and b2 touch the black king on a1.
    ("8/P7/8/8/8/8/8/k1K5 w - - 0 1", "", 7),
])
def test_counts_by_hand(fen, path, count):
    assert _count(fen, path) == count


# ------------------------------------------------------------------------------------- against python-chess

def _walk(rng: random.Random, fen: str, plies: int) -> list[tuple[str, int]]:
    """(path, python-chess's legal move count) at every node of one random walk, null moves now and then."""
    board = chess.Board(fen)
    path: list[str] = []
    nodes = [("", board.legal_moves.count())]
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves and rng.random() < 0.5:
            break
        if not moves or rng.random() < 0.05:
            move = chess.Move.null()
        else:
            # Favour the moves that make the odd cases: castling, en passant, promotions, checks, captures.
            special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m) or m.promotion
                       or board.gives_check(m) or board.is_capture(m)]
            move = rng.choice(special if special and rng.random() < 0.5 else moves)
        board.push(move)
        path.append(move.uci())
        nodes.append(("/".join(path), board.legal_moves.count()))
    return nodes


@pytest.mark.parametrize("fen", WALK_FENS)
def test_random_walks_agree_with_python_chess(fen):
    rng = random.Random(f"legal-counts {fen}")
    nodes: dict[str, int] = {}
    for _ in range(25):
        nodes.update(_walk(rng, fen, rng.randint(4, 40)))
    assert len(nodes) > 100
    paths = list(nodes)
    expected = np.array([nodes[p] for p in paths])
    board = chess.Board(fen)
    # In walk order (each walk's nodes one after the other), sorted, and shuffled: the prefix reuse must
    # not change a count.
    for order in (paths, sorted(paths), rng.sample(paths, len(paths))):
        got = legal_counts_compiled(compiled_checker(board), pa.array(order))
        assert got.tolist() == [nodes[p] for p in order]
    checker = compiled_checker(board)
    assert [checker.count_one(p) for p in paths] == expected.tolist()


def test_many_nodes_in_total():
    """The walks above cover thousands of nodes, with the odd cases among them."""
    rng = random.Random(7)
    seen = {"ep": 0, "castle": 0, "promo": 0, "mate_or_stalemate": 0, "check": 0}
    total = 0
    for fen in WALK_FENS:
        for _ in range(10):
            board = chess.Board(fen)
            checker = compiled_checker(board)
            path: list[str] = []
            for _ in range(30):
                moves = list(board.legal_moves)
                assert checker.count_one("/".join(path)) == len(moves), (fen, path)
                total += 1
                seen["check"] += board.is_check()
                if not moves:
                    seen["mate_or_stalemate"] += 1
                    break
                special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
                seen["ep"] += any(board.is_en_passant(m) for m in moves)
                seen["castle"] += any(board.is_castling(m) for m in moves)
                seen["promo"] += any(m.promotion for m in moves)
                move = rng.choice(special if special and rng.random() < 0.7 else moves)
                board.push(move)
                path.append(move.uci())
    assert total > 3000
    assert all(v > 0 for v in seen.values()), seen


@pytest.mark.parametrize("log", sorted((ROOT / "fixtures" / "traces").glob("*.log"))
                         + sorted((ROOT / "fixtures" / "real").glob("*.log")), ids=lambda p: p.name)
def test_every_fixture_node_agrees_with_python_chess(log):
    source = open_source(log)  # parsed: the paths made UCI, as the report reads them
    records = pd.concat(list(source.batches(["search", "path"])), ignore_index=True)
    fens = source.searches.set_index("search")["fen"]
    checked = 0
    for search, paths in records.groupby("search", sort=True)["path"]:
        fen = fens.get(search)
        if not isinstance(fen, str):
            continue
        root = chess.Board(fen)
        # Every node of the trace: each record's path and all its prefixes.
        nodes = {""}
        for path in paths.dropna().unique().tolist():
            moves = [m for m in path.split("/") if m not in ("", "-")]
            nodes.update("/".join(moves[:k]) for k in range(len(moves) + 1))
        ordered = sorted(nodes)
        got = legal_counts_compiled(compiled_checker(root), pa.array(ordered))
        expected = []
        for path in ordered:
            board = root.copy(stack=False)
            ok = True
            for move in filter(None, path.split("/")):
                step = chess.Move.from_uci(move)
                if step and not board.is_legal(step):
                    ok = False
                    break
                board.push(step)
            expected.append(board.legal_moves.count() if ok else -1)
        assert got.tolist() == expected
        checked += len(ordered)
    assert checked > 50


# ------------------------------------------------------------------------------------------------ -1

@pytest.mark.parametrize("path", [
    "e2e5",            # the piece does not move that way
    "e2e4/e2e4",       # no piece on e2 any more
    "e2e4//e7e5",      # an empty move
    "e2e4/x",          # not a move
    "e1g1",            # castling through pieces
    "e7e5",            # not the side to move's piece
    "a2a4/h7h5/a4a5/b7b5/a5b6/b6b6",  # from = to after a legal en passant
])
def test_illegal_or_unreadable_paths_count_minus_one(path):
    assert _count(chess.STARTING_FEN, path) == -1


def test_null_spellings_and_root_as_the_checker_reads_them():
    """The checker's readings carry over: any null spelling is a null move, ``-`` the root, capitals read."""
    for null in ("0000", "--", "null", "(null)", "@@@@", "z0"):
        assert _count(chess.STARTING_FEN, f"e2e4/{null}") == 30  # white again, after 1. e4: 30 moves
    assert chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 1").legal_moves.count() == 30
    assert _count(chess.STARTING_FEN, "-") == 20
    assert _count(chess.STARTING_FEN, "E2E4") == 20


def test_a_null_move_forfeits_en_passant():
    fen = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
    with_ep = chess.Board(fen)
    assert _count(fen, "") == with_ep.legal_moves.count()
    with_ep.push(chess.Move.null())
    with_ep.push(chess.Move.null())
    assert _count(fen, "0000/0000") == with_ep.legal_moves.count() == chess.Board(fen).legal_moves.count() - 1


def test_skipped_rows_and_nulls_count_minus_one():
    checker = compiled_checker(chess.Board())
    got = legal_counts_compiled(checker, pa.array(["e2e4", None, "", "e2e4/e7e5"]))
    assert got.tolist() == [20, -1, 20, 29]
    views = np.zeros(16, dtype=np.uint8)
    out = np.zeros(1, dtype=np.int32)
    checker.legal_counts(views, (), out, np.ones(1, dtype=np.uint8))
    assert out.tolist() == [-1]
    with pytest.raises(ValueError, match="inconsistent sizes"):
        checker.legal_counts(views, (), np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        checker.legal_counts(views, (), np.zeros(3, dtype=np.uint8))

"""The scope table's legal-move counts: the compiled counter against the python-chess fallback.

``_legal_counts`` counts with treediff/parse/_cmoves.c when it was built, else (or with
``TREEDIFF_MOVE_CHECK=python``) on python-chess boards.  Both must give the same count at every node,
including the -1 cases (no FEN, a FEN python-chess refuses, a path python-chess does not read or with
an illegal move), and the same scope table on the fixture traces.  The counts themselves are checked
against perft numbers and hand counts in tests/parse/test_cmoves_count.py.
"""
from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import pandas as pd
import pytest

from treediff.parse.paths import MOVE_CHECK_ENV, compiled_checker_available
from treediff.parse.source import open_source
from treediff.report.core import build_report
from treediff.report.tables import scope
from treediff.store.source import FrameSource

pytest.importorskip("treediff.parse._cmoves")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures" / "traces").glob("*.log")) + sorted((ROOT / "fixtures" / "real").glob("*.log"))
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    monkeypatch.delenv(MOVE_CHECK_ENV, raising=False)
    assert compiled_checker_available()


def test_odd_paths_and_fens_give_what_the_fallback_gives():
    start = chess.STARTING_FEN
    cases = [
        (start, "", 20),
        (start, "e2e4/e7e5", 29),
        (start, "0000", 20),           # the null move python-chess reads
        (start, "/e2e4", 20),          # rpartition reads a leading '/' as the root before it
        (start, "/", -1),              # an empty move
        (start, "-", -1),              # the checker's root spelling: python-chess reads no move "-"
        (start, "E2E4", -1),           # capitals: the checker reads them, python-chess does not
        (start, "e2e4/--", -1),        # other null spellings likewise
        (start, "e2e4/null", -1),
        (start, "e2e4/", -1),
        (start, "e2e4//e7e5", -1),
        (start, "e2e2", -1),           # from = to
        (start, "N@f3", -1),           # a drop
        (start, "e2e5", -1),           # illegal
        ("8/P7/8/8/8/8/8/k1K5 w - - 0 1", "a7a8p", -1),  # a promotion to a pawn, to a king
        ("8/P7/8/8/8/8/8/k1K5 w - - 0 1", "a7a8k", -1),
        ("8/P7/8/8/8/8/8/k1K5 w - - 0 1", "a7a8Q", -1),  # a capital promotion letter
        ("8/P7/8/8/8/8/8/k1K5 w - - 0 1", "a7a8n", 1),   # 1. a8=N: Ka2 only (b1 b2 touch the white king)
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1h1", 23),  # castling spelled onto the rook
        (None, "", -1),                # no FEN
        ("rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "", -1),  # python-chess refuses it
        ("not a fen", "e2e4", -1),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -", "e2e4", 20),  # no move counters
    ]
    fens = [f for f, _, _ in cases]
    paths = [p for _, p, _ in cases]
    expected = [c for _, _, c in cases]
    assert scope._legal_counts_python(fens, paths).tolist() == expected
    assert scope._legal_counts(fens, paths).tolist() == expected
    assert scope._legal_counts([], []).tolist() == []


def test_two_kings_of_one_colour_are_counted_by_python_chess():
    """python-chess castles from the lowest king on the back rank and moves the other kings as pinned pieces;
    the checker does neither, so such positions (no engine's) go to python-chess."""
    fens = ["4k3/8/8/8/8/8/8/1K2K2R w K - 0 1", "4k3/8/8/8/8/8/8/K3K3 w - - 0 1"]
    paths = ["", "e1f2/e8e7/a1a2/e7e6/a2b3/e6f6/b3b4/f6e5/f2f3/e5d5"]
    walked = chess.Board(fens[1])
    for move in paths[1].split("/"):
        walked.push_uci(move)
    expected = [chess.Board(fens[0]).legal_moves.count(), walked.legal_moves.count()]
    assert expected[0] == 19  # Kb1 5, Ke1 5, Rh1 f1 g1 h2..h8 9: no O-O (python-chess castles the b1 king)
    assert scope._legal_counts(fens, paths).tolist() == expected


def test_hand_counts_above():
    """Two of the counts above, move by move."""
    board = chess.Board("8/P7/8/8/8/8/8/k1K5 w - - 0 1")
    board.push_uci("a7a8n")
    assert [m.uci() for m in board.legal_moves] == ["a1a2"]
    # After O-O (Kg1, Rf1): black's Ra8 b8 c8 d8, a7..a2, xa1 (10); Rh8 g8 f8, h7..h1 (9); Kd8 Kd7 Ke7 (f7 and
    # f8 are on the f1 rook's file) (3); O-O-O (O-O crosses f8) (1).
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    board.push_uci("e1g1")
    assert board.legal_moves.count() == 10 + 9 + 3 + 1


def test_random_nodes_of_several_positions_in_any_order():
    """Thousands of (FEN, path) nodes, shuffled across FENs: the counts do not depend on the order."""
    rng = random.Random(17)
    fens = [chess.STARTING_FEN, KIWIPETE, "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
            "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1", "8/8/8/4k3/2pP4/8/8/3K4 b - d3 0 1"]
    nodes = []
    for fen in fens:
        for _ in range(40):
            board, path = chess.Board(fen), []
            for _ in range(rng.randint(0, 12)):
                moves = list(board.legal_moves)
                move = chess.Move.null() if not moves or rng.random() < 0.05 else rng.choice(moves)
                board.push(move)
                path.append(move.uci())
                nodes.append((fen, "/".join(path)))
            if path:  # and an illegal continuation now and then
                nodes.append((fen, "/".join([*path, "a1a1" if rng.random() < 0.5 else "h8h1"])))
    rng.shuffle(nodes)
    assert len(nodes) > 1000
    fen_list, path_list = [f for f, _ in nodes], [p for _, p in nodes]
    expected = scope._legal_counts_python(fen_list, path_list)
    assert (expected == -1).any() and (expected >= 0).sum() > 1000
    np.testing.assert_array_equal(scope._legal_counts(fen_list, path_list), expected)


@pytest.mark.parametrize("log", FIXTURES, ids=lambda p: p.name)
def test_forcing_the_fallback_gives_the_same_scope_table(log, monkeypatch):
    parsed = open_source(log)
    records = pd.concat(list(parsed.batches()), ignore_index=True)
    source = FrameSource(records, parsed.searches)  # parsed once: the setting below changes only the counts
    compiled = build_report(source, ("scope",), ("engine",)).sections
    calls = []
    fallback = scope._legal_counts_python
    monkeypatch.setattr(scope, "_legal_counts_python", lambda *a: calls.append(1) or fallback(*a))
    monkeypatch.setenv(MOVE_CHECK_ENV, "python")
    python = build_report(source, ("scope",), ("engine",)).sections
    assert [s.name for s in compiled] == [s.name for s in python] == ["scope"]
    pd.testing.assert_frame_equal(compiled[0].frame, python[0].frame)
    if len(compiled[0].frame):
        assert calls  # the fallback did run
        assert (compiled[0].frame["remaining"] > 0).any()


@pytest.mark.parametrize("arrow_type", ["string", "large_string"])
def test_parent_path_is_rpartition(arrow_type):
    """A node's path is its MOVE record's path without the last move: ``str.rpartition("/")[0]``, null kept."""
    import pyarrow as pa

    from treediff.report.tables.scope import parent_path

    paths = ["", "e2e4", "e2e4/e7e5", "e2e4/e7e5/g1f3", "0000/e7e5", "e2e4/0000", "/", "x/", "/y", "a//b", None]
    got = parent_path(pa.array(paths, type=getattr(pa, arrow_type)()))
    assert got.type == getattr(pa, arrow_type)()
    assert got.to_pylist() == [None if p is None else p.rpartition("/")[0] for p in paths]

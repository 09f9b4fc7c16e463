"""The stockfish profile's LMR, pruning and ``why=`` records, checked record by record on its traces.

Every check reads only the trace (``see=``, ``hist=``, ``nt=``, ``d``, ``mn``, the path
replayed with python-chess) and the rules as docs/ENGINE.md states them, with Stockfish's
published constants written out here, not imported from the profile.
"""
from __future__ import annotations

import io
from pathlib import Path

import chess
import pytest

from support.see_reference import reference_see
from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
IDS = ("kiwipete", "tactical-f6f7", "french", "rook-endgame", "sicilian-middlegame", "back-rank")
VOCABULARY = {"in-check", "gives-check", "pv-node", "good-capture", "capture", "promotion", "good-history"}
PRUNE_ACTS = {"FP-QUIET", "FP-CAP", "SEE-QUIET", "SEE-CAP", "HIST-PRUNE"}
#: LMR's history term takes plies off only from statScore >= 13628 (Stockfish's divisor), with
#: statScore = 3 h - 13628 - 4433 (the docs' stand-in): h >= (13628 + 13628 + 4433) / 3.
GOOD_HISTORY_MIN = -(-(13628 + 13628 + 4433) // 3)


@pytest.fixture(scope="module")
def records():
    out = []
    for pid in IDS:
        buf = io.StringIO()
        run_search(POSITIONS[pid].board, 5, make_config("stockfish"), buf, pid)
        (search,) = read_trace(buf.getvalue())
        root = chess.Board(search.header["fen"])
        cache: dict = {}
        for g in search.tagged("MOVE"):
            if g["act"] in ("NMP",):
                continue
            before = resolve_path(root, g["path"].rpartition("/")[0] or "-", "stockfish", cache)
            move = chess.Move.from_uci(g["path"].rpartition("/")[2])
            out.append((g, before, move))
    return out


def _non_pawn_material(board: chess.Board) -> bool:
    return bool(board.occupied_co[board.turn] & ~(board.pawns | board.kings))


def test_see_and_hist_on_every_record(records):
    for g, before, move in records:
        assert g["see"] is not None and g["hist"] is not None, g
        assert int(g["see"]) == reference_see(before, move), g


def test_lmr_records_follow_the_rule(records):
    n = 0
    for g, before, move in records:
        if g["act"] != "LMR":
            continue
        d, mn, red, pv = int(g["d"]), int(g["mn"]), int(g["red"]), g["nt"] == "PV"
        assert d >= 2 and mn > 1 + (pv and g["ply"] == "1"), g
        assert not (pv and before.is_capture(move)), g  # a PV node never reduces a capture
        # the move keeps at least one ply, a check two
        assert 1 <= red <= d - 2 - before.gives_check(move), g
        n += 1
    assert n


def test_prune_records_follow_the_rules(records):
    seen = set()
    for g, before, move in records:
        act = g["act"]
        if act not in PRUNE_ACTS:
            continue
        d, see, hist = int(g["d"]), int(g["see"]), int(g["hist"])
        assert g["ply"] != "1" and int(g["mn"]) > 1 and not before.is_check(), g
        assert _non_pawn_material(before), g
        cap, check = before.is_capture(move), before.gives_check(move)
        if act == "FP-CAP":
            assert cap and not check and g["nt"] != "PV", g
        elif act == "SEE-CAP":
            # SEE < -214 d in Stockfish's piece values (126 per pawn): here 100 per pawn
            assert (cap or check) and see * 126 < -214 * d * 100, g
        else:
            assert not cap and not check and not move.promotion, g
            if act == "SEE-QUIET":
                assert see < 0, g
            elif act == "HIST-PRUNE":
                assert hist < -3875 * (d - 1), g
        seen.add(act)
    assert {"FP-QUIET", "SEE-CAP"} <= seen


def test_every_why_is_justified_by_the_record(records):
    whys = set()
    for g, before, move in records:
        why = g["why"]
        if why is None:
            continue
        assert g["act"] in ("FULL", "EXT"), g
        assert why in VOCABULARY, g
        cap = before.is_capture(move)
        if why == "in-check":
            assert before.is_check(), g
        elif why == "gives-check":
            assert before.gives_check(move), g
        elif why == "pv-node":
            assert g["nt"] == "PV" and cap, g
        elif why == "good-capture":
            assert cap and int(g["see"]) >= 0, g
        elif why == "capture":
            assert cap and int(g["see"]) < 0, g
        elif why == "promotion":
            assert move.promotion and not cap, g
        elif why == "good-history":
            assert not cap and not move.promotion and int(g["hist"]) >= GOOD_HISTORY_MIN and int(g["d"]) >= 3, g
        whys.add(why)
    assert {"in-check", "gives-check", "pv-node", "capture"} <= whys, whys


def test_every_exempted_move_says_why(records):
    """The exemptions the trace can show: a move searched unreduced where pruning would have
    been asked (not the root, a later move, non-pawn material) at a node in check, or that gives
    check; and a capture at a PV node past LMR's move-number condition."""
    checked = 0
    for g, before, move in records:
        if g["act"] not in ("FULL", "EXT"):
            continue
        mn, ply = int(g["mn"]), int(g["ply"])
        prune_asked = ply > 1 and mn > 1 and _non_pawn_material(before)
        lmr_asked = int(g["d"]) >= 2 and mn > 1 + (g["nt"] == "PV" and ply == 1)
        if ((prune_asked and (before.is_check() or before.gives_check(move)))
                or (lmr_asked and g["nt"] == "PV" and before.is_capture(move))):
            assert g["why"] is not None, g
            checked += 1
    assert checked

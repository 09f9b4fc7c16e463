"""The typhoon profile's rules, checked record by record on its traces (see=, hist=, why=, nt=)."""
from __future__ import annotations

import io
from pathlib import Path

import chess
import pytest

from support.see_reference import reference_see
from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search
from typhoon_py.mechanisms.typhoon import LMP_LIMIT, LMR_STEP, lmr_first

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
IDS = ("kiwipete", "tactical-f6f7", "french", "rook-endgame", "sicilian-middlegame")
VOCABULARY = {"tt-move", "good-capture", "killer", "countermove", "in-check", "pv-node", "gives-check",
              "promotion"}


@pytest.fixture(scope="module")
def traces():
    out = []
    for pid in IDS:
        buf = io.StringIO()
        run_search(POSITIONS[pid].board, 4, make_config("typhoon"), buf, pid)
        (search,) = read_trace(buf.getvalue())
        out.append(search)
    return out


def _records(search):
    root = chess.Board(search.header["fen"])
    cache: dict = {}
    for g in search.tagged("MOVE"):
        if g["act"] in ("NMP", "NULLBAILOUT"):
            yield g, None, None
            continue
        before = resolve_path(root, g["path"].rpartition("/")[0] or "-", "typhoon", cache)
        yield g, before, resolve_path(root, g["path"], "typhoon", cache).peek()


def test_lmp_and_lmr_follow_the_profile_rules(traces):
    counts = {"LMP": 0, "LMR": 0, "why": 0}
    for search in traces:
        for g, before, move in _records(search):
            act, mn, d = g["act"], int(g["mn"]), int(g["d"])
            dp = d // 64
            if move is None:
                assert g["see"] is None and g["nt"] != "PV"  # null move: no SEE/history, never at PV nodes
                continue
            see = int(g["see"])
            assert see == reference_see(before, move), g
            leftover_ok = not move.promotion and not (before.is_capture(move) and see >= 0)
            if act == "LMP":
                assert dp < len(LMP_LIMIT) and mn > LMP_LIMIT[dp] + (2 if g["nt"] == "PV" else 0), g
                assert leftover_ok and not before.gives_check(move) and not before.is_check(), g
                counts["LMP"] += 1
            elif act == "LMR":
                first = lmr_first(dp)
                assert mn >= first and leftover_ok and not before.is_check(), g
                assert int(g["red"]) == 64 + 16 * min(3, (mn - first) // LMR_STEP), g
                counts["LMR"] += 1
            elif act in ("FULL", "EXT") and (mn >= lmr_first(dp) or (
                    g["ply"] != "1" and mn > 1 and dp < len(LMP_LIMIT) and mn > LMP_LIMIT[dp])):
                # LMR's or LMP's depth and place conditions held, so the move was exempted:
                # the record says why, truthfully
                why = g["why"]
                assert why in VOCABULARY, (g["path"], g["mn"], g["d"], g["nt"], g["see"], g["hist"])
                counts["why"] += 1
                if why == "in-check":
                    assert before.is_check()
                elif why == "good-capture":
                    assert before.is_capture(move) and see >= 0
                elif why == "promotion":
                    assert move.promotion
                elif why == "gives-check":
                    assert before.gives_check(move)
                elif why == "pv-node":
                    assert g["nt"] == "PV" and mn <= LMP_LIMIT[dp] + 2
    assert all(counts.values()), counts


def test_why_only_on_searched_unreduced_moves(traces):
    whys = set()
    for search in traces:
        for g in search.tagged("MOVE"):
            if g["why"] is not None:
                assert g["act"] in ("FULL", "EXT"), g
                whys.add(g["why"])
    assert {"good-capture", "gives-check"} <= whys <= VOCABULARY

"""Each profile's mechanisms leave the trace shape they are documented to leave (docs/ENGINE.md)."""
from __future__ import annotations

import io
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}


def _search(pid: str, depth: int, profile: str, policy: str = "profile"):
    buf = io.StringIO()
    run_search(POSITIONS[pid].board, depth, make_config(profile, policy), buf, pid)
    (search,) = read_trace(buf.getvalue())
    return search, chess.Board(search.header["fen"])


def _move_of(root, path, profile, cache):
    """The position before the last move of ``path`` and that move."""
    parent_path, _, _ = path.rpartition("/")
    before = resolve_path(root, parent_path or "-", profile, cache)
    after = resolve_path(root, path, profile, cache)
    return before, after.peek() if after.move_stack else None


@pytest.mark.parametrize("profile", ["typhoon", "stockfish", "crafty"])
def test_extended_moves_give_check_and_pruned_moves_are_not_checks(profile):
    search, root = _search("kiwipete", 3, profile)
    cache: dict = {}
    pruned = {"LMP", "FP-QUIET", "HIST-PRUNE", "SEE-QUIET"}
    # stockfish extends singular TT moves, not checks (tests/engines/test_stockfish_profile.py)
    check_ext = profile != "stockfish"
    seen = {"EXT": 0, "pruned": 0}
    for g in search.tagged("MOVE"):
        if g["act"] == "EXT" and check_ext:
            assert resolve_path(root, g["path"], profile, cache).is_check(), g["path"]
            seen["EXT"] += 1
        elif g["act"] in pruned:
            before, move = _move_of(root, g["path"], profile, cache)
            assert not before.gives_check(move) and not move.promotion, g
            if profile == "crafty" or g["act"] in ("HIST-PRUNE",):
                assert not before.is_capture(move), g  # quiet moves only
            seen["pruned"] += 1
    assert (seen["EXT"] > 0 or not check_ext) and seen["pruned"] > 0


@pytest.mark.parametrize("profile", ["stockfish", "crafty"])
def test_lmr_research_follows_a_reduced_search_of_the_same_move(profile):
    found = 0
    # crafty reduces only from the 7th move on since the issue-14 calibration: positions where it re-searches
    for pid in ("start", "rook-endgame", "kiwipete") if profile == "stockfish" else ("italian", "symmetric-italian"):
        search, _ = _search(pid, 5 if profile == "stockfish" else 4, profile)
        last_decision = {}
        for tag, g in search.lines:
            if tag != "MOVE":
                continue
            if g["act"] == "LMR-RESEARCH":
                prev = last_decision[g["path"]]
                assert prev["act"] == "LMR" and prev["mn"] == g["mn"] and prev["d"] == g["d"]
                assert int(g["nd"]) == int(prev["nd"]) + int(prev["red"])  # full depth again
                found += 1
            last_decision[g["path"]] = g
    assert found > 0


def test_typhoon_null_bailout_fails_low_under_a_reduced_move():
    # Rare at shallow depth, as in typhoon (none at depth 4 since the issue-14 calibration).
    search, _ = _search("italian", 5, "typhoon")
    lines = search.lines
    bailouts = [i for i, (t, g) in enumerate(lines) if t == "MOVE" and g["act"] == "NULLBAILOUT"]
    assert bailouts
    for i in bailouts:
        g = lines[i][1]
        node = g["path"].rpartition("/")[0]
        # The probe came first: the latest MOVE for this null path is the NMP.
        probe = next(h for t, h in reversed(lines[:i]) if t == "MOVE" and h["path"] == g["path"])
        assert probe["act"] == "NMP" and int(probe["ply"]) == int(g["ply"])
        # The node was reached by a reduced move.
        entry = next(h for t, h in reversed(lines[:i]) if t == "MOVE" and h["path"] == node)
        assert entry["act"] == "LMR"
        # The node closes at once, failing low (score = alpha), and the parent searches it again.
        t, res = lines[i + 1]
        assert t == "RESULT" and res["path"] == node and res["bound"] == "upper"
        assert int(res["score"]) == int(g["a"])
        again = [h for t, h in lines[i + 2:] if t == "RESULT" and h["path"] == node]
        assert again, "the reduced move was not searched again"


def test_stockfish_probcut_is_tried_with_captures_at_reduced_depth():
    hits = 0
    for pid in ("ruy-lopez",):  # Stockfish 15: ProbCut at d >= 5 (non-PV), so depth 6
        search, root = _search(pid, 6, "stockfish")
        cache: dict = {}
        for g in search.tagged("MOVE"):
            if g["act"] == "PROBCUT":
                before, move = _move_of(root, g["path"], "stockfish", cache)
                assert before.is_capture(move)
                assert int(g["nd"]) == int(g["d"]) - 4 and g["nt"] != "PV"
                hits += 1
    assert hits > 0


def test_see_history_verifies_predicted_cutoffs_at_pv_nodes_only():
    # Rare at shallow depth: in the 20 positions at depths 4-5 only "french" (typhoon profile) has one.
    search, _ = _search("french", 4, "typhoon", "see-history")
    lines = [g for t, g in search.lines if t == "MOVE"]
    research = [k for k, g in enumerate(lines) if g["act"] == "LMR-RESEARCH"]
    assert research
    for k in research:
        g = lines[k]
        assert g["nt"] == "PV" and int(g["nd"]) == int(g["d"]) - 64
        prev = next(h for h in reversed(lines[:k]) if h["path"] == g["path"])
        assert prev["act"] == "LMR" and prev["red"] == "64" and prev["mn"] == g["mn"]
    assert all(g["red"] == "64" and int(g["mn"]) > 1 for g in lines if g["act"] == "LMR")


def test_every_profile_has_its_mechanisms_and_see_history_replaces_only_lmr():
    from typhoon_py.mechanisms import MECHANISMS, SeeHistoryLmr, mechanisms_class
    from typhoon_py.profiles import PROFILES, LmrPolicy

    assert set(MECHANISMS) == set(PROFILES)
    for name, cls in MECHANISMS.items():
        assert mechanisms_class(name) is cls
        mixed = mechanisms_class(name, LmrPolicy.SEE_HISTORY)
        assert mixed is mechanisms_class(name, LmrPolicy.SEE_HISTORY)  # made once
        assert mixed.reduce is SeeHistoryLmr.reduce and mixed.search_move is SeeHistoryLmr.search_move
        for hook in ("prune", "null_reduction", "after_null_fail_low", "probcut"):
            assert getattr(mixed, hook) is getattr(cls, hook), (name, hook)

"""``--lmr-policy see-history`` is the forum post's rule (lmr_forum_post.txt), checked record by record.

The rule is read back from each MOVE record's ``see=``/``hist=`` keys and the
move itself (replayed from the path with python-chess); ``see=`` is checked
against an independent SEE (tests/support/see_reference.py).
"""
from __future__ import annotations

import io
from pathlib import Path

import chess
import pytest

from support.see_reference import reference_see
from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search
from typhoon_py.mechanisms.see_history import MIN_DEPTH

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
CASES = [("typhoon", pid, 4) for pid in ("start", "kiwipete", "tactical-f6f7", "french", "rook-endgame")] + [
    ("crafty", "kiwipete", 4), ("crafty", "tactical-f6f7", 3)]


def _trace(profile: str, pid: str, depth: int):
    buf = io.StringIO()
    run_search(POSITIONS[pid].board, depth, make_config(profile, "see-history"), buf, pid)
    (search,) = read_trace(buf.getvalue())
    return search, chess.Board(search.header["fen"])


@pytest.fixture(scope="module")
def traces():
    return {(p, pid, d): _trace(p, pid, d) for p, pid, d in CASES}


def _forum_reduces(mn: int, is_cop: bool, see: int, hist: int) -> bool:
    """The post: ``!is_first && (is_bad_capture || is_bad_quiet)``, written from the post's text."""
    is_first = mn == 1
    is_bad_see = see < 0
    is_bad_capture = is_cop and is_bad_see
    is_bad_quiet = not is_cop and (hist < 0 or (hist == 0 and is_bad_see))
    return not is_first and (is_bad_capture or is_bad_quiet)


def test_every_decision_follows_the_forum_rule(traces):
    seen = {"capture": 0, "quiet-hist": 0, "quiet-see": 0, "root": 0, "kept": 0}
    for (profile, pid, depth), (search, root) in traces.items():
        unit = int(search.header["unit"])
        cache: dict = {}
        for g in search.tagged("MOVE"):
            if g["act"] in ("NMP", "NULLBAILOUT"):
                assert g["see"] is None and g["hist"] is None, g  # a null move has neither
                continue
            assert g["see"] is not None and g["hist"] is not None, g
            before = resolve_path(root, g["path"].rpartition("/")[0] or "-", profile, cache)
            move = resolve_path(root, g["path"], profile, cache).peek()
            see, hist = int(g["see"]), int(g["hist"])
            assert see == reference_see(before, move), (g, before.fen())
            if g["act"] not in ("FULL", "LMR"):
                continue  # EXT (never reduced), LMR-RESEARCH, and the profile's own pruning
            is_cop = before.is_capture(move) or move.promotion is not None
            expected = int(g["d"]) >= MIN_DEPTH * unit and _forum_reduces(int(g["mn"]), is_cop, see, hist)
            assert (g["act"] == "LMR") == expected, (pid, g)
            if g["act"] == "LMR":
                assert int(g["red"]) == unit and int(g["nd"]) == int(g["d"]) - 2 * unit, g
                seen["capture" if is_cop else ("quiet-hist" if hist < 0 else "quiet-see")] += 1
                seen["root"] += g["ply"] == "1"
            else:
                seen["kept"] += 1
    assert all(seen.values()), seen  # every branch of the rule was exercised


def _children(lines: list, k: int) -> list[dict]:
    """The MOVE records made at the child node searched right after MOVE record ``k``."""
    g = lines[k][1]
    ply, prefix = int(g["ply"]), g["path"] + "/"
    out = []
    for tag, h in lines[k + 1:]:
        if tag == "MOVE" and int(h["ply"]) <= ply:
            break
        if tag == "MOVE" and int(h["ply"]) == ply + 1 and h["path"].startswith(prefix):
            out.append(h)
        if tag == "RESULT" and h["path"] == g["path"]:
            break  # the first search of the move is over
    return out


def test_node_types_are_the_profiles_own(traces):
    """A CUT node's children are ALL nodes and an ALL node's CUT; a PV node's are PV or CUT."""
    pairs = {("CUT", "ALL"): 0, ("ALL", "CUT"): 0, ("PV", "CUT"): 0, ("PV", "PV"): 0}
    for search, _ in traces.values():
        lines = search.lines
        for k, (tag, g) in enumerate(lines):
            if tag != "MOVE" or g["act"] not in ("FULL", "LMR", "EXT", "NMP"):
                continue
            for h in _children(lines, k):
                pair = (g["nt"], h["nt"])
                assert pair in pairs, (g, h)
                pairs[pair] += 1
    assert all(pairs.values()), pairs
    # and not nearly every node CUT, as the replaced variant had it
    nts = [g["nt"] for s, _ in traces.values() for g in s.tagged("MOVE")]
    assert nts.count("ALL") > nts.count("CUT") / 4


def test_pv_node_research_scheme(traces):
    """At a PV node, a later move: a zero-window search at the reduced depth, the full-window
    search at the same depth when it beats alpha, and the full-depth verification
    (LMR-RESEARCH) exactly when a reduced move's reduced search reaches beta."""
    checked = {"full-window": 0, "verified": 0, "not-verified": 0}
    for (profile, _, _), (search, _) in traces.items():
        unit = int(search.header["unit"])
        lines = search.lines
        for k, (tag, g) in enumerate(lines):
            if tag != "MOVE" or g["nt"] != "PV" or g["act"] not in ("FULL", "LMR") or g["mn"] == "1":
                continue
            nd = int(g["nd"])
            if nd <= 0:
                continue  # quiescence: no RESULT to read
            a, b = int(g["a"]), int(g["b"])
            results, research = [], None
            for tag2, h in lines[k + 1:]:
                if tag2 == "MOVE" and int(h["ply"]) <= int(g["ply"]):
                    if h["path"] == g["path"] and h["act"] == "LMR-RESEARCH":
                        research = h
                    break
                if tag2 == "RESULT" and h["path"] == g["path"]:
                    results.append(-int(h["score"]))  # the node's view
            reduced = results  # the RESULTs of the move's searches before any verification
            if research is not None:
                # the verification: after the reduced searches, at full depth
                assert g["act"] == "LMR" and int(research["nd"]) == nd + unit
            first = reduced[0]
            if first > a:
                assert len(reduced) == 2, g  # the full-window search at the reduced depth
                checked["full-window"] += 1
            else:
                assert len(reduced) == 1, g
            if g["act"] == "LMR":
                final_reduced = reduced[1] if first > a else reduced[0]
                if final_reduced >= b:
                    assert research is not None, g
                    assert len(reduced) == (2 if first > a else 1)
                    checked["verified"] += 1
                else:
                    assert research is None, g
                    checked["not-verified"] += 1
    assert checked["full-window"] and checked["not-verified"], checked

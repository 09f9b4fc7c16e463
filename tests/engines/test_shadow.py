"""``--shadow``: every pruned or reduced move searched again at full depth, without changing the search."""
from __future__ import annotations

import dataclasses
import io
import re
from collections import Counter
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search
from typhoon_py.search import MATE, SearchConfig, Searcher

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
PRUNE_OR_REDUCE = {"LMP", "FP-QUIET", "FP-CAP", "SEE-QUIET", "SEE-CAP", "HIST-PRUNE", "SKIP-QUIETS", "LMR"}
CASES = [("typhoon", "profile", "iqp-attack", 4), ("typhoon", "profile", "kiwipete", 3),
         ("crafty", "profile", "tactical-f6f7", 3), ("stockfish", "profile", "kiwipete", 4),
         ("stockfish", "trace-silent", "kiwipete", 4), ("typhoon", "see-history", "french", 3)]


def _run(profile: str, policy: str, pid: str, depth: int, shadow: bool):
    """``policy``: an LMR policy, or ``trace-silent`` (the profile's own, with --trace-silent)."""
    silent = policy == "trace-silent"
    config = dataclasses.replace(make_config(profile, "profile" if silent else policy), shadow=shadow,
                                 trace_silent=silent)
    buf = io.StringIO()
    outcome = run_search(POSITIONS[pid].board, depth, config, buf, pid)
    return outcome, buf.getvalue()


@pytest.fixture(scope="module", params=CASES, ids=lambda c: "-".join(map(str, c)))
def pair(request):
    profile, policy, pid, depth = request.param
    return request.param, _run(profile, policy, pid, depth, False), _run(profile, policy, pid, depth, True)


def test_shadow_changes_nothing_but_adds_shadow_lines(pair):
    _, (off, off_text), (on, on_text) = pair
    assert (on.best_move, on.score, on.nodes, on.qnodes, on.acts, on.silent, on.pv) == \
        (off.best_move, off.score, off.nodes, off.qnodes, off.acts, off.silent, off.pv)
    kept = "".join(line for line in on_text.splitlines(True) if not line.startswith("SHADOW "))
    assert kept == off_text  # the same trace byte for byte once the SHADOW lines are taken out
    assert "SHADOW " not in off_text and "shadow" not in off.counters()
    end = re.search(r"^END nodes=(\d+)", on_text, re.M)
    assert end is not None and int(end.group(1)) == on.nodes == on_text.count("\nRESULT ")


def test_shadow_lines_follow_their_decision_and_equal_the_counters(pair):
    (profile, policy, _, _), _, (on, on_text) = pair
    (search,) = read_trace(on_text)
    unit = int(search.header["unit"])
    tries: Counter = Counter()
    fail_highs: Counter = Counter()
    lines = search.lines
    for k, (tag, g) in enumerate(lines):
        if tag == "MOVE" and g["act"] in PRUNE_OR_REDUCE:
            assert lines[k + 1][0] == "SHADOW", g  # right after the decision
        if tag != "SHADOW":
            continue
        t, decision = lines[k - 1]
        assert t == "MOVE" and decision["act"] in PRUNE_OR_REDUCE
        assert (g["path"], g["ply"]) == (decision["path"], decision["ply"])
        assert int(g["d"]) == max(0, int(decision["d"]) - unit)  # full depth: one ply less, no reduction
        assert (g["fh"] == "1") == (int(g["score"]) >= int(decision["b"]))
        tries[decision["act"]] += 1
        fail_highs[decision["act"]] += g["fh"] == "1"
    counters = on.counters()["shadow"]
    assert {a: (c["tries"], c["fail_highs"]) for a, c in counters.items()} == \
        {a: (tries[a], fail_highs[a]) for a in tries}
    assert tries and on.counters()["shadow_nodes"] > 0
    if policy == "trace-silent":
        assert tries["SKIP-QUIETS"] > 0  # move-count pruning's traced skips are shadowed too


def test_some_shadow_search_fails_high():
    """Pruned moves that would have failed high exist (the silent misses the shadow is for)."""
    on, _ = _run("typhoon", "profile", "iqp-attack", 3, True)
    assert on.shadow is not None and sum(f for _, f in on.shadow.values()) > 0


def test_quiescence_shadows_score_as_a_fresh_quiescence_search():
    """A shadow at a one-ply node is a quiescence search of the position after the move with the zero
    window at the node's beta; typhoon's quiescence reads no table, so a fresh searcher on that position
    must give the same score."""
    on, text = _run("typhoon", "profile", "kiwipete", 3, True)
    (search,) = read_trace(text)
    root = chess.Board(search.header["fen"])
    cache: dict = {}
    checked = unreachable = 0
    lines = search.lines
    for k, (tag, g) in enumerate(lines):
        if tag != "SHADOW" or g["d"] != "0":
            continue
        decision = lines[k - 1][1]
        board = resolve_path(root, g["path"], "typhoon", cache).copy()
        fresh = Searcher(board, SearchConfig(make_config("typhoon").profile))
        b, ply = int(decision["b"]), int(g["ply"])
        if b > MATE - ply:  # beyond a mate on the next ply: no search, the mate-distance bound
            assert (int(g["score"]), g["fh"]) == (MATE - ply, "0"), (g, decision)
            unreachable += 1
            continue
        s = -fresh.qsearch(-b, -b + 1, ply, 0)
        assert s == int(g["score"]), (g, decision)
        checked += 1
        if checked >= 200:
            break
    assert checked > 50 and unreachable > 0


def test_command_line_flag_and_uci_option(tmp_path):
    """``typhoon-py search --shadow`` and UCI ``setoption name Shadow value true``."""
    import json
    import subprocess
    import sys

    trace, counters = tmp_path / "t.log", tmp_path / "c.json"
    run = subprocess.run([sys.executable, "-m", "typhoon_py", "search", "--shadow", "--depth", "3",
                          "--treedump", str(trace), "--counters", str(counters)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    shadow = json.loads(counters.read_text())["shadow"]
    assert sum(c["tries"] for c in shadow.values()) == trace.read_text().count("\nSHADOW ") > 0
    uci_trace = tmp_path / "u.log"
    run = subprocess.run([sys.executable, "-m", "typhoon_py", "uci", "--treedump", str(uci_trace)],
                         input="uci\nsetoption name Shadow value true\nposition startpos\ngo depth 3\n",
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "option name Shadow type check default false" in run.stdout and "bestmove" in run.stdout
    text = uci_trace.read_text()
    assert "\nSHADOW " in text
    kept = "".join(line for line in text.splitlines(True) if not line.startswith("SHADOW "))
    plain = tmp_path / "p.log"
    subprocess.run([sys.executable, "-m", "typhoon_py", "uci", "--treedump", str(plain)],
                   input="uci\nposition startpos\ngo depth 3\n", capture_output=True, text=True,
                   timeout=120, check=True)
    assert kept == plain.read_text()


# Limits at which the stop comes inside a reduced move's subtree, whose lines are held back for its SHADOW
# line (checked: dropping them on a stop fails each case).
@pytest.mark.parametrize("profile,limit", [("typhoon", 45000), ("crafty", 10000), ("stockfish", 2500)])
def test_a_node_limit_stops_both_searches_at_the_same_line(profile, limit):
    """``go nodes``: the main search stops at the same node with the shadow on (its searches are not
    counted), so the trace without the SHADOW lines is the one without --shadow, up to the stop -- also
    the lines of a reduced move's subtree that were held back for its SHADOW line when the stop came."""
    pid = "kiwipete"
    texts = []
    for shadow in (False, True):
        config = dataclasses.replace(make_config(profile), shadow=shadow)
        buf = io.StringIO()
        outcome = run_search(POSITIONS[pid].board, 8, config, buf, pid, node_limit=limit)
        assert outcome.aborted and outcome.depth >= 1
        texts.append(buf.getvalue())
    off, on = texts
    assert "SHADOW " in on
    assert "".join(line for line in on.splitlines(True) if not line.startswith("SHADOW ")) == off

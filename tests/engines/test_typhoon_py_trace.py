"""typhoon_py's traces follow docs/TREEDUMP_FORMAT.md and agree with its own counters and with the parser."""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import NULL_TOKEN, read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_batch, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
PROFILES = ("typhoon", "stockfish", "crafty")
UNIT = {"typhoon": 64, "stockfish": 1, "crafty": 1}
VOCAB = {
    "typhoon": {"FULL", "LMR", "LMP", "NMP", "EXT", "NULLBAILOUT"},
    "stockfish": {"FULL", "LMR", "LMR-RESEARCH", "FP-QUIET", "FP-CAP", "SEE-QUIET", "SEE-CAP", "HIST-PRUNE",
                  "PROBCUT", "NMP", "EXT"},
    "crafty": {"FULL", "LMR", "LMR-RESEARCH", "LMP", "FP-QUIET", "NMP", "EXT"},
}
CASES = [(p, pol, scope) for p in PROFILES for pol, scope in
         (("profile", "move"), ("see-history", "move"), ("profile", "node"))]


def _trace(pid: str, depth: int, profile: str, policy: str = "profile", scope: str = "move"):
    pos = POSITIONS[pid]
    buf = io.StringIO()
    outcome = run_search(pos.board, depth, make_config(profile, policy, scope), buf, pos.id, pos.phase)
    return buf.getvalue(), outcome


@pytest.mark.parametrize("profile,policy,scope", CASES)
def test_trace_well_formed_and_counts_match(profile, policy, scope):
    for pid, depth in (("tactical-f6f7", 3), ("rook-endgame", 4)):
        text, outcome = _trace(pid, depth, profile, policy, scope)
        (search,) = read_trace(text)
        assert search.header["engine"] == profile and int(search.header["unit"]) == UNIT[profile]
        assert search.header["id"] == pid and search.header["fen"] == POSITIONS[pid].board.fen()
        results = search.tagged("RESULT")
        (end,) = search.tagged("END")
        # Node counts: RESULT lines == END nodes == the engine's counters.
        assert len(results) == int(end["nodes"]) == outcome.nodes > 0
        assert dict(search.acts()) == {k: v for k, v in outcome.acts.items() if v}
        assert len(search.tagged("ITER")) == outcome.iterations == depth
        assert [int(g["d"]) for g in search.tagged("ITER")] == list(range(1, depth + 1))
        # The last line is END, and the root RESULT closes every iteration.
        assert search.lines[-1][0] == "END"
        assert sum(1 for g in results if g["path"] == "-") == depth
        # Acts stay within the dialect's vocabulary (see-history adds LMR-RESEARCH anywhere).
        allowed = VOCAB[profile] | ({"LMR-RESEARCH"} if policy == "see-history" else set())
        assert set(search.acts()) <= allowed


@pytest.mark.parametrize("profile", PROFILES)
def test_paths_replay_legally_and_fields_are_consistent(profile):
    text, _ = _trace("kiwipete", 3, profile)
    (search,) = read_trace(text)
    root = chess.Board(search.header["fen"])
    cache: dict = {}
    unit = UNIT[profile]
    null = NULL_TOKEN[profile]
    for tag, g in search.lines:
        if tag not in ("MOVE", "RESULT"):
            continue
        path = g["path"]
        ply = int(g["ply"])
        assert ply == (0 if path == "-" else len(path.split("/")))
        resolve_path(root, path, profile, cache)
        if tag == "MOVE":
            assert int(g["d"]) > 0 and (unit == 1 or int(g["d"]) % 16 == 0)  # typhoon: quarter plies
            last = path.split("/")[-1]
            if g["act"] in ("NMP", "NULLBAILOUT"):
                assert last == null and g["mn"] == "0"
            else:
                assert last != null and int(g["mn"]) >= 1
            if g["act"] in ("LMR", "NMP"):
                assert int(g["red"]) > 0 and g["nd"] is not None
            if g["act"] in ("FULL", "LMR", "EXT", "LMR-RESEARCH", "NMP", "PROBCUT"):
                assert g["nd"] is not None
            else:
                assert g["nd"] is None  # pruned: not searched
            if g["act"] == "EXT":
                assert int(g["nd"]) == int(g["d"])


def test_typhoon_depths_are_ticks_and_reductions_quarter_plies():
    text, outcome = _trace("tactical-f6f7", 4, "typhoon")
    (search,) = read_trace(text)
    reds = [int(g["red"]) for g in search.tagged("MOVE") if g["act"] == "LMR"]
    assert reds and all(r >= 64 and r % 16 == 0 for r in reds)
    assert all(int(g["d"]) + 0 == int(g["nd"]) + 64 + int(g["red"])
               for g in search.tagged("MOVE") if g["act"] == "LMR" and int(g["nd"]) > 0)


@pytest.mark.parametrize("profile", ["crafty", "typhoon"])
def test_prune_scope_node_abandons_the_rest_of_the_node(profile):
    def next_after_prunes(scope):
        text, _ = _trace("tactical-f6f7", 3, profile, scope=scope)
        (search,) = read_trace(text)
        lines = search.lines
        followers = Counter()
        for i, (tag, g) in enumerate(lines):
            if tag == "MOVE" and g["act"] in ("LMP", "FP-QUIET"):
                parent = g["path"].rpartition("/")[0] or "-"
                nxt_tag, nxt = lines[i + 1]
                followers["closes" if nxt_tag == "RESULT" and nxt["path"] == parent else "continues"] += 1
        return followers

    node, move = next_after_prunes("node"), next_after_prunes("move")
    assert node["closes"] > 0 and node["continues"] == 0
    assert move["continues"] > 0


def test_see_history_policy_reduces_by_one_ply_and_only_non_first_moves():
    text, outcome = _trace("kiwipete", 4, "stockfish", policy="see-history")
    (search,) = read_trace(text)
    lmr = [g for g in search.tagged("MOVE") if g["act"] == "LMR"]
    assert lmr and all(g["red"] == "1" and int(g["mn"]) > 1 for g in lmr)


def test_batch_trace_is_one_search_per_position():
    ids = ["start", "kiwipete", "rook-endgame"]
    buf = io.StringIO()
    outcomes = run_batch([POSITIONS[i] for i in ids], 3, make_config("crafty"), buf)
    searches = read_trace(buf.getvalue())
    assert [s.header["id"] for s in searches] == ids
    for s, o in zip(searches, outcomes):
        assert len(s.tagged("RESULT")) == o.nodes
        assert dict(s.acts()) == {k: v for k, v in o.acts.items() if v}


parse_core = pytest.importorskip("treediff.parse.core")


@pytest.mark.parametrize("profile,policy,scope", CASES)
def test_parser_counts_equal_engine_counters(tmp_path, profile, policy, scope):
    log = tmp_path / "trace.log"
    ids = ["tactical-f6f7", "start", "pawn-endgame"]
    with open(log, "w", encoding="utf-8") as fh:
        outcomes = run_batch([POSITIONS[i] for i in ids], 3, make_config(profile, policy, scope), fh)
    result = parse_core.parse_logs([log])
    # Read columns as Python lists: independent of how dictionary chunks convert to pandas.
    rec = {name: result.records.column(name).to_pylist() for name in ("search", "tag", "act", "problem", "position")}
    srch = {name: result.searches.column(name).to_pylist()
            for name in ("search", "result_nodes", "end_nodes", "iterations", "position")}
    assert all(p is None for p in rec["problem"])
    assert srch["search"] == list(range(len(ids)))
    for k, o in enumerate(outcomes):
        rows = [i for i, s in enumerate(rec["search"]) if s == k]
        acts = Counter(rec["act"][i] for i in rows if rec["tag"][i] == "MOVE")
        assert dict(acts) == {a: n for a, n in o.acts.items() if n}
        assert sum(1 for i in rows if rec["tag"][i] == "RESULT") == o.nodes
        assert srch["result_nodes"][k] == srch["end_nodes"][k] == o.nodes
        assert srch["iterations"][k] == o.iterations
        assert srch["position"][k] == ids[k]
    if policy == "profile":
        assert not result.warnings, result.warnings


def test_node_san_equals_python_chess_san_without_suffix():
    from typhoon_py.search import _NodeSan

    fens = [p.board.fen() for p in POSITIONS.values()] + [
        "7k/8/8/1Q3Q2/8/1Q3Q2/8/K7 w - - 0 1",          # four queens: file, rank and square disambiguation
        "4k3/8/8/8/8/8/R6R/4K1N1 w - - 0 1",             # rooks on one rank
        "4k3/8/8/R7/8/R7/8/4K3 w - - 0 1",               # rooks on one file
        "r3k2r/1P6/8/2pP4/8/8/8/R3K2R w KQkq c6 0 1",    # castling, en passant, promotion with capture
    ]
    checked = 0
    for fen in fens:
        board = chess.Board(fen)
        moves = list(board.legal_moves)
        san = _NodeSan(board, moves)
        for m in moves:
            assert san(m) == board.san(m).rstrip("+#"), (fen, m)
            checked += 1
    assert checked > 500

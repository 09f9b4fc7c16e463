"""The stockfish profile's Stockfish 15 mechanisms, checked from the trace against the engine's
own counters and by hand-checkable positions (docs/ENGINE.md, "stockfish")."""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import chess
import pytest

from support.typhoon_trace_tools import move_forces_mate_after, read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
PROFILES = ("typhoon", "stockfish", "crafty")
#: The acts of kind PRUNE in the stockfish dialect (docs/TREEDUMP_FORMAT.md).
PRUNE_ACTS = {"FP-QUIET", "FP-CAP", "SEE-QUIET", "SEE-CAP", "HIST-PRUNE", "SKIP-QUIETS"}
MATE = 31000

# Mate in 2 (3 plies): 1.Ra7 (any) 2.Rb8#.  The profile used to find it only at depth 6.
TWO_ROOKS = "6k1/8/8/8/8/8/R7/1R4K1 w - - 0 1"
# Mate in 2: 1.Kf7 Kh7 2.Rh1#; the profile used to prefer a mate in 3 at depth 5.
KING_AND_ROOK = "7k/8/5K2/8/8/8/8/1R6 w - - 0 1"


def _trace(board: chess.Board, depth: int, **options):
    buf = io.StringIO()
    outcome = run_search(board, depth, make_config("stockfish", **options), buf)
    (search,) = read_trace(buf.getvalue())
    return search, outcome


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("fen", [TWO_ROOKS, KING_AND_ROOK])
def test_mates_in_two_are_found_at_depth_5(profile, fen):
    board = chess.Board(fen)
    outcome = run_search(board, 5, make_config(profile))
    assert outcome.score == MATE - 3  # mate with the third ply from the root
    board.push(outcome.best_move)
    assert move_forces_mate_after(board, 2)  # brute force, independent of the engine


def test_no_pruning_record_in_a_pawn_ending():
    board = POSITIONS["pawn-endgame"].board
    # a pure pawn ending: kings and pawns only
    assert not board.occupied & ~(board.pawns | board.kings)
    for depth in (5, 6):
        search, outcome = _trace(board, depth, trace_silent=True)
        acts = search.acts()
        assert not set(acts) & PRUNE_ACTS, acts
        assert "skip-quiets" not in outcome.silent
        assert acts["FULL"] > 100  # moves were decided, just never pruned


def _iterations(search):
    """The trace's lines split by ITER: {iteration: [(tag, fields), ...]}."""
    out: dict[int, list] = {}
    it = 0
    for tag, g in search.lines:
        if tag == "ITER":
            it = int(g["d"])
            out[it] = []
        elif it:
            out[it].append((tag, g))
    return out


def _verification_visits(lines) -> int:
    """RESULTs of a node (not the root) that another RESULT of the same node follows in the
    iteration without any MOVE line entering that node in between, at (d - 1) / 2 plies of
    the later one: the nested verification visits.  (A PVS re-search also has no MOVE line
    but the same depth; an LMR re-search has its LMR-RESEARCH line.)"""
    found = 0
    last_result: dict[str, int] = {}   # path -> depth of its latest RESULT not yet followed by an entry
    for tag, g in lines:
        path = g.get("path")
        if tag == "MOVE":
            last_result.pop(path, None)  # a new entry into ``path``
        elif tag == "RESULT" and path != "-":
            d = int(g["d"])
            earlier = last_result.get(path)
            if earlier is not None and earlier == (d - 1) // 2 and earlier < d:
                found += 1
            last_result[path] = d
    return found


def test_aspiration_and_verification_visits_equal_the_counters():
    checked = Counter()
    for pid in ("kiwipete", "italian", "symmetric-italian"):
        search, outcome = _trace(POSITIONS[pid].board, 6)
        iters = _iterations(search)
        roots = {d: [g for t, g in lines if t == "RESULT" and g["path"] == "-"] for d, lines in iters.items()}
        # Aspiration: every extra root visit of an iteration is one re-search; the last is inside the window.
        extra = sum(len(r) - 1 for r in roots.values())
        assert extra == outcome.silent.get("aspiration-research", 0)
        for d, rs in roots.items():
            assert rs[-1]["bound"] == "exact"
            for prev, nxt in zip(rs, rs[1:]):
                # a fail high searches the root again one ply shallower than the last
                if prev["bound"] == "lower":
                    assert int(nxt["d"]) == int(prev["d"]) - 1 or int(prev["d"]) == 1
                assert int(nxt["d"]) <= d
        checked["aspiration"] += extra
        # Verification: nested, shallower visits of a node, counted by the engine.
        visits = sum(_verification_visits(lines) for lines in iters.values())
        assert visits == outcome.silent.get("verification", 0)
        checked["verification"] += visits
        # Multi-cut: a node that returned right after its verification, with the verification's beta.
    assert checked["aspiration"] > 0 and checked["verification"] > 0


parse_core = pytest.importorskip("treediff.parse.core")


def test_parser_visits_per_node_equal_the_engine_counters(tmp_path):
    """treediff numbers the visits (parse/visits.py): the root's visits beyond one per iteration
    are the aspiration re-searches; a node's visit followed by a deeper visit of it with no MOVE
    line entering the node in between is a verification visit (re-searches of a move have their
    own MOVE line, or the same depth for a PVS re-search)."""
    log = tmp_path / "sf.log"
    pos = POSITIONS["kiwipete"]
    with open(log, "w", encoding="utf-8") as fh:
        outcome = run_search(pos.board, 6, make_config("stockfish"), fh, pos.id)
    rec = parse_core.parse_logs([log]).records.to_pylist()
    results = [r for r in rec if r["tag"] == "RESULT"]
    assert len(results) == outcome.nodes
    root_visits = Counter()
    for r in results:
        if r["ply"] == 0:
            root_visits[r["iter"]] = max(root_visits[r["iter"]], r["visit"])
    assert sum(v - 1 for v in root_visits.values()) == outcome.silent.get("aspiration-research", 0) > 0
    open_visit: dict = {}  # (iter, path) -> (visit, depth) of the latest RESULT not followed by an entry
    nested = 0
    for r in rec:
        key = (r["iter"], r["path"])
        if r["tag"] == "MOVE":
            open_visit.pop(key, None)
        elif r["tag"] == "RESULT" and r["ply"]:
            prev = open_visit.get(key)
            if prev is not None:
                assert r["visit"] == prev[0] + 1  # the parser numbers visits in RESULT order
                if prev[1] < r["depth"]:
                    nested += 1
            open_visit[key] = (r["visit"], r["depth"])
    assert nested == outcome.silent.get("verification", 0) > 0


def test_mn_counts_only_considered_moves_and_trace_silent_writes_the_skips():
    for pid in ("italian", "kiwipete"):
        plain, outcome = _trace(POSITIONS[pid].board, 5)
        silent, outcome_s = _trace(POSITIONS[pid].board, 5, trace_silent=True)
        assert outcome_s.nodes == outcome.nodes  # the same search, only written differently
        skips = outcome.silent["skip-quiets"]
        assert skips > 0 and silent.acts()["SKIP-QUIETS"] == skips == outcome_s.acts["SKIP-QUIETS"]
        assert "SKIP-QUIETS" not in plain.acts()
        # No gaps: per node visit (the MOVE lines between two RESULTs of one node's children are
        # not needed: mn restarts per visit), the considered moves are numbered 1, 2, 3, ...
        for search in (plain, silent):
            seq: dict[str, list[int]] = {}
            for tag, g in search.lines:
                if tag == "RESULT":
                    node = g["path"]
                    got = seq.pop(node, None)
                    if got:
                        assert got == list(range(1, len(got) + 1)), (node, got)
                elif tag == "MOVE" and g["act"] not in ("NMP", "PROBCUT", "LMR-RESEARCH", "SKIP-QUIETS"):
                    node = g["path"].rpartition("/")[0] or "-"
                    seq.setdefault(node, []).append(int(g["mn"]))


def test_singular_extensions_extend_the_tt_move_and_checks_are_not_skipped():
    search, outcome = _trace(POSITIONS["french-structure"].board, 5)
    root = chess.Board(search.header["fen"])
    cache: dict = {}
    ext = [g for g in search.tagged("MOVE") if g["act"] == "EXT"]
    assert ext and outcome.silent.get("verification", 0) > 0
    for g in ext:
        # the TT move (first) extended by one or two plies; no check extension below d = 10
        assert g["mn"] == "1" and int(g["nd"]) in (int(g["d"]), int(g["d"]) + 1)
    # Move-count pruning never drops a check: every SKIP-QUIETS move is a quiet non-check.
    search, _ = _trace(POSITIONS["kiwipete"].board, 4, trace_silent=True)
    root = chess.Board(search.header["fen"])
    for g in search.tagged("MOVE"):
        if g["act"] == "SKIP-QUIETS":
            parent = g["path"].rpartition("/")[0] or "-"
            before = resolve_path(root, parent, "stockfish", cache)
            move = chess.Move.from_uci(g["path"].rsplit("/", 1)[-1])
            assert not before.gives_check(move) and not before.is_capture(move) and not move.promotion


def test_parser_reads_skip_quiets_as_kind_prune(tmp_path):
    log = tmp_path / "silent.log"
    pos = POSITIONS["italian"]
    with open(log, "w", encoding="utf-8") as fh:
        outcome = run_search(pos.board, 5, make_config("stockfish", trace_silent=True), fh, pos.id)
    result = parse_core.parse_logs([log])
    acts = result.records.column("act").to_pylist()
    kinds = result.records.column("kind").to_pylist()
    skip_kinds = Counter(k for a, k in zip(acts, kinds) if a == "SKIP-QUIETS")
    assert skip_kinds == Counter({"PRUNE": outcome.silent["skip-quiets"]})
    assert not result.warnings, result.warnings

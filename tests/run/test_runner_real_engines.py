"""Real engines: the reference engine typhoon_py over both protocols, Debian's stockfish over UCI.

Node counts are checked against typhoon_py's own counters, produced by a
separate ``typhoon_py search --counters`` process (not by the runner).
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from support.runner_helpers import START, TACTIC, stockfish_or_skip, typhoon_py_or_skip
from treediff.run.engines import presets
from treediff.model.positions import Position
from treediff.run.search import Limits, run_search
from treediff.run.task import analyze

DEPTH = 3
LIMITS = Limits(timeout=30)


def _own_counters(profile: str, fen: str, depth: int, tmp_path) -> dict:
    counters = tmp_path / f"{profile}.json"
    subprocess.run([sys.executable, "-m", "typhoon_py", "search", "--profile", profile, "--fen", fen,
                    "--depth", str(depth), "--counters", str(counters), "--no-treedump"],
                   check=True, capture_output=True, timeout=60)
    return json.loads(counters.read_text())


def _search(spec, tmp_path, fen=TACTIC, depth=DEPTH, limits=LIMITS):
    work = tmp_path / f"work-{spec.name.replace(':', '-')}-{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    out = run_search(spec, fen, depth, work, limits)
    return out, analyze(spec, Position("tactic", fen), depth, out)


@pytest.mark.parametrize("name, profile, protocol", [
    ("typhoon_py", "typhoon", "xboard"),
    ("typhoon_py:stockfish", "stockfish", "uci"),
    ("typhoon_py:crafty", "crafty", "xboard"),
])
def test_typhoon_py_nodes_match_its_own_counters(name, profile, protocol, tmp_path, no_leftovers):
    typhoon_py_or_skip()
    spec = presets()[name]
    assert spec.protocol.value == protocol
    out, analysis = _search(spec, tmp_path)
    assert analysis.ok, analysis.detail
    row = analysis.search_row
    own = _own_counters(profile, TACTIC, DEPTH, tmp_path)
    assert row["result_nodes"] == own["nodes"]
    assert row["end_nodes"] == own["nodes"] and row["max_iter"] == DEPTH
    assert analysis.contexts == 1
    tags = analysis.records.column("tag").to_pylist()
    assert tags.count("MOVE") == sum(own["acts"].values())


@pytest.mark.parametrize("name, guard", [("typhoon_py", "init"), ("typhoon_py:crafty", "pre")])
def test_typhoon_py_ponder_contamination(name, guard, tmp_path, no_leftovers):
    """Without easy / ponder off the trace holds a second context (the ponder search); with it, one."""
    typhoon_py_or_skip()
    linger = Limits(timeout=30, linger=0.5)
    safe = presets()[name]
    unsafe = replace(safe, **{guard: ()})
    _, clean = _search(safe, tmp_path, depth=2, limits=linger)
    out, dirty = _search(unsafe, tmp_path, depth=2, limits=linger)
    assert clean.ok and clean.contexts == 1
    assert "ctx=ponder" in out.trace_path.read_text()
    assert dirty.contexts == 2
    assert any("several search contexts" in w for w in dirty.warnings)
    # The kept (first) context is the real search: the same numbers as the clean run.
    assert dirty.search_row["result_nodes"] == clean.search_row["result_nodes"]


def test_stockfish_reaches_depth_every_time(tmp_path, no_leftovers):
    """The closing-pipe trap cannot happen: stdin stays open, every search reaches the depth, identically."""
    stockfish = stockfish_or_skip()
    spec = replace(presets()["stockfish"], argv=(stockfish,))
    runs = [_search(spec, tmp_path, depth=12) for _ in range(8)]
    for out, analysis in runs:
        assert analysis.ok, analysis.detail
        assert out.engine_depth == 12 and out.bestmove
        row = analysis.search_row
        assert row["node_source"] == "engine" and row["max_iter"] == 12
        iters = json.loads(row["iter_nodes"])
        assert [d for d, _ in iters] == list(range(1, 13))
        assert all(a < b for (_, a), (_, b) in zip(iters, iters[1:]))  # counts grow per iteration
    assert len({a.search_row["end_nodes"] for _, a in runs}) == 1  # one thread, same hash: identical
    assert runs[0][1].search_row["end_nodes"] > 1000


def test_stockfish_start_position(tmp_path, no_leftovers):
    stockfish = stockfish_or_skip()
    spec = replace(presets()["stockfish"], argv=(stockfish,))
    out, analysis = _search(spec, tmp_path, fen=START, depth=6)
    assert analysis.ok and out.engine_depth == 6
    assert "setoption name Threads value 1" in out.transcript

"""Report numbers against the reference engine's own counters (typhoon_py), through the real parser.

typhoon_py counts every decision it makes (``acts``) and its non-quiescence
nodes independently of the trace it writes; the report, reading only the
trace, must reproduce them.  With ``--prune-scope node`` a prune abandons the
rest of the node, so the scope table must show 0 % continued; with the
default ``move`` scope it must not.
"""
from __future__ import annotations

import io

import pytest

chess = pytest.importorskip("chess")
engine = pytest.importorskip("typhoon_py.engine")
pytest.importorskip("treediff.parse.core")

from treediff.parse.source import open_source  # noqa: E402
from treediff.report.core import build_report  # noqa: E402

FEN = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"


def traced_report(tmp_path, profile: str, prune_scope: str = "move", depth: int = 3):
    buf = io.StringIO()
    outcome = engine.run_search(chess.Board(FEN), depth, engine.make_config(profile, prune_scope=prune_scope),
                                trace=buf, position_id="ecm", phase="middlegame")
    log = tmp_path / f"{profile}-{prune_scope}.log"
    log.write_text(buf.getvalue())
    return outcome, build_report(open_source(log))


@pytest.mark.parametrize("profile", ["typhoon", "stockfish", "crafty"])
def test_acts_and_nodes_match_engine_counters(tmp_path, profile):
    outcome, rep = traced_report(tmp_path, profile)
    acts = rep["acts"]
    assert dict(zip(acts["act"], acts["count"])) == {k: v for k, v in outcome.acts.items() if v}
    nodes = rep["nodes"].iloc[0]
    assert nodes["nodes"] == outcome.nodes
    assert nodes["end_nodes"] == outcome.nodes
    lmr = rep["lmr"].iloc[0]
    assert lmr["lmr"] == outcome.acts.get("LMR", 0)
    assert lmr["moves"] == sum(outcome.acts.values())
    ebf = rep["ebf"].iloc[0]
    assert ebf["depth_min"] == outcome.depth
    assert ebf["ebf"] == pytest.approx(outcome.nodes ** (1 / outcome.depth))


def test_scope_tells_break_from_continue(tmp_path):
    _, node_rep = traced_report(tmp_path, "crafty", "node")
    _, move_rep = traced_report(tmp_path, "crafty", "move")
    node_scope = node_rep["scope"].set_index("act")
    move_scope = move_rep["scope"].set_index("act")
    assert node_scope.loc["(all)", "nodes"] > 0
    assert node_scope.loc["(all)", "continued"] == 0
    assert move_scope.loc["(all)", "pct_continued"] > 50


TRACES = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "traces"


@pytest.mark.parametrize("profile", ["typhoon", "stockfish", "crafty"])
def test_batch_fixture_per_position_matches_counters(profile):
    """The committed 3-position batch traces: acts and nodes per position equal each search's counters."""
    import json

    from click.testing import CliRunner

    from treediff.cli import main

    log = TRACES / f"{profile}_batch3.log"
    counters = json.loads((TRACES / f"{profile}_batch3.counters.json").read_text())
    res = CliRunner().invoke(main, ["report", str(log), "--by", "position", "--table", "acts,nodes,ebf",
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    tables = {t["name"]: t for t in json.loads(res.output)["tables"]}
    positions = list(dict.fromkeys(r["position"] for r in tables["nodes"]["rows"]))
    assert len(positions) == len(counters)
    for position, expected in zip(positions, counters):
        acts = {r["act"]: r["count"] for r in tables["acts"]["rows"] if r["position"] == position}
        assert acts == expected["acts"], position
        nodes = next(r for r in tables["nodes"]["rows"] if r["position"] == position)
        assert nodes["nodes"] == expected["nodes"]
        ebf = next(r for r in tables["ebf"]["rows"] if r["position"] == position)
        assert ebf["depth_min"] == expected["iterations"]

"""report --by ply / --by depth, report --under PATH, compare of three inputs, and the fanout never 0.

Hand counts from fixtures/hand/report_stockfish.log (p1: iterations 1-3, p2: iterations 1-2):

--by ply (the deciding node's ply: a MOVE record's ply - 1, a RESULT's ply)
  RESULT records: ply 0: p1 3 (one root per iteration) + p2 2 = 5;
                  ply 1: p1 it2 e2e4, d2d4 + it3 e2e4, d2d4, g1f3 = 5, p2 it2 e4d5, f2e3 = 2 -> 7;
                  ply 2: p1 it3 e2e4/e7e5, d2d4/d7d5 = 2.
  MOVE records decided at the root (ply=1): p1 4 + 5 + 5 = 14, p2 3 + 4 = 7 -> 21; at ply 1: p1 0 + 5 + 9 = 14
  (it3: e2e4/{0000, e7e5, d7d5, a7a6}, d2d4/{d7d5, g8f6}, g1f3/{d7d5, a7a6, h7h6}), p2 0 + 3 = 3 -> 17;
  at ply 2: p1 it3 e2e4/e7e5/{g1f3, d1h5, a2a3}, d2d4/d7d5/c2c4 = 4.  21 + 17 + 4 = 42.
--by depth (the deciding node's remaining depth, whole plies: the record's d)
  MOVE records: d=1: p1 4 + 5 + 7 = 16, p2 3 + 3 = 6 -> 22; d=2: p1 5 + 6 = 11, p2 4 -> 15; d=3: p1 5.
  RESULT records: d=1: p1 1 + 2 + 3 = 6, p2 1 + 2 = 3 -> 9; d=2: p1 1 + 2, p2 1 -> 4; d=3: p1 1.
--under e2e4 (records whose path is e2e4 or below it; only p1 has it)
  MOVE: it1 e2e4; it2 e2e4, e7e5, a7a6, h7h6; it3 e2e4, 0000, e7e5, e7e5/g1f3, e7e5/d1h5, e7e5/a2a3, d7d5,
  a7a6 -> 13 (FULL 6, HIST-PRUNE 2, FP-QUIET 2, SEE-QUIET 1, NMP 1, LMR 1);
  RESULT: it2 e2e4; it3 e2e4/e7e5, e2e4 -> 3.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.tracebuild import concat, read_fixture
from treediff.cli import main
from treediff.report.core import report_frames

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def by_key(frame, key, column):
    return {int(k): int(v) for k, v in zip(frame[key], frame[column])}


@pytest.fixture(scope="module")
def stockfish():
    return read_fixture(FIX / "report_stockfish.log")


def test_by_ply(stockfish):
    rep = report_frames(*stockfish, tables=["nodes", "acts"], by="ply")
    assert by_key(rep["nodes"], "ply", "nodes") == {0: 5, 1: 7, 2: 2}
    assert by_key(rep["nodes"], "ply", "searches") == {0: 2, 1: 2, 2: 1}
    kinds = rep["kinds"].drop_duplicates("ply")
    assert by_key(kinds, "ply", "moves") == {0: 21, 1: 17, 2: 4}
    assert list(rep["acts"].columns[:2]) == ["engine", "ply"]


def test_by_depth(stockfish):
    rep = report_frames(*stockfish, tables=["nodes", "acts", "lmr"], by="depth")
    assert by_key(rep["nodes"], "depth", "nodes") == {1: 9, 2: 4, 3: 1}
    assert by_key(rep["lmr"], "depth", "moves") == {1: 22, 2: 15, 3: 5}
    # LMR records by their node's depth: iteration 2 d2d4, g1f3 (d=2); iteration 3 d2d4, g1f3 (d=3),
    # e2e4/d7d5, d2d4/g8f6 (d=2).
    assert by_key(rep["lmr"], "depth", "lmr") == {1: 0, 2: 4, 3: 2}


def test_by_ply_with_iter_and_phase(stockfish):
    rep = report_frames(*stockfish, tables=["nodes"], by="phase,iter,ply")
    nodes = rep["nodes"]
    assert list(nodes.columns[:4]) == ["engine", "phase", "iter", "ply"]
    row = nodes[(nodes["phase"] == "opening") & (nodes["iter"] == 3) & (nodes["ply"] == 1)]
    assert row["nodes"].tolist() == [3]  # p1 iteration 3: e2e4, d2d4, g1f3


def test_by_ply_cli_and_ebf_ignores_it(tmp_path):
    res = run("report", FIX / "report_stockfish.log", "--by", "ply", "--table", "nodes,ebf", "--format", "json")
    assert res.exit_code == 0, res.output
    tables = {t["name"]: t for t in json.loads(res.stdout)["tables"]}
    assert [r["nodes"] for r in tables["nodes"]["rows"]] == [5, 7, 2]
    assert tables["ebf"]["keys"] == ["engine"] and len(tables["ebf"]["rows"]) == 1  # search-level


@pytest.mark.parametrize("path", ["e2e4", "e4", " e2e4 / "])
def test_under(path):
    res = run("report", FIX / "report_stockfish.log", "--under", path, "--table", "nodes,acts", "--format", "json")
    assert res.exit_code == 0, res.output
    tables = {t["name"]: t for t in json.loads(res.stdout)["tables"]}
    (nodes,) = tables["nodes"]["rows"]
    assert (nodes["searches"], nodes["nodes"], nodes["end_nodes"]) == (1, 3, None)
    acts = {r["act"]: r["count"] for r in tables["acts"]["rows"]}
    assert acts == {"FULL": 6, "HIST-PRUNE": 2, "FP-QUIET": 2, "SEE-QUIET": 1, "NMP": 1, "LMR": 1}


def test_under_errors():
    res = run("report", FIX / "report_stockfish.log", "--under", "a2a4")
    assert res.exit_code == 2 and "no search has records at or below" in res.output
    res = run("report", FIX / "report_stockfish.log", "--under", "Qh5")
    assert res.exit_code == 2 and "'Qh5' is not a legal move" in res.output


def test_compare_three_inputs(tmp_path):
    third = tmp_path / "again.log"
    shutil.copy(FIX / "report_stockfish.log", third)
    res = run("compare", FIX / "report_stockfish.log", FIX / "report_crafty.log", third, "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["labels"] == ["stockfish (report_stockfish.log)", "crafty", "stockfish (again.log)"]
    tables = {t["name"]: t for t in doc["tables"]}
    nodes = {r["position"]: r for r in tables["nodes"]["rows"]}
    # stockfish p1 10, p2 4; crafty p1 10, p2 3 (RESULT records); every side reached depths 3 and 2.
    p1, p2, total = nodes["p1"], nodes["p2"], nodes["(all)"]
    assert (p1["nodes_a"], p1["nodes_b"], p1["nodes_c"]) == (10, 10, 10)
    assert (p2["depth_a"], p2["depth_b"], p2["depth_c"]) == (2, 2, 2)
    assert (p2["ratio_b"], p2["ratio_c"]) == (pytest.approx(4 / 3), 1.0)
    assert (total["nodes_a"], total["nodes_b"], total["nodes_c"]) == (14, 13, 14)
    assert total["ratio_b"] == pytest.approx(14 / 13) and total["ratio_c"] == 1.0
    assert "ratio" not in tables["nodes"]["columns"]
    kinds = {r["kind"]: r for r in tables["kinds"]["rows"]}
    assert (kinds["PRUNE"]["count_a"], kinds["PRUNE"]["count_b"], kinds["PRUNE"]["count_c"]) == (16, 12, 16)
    assert [r["side"] for r in tables["lmr"]["rows"]] == doc["labels"]
    assert any("divergences are aligned for two inputs" in n for n in doc["notes"])


def test_fanout_is_never_zero_with_several_engines():
    # typhoon's final iteration reaches ply 3, crafty's ply 2: crafty's ply-2 fanout is undefined, not 0.
    typhoon, crafty = read_fixture(FIX / "report_typhoon.log"), read_fixture(FIX / "report_crafty.log")
    for pairs in ((typhoon, crafty), (crafty,), (crafty, typhoon)):
        ply = report_frames(*concat(*pairs), tables=["ebf"])["ebf_ply"]
        last = ply[(ply["engine"] == "crafty") & (ply["ply"] == 2)]["fanout"]
        assert len(last) == 1 and math.isnan(last.iloc[0])
        assert not (ply["fanout"] == 0).any()

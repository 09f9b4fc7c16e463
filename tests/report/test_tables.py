"""Every report table against answers counted by hand from fixtures/hand/report_*.log.

How the expectations were obtained (by reading the logs, not by running code):

report_typhoon.log (one search, p1, iterations 1-3, unit 64)
  MOVE records: iter 1: 4, iter 2: 6, iter 3: 18 -> 28.
  FULL 2+3+6 = 11, LMP 2+2+6 = 10, LMR 0+1+3 = 4, NMP 1, EXT 1, NULLBAILOUT 1.
  Null-move records: e2e4/(null) (NMP) and d2d4/(null) (NULLBAILOUT) -> 26 real moves.
  LMR reductions (ticks/64): 16, 16, 64, 80 -> 0.25, 0.25, 1.0, 1.25 plies.
  RESULT records: iter 1: 1, iter 2: 2, iter 3: 7 -> 10 (END nodes=10).
  Final iteration RESULT plies: ply 0: 1 (root), ply 1: 3 (e2e4, d2d4 twice), ply 2: 2 (e2e4/e7e5,
  d2d4/d7d5), ply 3: 1 (e2e4/e7e5/g1f3, after the EXT).
  LMP node visits: iter1 root (g1f3 then a2a3: continued), iter2 e2e4 (a7a6 last), iter2 root (g1f3 last),
  iter3 e2e4/e7e5 (b1c3 then a2a3: continued), iter3 e2e4 (a7a6 last), iter3 d2d4 2nd visit (h7h6 last),
  iter3 root (c2c4 then a2a3: continued) -> 7 visits, 3 continued.

report_stockfish.log (p1: iterations 1-3; p2: iterations 1-2)
  p1 MOVE 4 + 10 + 18 = 32, p2 MOVE 3 + 7 = 10 -> 42.
  FULL 11+5 = 16, FP-QUIET 8+2 = 10, LMR 6, SEE-QUIET 2+1 = 3, HIST-PRUNE 2+1 = 3, LMR-RESEARCH 2,
  NMP 1, PROBCUT 1.  One null-move record (e2e4/0000) -> 41 real moves.
  LMR reductions: 1, 1 (iter 2), 1, 2, 1, 1 (iter 3) plies.
  RESULT: p1 1 + 3 + 6 = 10, p2 1 + 3 = 4.
  Final-iteration plies: p1 iter 3: ply0 1, ply1 3, ply2 2; p2 iter 2: ply0 1, ply1 2.
  Prune visits (first prune of the visit followed by a sibling?):
    p1 i1 root FP(a2a3)->FP sibling C; p1 i2 e2e4 HIST->FP sibling C, FP->RESULT;
    p1 i2 d2d4 SEE->RESULT; p1 i2 root FP->RESULT; p1 i3 e2e4/e7e5 SEE->FP sibling C, FP->RESULT;
    p1 i3 e2e4 HIST->RESULT; p1 i3 g1f3 FP->FP sibling C; p1 i3 root FP->RESULT;
    p2 i1 root FP->RESULT; p2 i2 e4d5 FP->RESULT; p2 i2 root SEE->HIST sibling C, HIST->RESULT.
  FP-QUIET: 10 prunes, 8 visits, 2 continued; HIST-PRUNE: 3, 3, 1; SEE-QUIET: 3, 3, 2;
  any prune: 16 prunes, 11 visits, 5 continued.

report_crafty.log (p1: iterations 1-3; p2: iterations 1-2), every prune followed by its node's RESULT
  MOVE 25 + 7 = 32: FULL 11+3 = 14, FP-QUIET 5+2 = 7, LMP 4+1 = 5, LMR 2+1 = 3, LMR-RESEARCH 2, NMP 1.
  RESULT: p1 10, p2 3.  Scope: FP-QUIET 7 prunes in 7 visits, LMP 5 in 5, none continued.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from treediff.report.core import report_frames


def one(frame: pd.DataFrame, **match) -> pd.Series:
    sel = np.ones(len(frame), dtype=bool)
    for k, v in match.items():
        sel &= (frame[k].astype("object") == v).to_numpy()
    rows = frame[sel]
    assert len(rows) == 1, f"{match}: {len(rows)} rows in\n{frame}"
    return rows.iloc[0]


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------- acts, kinds

def test_acts_typhoon(typhoon):
    acts = report_frames(*typhoon, tables=["acts"])["acts"]
    assert list(acts["act"]) == ["FULL", "LMP", "LMR", "EXT", "NMP", "NULLBAILOUT"]
    assert list(acts["count"]) == [11, 10, 4, 1, 1, 1]
    assert list(acts["kind"]) == ["SEARCH", "PRUNE", "REDUCE", "EXTEND", "NULL_PROBE", "NODE_CUT"]
    assert acts["pct_of_moves"].tolist() == [approx(100 * c / 28) for c in (11, 10, 4, 1, 1, 1)]
    assert set(acts["moves"]) == {28}


def test_acts_minimal_stockfish(fixtures_dir):
    """The lead's fixture: 9 MOVE lines (FULL 4; FP-QUIET, LMR, LMR-RESEARCH, NMP, SEE-QUIET 1 each)."""
    from support.tracebuild import read_fixture

    rep = report_frames(*read_fixture(fixtures_dir / "minimal_stockfish.log"), tables=["acts", "nodes"])
    acts = rep["acts"]
    assert dict(zip(acts["act"], acts["count"])) == {"FULL": 4, "FP-QUIET": 1, "LMR": 1, "LMR-RESEARCH": 1,
                                                     "NMP": 1, "SEE-QUIET": 1}
    assert one(rep["nodes"], engine="stockfish")["nodes"] == 4  # RESULT lines: 1 + 3


def test_acts_and_kinds_three_engines_side_by_side(three):
    rep = report_frames(*three, tables=["acts"])
    acts, kinds = rep["acts"], rep["kinds"]
    assert list(dict.fromkeys(acts["engine"])) == ["typhoon", "stockfish", "crafty"]
    sf = acts[acts["engine"] == "stockfish"]
    assert list(sf["act"]) == ["FULL", "FP-QUIET", "LMR", "HIST-PRUNE", "SEE-QUIET", "LMR-RESEARCH", "NMP", "PROBCUT"]
    assert list(sf["count"]) == [16, 10, 6, 3, 3, 2, 1, 1]
    cr = acts[acts["engine"] == "crafty"]
    assert dict(zip(cr["act"], cr["count"])) == {"FULL": 14, "FP-QUIET": 7, "LMP": 5, "LMR": 3, "LMR-RESEARCH": 2,
                                                 "NMP": 1}
    assert one(acts, engine="crafty", act="LMP")["pct_of_moves"] == approx(100 * 5 / 32)
    sfk = kinds[kinds["engine"] == "stockfish"]
    # SEARCH 16 and PRUNE 10 + 3 + 3 = 16 tie; ties sort by name.
    assert list(sfk["kind"]) == ["PRUNE", "SEARCH", "REDUCE", "RESEARCH", "NODE_CUT", "NULL_PROBE"]
    assert list(sfk["count"]) == [16, 16, 6, 2, 1, 1]


def test_acts_by_phase_and_iter(stockfish, typhoon):
    acts = report_frames(*stockfish, tables=["acts"], by="phase")["acts"]
    assert one(acts, phase="endgame", act="FULL")["count"] == 5
    assert one(acts, phase="endgame", act="FULL")["pct_of_moves"] == approx(100 * 5 / 10)
    assert one(acts, phase="opening", act="FP-QUIET")["count"] == 8
    assert list(dict.fromkeys(acts["phase"])) == ["opening", "endgame"]
    by_iter = report_frames(*typhoon, tables=["acts"], by="iter")["acts"]
    assert one(by_iter, iter=1, act="LMP")["count"] == 2
    assert one(by_iter, iter=1, act="LMP")["pct_of_moves"] == approx(50.0)
    assert one(by_iter, iter=3, act="LMP")["count"] == 6
    assert set(one(by_iter, iter=2, act="LMR")[["count", "moves"]]) == {1, 6}


# ---------------------------------------------------------------- lmr

def test_lmr_typhoon_quarter_plies(typhoon):
    rep = report_frames(*typhoon, tables=["lmr"])
    row = one(rep["lmr"], engine="typhoon")
    assert (row["moves"], row["real_moves"], row["lmr"]) == (28, 26, 4)
    assert row["admission_pct"] == approx(100 * 4 / 28)
    assert row["admission_pct_real"] == approx(100 * 4 / 26)
    assert row["mean_red"] == approx((0.25 + 0.25 + 1.0 + 1.25) / 4)
    assert row["median_red"] == approx((0.25 + 1.0) / 2)
    # linear interpolation: position 0.9 * 3 = 2.7 between 1.0 and 1.25
    assert row["p90_red"] == approx(1.0 + 0.7 * 0.25)
    assert row["red_missing"] == 0
    assert (row["research"], row["research_pct"]) == (0, 0.0)
    hist = rep["lmr_hist"]
    assert list(hist["reduction_plies"]) == [0.25, 1.0, 1.25]
    assert list(hist["count"]) == [2, 1, 1]
    assert list(hist["pct_of_lmr"]) == [50.0, 25.0, 25.0]


def test_lmr_stockfish_and_crafty(three):
    rep = report_frames(*three, tables=["lmr"])
    sf = one(rep["lmr"], engine="stockfish")
    assert (sf["moves"], sf["real_moves"], sf["lmr"], sf["research"]) == (42, 41, 6, 2)
    assert sf["admission_pct"] == approx(100 * 6 / 42)
    assert sf["admission_pct_real"] == approx(100 * 6 / 41)
    assert sf["mean_red"] == approx(7 / 6)
    assert sf["median_red"] == approx(1.0)
    assert sf["p90_red"] == approx(1.5)  # position 4.5 between 1 and 2
    assert sf["research_pct"] == approx(100 * 2 / 6)
    cr = one(rep["lmr"], engine="crafty")
    assert (cr["moves"], cr["real_moves"], cr["lmr"], cr["research"]) == (32, 31, 3, 2)
    assert cr["research_pct"] == approx(200 / 3)
    hist = rep["lmr_hist"]
    assert one(hist, engine="stockfish", reduction_plies=1.0)["count"] == 5
    assert one(hist, engine="stockfish", reduction_plies=2.0)["pct_of_lmr"] == approx(100 / 6)


def test_lmr_by_phase(stockfish):
    lmr = report_frames(*stockfish, tables=["lmr"], by="phase")["lmr"]
    # p2 (endgame) has no LMR: admission 0 of 10 moves, magnitude undefined.
    end = one(lmr, phase="endgame")
    assert (end["moves"], end["lmr"], end["admission_pct"]) == (10, 0, 0.0)
    assert math.isnan(end["mean_red"]) and math.isnan(end["research_pct"])
    assert one(lmr, phase="opening")["admission_pct"] == approx(100 * 6 / 32)


# ---------------------------------------------------------------- ebf

def test_ebf_typhoon(typhoon):
    rep = report_frames(*typhoon, tables=["ebf"])
    row = one(rep["ebf"], engine="typhoon")
    assert (row["searches"], row["mean_nodes"], row["depth_min"], row["depth_max"]) == (1, 10, 3, 3)
    assert row["ebf"] == approx(10 ** (1 / 3))
    assert row["ebf_geo"] == approx(10 ** (1 / 3))
    assert row["ebf_iter"] == approx(math.sqrt(7 / 1))
    assert row["ebf_fanout"] == approx(math.sqrt(2 / 1))  # (n(ply 2) / n(ply 0)) ^ (1/2)
    it = rep["ebf_iter"]
    assert list(it["iter"]) == [1, 2, 3]
    assert list(it["mean_nodes"]) == [1, 2, 7]
    assert list(it["pairs"]) == [0, 0, 1]
    assert math.isnan(it["ebf_iter"].iloc[0]) and it["ebf_iter"].iloc[2] == approx(math.sqrt(7))
    ply = rep["ebf_ply"]
    assert list(ply["ply"]) == [0, 1, 2, 3]
    assert list(ply["nodes"]) == [1, 3, 2, 1]
    assert ply["fanout"].iloc[:3].tolist() == [approx(3.0), approx(2 / 3), approx(0.5)]
    assert math.isnan(ply["fanout"].iloc[3])


def test_ebf_mixed_depths_and_by_position(stockfish):
    row = one(report_frames(*stockfish, tables=["ebf"])["ebf"], engine="stockfish")
    assert (row["searches"], row["mean_nodes"], row["depth_min"], row["depth_max"]) == (2, 7, 2, 3)
    assert math.isnan(row["ebf"])  # depths differ: the user's formula needs one depth
    assert row["ebf_geo"] == approx(math.exp((math.log(10) / 3 + math.log(4) / 2) / 2))
    assert row["ebf_iter"] == approx(math.sqrt(6))  # only p1 has iterations D and D-2
    assert row["ebf_fanout"] == approx(5 / 2)  # D_min 2: summed n(ply 1) / n(ply 0) = (3 + 2) / (1 + 1)
    by_pos = report_frames(*stockfish, tables=["ebf"], by="position")
    p1, p2 = one(by_pos["ebf"], position="p1"), one(by_pos["ebf"], position="p2")
    assert p1["ebf"] == approx(10 ** (1 / 3)) and p2["ebf"] == approx(2.0)
    assert p1["ebf_fanout"] == approx(math.sqrt(2)) and p2["ebf_fanout"] == approx(2.0)
    assert math.isnan(p2["ebf_iter"])
    it = report_frames(*stockfish, tables=["ebf"])["ebf_iter"]
    assert list(it["searches"]) == [2, 2, 1] and list(it["mean_nodes"]) == [1, 3, 6]


def test_ebf_without_iter_markers_uses_root_result_depth(typhoon):
    records, searches = typhoon
    # Keep only the last iteration and pretend it carried no ITER marker.
    last = records[records["iter"] == 3].copy()
    last["iter"] = 0
    s = searches.copy()
    s["max_iter"] = 0
    s["iterations"] = 0
    s["result_nodes"] = 7
    row = one(report_frames(last, s, tables=["ebf"])["ebf"], engine="typhoon")
    assert row["depth_min"] == 3  # root RESULT d=192 ticks = 3 plies
    assert row["ebf"] == approx(7 ** (1 / 3))
    assert math.isnan(row["ebf_iter"])


def test_ebf_engine_node_source_uses_iter_nodes(typhoon):
    records, searches = typhoon
    eng = searches.copy()
    eng["search"] = 1
    eng["engine"] = pd.array(["ethereal"], dtype="string")
    eng["node_source"] = "engine"
    eng["result_nodes"] = 0
    eng["max_iter"] = 0
    eng["end_nodes"] = 700
    both = pd.concat([searches.assign(iter_nodes=None), eng.assign(iter_nodes="[[1, 20], [2, 60], [3, 200], [4, 700]]")],
                     ignore_index=True)
    rep = report_frames(records, both, tables=["ebf", "nodes"])
    row = one(rep["ebf"], engine="ethereal")
    assert row["node_source"] == "engine"
    assert (row["mean_nodes"], row["depth_min"]) == (700, 4)
    assert row["ebf"] == approx(700 ** 0.25)
    # per-iteration counts are differences of the cumulative ones: 20, 40, 140, 500
    assert row["ebf_iter"] == approx(math.sqrt(500 / 40))
    it = rep["ebf_iter"]
    assert one(it, engine="ethereal", iter=3)["ebf_iter"] == approx(math.sqrt(140 / 20))
    assert math.isnan(row["ebf_fanout"])
    # ethereal's depth 4 (its deepest listed depth) against typhoon's 3: no ratio unless asked for.
    assert math.isnan(one(rep["nodes"], engine="ethereal")["ratio"])
    notes = next(sec.notes for sec in rep.sections if sec.name == "nodes")
    assert any("different depths (depth 4 vs 3)" in n for n in notes), notes
    from treediff.report.table import ReportOptions

    allowed = report_frames(records, both, tables=["nodes"], options=ReportOptions(allow_different_depths=True))
    assert one(allowed["nodes"], engine="ethereal")["ratio"] == approx(70.0)  # 700 / typhoon's 10


# ---------------------------------------------------------------- skips, scope, nodes

def test_skips(three):
    skips = report_frames(*three, tables=["skips"])["skips"]
    sf = skips[skips["engine"] == "stockfish"]
    assert list(sf["act"]) == ["(all)", "FP-QUIET", "HIST-PRUNE", "SEE-QUIET"]
    assert list(sf["count"]) == [16, 10, 3, 3]
    assert sf["pct_of_moves"].tolist() == [approx(100 * c / 42) for c in (16, 10, 3, 3)]
    ty = skips[skips["engine"] == "typhoon"]
    assert list(ty["act"]) == ["(all)", "LMP"] and list(ty["count"]) == [10, 10]
    assert one(skips, engine="crafty", act="(all)")["pct_of_moves"] == approx(100 * 12 / 32)


def test_scope(three):
    scope = report_frames(*three, tables=["scope"])["scope"]
    ty = one(scope, engine="typhoon", act="LMP")
    assert (ty["prunes"], ty["nodes"], ty["continued"]) == (10, 7, 3)
    assert ty["pct_continued"] == approx(300 / 7)
    sf = {a: tuple(one(scope, engine="stockfish", act=a)[["prunes", "nodes", "continued"]])
          for a in ("FP-QUIET", "HIST-PRUNE", "SEE-QUIET", "(all)")}
    assert sf == {"FP-QUIET": (10, 8, 2), "HIST-PRUNE": (3, 3, 1), "SEE-QUIET": (3, 3, 2), "(all)": (16, 11, 5)}
    cr = {a: tuple(one(scope, engine="crafty", act=a)[["prunes", "nodes", "continued"]])
          for a in ("FP-QUIET", "LMP", "(all)")}
    # Crafty's `break`: no prune is ever followed by another decision of its node visit,
    # including the first visit of d4 in iteration 3, which is re-searched afterwards.
    assert cr == {"FP-QUIET": (7, 7, 0), "LMP": (5, 5, 0), "(all)": (12, 12, 0)}


def test_scope_independent_of_record_order(typhoon):
    records, searches = typhoon
    shuffled = records.sample(frac=1.0, random_state=7)
    a = report_frames(records, searches, tables=["scope"])["scope"]
    b = report_frames(shuffled, searches, tables=["scope"])["scope"]
    pd.testing.assert_frame_equal(a, b)


def test_nodes(three):
    nodes = report_frames(*three, tables=["nodes"])["nodes"]
    assert list(nodes["engine"]) == ["typhoon", "stockfish", "crafty"]
    assert list(nodes["searches"]) == [1, 2, 2]
    assert list(nodes["nodes"]) == [10, 14, 13]
    assert list(nodes["end_nodes"]) == [10, 14, 13]  # the END records' own counts
    # typhoon searched p1 only, stockfish and crafty p1 and p2: no common set of positions, so no ratio to typhoon.
    assert nodes["ratio"].iloc[0] == approx(1.0) and nodes["ratio"].iloc[1:].isna().all()
    notes = report_frames(*three, tables=["nodes"]).sections[0].notes
    assert len(notes) == 2 and all("different positions (2 and 1, 1 in common)" in n for n in notes)
    # Depth D per search: p1 3 and p2 2 for both (ITER d=1..3 and d=1..2); typhoon's p1 is also depth 3.
    assert list(nodes["depth_min"]) == [3, 2, 2] and list(nodes["depth_max"]) == [3, 3, 3]
    by_pos = report_frames(*three, tables=["nodes"], by="position")["nodes"]
    assert one(by_pos, engine="crafty", position="p2")["ratio"] == approx(3 / 4)  # stockfish first for p2
    assert one(by_pos, engine="stockfish", position="p1")["ratio"] == approx(1.0)
    by_iter = report_frames(*three, tables=["nodes"], by="iter")["nodes"]
    assert one(by_iter, engine="stockfish", iter=2)["nodes"] == 6  # 3 + 3
    assert one(by_iter, engine="stockfish", iter=3)["mean_nodes"] == 6


def test_bad_by_and_table_are_clear_errors(typhoon):
    from treediff.model.errors import InputError

    with pytest.raises(InputError, match="--by"):
        report_frames(*typhoon, by="colour")
    with pytest.raises(InputError, match="--table"):
        report_frames(*typhoon, tables=["acts", "speed"])

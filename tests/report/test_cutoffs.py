"""The cutoffs table on a hand-counted trace holding every cutoff class (tests/support/analytics_traces.py).

Node visits are the RESULT records: 15.  Cutoff visits (bound=lower), by class, counted on the trace:
  e2e4 (line 8): last decision e2e4/d7d5, FULL, mn 2            -> move, mn 2 (the cutoff by the second move)
  d2d4 (line 12): last decision d2d4/0000, NMP                   -> null
  c2c4 (line 20): last decision c2c4/e7e5 LMR-RESEARCH, mn 2     -> move, mn 2 (the re-search holds it)
  g1f3 verification visit (line 26, d=1): last decision d7d5, mn 1 -> move, mn 1
  g1f3 outer visit (line 27, d=3): previous visit of g1f3 is shallower (1 < 3), entered by the same root
    decision (line 21), ended bound=lower, and the outer visit's last decision (the NMP, line 22) comes before
    it                                                           -> multicut (not null)
  b1c3 (line 29): no decision                                    -> none (a TT cutoff)
So cutoffs 6 (40 % of 15): move 3, null 1, probcut 0, multicut 1, none 1; move cutoffs' mn: 2, 2, 1 ->
mn1 33.3 %, mn2 66.7 %, mn3-4 0, mn5+ 0, mean 5/3.
"""
from __future__ import annotations

import math

import pandas as pd
import pytest

from support.analytics_traces import CUTOFF_CASES, source_of
from treediff.report.core import build_report


@pytest.fixture()
def report(tmp_path):
    return build_report(source_of(tmp_path, CUTOFF_CASES), ["cutoffs"])


def test_cutoff_classes_hand_counted(report):
    frame = report["cutoffs"].set_index("class")
    assert frame.loc["all", "visits"] == 15
    expected = {"all": 6, "move": 3, "null": 1, "probcut": 0, "multicut": 1, "none": 1}
    assert frame["cutoffs"].to_dict() == expected
    assert frame.loc["all", "pct_of_visits"] == pytest.approx(40.0)
    assert frame.loc["move", "pct_of_cutoffs"] == pytest.approx(50.0)
    assert frame.loc["none", "pct_of_cutoffs"] == pytest.approx(100 / 6)


def test_first_move_cutoff_rate_hand_counted(report):
    mn = report["cutoff_mn"].iloc[0]
    assert mn["move_cutoffs"] == 3
    assert mn["mn1_pct"] == pytest.approx(100 / 3)
    assert mn["mn2_pct"] == pytest.approx(200 / 3)
    assert mn["mn3_4_pct"] == 0 and mn["mn5p_pct"] == 0
    assert mn["mean_mn"] == pytest.approx(5 / 3)


def test_by_depth_splits_visits_by_their_result_depth(tmp_path):
    # RESULT depths: d=2 x5 (e7e5, d7d5, g8f6, e7e5 re-search, ...), counted on the trace:
    #   d=0: g1f3/d7d5; d=1: d2d4/0000, c2c4/e7e5 (LMR), g1f3/0000, g1f3 verification;
    #   d=2: e2e4/e7e5, e2e4/d7d5, c2c4/g8f6, c2c4/e7e5 re-search; d=3: e2e4, d2d4, c2c4, g1f3, b1c3; d=4: root.
    r = build_report(source_of(tmp_path, CUTOFF_CASES), ["cutoffs"], by="depth")
    frame = r["cutoffs"]
    allrows = frame[frame["class"] == "all"].set_index("depth")
    assert allrows["visits"].to_dict() == {0: 1, 1: 4, 2: 4, 3: 5, 4: 1}
    # Cutoffs at d=3: e2e4, d2d4, c2c4 (move, null, move), g1f3 outer (multicut), b1c3 (none); d=1: verification.
    assert allrows["cutoffs"].to_dict() == {0: 0, 1: 1, 2: 0, 3: 5, 4: 0}
    mv = frame[frame["class"] == "move"].set_index("depth")["cutoffs"].to_dict()
    assert mv == {0: 0, 1: 1, 2: 0, 3: 2, 4: 0}


def test_no_bound_column_no_cutoffs(tmp_path):
    text = "\n".join(line.split(" bound=")[0] for line in CUTOFF_CASES.splitlines()) + "\n"
    r = build_report(source_of(tmp_path, text), ["cutoffs"])
    frame = r["cutoffs"].set_index("class")
    assert frame.loc["all", "visits"] == 15 and frame.loc["all", "cutoffs"] == 0
    assert math.isnan(r["cutoff_mn"].iloc[0]["mn1_pct"])


def test_by_nt_counts_a_visit_under_its_decisions_node_type(tmp_path):
    # The e2e4 node's decisions carry nt=CUT, the d2d4 node's nt=ALL, the root's nt=PV (added to CUTOFF_CASES
    # here); the other visits have no nt.  Cut visits: e2e4 (move) under CUT, d2d4 (null) under ALL.
    lines = []
    for line in CUTOFF_CASES.splitlines():
        if line.startswith("MOVE path=e2e4/"):
            line += " nt=CUT"
        elif line.startswith("MOVE path=d2d4/"):
            line += " nt=ALL"
        elif line.startswith("MOVE") and "/" not in line.split()[1]:
            line += " nt=PV"
        lines.append(line)
    r = build_report(source_of(tmp_path, "\n".join(lines) + "\n"), ["cutoffs"], by="nt")
    frame = r["cutoffs"]
    allrows = {(None if pd.isna(row.nt) else row.nt, row.visits, row.cutoffs)
               for row in frame[frame["class"] == "all"].itertuples()}
    # visits: PV: the root (1); CUT: e2e4 (1); ALL: d2d4 (1); none: the other 12 (4 of them cutoffs).
    assert allrows == {("PV", 1, 0), ("CUT", 1, 1), ("ALL", 1, 1), (None, 12, 4)}
    assert [None if pd.isna(v) else v for v in frame["nt"].drop_duplicates()] == [None, "PV", "CUT", "ALL"]

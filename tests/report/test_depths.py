"""The depths table on the hand-counted DEPTH_CASES trace (tests/support/analytics_traces.py, steps in its comment).

Per act (depth − new depth, plies): FULL 1, 1 -> count 2, mean 1; NMP 3; LMR 2, 2.5, 2.5 -> mean 7/3, median 2.5,
p90 2.5; EXT 0.  LMR grid (red, plies): depth 3 mn 2 -> 1; depth 3 mn 3-4 -> 1.5; depth 4 mn 3-4 -> 1.5.
"""
from __future__ import annotations

import pytest

from support.analytics_traces import DEPTH_CASES, source_of
from treediff.report.core import build_report


def test_depth_steps_per_act(tmp_path):
    r = build_report(source_of(tmp_path, DEPTH_CASES), ["depths"])
    frame = r["depths"].set_index("act")
    assert frame["count"].to_dict() == {"LMR": 3, "FULL": 2, "EXT": 1, "NMP": 1}
    assert frame.loc["LMR", "mean"] == pytest.approx(7 / 3)
    assert frame.loc["LMR", "median"] == pytest.approx(2.5)
    assert frame.loc["LMR", "p90"] == pytest.approx(2.5)
    assert frame.loc["NMP", "mean"] == pytest.approx(3.0)
    assert frame.loc["EXT", "mean"] == 0.0
    assert frame.loc["FULL", "kind"] == "SEARCH"


def test_lmr_grid(tmp_path):
    grid = build_report(source_of(tmp_path, DEPTH_CASES), ["depths"])["lmr_grid"]
    got = {(r.depth, r.mn): (r.lmr, r.mean_red) for r in grid.itertuples()}
    assert got == {(3, "2"): (1, 1.0), (3, "3-4"): (1, 1.5), (4, "3-4"): (1, 1.5)}

"""The why table on DEPTH_CASES: why=tt-move on a FULL, why=killer on a FULL, why=in-check on an EXT.

SEARCH records: 2 (both FULL) -> tt-move 1 (50 %), killer 1 (50 %); EXTEND records: 1 -> in-check 100 %.
"""
from __future__ import annotations

import pytest

from support.analytics_traces import DEPTH_CASES, source_of
from treediff.report.core import build_report


def test_why_by_reason_and_kind(tmp_path):
    frame = build_report(source_of(tmp_path, DEPTH_CASES), ["why"])["why"]
    got = {(r.why, r.kind): (r.count, r.kind_moves, r.pct_of_kind) for r in frame.itertuples()}
    assert got == {("tt-move", "SEARCH"): (1, 2, pytest.approx(50.0)), ("killer", "SEARCH"): (1, 2, pytest.approx(50.0)),
                   ("in-check", "EXTEND"): (1, 1, pytest.approx(100.0))}

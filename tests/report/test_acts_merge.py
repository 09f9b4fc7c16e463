"""acts, kinds and skips merged over several batches, and a missing act or kind, against hand counts.

report_typhoon.log (counted in test_tables.py's docstring): 28 MOVE records, FULL 11, LMP 10, LMR 4, EXT 1,
NMP 1, NULLBAILOUT 1; kinds SEARCH 11, PRUNE 10, REDUCE 4, EXTEND 1, NULL_PROBE 1, NODE_CUT 1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.tracebuild import read_fixture
from treediff.parse.source import open_source
from treediff.report.core import build_report, report_frames

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand" / "report_typhoon.log"


@pytest.fixture()
def three_searches(tmp_path) -> Path:
    """The hand trace three times over (positions p1, p2, p3), so a small batch target reads several batches."""
    lines = [line for line in HAND.read_text().splitlines() if not line.startswith("#")]
    text = "".join("\n".join(line.replace("id=p1", f"id=p{i}") for line in lines) + "\n" for i in (1, 2, 3))
    path = tmp_path / "three.log"
    path.write_text(text)
    return path


@pytest.mark.parametrize("target", [10, 40, 10**9])
def test_counts_are_summed_over_batches(three_searches, target):
    report = build_report(open_source(str(three_searches)), ("acts", "skips"), ("engine",), target=target)
    acts = report["acts"]
    # FULL 33 and LMP 30, then LMR 12; the three of 3 tie and sort by name.
    assert acts["act"].tolist() == ["FULL", "LMP", "LMR", "EXT", "NMP", "NULLBAILOUT"]
    assert acts["count"].tolist() == [33, 30, 12, 3, 3, 3]
    assert acts["moves"].tolist() == [84] * 6
    assert acts["pct_of_moves"].tolist() == [pytest.approx(100 * c / 84) for c in (33, 30, 12, 3, 3, 3)]
    kinds = report["kinds"]
    assert kinds["kind"].tolist() == ["SEARCH", "PRUNE", "REDUCE", "EXTEND", "NODE_CUT", "NULL_PROBE"]
    assert kinds["count"].tolist() == [33, 30, 12, 3, 3, 3]
    skips = report["skips"]
    assert skips["act"].tolist() == ["(all)", "LMP"] and skips["count"].tolist() == [30, 30]


def test_per_position_groups_keep_their_own_totals(three_searches):
    acts = build_report(open_source(str(three_searches)), ("acts",), ("position",), target=10)["acts"]
    assert acts["position"].astype(str).tolist() == ["p1"] * 6 + ["p2"] * 6 + ["p3"] * 6
    assert acts["count"].tolist() == [11, 10, 4, 1, 1, 1] * 3
    assert set(acts["moves"]) == {28}


def test_a_missing_act_sorts_after_the_acts_of_its_count():
    """One FULL record's act and kind removed (the Python API's frames may hold them): FULL and LMP tie at 10
    (by name), the missing act's one record comes after EXT, NMP and NULLBAILOUT's one each."""
    records, searches = read_fixture(HAND)
    first_full = int(np.flatnonzero((records["act"] == "FULL").to_numpy())[0])
    records.loc[first_full, ["act", "kind"]] = None
    report = report_frames(records, searches, tables=["acts", "skips"])
    acts = report["acts"]
    assert [a if isinstance(a, str) else None for a in acts["act"]] == \
        ["FULL", "LMP", "LMR", "EXT", "NMP", "NULLBAILOUT", None]
    assert acts["count"].tolist() == [10, 10, 4, 1, 1, 1, 1]
    kinds = report["kinds"]
    assert [k if isinstance(k, str) else None for k in kinds["kind"]] == \
        ["PRUNE", "SEARCH", "REDUCE", "EXTEND", "NODE_CUT", "NULL_PROBE", None]
    assert kinds["count"].tolist() == [10, 10, 4, 1, 1, 1, 1]
    assert report["skips"]["count"].tolist() == [10, 10]


def test_a_group_without_prunes_gets_an_all_row_of_zero():
    records, searches = read_fixture(HAND)
    records = records[records["kind"] != "PRUNE"].reset_index(drop=True)
    skips = report_frames(records, searches, tables=["skips"])["skips"]
    assert skips["act"].tolist() == ["(all)"]
    assert skips["count"].tolist() == [0] and skips["moves"].tolist() == [18]
    assert skips["pct_of_moves"].tolist() == [0.0]


def test_ranked_places_values_as_a_sort_of_the_distinct_values():
    """Each value's place among the sorted distinct values, missing ones (None, NaN) last, as np.unique of the
    present values orders them."""
    import numpy as np

    from treediff.report.tables.acts import _ranked

    rng = np.random.default_rng(5)
    words = np.array(["LMR", "FULL", "NMP", "lmp", "Z", "a b", ""], dtype=object)
    for _ in range(50):
        values = rng.choice(np.r_[words, [None, np.nan]].astype(object), int(rng.integers(0, 40)))
        rank, distinct = _ranked(values)
        present = np.array([v for v in values if isinstance(v, str)], dtype=object)
        want_distinct = np.unique(present) if len(present) else np.zeros(0, dtype=object)
        assert distinct.tolist() == [*want_distinct.tolist(), None]
        assert [distinct[r] for r in rank] == [v if isinstance(v, str) else None for v in values]
        assert rank.dtype == np.int64

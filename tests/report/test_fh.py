"""The fh table on the hand-counted cutoff trace (tests/support/analytics_traces.py).

Move tries (one move at one node visit; the LMR and its re-search of c2c4/e7e5 are one try), counted on the trace:
  root visit: e2e4, d2d4, c2c4, g1f3, b1c3 (SEARCH, mn 1..5; the root ends exact: none failed high);
  e2e4: e7e5 (SEARCH mn 1), d7d5 (SEARCH mn 2, failed high);
  d2d4: 0000 (NULL_PROBE, failed high);
  c2c4: g8f6 (SEARCH mn 1), e7e5 (first kind REDUCE, final RESEARCH, mn 2, failed high);
  g1f3 outer: 0000 (NULL_PROBE; the visit is a multicut, so it did not fail high);
  g1f3 verification: d7d5 (SEARCH mn 1, failed high).
12 tries, 4 fail highs.  By first kind: SEARCH 9 / 2, NULL_PROBE 2 / 1, REDUCE 1 / 1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support.analytics_traces import CUTOFF_CASES, source_of
from treediff.model.errors import InputError
from treediff.report.core import build_report
from treediff.report.table import ReportOptions
from treediff.report.tables.fh import parse_buckets
from treediff.report.tries import wilson


def _fh(tmp_path, buckets):
    return build_report(source_of(tmp_path, CUTOFF_CASES), ["fh"],
                        options=ReportOptions(fh_buckets=parse_buckets(buckets)))["fh"]


def test_fh_by_kind_hand_counted(tmp_path):
    frame = _fh(tmp_path, "kind").set_index("kind")
    assert frame["tries"].to_dict() == {"NULL_PROBE": 2, "REDUCE": 1, "SEARCH": 9}
    assert frame["fail_highs"].to_dict() == {"NULL_PROBE": 1, "REDUCE": 1, "SEARCH": 2}
    assert frame.loc["SEARCH", "fh_pct"] == pytest.approx(200 / 9)


def test_fh_by_mn_band_hand_counted(tmp_path):
    # mn: 1 -> e2e4, e7e5, g8f6, g1f3/d7d5 (4, 1 fh); 2 -> d2d4, d7d5, e7e5 (3, 2 fh); 3-4 -> c2c4, g1f3 (2, 0);
    # 5-8 -> b1c3 (1, 0); null moves have mn 0: no band (2, 1).
    frame = _fh(tmp_path, "mn")
    got = {r.mn: (r.tries, r.fail_highs) for r in frame.itertuples()}
    assert got == {"1": (4, 1), "2": (3, 2), "3-4": (2, 0), "5-8": (1, 0), None: (2, 1)}
    assert list(frame["mn"]) == ["1", "2", "3-4", "5-8", None]  # band order, missing last


def test_wilson_bounds_solve_the_score_equation():
    # The Wilson bounds are the two p with |k/n - p| = z sqrt(p (1 - p) / n): check that property directly.
    z = 1.959963984540054
    for k, n in ((2, 9), (1, 1), (0, 4), (37, 100)):
        lo, hi = (v / 100 for v in wilson(np.array([k]), np.array([n])))
        for p in (lo[0], hi[0]):
            if 0 < p < 1:
                assert abs(k / n - p) == pytest.approx(z * np.sqrt(p * (1 - p) / n), abs=1e-9)
        assert lo[0] <= k / n <= hi[0]
    assert wilson(np.array([0]), np.array([4]))[0][0] == 0.0
    assert np.isnan(wilson(np.array([0]), np.array([0]))[0][0])


def test_bucket_refuses_unknown_key():
    with pytest.raises(InputError, match="--bucket: unknown key 'colour'"):
        parse_buckets("kind,colour")


def test_shadow_silent_miss_rate_per_act(tmp_path):
    # SHADOW_CASES (tests/support/analytics_traces.py): LMP 4 shadow tries, 2 with fh=1; LMR 1, 0.
    from support.analytics_traces import SHADOW_CASES

    r = build_report(source_of(tmp_path, SHADOW_CASES), ["fh"])
    shadow = r["fh_shadow"].set_index("act")
    assert shadow["shadow_tries"].to_dict() == {"LMP": 4, "LMR": 1}
    assert shadow["shadow_fail_highs"].to_dict() == {"LMP": 2, "LMR": 0}
    assert shadow.loc["LMP", "shadow_fh_pct"] == pytest.approx(50.0)
    lo, hi = wilson(np.array([2]), np.array([4]))
    assert (shadow.loc["LMP", "shadow_fh_lo"], shadow.loc["LMP", "shadow_fh_hi"]) == (lo[0], hi[0])
    # Without SHADOW records there is no such section.
    assert "fh_shadow" not in build_report(source_of(tmp_path, CUTOFF_CASES, "plain.log"), ["fh"]).names


# -- partials counted by the report's buckets only (a 100M-record report held 3.2 GB of every-dimension rows) --

_TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
_BUCKET_SETS = ["kind,depth,mn", "hist", "see,ply", "act,nt", "kind,act,depth,mn,ply,see,hist,nt"]


def _every_dimension(monkeypatch):
    """Folds count fh by every dimension again, as before the buckets were known to the partial."""
    from treediff.report.tables import fh as fh_module

    monkeypatch.setattr(fh_module.FhTable, "for_options", lambda self, options: fh_module.FhTable(None))


@pytest.mark.parametrize("buckets", _BUCKET_SETS)
@pytest.mark.parametrize("by", ["engine", "engine,ply,depth"])
def test_fh_counted_by_its_buckets_is_fh_counted_by_every_dimension(monkeypatch, buckets, by):
    import pandas as pd

    from treediff.parse.source import open_sources

    source = open_sources([_TRACES / "stockfish_batch3.log", _TRACES / "crafty_batch3.log"])
    options = ReportOptions(fh_buckets=parse_buckets(buckets))
    new = build_report(source, ["fh"], by, 300, options=options)
    with monkeypatch.context() as patched:
        _every_dimension(patched)
        old = build_report(source, ["fh"], by, 300, options=options)
    assert [s.name for s in new.sections] == [s.name for s in old.sections]
    for section_new, section_old in zip(new.sections, old.sections):  # fh, and fh_shadow where it is
        pd.testing.assert_frame_equal(section_new.frame, section_old.frame)


def test_an_fh_partial_holds_the_buckets_only(tmp_path):
    from treediff.report.core import Fold

    from treediff.report.tables import TABLES

    fold = Fold((TABLES["fh"],), ("engine",), ReportOptions(fh_buckets=("kind", "mn")))
    (spec,) = fold.specs
    assert spec.dims == ("kind", "mn")
    source = source_of(tmp_path, CUTOFF_CASES)
    from treediff.report.core import fold_tables

    (parts,), _ = fold_tables(source, [spec], ("engine",), options=fold.options)
    counts = [p.counts for p in parts if p.counts is not None]
    assert counts and all(t.column_names == ["srow", "iter", "key", "kind", "mn", "tries", "fail_highs"]
                          for t in counts)
    # Hand counts (module docstring): 12 tries, 4 fail highs over the buckets' rows.
    assert sum(sum(t.column("tries").to_pylist()) for t in counts) == 12
    assert sum(sum(t.column("fail_highs").to_pylist()) for t in counts) == 4


def test_folds_with_other_buckets_do_not_share_partials():
    from treediff.parse.source import open_source
    from treediff.report.core import ReportRequest, build_reports

    source = open_source(_TRACES / "stockfish_batch3.log")
    requests = [ReportRequest(["fh"], None, ReportOptions(fh_buckets=parse_buckets(b))) for b in ("kind", "hist")]
    both = build_reports(source, requests, 300)
    for request, report in zip(requests, both):
        alone = build_report(source, ["fh"], None, 300, options=request.options)
        assert report["fh"].equals(alone["fh"])
    assert list(both[0]["fh"].columns)[:2] != list(both[1]["fh"].columns)[:2]


def test_fh_refuses_partials_without_a_bucket(tmp_path):
    from treediff.report.core import fold_tables
    from treediff.report.tables.fh import FhTable

    source = source_of(tmp_path, CUTOFF_CASES)
    (parts,), grouping = fold_tables(source, [FhTable(("kind",))], ("engine",),
                                     options=ReportOptions(fh_buckets=("kind",)))
    grouping.options = ReportOptions(fh_buckets=("hist",))
    with pytest.raises(ValueError, match="not counted by hist"):
        FhTable(("kind",)).finish(parts, grouping)


# -- mn and see kept as one value a band in the partials (the finish reads only the band) --

_MN_VALUES = [np.nan, -3, 0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 4.5, 5, 7, 8, 8.5, 9, 16, 16.5, 17, 40, 1000, np.inf]
_SEE_VALUES = [np.nan, -np.inf, -1000, -201, -200.5, -200, -150, -1, -0.5, 0, 0.5, 1, 100, 200, 200.5, 201,
               900, np.inf]


@pytest.mark.parametrize("bucket, values", [("mn", _MN_VALUES), ("see", _SEE_VALUES)])
def test_a_band_value_is_labelled_and_ordered_as_the_values_it_stands_for(bucket, values):
    import pandas as pd

    from treediff.report.tables import fh as fh_module

    raw = np.asarray(values, dtype=np.float64)
    banded = fh_module._BANDED[bucket](raw)
    frame_raw = pd.DataFrame({bucket: raw, "tries": 1})
    frame_banded = pd.DataFrame({bucket: banded, "tries": 1})
    labels_raw, order_raw = fh_module._labels(frame_raw, bucket)
    labels_banded, order_banded = fh_module._labels(frame_banded, bucket)
    assert list(labels_banded) == list(labels_raw)
    np.testing.assert_array_equal(order_banded, order_raw)
    # and a band is one value: as many distinct values as bands (plus NaN for no band)
    expected = {"mn": {1.0, 2.0, 3.0, 5.0, 9.0, 17.0}, "see": {-201.0, -1.0, 0.0, 1.0, 201.0}}[bucket]
    assert set(banded[~np.isnan(banded)].tolist()) == expected


@pytest.mark.parametrize("buckets", ["mn", "see", "kind,depth,mn", "mn,see,hist", "kind,act,depth,mn,ply,see,hist,nt"])
@pytest.mark.parametrize("by", ["engine", "engine,ply,depth"])
def test_fh_of_band_values_is_fh_of_the_raw_values(monkeypatch, buckets, by):
    import pandas as pd

    from treediff.parse.source import open_sources
    from treediff.report.tables import fh as fh_module

    source = open_sources([_TRACES / "stockfish_batch3.log", _TRACES / "crafty_batch3.log"])
    options = ReportOptions(fh_buckets=parse_buckets(buckets))
    new = build_report(source, ["fh"], by, 300, options=options)
    with monkeypatch.context() as patched:  # the partials keep raw move numbers and SEE values, as before
        patched.setattr(fh_module, "_BANDED", {"depth": fh_module._floor})
        old = build_report(source, ["fh"], by, 300, options=options)
    pd.testing.assert_frame_equal(new["fh"], old["fh"])
    assert len(new["fh"]) > 3


def test_an_fh_partial_keeps_one_row_a_band(tmp_path):
    from treediff.report.core import fold_tables
    from treediff.report.tables.fh import FhTable

    # The root visit's tries c2c4 (mn 3) and g1f3 (mn 4) are one row of band 3-4; b1c3 (mn 5) is band 5-8.
    (parts,), _ = fold_tables(source_of(tmp_path, CUTOFF_CASES), [FhTable(("mn",))], ("engine",),
                              options=ReportOptions(fh_buckets=("mn",)))
    rows = [row for p in parts if p.counts is not None for row in p.counts.to_pylist()]
    assert {row["mn"] for row in rows if row["mn"] == row["mn"]} <= {1.0, 2.0, 3.0, 5.0}
    assert not any(row["mn"] == 4.0 for row in rows)
    assert sum(row["tries"] for row in rows if row["mn"] == 3.0) == 2


class _ColumnsAsked:
    """A source that records the records columns each batches() call asks for."""

    def __init__(self, source):
        self.source, self.asked = source, []

    def __getattr__(self, name):
        return getattr(self.source, name)

    def batches(self, columns=None, target=None):
        self.asked.append(set(columns or ()))
        return self.source.batches(columns, target)


@pytest.mark.parametrize("buckets, read", [("kind,depth,mn", set()), ("kind,nt", {"node_type"}),
                                           ("see,hist", {"see", "hist"}), ("nt,see,hist", {"node_type", "see", "hist"})])
def test_fh_reads_the_columns_of_its_buckets_only(monkeypatch, buckets, read):
    """see, hist and node_type are decoded only for the buckets that count by them (each column a 20M-record
    file's report reads but no table uses costs ~0.1-0.35 CPU-s); the numbers are those of a fold that reads
    all three."""
    import pandas as pd

    from treediff.parse.source import open_source
    from treediff.report.tables.fh import FhTable
    from treediff.report.tries import OPTIONAL, SHADOW_OPTIONAL

    spy = _ColumnsAsked(open_source(_TRACES / "stockfish_batch3.log"))
    options = ReportOptions(fh_buckets=parse_buckets(buckets))
    report = build_report(spy, ["fh"], None, 300, options=options)
    assert spy.asked and all(asked & {"see", "hist", "node_type"} == read for asked in spy.asked)
    with monkeypatch.context() as patched:
        patched.setattr(FhTable, "optional_columns", (*OPTIONAL, *SHADOW_OPTIONAL, "see", "hist", "node_type"))
        full = _ColumnsAsked(open_source(_TRACES / "stockfish_batch3.log"))
        every = build_report(full, ["fh"], None, 300, options=options)
    assert all({"see", "hist", "node_type"} <= asked for asked in full.asked)
    assert [s.name for s in report.sections] == [s.name for s in every.sections]
    for mine, theirs in zip(report.sections, every.sections):
        pd.testing.assert_frame_equal(mine.frame, theirs.frame)

"""SHADOW records (typhoon_py's --shadow): the parser keeps them as tag SHADOW rows with their fh, and no
other count sees them (hand trace SHADOW_CASES in tests/support/analytics_traces.py: 7 MOVE, 4 RESULT,
5 SHADOW records)."""
from __future__ import annotations

import pandas as pd

from support.analytics_traces import SHADOW_CASES, write
from treediff.parse.source import open_source
from treediff.report.core import build_report


def test_parser_keeps_shadow_rows(tmp_path):
    log = write(tmp_path, SHADOW_CASES)
    source = open_source(str(log))
    records = source.records(["tag", "path", "depth", "score", "fh", "line"])
    shadow = records[records["tag"] == "SHADOW"]
    assert list(shadow["path"]) == ["e2e4/e7e5", "e2e4/d7d5", "e2e4/c7c5", "d2d4", "g1f3"]
    assert list(shadow["fh"]) == [True, False, False, True, False]
    assert list(shadow["score"]) == [30, -30, -40, -30, -50]
    assert list(shadow["line"]) == [5, 7, 9, 12, 14]
    assert shadow["depth"].tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    s = source.searches.iloc[0]
    assert (s["records"], s["moves"], s["result_nodes"]) == (11, 7, 4)
    assert not isinstance(s["warnings"], str)  # END nodes=4 agrees with the RESULT count


def test_other_reports_ignore_shadow_rows(tmp_path):
    with_shadow = open_source(str(write(tmp_path, SHADOW_CASES, "a.log")))
    without = open_source(str(write(tmp_path, "\n".join(
        line for line in SHADOW_CASES.splitlines() if not line.startswith("SHADOW")) + "\n", "b.log")))
    tables = ["nodes", "acts", "lmr", "skips", "scope", "cutoffs", "residual", "depths", "why"]
    a = build_report(with_shadow, tables)
    b = build_report(without, tables)
    assert a.names == b.names
    for name in a.names:
        pd.testing.assert_frame_equal(a[name], b[name], check_dtype=False)


def test_parquet_without_the_fh_column_reads_as_before(tmp_path):
    # A file written before the fh column existed: the analytics tables still get bound and visits.
    import shutil

    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from support.analytics_traces import CUTOFF_CASES
    from treediff.cli import main

    log = write(tmp_path, CUTOFF_CASES)
    assert CliRunner().invoke(main, ["parse", str(log), "-o", str(tmp_path / "a.parquet")]).exit_code == 0
    pq.write_table(pq.read_table(tmp_path / "a.parquet").drop_columns(["fh"]), tmp_path / "b.parquet")
    shutil.copy(tmp_path / "a.searches.parquet", tmp_path / "b.searches.parquet")
    a = build_report(open_source(str(tmp_path / "a.parquet")), ["cutoffs", "fh"])
    b = build_report(open_source(str(tmp_path / "b.parquet")), ["cutoffs", "fh"])
    for name in a.names:
        pd.testing.assert_frame_equal(a[name], b[name])
    assert a["cutoffs"].set_index("class").loc["all", "cutoffs"] == 6

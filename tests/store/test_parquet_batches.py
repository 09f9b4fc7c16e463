"""A ``treediff parse`` Parquet pair is read in batches of row groups, whole searches, only the columns asked.

Issue 17: ``report --table all`` on a 20M-record file held every record in memory at once (4.6 GB);
reading a few row groups at a time bounds memory by the batch.  A cut between row groups is made only
where the footer's ``search`` statistics prove no search spans it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.model.schema import searches_path_for
from treediff.parse.source import open_source
from treediff.report.core import TABLES, build_report
from treediff.store.source import last_safe_cut, parquet_source, plan_row_groups

ROOT = Path(__file__).resolve().parents[2]
LOGS = [ROOT / "fixtures" / "traces" / name for name in ("stockfish_batch3.log", "crafty_batch3.log")]


# ------------------------------------------------------------------ the plan, on hand-written spans

def test_cuts_only_where_no_search_spans_the_boundary():
    # (rows, smallest search, largest search) per row group: search 0 spans groups 0-1, search 1 groups 1-2.
    spans = [(10, 0, 0), (10, 0, 1), (10, 1, 1), (10, 2, 3), (10, 4, 4)]
    assert plan_row_groups(spans, target=15) == [[0, 1, 2], [3], [4]]
    assert plan_row_groups(spans, target=25) == [[0, 1, 2], [3, 4]]
    assert plan_row_groups(spans, target=10**9) == [[0, 1, 2, 3, 4]]


def test_a_search_is_not_started_in_a_read_it_would_overflow():
    # Search 1 spans three row groups (9 rows): after search 0's 6 rows it would make 15 > 10, so it starts
    # a read of its own rather than being found too big once half of it is in.
    assert plan_row_groups([(6, 0, 0), (3, 1, 1), (3, 1, 1), (3, 1, 1)], target=10) == [[0], [1, 2, 3]]
    assert plan_row_groups([(6, 0, 0), (3, 1, 1), (3, 1, 1), (3, 1, 1)], target=15) == [[0, 1, 2, 3]]


def test_row_groups_without_a_wanted_search_are_skipped():
    spans = [(10, 0, 0), (10, 0, 1), (10, 1, 1), (10, 2, 3), (10, 4, 4)]
    assert plan_row_groups(spans, 15, wanted=np.array([4])) == [[4]]
    assert plan_row_groups(spans, 15, wanted=np.array([1])) == [[1, 2]]
    assert plan_row_groups(spans, 15, wanted=np.array([2, 4])) == [[3], [4]]
    assert plan_row_groups(spans, 15, wanted=np.array([7])) == []


def test_ranges_that_go_back_mean_one_read():
    assert plan_row_groups([(10, 0, 2), (10, 1, 3)], target=5) is None


def test_cut_inside_a_row_group_where_no_search_spans():
    assert last_safe_cut(np.array([0, 0, 1, 1, 2])) == 4
    assert last_safe_cut(np.array([1, 0, 2, 2])) == 2   # any order within the rows: search 0 and 1 before 2
    assert last_safe_cut(np.array([0, 1, 0, 2])) == 3
    assert last_safe_cut(np.array([0, 0, 0])) == 0      # one search: nothing to cut, it is carried on
    assert last_safe_cut(np.array([2, 1])) == 0         # going back: no cut
    assert last_safe_cut(np.array([5])) == 0


# ------------------------------------------------------------------ on a real parse, rewritten in small row groups

@pytest.fixture(scope="module")
def small_groups(tmp_path_factory) -> Path:
    """Two fixture logs (six searches) parsed, the records rewritten in row groups of at most 300 rows, each
    within one search (so most searches span several row groups, and every search boundary can be cut)."""
    base = tmp_path_factory.mktemp("pq")
    whole = base / "whole.parquet"
    result = CliRunner().invoke(main, ["parse", *map(str, LOGS), "-o", str(whole)])
    assert result.exit_code == 0, result.output
    out = base / "small.parquet"
    table = pq.read_table(whole)
    search = table.column("search").to_numpy()
    assert np.all(search[1:] >= search[:-1])
    starts = np.flatnonzero(np.r_[True, search[1:] != search[:-1]])
    ends = np.r_[starts[1:], len(search)]
    with pq.ParquetWriter(out, table.schema) as writer:
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            for piece in range(lo, hi, 300):
                writer.write_table(table.slice(piece, min(300, hi - piece)))
    Path(searches_path_for(str(out))).write_bytes(Path(searches_path_for(str(whole))).read_bytes())
    assert pq.ParquetFile(out).metadata.num_row_groups > 6
    return out


def test_batches_hold_whole_searches_and_only_the_columns_asked(small_groups):
    source = parquet_source(small_groups)
    batches = list(source.batches(["tag", "ply"], target=1000))
    sizes = source.searches["records"].to_numpy()
    assert (sizes > 300).sum() >= 3  # searches spanning row groups
    assert len(batches) > 1
    seen: set[int] = set()
    for batch in batches:
        ids = set(batch["search"].astype(np.int64).tolist())
        assert not ids & seen  # a search never appears in two batches
        seen |= ids
        assert set(batch.columns) == {"engine", "search", "tag", "ply"}
        # Bounded: at most the target, or one search alone (row groups here never hold two searches).
        assert len(batch) <= 1000 or len(ids) == 1
    whole = pq.read_table(small_groups, columns=["search", "tag"]).to_pandas()
    assert seen == set(whole["search"].tolist())
    assert sum(len(b) for b in batches) == len(whole)
    joined = pd.concat(batches, ignore_index=True)
    assert joined["tag"].astype(str).tolist() == whole["tag"].astype(str).tolist()


def test_report_in_row_group_batches_equals_one_batch(small_groups):
    source = parquet_source(small_groups)
    one = build_report(source, TABLES, "engine,iter", target=2**62)
    many = build_report(source, TABLES, "engine,iter", target=1000)
    assert one.names == many.names
    for name in one.names:
        pd.testing.assert_frame_equal(many[name], one[name], check_exact=True, obj=name)


def test_a_selected_search_reads_only_its_row_groups(small_groups):
    source = open_source(small_groups)
    row = 1
    picked = source.select(np.arange(len(source.searches)) == row)
    search = int(picked.searches["search"].iloc[0])
    batches = list(picked.batches(["tag"], target=10**9))
    assert len(batches) == 1
    assert set(batches[0]["search"].astype(np.int64).tolist()) == {search}
    expected = pq.read_table(small_groups, columns=["search"]).to_pandas()
    assert len(batches[0]) == int((expected["search"] == search).sum())


@pytest.fixture(scope="module")
def straddling_groups(small_groups, tmp_path_factory) -> Path:
    """The same records in row groups of 500 rows that end mid-search, as the parser's do."""
    out = tmp_path_factory.mktemp("pq2") / "straddle.parquet"
    pq.write_table(pq.read_table(small_groups), out, row_group_size=500)
    Path(searches_path_for(str(out))).write_bytes(Path(searches_path_for(str(small_groups))).read_bytes())
    spans = [(g.num_rows, g.column(1).statistics.min, g.column(1).statistics.max)
             for g in (pq.ParquetFile(out).metadata.row_group(i) for i in range(pq.ParquetFile(out).metadata.num_row_groups))]
    assert pq.ParquetFile(out).schema_arrow.names[1] == "search"
    assert all(hi == lo for (_, _, hi), (_, lo, _) in zip(spans, spans[1:]))  # no cut between row groups
    return out


def test_row_groups_ending_mid_search_still_give_bounded_batches(straddling_groups):
    source = parquet_source(straddling_groups)
    batches = list(source.batches(["tag"], target=1000))
    assert len(batches) > 1
    seen: set[int] = set()
    for batch in batches:
        ids = set(batch["search"].astype(np.int64).tolist())
        assert not ids & seen
        seen |= ids
        biggest = int(batch["search"].value_counts().max())
        assert len(batch) < 1000 + 500 + biggest  # the target, the row group read last, the search carried on
    whole = pq.read_table(straddling_groups, columns=["search", "tag"]).to_pandas()
    assert sum(len(b) for b in batches) == len(whole)
    joined = pd.concat(batches, ignore_index=True)
    assert joined["tag"].astype(str).tolist() == whole["tag"].astype(str).tolist()
    one = build_report(source, TABLES, "engine", target=2**62)
    many = build_report(source, TABLES, "engine", target=1000)
    for name in one.names:
        pd.testing.assert_frame_equal(many[name], one[name], check_exact=True, obj=name)

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
from treediff.store.source import batch_cuts, parquet_source, plan_row_groups

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
    # target 1: every point no search spans (any order within the rows), the rows after the last carried on
    assert batch_cuts(np.array([0, 0, 1, 1, 2]), 1) == [2, 4]
    assert batch_cuts(np.array([1, 0, 2, 2]), 1) == [2]     # search 0 and 1 (in any order) before 2
    assert batch_cuts(np.array([0, 1, 0, 2]), 1) == [3]
    assert batch_cuts(np.array([0, 0, 0]), 1) == []         # one search: nothing to cut, it is carried on
    assert batch_cuts(np.array([2, 1]), 1) == []            # going back: no cut
    assert batch_cuts(np.array([5]), 1) == []
    assert batch_cuts(np.array([], dtype=np.int64), 1) == []


def test_the_cuts_of_rows_in_search_order_are_those_of_any_order():
    # (rows in search order take a shorter path: a boundary is where the search changes)
    rng = np.random.default_rng(3)
    search = np.repeat(np.arange(60), rng.integers(1, 9, size=60))
    shuffled = search.copy()
    b = int(np.flatnonzero(np.diff(search))[3]) + 1
    shuffled[b - 1], shuffled[b] = search[b], search[b - 1]  # a boundary's two rows swapped: no longer in order
    assert (np.diff(shuffled) < 0).any()
    for target in (1, 4, 17, 100):
        assert batch_cuts(search, target) == _cuts_by_definition(search, target)
        assert batch_cuts(shuffled, target) == _cuts_by_definition(shuffled, target)


def _cuts_by_definition(search: np.ndarray, target: int) -> list[int]:
    safe = [p for p in range(1, len(search)) if search[:p].max() < search[p:].min()]
    cuts, previous = [], 0
    while len(search) - previous >= target:
        within = [p for p in safe if previous < p <= previous + target]
        after = [p for p in safe if p > previous + target]
        if within:
            previous = within[-1]
        elif after:
            previous = after[0]
        else:
            break
        cuts.append(previous)
    return cuts


def test_each_cut_is_the_last_safe_point_within_a_target_of_the_last():
    search = np.array([0, 0, 0, 1, 2, 2, 2, 2, 3, 4, 4, 5])
    # safe points: 3 (after search 0), 4, 8, 9, 11
    assert batch_cuts(search, 4) == [4, 8, 11]   # search 5 (1 row) carried on: it may go on in the next group
    assert batch_cuts(search, 5) == [4, 9]       # (4, 9]: 9; then 3 rows left
    assert batch_cuts(search, 2) == [3, 4, 8, 9, 11]  # search 0 (3 rows) and search 2 (4 rows) alone
    assert batch_cuts(search, 12) == [11]        # 12 rows: everything but the last search, which may go on
    assert batch_cuts(search, 13) == []          # fewer rows than the target: all carried on


def test_batches_hold_at_most_the_target_or_one_search():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 40, size=300)
    search = np.repeat(np.arange(len(sizes)), sizes)
    for target in (1, 10, 30, 100, 1000):
        cuts = batch_cuts(search, target)
        bounds = [0, *cuts]
        for lo, hi in zip(bounds, bounds[1:]):
            assert search[hi - 1] < search[hi]  # a search boundary
            one = search[lo] == search[hi - 1]
            assert hi - lo <= target or one
            # the next search did not fit: nothing closer to the target was skipped
            following = sizes[search[hi]]
            assert hi - lo + following > target or one
        assert len(search) - bounds[-1] < target + sizes.max()  # carried on: less than a target and a search


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
        assert len(batch) <= 1000 or len(set(batch["search"])) == 1  # at most the target, or one search alone
    whole = pq.read_table(straddling_groups, columns=["search", "tag"]).to_pandas()
    assert sum(len(b) for b in batches) == len(whole)
    joined = pd.concat(batches, ignore_index=True)
    assert joined["tag"].astype(str).tolist() == whole["tag"].astype(str).tolist()
    one = build_report(source, TABLES, "engine", target=2**62)
    many = build_report(source, TABLES, "engine", target=1000)
    for name in one.names:
        pd.testing.assert_frame_equal(many[name], one[name], check_exact=True, obj=name)

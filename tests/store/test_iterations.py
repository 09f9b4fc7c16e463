"""A spilled log's iteration profile (treediff/store/iterations.py), counted as the parts are written.

Checked three ways: against a hand count (the pairing tests' DEEP trace); against the report's own fold of
the same records (``pairing.ITERATIONS`` over the source's batches, the path compare took before), on every
fixture log with parse chunks small enough that searches span parts; and the merge of parts by hand
(counts added, NaN depths kept as one ``np.maximum`` over all the records keeps them).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from support.pairing_traces import DEEP
from treediff.parse import chunks
from treediff.parse.pipeline import parse_to_spill
from treediff.parse.source import open_sources
from treediff.report.compare import _profile_partial
from treediff.report.core import fold_tables
from treediff.report.pairing import ITERATIONS, depths_of
from treediff.store.arrays import equals as _equals
from treediff.store.iterations import PROFILE_COLUMNS, merge_profiles, profile_of
from treediff.store.spill import spill_iterations_path, spill_source

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_LOGS = sorted([*(ROOT / "fixtures" / "traces").glob("*.log"), *(ROOT / "fixtures" / "hand").glob("*.log"),
                       ROOT / "fixtures" / "real" / "mid_a_d7.log"])


def _profile(log_text: str, tmp_path: Path) -> pd.DataFrame:
    log = tmp_path / "t.log"
    log.write_text(log_text)
    parse_to_spill([log], tmp_path / "spill")
    profile = spill_source(tmp_path / "spill").iteration_profile()
    assert profile is not None
    return profile


def test_hand_counted_profile(tmp_path):
    # DEEP (tests/support/pairing_traces.py): RESULT records 1, 2 and 4 in iterations 1-3, one root RESULT in
    # each, at d=1, 2 and 3.
    profile = _profile(DEEP, tmp_path)
    assert list(profile.columns) == list(PROFILE_COLUMNS)
    assert profile.to_dict("list") == {"search": [0, 0, 0], "iter": [1, 2, 3], "results": [1, 2, 4],
                                       "roots": [1, 1, 1], "root_depth": [1.0, 2.0, 3.0]}


def test_a_root_result_without_depth_is_nan_and_a_cell_without_result_is_listed(tmp_path):
    # Iteration 2's root RESULT loses its d=; iteration 3 is cut before any RESULT (its MOVE records stay).
    text = DEEP.replace("RESULT path=- ply=0 d=2 score=10", "RESULT path=- ply=0 score=10")
    text = text[:text.index("RESULT path=e2e4/e8d8 ply=2")] + "END nodes=3\n"
    profile = _profile(text, tmp_path)
    assert profile["iter"].tolist() == [1, 2, 3]
    assert profile["results"].tolist() == [1, 2, 0]
    assert profile["roots"].tolist() == [1, 1, 0]
    depth = profile["root_depth"].tolist()
    assert depth[0] == 1.0 and np.isnan(depth[1]) and depth[2] == -np.inf


def test_merge_adds_counts_and_keeps_nan_depths():
    part1 = pd.DataFrame({"search": [3, 3, 5], "iter": [1, 2, 0], "results": [2, 1, 7], "roots": [1, 0, 1],
                          "root_depth": [1.0, -np.inf, np.nan]})
    part2 = pd.DataFrame({"search": [3, 5, 4], "iter": [2, 0, -1], "results": [4, 1, 1], "roots": [1, 1, 0],
                          "root_depth": [2.0, 9.0, -np.inf]})
    merged = merge_profiles([part1, part2])
    assert merged["search"].tolist() == [3, 3, 4, 5]
    assert merged["iter"].tolist() == [1, 2, -1, 0]
    assert merged["results"].tolist() == [2, 5, 1, 8]
    assert merged["roots"].tolist() == [1, 1, 0, 2]
    depth = merged["root_depth"].tolist()
    assert depth[:3] == [1.0, 2.0, -np.inf] and np.isnan(depth[3])
    assert merge_profiles([]).empty


def test_profile_of_reads_plain_and_dictionary_tags_and_null_plies():
    tags = ["RESULT", "MOVE", None, "RESULT", "RESULT"]
    plain = pa.table({"search": pa.array([1, 1, 1, 1, 2], pa.int32()), "iter": pa.array([None, 1, 1, 1, 1], pa.int16()),
                      "tag": pa.array(tags), "ply": pa.array([0, 1, None, None, 2], pa.int16()),
                      "depth": pa.array([4.0, 3.0, 2.0, None, 1.0], pa.float32())})
    encoded = plain.set_column(2, "tag", pa.array(tags).dictionary_encode())
    for table in (plain, encoded):
        assert _equals(table.column("tag"), "RESULT").tolist() == [True, False, False, True, True]
        profile = profile_of(table)
        # (1, 0): the RESULT at ply 0, d=4; (1, 1): one RESULT, its null ply read as 0 and its null d as NaN;
        # (2, 1): a RESULT at ply 2.
        assert profile[["search", "iter", "results", "roots"]].values.tolist() == [[1, 0, 1, 1], [1, 1, 1, 1],
                                                                                   [2, 1, 1, 0]]
        depth = profile["root_depth"].tolist()
        assert depth[0] == 4.0 and np.isnan(depth[1]) and depth[2] == -np.inf


def _folded_partial(source) -> pd.DataFrame:
    (parts,), _ = fold_tables(source, [ITERATIONS], ("engine",))
    frame = pd.concat(parts, ignore_index=True)
    return frame.groupby(["srow", "iter"], as_index=False).agg(
        results=("results", "sum"), roots=("roots", "sum"), root_depth=("root_depth", "max"))


def _same_as_fold(source) -> None:
    known = _profile_partial(source)
    assert known is not None
    folded = _folded_partial(source)
    mine = known.sort_values(["srow", "iter"]).reset_index(drop=True)[list(folded.columns)]
    pd.testing.assert_frame_equal(mine, folded.sort_values(["srow", "iter"]).reset_index(drop=True),
                                  check_dtype=False)
    want, got = depths_of(source.searches, [folded]), depths_of(source.searches, [known])
    assert got.completed == want.completed
    assert got.has_iters.tolist() == want.has_iters.tolist()


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda p: p.name)
def test_profile_equals_the_reports_fold(log, tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)  # many parts: searches span several
    parse_to_spill([log], tmp_path / "spill")
    assert spill_iterations_path(tmp_path / "spill").exists()
    _same_as_fold(spill_source(tmp_path / "spill"))


def test_a_combined_source_renumbers_its_inputs_profiles(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    logs = [ROOT / "fixtures" / "traces" / name for name in ("typhoon_batch3.log", "stockfish_start.log",
                                                               "crafty_batch3.log")]
    source = open_sources([str(p) for p in logs])
    profile = source.iteration_profile()
    assert profile is not None
    assert set(profile["search"].tolist()) == set(source.searches["search"].tolist())
    _same_as_fold(source)
    # A selection keeps the profile of its input; readers keep the searches it holds.
    keep = np.zeros(len(source.searches), dtype=bool)
    keep[1::2] = True
    _same_as_fold(source.select(keep))


def test_a_table_counted_in_slices_gives_the_profile_of_the_whole(monkeypatch):
    import treediff.store.iterations as iterations

    spill = open_sources([str(ROOT / "fixtures" / "real" / "mid_a_d7.log")])
    table = pa.concat_tables(list(spill.arrow_batches(list(iterations.PROFILE_RECORD_COLUMNS))))
    whole = profile_of(table)
    monkeypatch.setattr(iterations, "SLICE_ROWS", 7)  # slices cut inside every (search, iteration)
    sliced = profile_of(table)
    pd.testing.assert_frame_equal(sliced, whole, check_exact=True)
    assert whole["results"].sum() == int(pa.compute.sum(pa.compute.equal(
        table.column("tag").cast(pa.string()), "RESULT")).as_py())

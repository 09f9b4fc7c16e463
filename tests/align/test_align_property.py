"""Random small traces (hypothesis): the vectorized aligner agrees with the straightforward one.

The traces are deliberately messy: records out of seq order, paths whose
parents never occur, RESULT-only paths, repeated decisions, missing move
numbers, depths that differ by a fraction of a ply.
"""
from __future__ import annotations


import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treediff.align import align_trees
from support.attribution_helpers import frame_of
from support.benchmark_scripts import load_benchmark

bench = load_benchmark("bench_align")

MOVES = ["e2e4", "d2d4", "0000", "e7e8q", "g1f3"]
ACTS = {"FULL": "SEARCH", "LMR": "REDUCE", "LMR-RESEARCH": "RESEARCH", "FP-QUIET": "PRUNE", "NMP": "NULL_PROBE"}

record = st.tuples(
    st.lists(st.sampled_from(MOVES), min_size=0, max_size=3).map("/".join),
    st.booleans(),  # MOVE (else RESULT)
    st.sampled_from(list(ACTS)),
    st.sampled_from([1.0, 2.0, 1.75, np.nan]),  # depth
    st.sampled_from([0.0, 1.0, 0.75, np.nan]),  # new depth
    st.sampled_from([np.nan, 1.0]),  # reduction
    st.sampled_from([None, 0, 1, 2]),  # mn
)


def _frame(records: list[tuple], seed: int) -> pd.DataFrame:
    return frame_of(records, np.random.default_rng(seed).permutation(len(records)))  # file order is not seq order


def _single_visits(frame: pd.DataFrame) -> pd.DataFrame:
    """One RESULT per path, every RESULT after every MOVE (deepest first): each node visited once."""
    is_result = (frame["tag"] == "RESULT").to_numpy()
    keep = ~(is_result & frame.duplicated(["tag", "path"]).to_numpy())
    frame = frame[keep].reset_index(drop=True)
    is_result = (frame["tag"] == "RESULT").to_numpy()
    depth = frame["path"].map(lambda p: p.count("/") + 1 if p else 0).to_numpy()
    order = np.lexsort((frame["seq"].to_numpy(), -depth * is_result, is_result))
    frame["seq"] = np.empty(len(frame), dtype=np.int64)
    frame.loc[order, "seq"] = np.arange(len(frame))
    return frame


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record, min_size=1, max_size=25), st.lists(record, min_size=1, max_size=25), st.integers(0, 2**16))
def test_random_traces_match_baseline(recs_a, recs_b, seed):
    a, b = _frame(recs_a, seed), _frame(recs_b, seed + 1)
    # The baseline knows no node visits (it concatenates every decision of a path): compare it on traces
    # where each node has one visit, closed after every decision below it, so that "the parent's main
    # visit" holds every decision.  tests/align/test_align_visits.py checks traces with several visits
    # against the visit definitions.
    a, b = _single_visits(a), _single_visits(b)
    rows = align_trees(a, b)
    got = rows[["path", "status", "seq_a", "seq_b", "nodes_a", "nodes_b"]].astype(
        {"path": str, "status": str, "seq_a": str, "seq_b": str}
    ).reset_index(drop=True)
    expected = bench.baseline_align(a, b)
    pd.testing.assert_frame_equal(got, expected)
    # Every row's parent row is its parent path, and comes before it.
    paths = got["path"].tolist()
    for i, parent in enumerate(rows["parent"]):
        if parent < 0:
            assert paths[i] == ""
        else:
            assert parent < i and paths[parent] == paths[i].rpartition("/")[0]

"""The compiled per-path passes (treediff/align/_calign.c) against the numpy passes they replace.

Each test runs the same input through both (``TREEDIFF_NO_CALIGN=1`` forces numpy) and compares every
output column and the row order: path dictionary and tree closure (``_encode_and_close``), the sibling
order, subtree sums and pre-order (``_order_rows``), and whole alignments (``align_trees`` / ``align`` with
``visits="main"`` and ``"all"``) of random messy traces, the hand fixtures, the engine fixtures and the real
Stockfish trace in fixtures/real.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treediff.align import core
from treediff.align.api import align
from treediff.align.core import NO_CALIGN_ENV, align_trees
from treediff.parse.pipeline import parse_logs
from support.attribution_helpers import frame_of

pytestmark = pytest.mark.skipif(core._calign is None, reason="treediff.align._calign not built")

ROOT = Path(__file__).resolve().parents[2]
# Multi-byte moves, empty moves ("a//b", a trailing "/") and a leading "/" (whose parent "" is two plies up:
# order() must decline it, the numpy pass handles it) as well as ordinary UCI moves.
MOVES = ["e2e4", "d2d4", "0000", "e7e8q", "é", ""]
path_strategy = st.lists(st.sampled_from(MOVES), min_size=0, max_size=4).map("/".join)


def _both(fn, monkeypatch):
    """fn() with the compiled passes, then with the numpy ones."""
    monkeypatch.delenv(NO_CALIGN_ENV, raising=False)
    assert core.compiled_available()
    compiled = fn()
    monkeypatch.setenv(NO_CALIGN_ENV, "1")
    assert not core.compiled_available()
    fallback = fn()
    monkeypatch.delenv(NO_CALIGN_ENV)
    return compiled, fallback


def _large(paths: list[str], start: int = 0) -> pa.Array:
    """``paths`` as a large_string array, sliced from a longer one when ``start`` (a non-zero offset)."""
    arr = pa.array(["x/y"] * start + paths + ["z"], type=pa.large_string())
    return arr.slice(start, len(paths))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(path_strategy, max_size=30), st.lists(path_strategy, max_size=30), st.integers(0, 3))
def test_tree_matches_numpy(monkeypatch, paths_a, paths_b, start):
    a, b = _large(paths_a, start), _large(paths_b, start + 1)
    compiled, fallback = _both(lambda: core._encode_and_close(a, b), monkeypatch)
    (codes, paths, ply, parent), (codes0, paths0, ply0, parent0) = compiled, fallback
    assert codes.dtype == codes0.dtype and ply.dtype == ply0.dtype and parent.dtype == parent0.dtype
    np.testing.assert_array_equal(codes, codes0)
    assert paths.to_pylist() == paths0.to_pylist()
    assert paths.type == paths0.type
    np.testing.assert_array_equal(ply, ply0)
    np.testing.assert_array_equal(parent, parent0)
    # And by the definition: every path's parent is its rpartition, codes are the records' paths.
    names = paths.to_pylist()
    assert [names[c] for c in codes] == paths_a + paths_b
    for c, name in enumerate(names):
        assert parent[c] == (-1 if name == "" else names.index(name.rpartition("/")[0]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(path_strategy, max_size=40), st.integers(0, 2**16), st.integers(1, 4))
def test_order_matches_numpy(paths_list, seed, key_range):
    _, paths, ply, parent = core._encode_and_close(_large(paths_list), _large([]))
    n = len(paths)
    rng = np.random.default_rng(seed)
    key = rng.integers(0, key_range, n).astype(np.int64)  # few distinct keys: ties go by path code
    sums = rng.integers(0, 5, (n, 7)).astype(np.int64)
    sums[:, 4] = 1  # (the numpy pass reads column 4 as the subtree sizes in rows)
    got = core._calign.order(ply, parent, key, sums, 7)
    consecutive = all(parent[c] < 0 or ply[c] == ply[parent[c]] + 1 for c in range(n))
    if not consecutive:  # a leading "/": declined, the numpy pass runs
        assert got is None
        return
    src0, parent_row0, sums0 = core._order_rows(ply, parent, key, sums.copy())
    src = np.frombuffer(got[0], dtype=np.int64)
    np.testing.assert_array_equal(src, src0)
    np.testing.assert_array_equal(np.frombuffer(got[1], dtype=np.int64), parent_row0)
    np.testing.assert_array_equal(np.frombuffer(got[2], dtype=np.int64).reshape(n, 7), sums0)


@settings(max_examples=60, deadline=None)
@given(st.integers(17, 300), st.integers(0, 40), st.integers(0, 2**16), st.integers(1, 6))
def test_order_sorts_wide_sibling_groups(wide, deeper, seed, key_range):
    """Sibling groups longer than the insertion sort's 16 (``order()``'s qsort path, ties on the key broken by
    code) order as the numpy lexsort does: one node with ``wide`` children, one of them with ``deeper``."""
    rng = np.random.default_rng(seed)
    paths = [f"m{i}" for i in rng.permutation(wide)] + [f"m0/n{i}" for i in rng.permutation(deeper)]
    _, arr, ply, parent = core._encode_and_close(_large(paths), _large([]))
    n = len(arr)
    key = rng.integers(0, key_range, n).astype(np.int64)
    sums = rng.integers(0, 5, (n, 7)).astype(np.int64)
    sums[:, 4] = 1
    got = core._calign.order(ply, parent, key, sums, 7)
    src0, parent_row0, sums0 = core._order_rows(ply, parent, key, sums.copy())
    np.testing.assert_array_equal(np.frombuffer(got[0], dtype=np.int64), src0)
    np.testing.assert_array_equal(np.frombuffer(got[1], dtype=np.int64), parent_row0)
    np.testing.assert_array_equal(np.frombuffer(got[2], dtype=np.int64).reshape(n, 7), sums0)
    # And by the definition: the root's children in (key, code) order.
    children = [c for c in np.frombuffer(got[0], dtype=np.int64) if parent[c] == parent[src0[1]]]
    assert children == sorted(children, key=lambda c: (key[c], c))


def test_order_declines_a_forest():
    ply = np.array([0, 0], dtype=np.int64)
    parent = np.array([-1, -1], dtype=np.int64)
    assert core._calign.order(ply, parent, np.zeros(2, np.int64), np.zeros((2, 7), np.int64), 7) is None


def _assert_same_rows(compiled: pd.DataFrame, fallback: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(compiled, fallback, check_exact=True)
    for col in compiled.columns:  # (and the same categories in the same order)
        if isinstance(compiled[col].dtype, pd.CategoricalDtype):
            assert list(compiled[col].cat.categories) == list(fallback[col].cat.categories), col


# Messy records: out of seq order, missing parents, several visits of a node (repeated RESULTs), NaN depths.
record = st.tuples(
    st.lists(st.sampled_from(["e2e4", "d2d4", "0000", "g1f3"]), min_size=0, max_size=3).map("/".join),
    st.booleans(),
    st.sampled_from(["FULL", "LMR", "LMR-RESEARCH", "FP-QUIET", "NMP"]),
    st.sampled_from([1.0, 2.0, 1.75, np.nan]),
    st.sampled_from([0.0, 1.0, np.nan]),
    st.sampled_from([np.nan, 1.0]),
    st.sampled_from([None, 0, 1, 2]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(record, max_size=30), st.lists(record, max_size=30), st.integers(0, 2**16),
       st.sampled_from(["main", "all"]))
def test_random_traces_compiled_equals_numpy(monkeypatch, recs_a, recs_b, seed, visits):
    rng = np.random.default_rng(seed)
    a = frame_of(recs_a, rng.permutation(len(recs_a)))
    b = frame_of(recs_b, rng.permutation(len(recs_b)))
    compiled, fallback = _both(lambda: align_trees(a, b, visits=visits), monkeypatch)
    _assert_same_rows(compiled, fallback)


def _iterations(records: pd.DataFrame) -> list[int]:
    return sorted(int(i) for i in records["iter"].dropna().unique())


def _positions_compiled_equals_numpy(monkeypatch, rec_a: pd.DataFrame, rec_b: pd.DataFrame) -> int:
    """Every common position and iteration of two parsed logs, both visit modes; the number of alignments."""
    checked = 0
    for position in sorted(set(rec_a["position"].astype(str)) & set(rec_b["position"].astype(str))):
        ra = rec_a[rec_a["position"].astype(str) == position]
        rb = rec_b[rec_b["position"].astype(str) == position]
        for it in sorted(set(_iterations(ra)) & set(_iterations(rb))):
            for visits in ("main", "all"):
                compiled, fallback = _both(lambda: align(ra, rb, iter=it, visits=visits).rows, monkeypatch)
                _assert_same_rows(compiled, fallback)
                checked += 1
    return checked


HAND_PAIRS = [("align_basic_a.log", "align_basic_b.log"), ("visits_aspiration.log", "visits_aspiration_b.log"),
              ("visits_verify.log", "visits_verify.log"), ("visits_lmr_research.log", "visits_plain.log"),
              ("align_promo_typhoon.log", "align_promo_stockfish.log"), ("align_multi.log", "align_multi.log")]


@pytest.mark.parametrize("pair", HAND_PAIRS, ids=lambda p: p[0])
def test_hand_fixtures_compiled_equals_numpy(monkeypatch, pair):
    rec_a = parse_logs([ROOT / "fixtures" / "hand" / pair[0]]).records.to_pandas()
    rec_b = parse_logs([ROOT / "fixtures" / "hand" / pair[1]]).records.to_pandas()
    assert _positions_compiled_equals_numpy(monkeypatch, rec_a, rec_b) > 0


TRACES = ROOT / "fixtures" / "traces"


@pytest.mark.skipif(not (TRACES / "typhoon_start.log").exists(), reason="reference traces not generated")
@pytest.mark.parametrize("name", ["start", "tactical-f6f7", "batch3"])
def test_engine_fixtures_compiled_equals_numpy(monkeypatch, name):
    rec_a = parse_logs([TRACES / f"typhoon_{name}.log"]).records.to_pandas()
    rec_b = parse_logs([TRACES / f"stockfish_{name}.log"]).records.to_pandas()
    assert _positions_compiled_equals_numpy(monkeypatch, rec_a, rec_b) > 0


def test_real_stockfish_trace_compiled_equals_numpy(monkeypatch):
    """A real Stockfish 15.1 trace (aspiration re-searches of the root, singular-extension re-entries) against
    itself and against typhoon's trace of another position (paths mostly one side's only)."""
    real = parse_logs([ROOT / "fixtures" / "real" / "mid_a_d7.log"]).records.to_pandas()
    assert _positions_compiled_equals_numpy(monkeypatch, real, real) > 0
    other = parse_logs([TRACES / "typhoon_start.log"]).records.to_pandas() if (TRACES / "typhoon_start.log").exists() \
        else real
    last = other[other["iter"] == _iterations(other)[-1]]
    last = last[last["search"] == last["search"].iloc[0]]
    for it in _iterations(real)[-2:]:
        for visits in ("main", "all"):
            compiled, fallback = _both(lambda: align_trees(real[real["iter"] == it], last, visits=visits), monkeypatch)
            _assert_same_rows(compiled, fallback)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(path_strategy, min_size=1, max_size=40), st.integers(0, 2**16),
       st.sampled_from([[0, 1], [1, 2, 3], [-1, 0, 1, 2, 5]]))
def test_visit_tree_matches_numpy(paths_list, seed, visit_values):
    """Random records (several RESULTs per path, MOVEs before and after them, unknown, written and negative
    visit numbers, NaN depths) over a closed tree; also a tree with tops at ply > 0 (parent -1)."""
    from treediff.parse.visits import visit_tree

    codes, _, ply, parent = core._encode_and_close(_large(paths_list), _large([]))
    rng = np.random.default_rng(seed)
    n = len(codes)
    is_result = rng.random(n) < 0.5
    is_move = ~is_result & (ply[codes] > 0)
    depth = rng.choice([1.0, 2.0, 2.5, np.nan], n)
    visit = rng.choice(visit_values, n).astype(np.int64)
    parent_visit = rng.choice(visit_values, n).astype(np.int64)
    for par in (parent, np.where(rng.random(len(parent)) < 0.2, -1, parent)):
        expected = visit_tree(codes, par, ply, is_result, is_move, depth, visit, parent_visit)
        got = core.compiled_visit_tree(codes, par, ply, is_result, is_move, depth, visit, parent_visit)
        for field in ("result", "code", "visit", "entering", "parent_visit", "parent_result", "is_main", "anchor",
                      "nodes", "main_visit"):
            e, g = getattr(expected, field), getattr(got, field)
            assert e.dtype == g.dtype, field
            np.testing.assert_array_equal(g, e, err_msg=field)


def _with_visit_columns(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with random written visit numbers (unknown, 0, several visits), as the parser's float columns."""
    frame = frame.copy()
    n = len(frame)
    frame["visit"] = np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 4, n)).astype(np.float64)
    frame["parent_visit"] = np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 4, n)).astype(np.float64)
    return frame


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record, max_size=40), st.integers(0, 2**16), st.booleans())
def test_decisions_match_numpy(recs, seed, written):
    """_calign.decisions' grouping equals _main_decisions + _Decisions (every array, in order)."""
    rng = np.random.default_rng(seed)
    frame = frame_of(recs, rng.permutation(len(recs)))
    if written:
        frame = _with_visit_columns(frame, rng)
    side = core._Side(frame)
    codes, paths, ply, parent = core._encode_and_close(side.path, _large([]))
    n_paths = len(paths)
    tree = side.visits(codes, parent, ply)
    grouped = core._compiled_decisions(side, codes, parent, tree, n_paths)
    assert grouped is not None  # (_Side puts the records in seq order)
    mask = core._main_decisions(side, codes, parent, tree, n_paths)
    act, kind = side.act[0], side.kind[0]
    expected = core._Decisions(side, codes, n_paths, act, kind, mask)
    got = core._Decisions(side, codes, n_paths, act, kind, grouped)
    for field in ("count", "start", "act", "kind", "depth", "new_depth", "reduction", "mn", "seq", "line"):
        e, g = getattr(expected, field), getattr(got, field)
        assert e.dtype == g.dtype, field
        np.testing.assert_array_equal(g, e, err_msg=field)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(record, max_size=30), st.lists(record, max_size=30), st.integers(0, 2**16),
       st.sampled_from(["main", "all"]))
def test_random_written_visits_compiled_equals_numpy(monkeypatch, recs_a, recs_b, seed, visits):
    """As test_random_traces_compiled_equals_numpy, with random written visit / parent_visit columns."""
    rng = np.random.default_rng(seed)
    a = _with_visit_columns(frame_of(recs_a, rng.permutation(len(recs_a))), rng)
    b = _with_visit_columns(frame_of(recs_b, rng.permutation(len(recs_b))), rng)
    compiled, fallback = _both(lambda: align_trees(a, b, visits=visits), monkeypatch)
    _assert_same_rows(compiled, fallback)


def test_a_path_decided_in_its_parents_main_visit_keeps_only_those_decisions(monkeypatch):
    """Hand-counted: e2e4's main visit is its first (deeper) one; e2e4/e7e5 was decided in both visits of
    e2e4, so its row has the one decision of e2e4's visit 1, not the later visit's (the highest parent_visit)."""
    records = [("e2e4", True, "FULL", 3.0, 2.0, np.nan, 0), ("e2e4/e7e5", True, "FULL", 2.0, 1.0, np.nan, 0),
               ("e2e4/e7e5", False, "FULL", 1.0, np.nan, np.nan, None), ("e2e4", False, "FULL", 2.0, np.nan, np.nan, None),
               ("e2e4/e7e5", True, "LMR", 1.0, 0.0, 1.0, 0), ("e2e4/e7e5", False, "FULL", 0.0, np.nan, np.nan, None),
               ("e2e4", False, "FULL", 1.0, np.nan, np.nan, None), ("", False, "FULL", 3.0, np.nan, np.nan, None)]
    frame = frame_of(records)
    frame["visit"] = [np.nan, np.nan, 1, 1, np.nan, 2, 2, 1]
    frame["parent_visit"] = [1, 1, np.nan, np.nan, 2, np.nan, np.nan, np.nan]
    compiled, fallback = _both(lambda: align_trees(frame, frame), monkeypatch)
    _assert_same_rows(compiled, fallback)
    row = compiled.set_index("path").loc["e2e4/e7e5"]
    assert (row["decisions_a"], str(row["seq_a"]), row["visits_a"]) == (1, "FULL", 2)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(path_strategy, min_size=1, max_size=30), st.lists(path_strategy, min_size=1, max_size=30),
       st.integers(0, 2**16))
def test_tree_of_indexed_strings_matches_numpy(monkeypatch, strings_a, strings_b, seed):
    """The records' paths given as indices into a larger string array (what _Side hands over): same codes,
    paths, plies and parents as the taken arrays through the numpy passes."""
    rng = np.random.default_rng(seed)
    a, b = _large(strings_a, 2), _large(strings_b)
    idx_a = rng.integers(0, len(a), rng.integers(0, 20)).astype(np.int64)
    idx_b = rng.integers(0, len(b), rng.integers(0, 20)).astype(np.int64)
    compiled, fallback = _both(lambda: core._encode_and_close(a, b, idx_a, idx_b), monkeypatch)
    for got, expected in zip(compiled, fallback):
        if isinstance(got, pa.Array):
            assert got.to_pylist() == expected.to_pylist()
        else:
            np.testing.assert_array_equal(got, expected)
    taken = core._encode_and_close(a.take(pa.array(idx_a)), b.take(pa.array(idx_b)))
    np.testing.assert_array_equal(compiled[0], taken[0])
    assert compiled[1].to_pylist() == taken[1].to_pylist()
    with pytest.raises(IndexError):
        core._calign.tree(*core._string_buffers(a), *core._string_buffers(b), np.empty(1, np.int32),
                          np.array([len(a)], dtype=np.int64), np.zeros(0, dtype=np.int64))

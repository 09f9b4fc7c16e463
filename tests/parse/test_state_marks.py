"""The parser state's search and ITER lookups (treediff/parse/state.py) against numpy's binary search."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.parse.state import _int32_where, last_at_or_before


def test_last_at_or_before_by_hand():
    marks = np.array([3, 7, 7, 12], dtype=np.int64)
    rows = np.array([0, 2, 3, 4, 7, 8, 11, 12, 13, 40], dtype=np.uint32)
    # counted by hand: the last mark at or before each row (the second 7 for 7 and 8), -1 before 3
    assert last_at_or_before(marks, rows).tolist() == [-1, -1, 0, 0, 2, 2, 2, 3, 3, 3]
    assert last_at_or_before(np.zeros(0, dtype=np.int64), rows).tolist() == [-1] * 10
    assert last_at_or_before(marks, np.zeros(0, dtype=np.uint32)).tolist() == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 60), max_size=12), st.lists(st.integers(0, 60), max_size=80))
def test_last_at_or_before_is_searchsorted(marks: list[int], rows: list[int]):
    marks_arr = np.array(sorted(marks), dtype=np.int64)
    rows_arr = np.array(sorted(rows), dtype=np.uint32)
    expected = np.searchsorted(marks_arr, rows_arr.astype(np.int64), side="right") - 1
    assert last_at_or_before(marks_arr, rows_arr).tolist() == expected.tolist()


def test_int32_where_by_hand():
    series = _int32_where(np.array([5, 6, 7, 8], dtype=np.int64), np.array([True, False, True, False]), "iter")
    assert series.name == "iter" and str(series.dtype) == "Int32"
    assert series.to_list() == [5, None, 7, None]
    assert _int32_where(np.array([1, 2]), np.array([True, True]), "x").to_list() == [1, 2]

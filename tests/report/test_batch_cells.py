"""Batch's cell numbering (table.sorted_codes) equals np.unique's, and core._search_rows equals row_of[search]
with the same error for a search the searches table does not hold."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.model.errors import InputError
from treediff.report.core import _search_rows
from treediff.report.table import sorted_codes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=-(1 << 62), max_value=1 << 62), max_size=60),
       st.lists(st.integers(min_value=0, max_value=5), max_size=200))
def test_sorted_codes_is_np_unique(wide: list[int], small: list[int]) -> None:
    for values in (np.asarray(wide, dtype=np.int64), np.asarray(small, dtype=np.int64)):
        cells, inverse = sorted_codes(values)
        want_cells, want_inverse = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(cells, want_cells)
        np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
        assert cells.dtype == np.int64 and inverse.dtype == np.int64


def test_search_rows() -> None:
    row_of = np.asarray([-1, 0, 2, 1, -1], dtype=np.int64)
    frame = pd.DataFrame({"search": np.asarray([1, 3, 2, 2], dtype=np.int32)})
    np.testing.assert_array_equal(_search_rows(frame, row_of), [0, 1, 2, 2])
    assert len(_search_rows(frame.iloc[:0], row_of)) == 0
    for bad in (0, 4, 7, -2):
        with pytest.raises(InputError, match=f"search {bad},"):
            _search_rows(pd.DataFrame({"search": [1, bad, 2]}), row_of)

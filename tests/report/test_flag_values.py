"""Batch.flag / flag_values: the same booleans as ``np.asarray(column.fillna(False), dtype=bool)``, which the
lmr, scope and residual tables computed before (a bool Arrow column with nulls reads back as objects)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.report.table import Batch, flag_values


def _old(column: pd.Series) -> np.ndarray:
    # (fillna through object: pandas 3 deprecates a False fill of a float column; the values are the same)
    return np.asarray(column.astype(object).fillna(False), dtype=bool)


CASES = [
    pd.Series([True, False, None, True, None], dtype=object),
    pd.Series([True, False, True]),                                   # bool dtype
    pd.Series([True, np.nan, False, None], dtype=object),             # NaN is truthy: must become False
    pd.Series([np.True_, np.False_, None, 1, 0, 2, "x", ""], dtype=object),
    pd.Series([True, pd.NA, False], dtype=object),                    # pd.NA: the general path
    pd.Series([True, None, False], dtype="boolean"),
    pd.Series([1.0, np.nan, 0.0, -2.5, np.inf]),
    pd.Series([1, None, 0], dtype="Int64"),
    pd.Series([1.5, None, 0.0], dtype="Float64"),
    pd.Series([], dtype=object),
    pa.chunked_array([pa.array([True, None, False, None, True])]).to_pandas(),
]


@pytest.mark.parametrize("column", CASES, ids=range(len(CASES)))
def test_flag_values_equals_fillna(column: pd.Series) -> None:
    got = flag_values(column)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, _old(column))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([True, False, None, float("nan"), np.True_, np.False_, 0, 1, 3, "", "a"]),
                max_size=30))
def test_flag_values_random_objects(values: list) -> None:
    column = pd.Series(values, dtype=object)
    np.testing.assert_array_equal(flag_values(column), _old(column))


def test_batch_flag_missing_column_and_cache() -> None:
    records = pd.DataFrame({"search": [0, 0, 0], "iter": [1, 1, 1], "null_move": [None, True, False]})
    batch = Batch(records, pd.DataFrame({"search": [0]}), np.zeros(1, dtype=np.int64))
    np.testing.assert_array_equal(batch.flag("null_move"), [False, True, False])
    assert batch.flag("null_move") is batch.flag("null_move")
    np.testing.assert_array_equal(batch.flag("fh"), [False, False, False])

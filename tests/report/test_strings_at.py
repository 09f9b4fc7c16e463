"""tries.strings_at: the strings of some rows of a records column, as ``astype(object).to_numpy()[index]``
gives them, whether the column is Arrow-backed in several chunks (taken chunk by chunk: empty chunks, rows
in any order, repeated, nulls) or plain objects."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from treediff.report.tries import strings_at


def _reference(frame: pd.DataFrame, index: np.ndarray) -> list[object]:
    return list(frame["path"].astype(object).to_numpy()[index])


def _same(got: np.ndarray, want: list[object]) -> None:
    assert got.dtype == object and len(got) == len(want)
    for g, w in zip(got.tolist(), want):
        assert (g is w) or (g == w) or (pd.isna(g) and pd.isna(w) and type(g) is type(w)), (g, w)


@pytest.mark.parametrize("seed", range(4))
def test_chunked_arrow_strings(seed):
    rng = np.random.default_rng(seed)
    chunks = []
    for _ in range(int(rng.integers(1, 7))):
        n = int(rng.integers(0, 40))
        words = [f"e2e4/{i}" if rng.random() > 0.1 else None for i in rng.integers(0, 99, n)]
        chunks.append(pa.array(words, pa.string()))
    column = pa.chunked_array(chunks, pa.string())
    if not len(column):
        column = pa.chunked_array([pa.array(["", None, "d2d4"])])
    dtypes: list[object] = [pd.ArrowDtype(pa.string()), pd.StringDtype("pyarrow"), object]
    if int(pd.__version__.split(".")[0]) >= 3:
        dtypes.append("str")  # (pandas 3's default strings: Arrow-backed, NaN for a missing value)
    for dtype in dtypes:
        series = pd.Series(pd.arrays.ArrowStringArray(column)).astype(dtype) if dtype is not object \
            else pd.Series(column.to_pylist(), dtype=object)
        frame = pd.DataFrame({"path": series})
        for index in (np.arange(len(frame)), rng.integers(0, len(frame), 25), np.zeros(0, np.int64),
                      np.arange(len(frame))[::-1]):
            _same(strings_at(frame, "path", index), _reference(frame, index))


def test_rows_outside_the_column_are_refused():
    frame = pd.DataFrame({"path": pd.Series(["a", "b"], dtype=pd.StringDtype("pyarrow"))})
    with pytest.raises(IndexError):
        strings_at(frame, "path", np.array([2]))


def test_a_batch_joins_a_string_column_once():
    """Batch.arrow_strings: the column as one large_string array (nulls kept), the same for a chunked
    Arrow-backed column and for objects, made once and shared (derive and scope read it)."""
    from treediff.report.table import Batch

    words = ["", "e2e4", None, "e2e4/e7e5", "d2d4"]
    chunked = pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(words[:2]), pa.array([], pa.string()),
                                                           pa.array(words[2:])]))
    for path in (pd.Series(chunked), pd.Series(words, dtype=object)):
        records = pd.DataFrame({"search": np.zeros(5, np.int64), "iter": np.zeros(5, np.int64),
                                "tag": pd.Categorical(["MOVE"] * 5), "path": path})
        batch = Batch(records, pd.DataFrame({"search": [0]}), np.zeros(1, dtype=np.int64))
        got = batch.arrow_strings("path")
        assert got.type == pa.large_string() and got.to_pylist() == words
        assert batch.arrow_strings("path") is got

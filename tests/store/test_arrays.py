"""``store.arrays``: Arrow columns to numpy and back through their buffers give what pyarrow's own converters
give (``to_pylist``, the oracle here), on sliced arrays, chunked columns, nulls and dictionaries; and they do
not import pandas (pyarrow's converters do)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from treediff.store.arrays import equals, int32_where, numbers, numpy_dtype, primitive


def _columns() -> dict[str, pa.ChunkedArray]:
    ints = pa.array([3, None, -7, 12, None, 0, 5], type=pa.int16())
    floats = pa.array([0.5, None, -2.0, 7.25, 1.0], type=pa.float32())
    return {
        "ints": pa.chunked_array([ints.slice(1, 5), ints.slice(0, 2), pa.array([], type=pa.int16())]),
        "floats": pa.chunked_array([floats, floats.slice(2)]),
        "uints": pa.chunked_array([pa.array([1, 2, 65535], type=pa.uint16()).slice(1)]),
        "nulls": pa.chunked_array([pa.nulls(3), pa.nulls(2)]),
    }


@pytest.mark.parametrize("name,dtype,fill", [("ints", np.int64, -1), ("ints", np.float64, np.nan),
                                             ("floats", np.float64, np.nan), ("uints", np.int64, -1),
                                             ("nulls", np.int64, -1), ("nulls", np.float64, np.nan)])
def test_numbers_are_the_values_with_nulls_filled(name, dtype, fill):
    column = _columns()[name]
    want = [fill if v is None else v for v in column.to_pylist()]
    got = numbers(column, dtype, fill)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.array(want, dtype=dtype))
    one_chunk = column.combine_chunks() if name != "nulls" else pa.nulls(len(column))
    np.testing.assert_array_equal(numbers(one_chunk, dtype, fill), got)  # a plain Array, too


def test_equals_on_dictionary_and_plain_strings():
    words = pa.array(["RESULT", None, "MOVE", "RESULT", "PRUNE", None, "MOVE"])
    want = [w == "RESULT" for w in words.to_pylist()]
    dictionary = pc.dictionary_encode(words)
    column = pa.chunked_array([dictionary.slice(0, 4), dictionary.slice(4), dictionary.slice(0, 0)])
    got = equals(column, "RESULT")
    assert got.dtype == bool
    assert got.tolist() == want
    assert equals(column, "ITER").tolist() == [False] * len(got)
    plain = pa.chunked_array([words.slice(2), words.slice(0, 3)])
    assert equals(plain, "RESULT").tolist() == want[2:] + want[:3]
    # a dictionary holding the word twice (as concatenated batches' can): both codes match
    twice = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 1], type=pa.int8()),
                                           pa.array(["RESULT", "MOVE", "RESULT"]))
    assert equals(twice, "RESULT").tolist() == [True, False, True, False, False]


def test_primitive_and_int32_where_round_trip():
    values = np.array([4, -1, 9, 2**40], dtype=np.int64)
    assert primitive(values, pa.int64()).to_pylist() == values.tolist()
    assert primitive(values[:3], pa.float64()).to_pylist() == [4.0, -1.0, 9.0]
    assert int32_where(np.array([1, 2, 3]), np.array([True, False, True])).to_pylist() == [1, None, 3]
    assert int32_where(np.array([1, 2]), np.array([True, True])).null_count == 0
    assert numpy_dtype(pa.uint8()) == np.uint8 and numpy_dtype(pa.float32()) == np.float32


def test_no_pandas_is_imported():
    # (the inputs made by polars: pa.array of a list imports pandas itself)
    code = ("import sys, numpy as np, polars as pl, pyarrow as pa, pyarrow.compute as pc\n"
            "from treediff.store.arrays import equals, numbers, primitive\n"
            "words = pl.Series(['x', None, 'y']).to_arrow()\n"
            "equals(pc.dictionary_encode(words), 'x'); equals(pa.chunked_array([words]), 'x')\n"
            "b = primitive(np.arange(4), pa.int64()); numbers(b, np.float64, 0.0)\n"
            "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"

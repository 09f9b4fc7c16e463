"""store/categorical: dictionary columns converted by the compiled pass are the Categoricals Arrow's
``to_pandas`` gives (same categories in the same order and dtype, same codes and code width, -1 for nulls),
over chunks with different dictionaries, sliced chunks, nulls whose index holds anything, wide dictionaries;
what the pass does not handle is left to ``to_pandas``; records_frame as a whole equals ``to_pandas``."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from treediff.store import categorical
from treediff.store.categorical import compiled_available, dictionary_categorical
from treediff.store.source import records_frame

needs_compiled = pytest.mark.skipif(not compiled_available(), reason="the compiled conversion is not built")


def _chunk(rng: np.random.Generator, words: list[str], n: int, null_share: float) -> pa.DictionaryArray:
    """A dictionary chunk over a random subset of ``words`` in random order; nulls at random."""
    size = int(rng.integers(1, len(words) + 1))
    dictionary = pa.array(list(rng.permutation(words)[:size]), pa.string())
    indices = rng.integers(0, size, n).astype(np.int32)
    mask = rng.random(n) < null_share
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32(), mask=mask), dictionary)


def _assert_as_to_pandas(column: pa.ChunkedArray) -> None:
    got = dictionary_categorical(column)
    assert got is not None
    want = pa.table({"c": column}).to_pandas()["c"]
    pd.testing.assert_series_equal(pd.Series(got, name="c"), want, check_exact=True)
    assert got.codes.dtype == want.cat.codes.dtype
    assert list(got.categories) == list(want.cat.categories)  # (the unified order, not a sorted one)


@needs_compiled
@pytest.mark.parametrize("seed", range(8))
def test_random_chunks_convert_as_to_pandas(seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(int(rng.choice([3, 40, 200, 40_000])))]  # int8, int16 and int32 codes
    chunks = [_chunk(rng, words, int(rng.integers(0, 3_000)), float(rng.choice([0.0, 0.1, 0.9])))
              for _ in range(int(rng.integers(1, 6)))]
    if rng.random() < 0.5 and len(chunks[0]) > 10:  # a repeated dictionary (the shared transpose)
        chunks.append(chunks[0].slice(3, 7))
    if all(len(c) == 0 for c in chunks):
        chunks.append(_chunk(rng, words, 5, 0.0))
    column = pa.chunked_array(chunks)
    _assert_as_to_pandas(column)
    _assert_as_to_pandas(column.slice(int(rng.integers(0, len(column))), 1000))  # chunks cut inside (offsets)


@needs_compiled
def test_a_null_slot_may_hold_any_index():
    """Arrow leaves a null's index undefined: a value outside the dictionary there is still a null (-1)."""
    indices = pa.Array.from_buffers(pa.int32(), 4, [pa.py_buffer(np.packbits([1, 0, 1, 1], bitorder="little")),
                                                    pa.py_buffer(np.array([1, 999, 0, 1], dtype=np.int32))],
                                    null_count=1)
    column = pa.chunked_array([pa.DictionaryArray.from_arrays(indices, pa.array(["a", "b"]))])
    got = dictionary_categorical(column)
    assert got is not None and got.codes.tolist() == [1, -1, 0, 1]
    assert list(got.categories) == ["a", "b"] and got.isna().tolist() == [False, True, False, False]
    _assert_as_to_pandas(column)


@needs_compiled
def test_hand_counted_unification():
    """The first chunk's values, then each chunk's new values in its dictionary's order (Arrow's unifier)."""
    first = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array(["MOVE", "RESULT"]))
    second = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1, None], pa.int32()),
                                            pa.array(["SHADOW", "RESULT", "ITER"]))
    got = dictionary_categorical(pa.chunked_array([first, second]))
    assert got is not None
    assert list(got.categories) == ["MOVE", "RESULT", "SHADOW", "ITER"]
    assert got.codes.tolist() == [1, 0, 1, 2, 3, 1, -1]
    assert got.codes.dtype == np.int8


def test_what_it_does_not_handle_goes_to_to_pandas(monkeypatch):
    words = pa.array(["x", "y"])
    ordered = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), words, ordered=True)
    narrow = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), words)
    numbers = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([5, 7]))
    null_value = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["x", None]))
    empty = pa.chunked_array([], pa.dictionary(pa.int32(), pa.string()))
    no_values = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), pa.array([], pa.string()))
    outside = pa.DictionaryArray.from_arrays(pa.array([0, 5], pa.int32()), words, safe=False)
    for column in (ordered, narrow, numbers, null_value, empty, no_values, outside, pa.array(["x"])):
        assert dictionary_categorical(column) is None, column
    monkeypatch.setattr(categorical, "_cstore", None)  # no compiled module: every column to to_pandas
    assert not compiled_available()
    assert dictionary_categorical(pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), words)) is None


def _records(rng: np.random.Generator, n: int) -> pa.Table:
    acts = ["FULL", "LMR", "NMP", "SEE-QUIET", "FP-CAP"]
    moves = [f"{a}{b}" for a in "abcdefgh" for b in "12345678"]
    chunks = []
    for _ in range(3):
        chunks.append(pa.table({
            "tag": _chunk(rng, ["MOVE", "RESULT", "SHADOW"], n, 0.0),
            "act": _chunk(rng, acts, n, 0.3),
            "move": _chunk(rng, moves, n, 0.05),
            "ply": pa.array(rng.integers(0, 30, n), pa.int16()),
            "mn": pa.array(rng.integers(1, 40, n), pa.int16(), mask=rng.random(n) < 0.2),
            "depth": pa.array(rng.random(n) * 10, pa.float32()),
            "null_move": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
            "path": pa.array([f"p{i}" for i in rng.integers(0, 99, n)]),
        }))
    return pa.concat_tables(chunks)


@pytest.mark.parametrize("seed", range(3))
def test_records_frame_is_to_pandas(seed):
    """The whole frame (column order, dtypes, values) as ``to_pandas`` with the boolean mapper gives it."""
    table = _records(np.random.default_rng(seed), 500)
    frame = records_frame(table)
    want = table.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
    pd.testing.assert_frame_equal(frame, want, check_exact=True)
    for name in ("tag", "act", "move"):
        assert frame[name].cat.codes.dtype == want[name].cat.codes.dtype
    only_dictionaries = table.select(["tag", "act"])
    pd.testing.assert_frame_equal(records_frame(only_dictionaries), only_dictionaries.to_pandas(), check_exact=True)


@needs_compiled
def test_the_kernel_refuses_inconsistent_buffers():
    kernel = categorical._cstore
    indices, transpose = np.array([0, 1, 0], dtype=np.int32), np.array([0, 1], dtype=np.int32)
    with pytest.raises(ValueError, match="room for the chunk"):
        kernel.dictionary_codes(np.empty(2, np.int8), 0, indices, 0, 3, None, transpose)  # no room
    with pytest.raises(ValueError, match="room for the chunk"):
        kernel.dictionary_codes(np.empty(3, np.int64), 0, indices, 0, 3, None, transpose)  # int64 codes
    with pytest.raises(ValueError, match="out of range"):
        kernel.dictionary_codes(np.empty(3, np.int8), 0, np.array([0, 2, 1], np.int32), 0, 3, None, transpose)
    out = np.full(5, 9, np.int16)
    kernel.dictionary_codes(out, 1, indices, 1, 2, None, np.array([7, 3], dtype=np.int32))
    assert out.tolist() == [9, 3, 7, 9, 9]


@needs_compiled
@pytest.mark.parametrize("size", [1, 126, 127, 128, 32766, 32767, 32768])
def test_code_width_at_the_boundaries(size):
    """Codes as wide as pandas makes them for that many categories (int8 below 127, int16 below 32767)."""
    words = pa.array([f"v{i}" for i in range(size)])
    indices = pa.array(np.arange(size, dtype=np.int32)[::-1])
    _assert_as_to_pandas(pa.chunked_array([pa.DictionaryArray.from_arrays(indices, words)]))

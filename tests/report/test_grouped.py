"""``report.grouped``: rows grouped by key tuples give what pandas' ``groupby(keys, sort=False,
dropna=False)`` gives: the same groups in the same order, their key values, sizes and sums (bit for bit)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treediff.report.grouped import group_rows, lexsort_ints


def _reference(keys: dict[str, np.ndarray], values: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame({**keys, "_v": values})
    return frame.groupby(list(keys), sort=False, dropna=False).agg(size=("_v", "size"), total=("_v", "sum")) \
        .reset_index()


def _assert_like_pandas(keys: dict[str, np.ndarray], values: np.ndarray) -> None:
    want = _reference(keys, values)
    got = group_rows(*keys.values())
    assert got.n == len(want)
    np.testing.assert_array_equal(got.sizes(), want["size"].to_numpy(dtype=np.int64))
    sums = got.sums(values)
    assert sums.dtype == np.float64
    np.testing.assert_array_equal(sums, want["total"].to_numpy(dtype=np.float64))  # exact, not approx
    for name, key in keys.items():
        mine = pd.Series(got.take(key))
        theirs = want[name]
        assert mine.isna().tolist() == theirs.isna().tolist(), name
        np.testing.assert_array_equal(mine[mine.notna()].to_numpy(dtype=object),
                                      theirs[theirs.notna()].to_numpy(dtype=object), err_msg=name)


@pytest.mark.parametrize("seed", range(6))
def test_mixed_keys_like_pandas(seed):
    rng = np.random.default_rng(seed)
    n = 4_000
    keys = {"g": rng.integers(0, 30, n), "code": rng.integers(-1, 6, n),
            "step": rng.choice(np.array([0.0, -0.0, 0.5, 1.0, 2.25, np.nan]), n),
            "band": rng.choice(np.array(["1", "2", "3-4", None], dtype=object), n)}
    _assert_like_pandas(keys, rng.random(n) * 10)                           # a compensated (pandas) sum
    _assert_like_pandas(keys, rng.integers(-5, 9, n).astype(np.float64))   # whole numbers: added in any order


def test_sums_with_missing_or_huge_values_are_pandas_sums():
    rng = np.random.default_rng(7)
    n = 2_000
    keys = {"g": rng.integers(0, 7, n), "i": rng.integers(0, 3, n)}
    values = rng.integers(0, 5, n).astype(np.float64)
    values[::17] = np.nan  # skipped, as pandas skips them
    _assert_like_pandas(keys, values)
    huge = rng.integers(1, 9, n).astype(np.float64) * 2.0 ** 60  # whole, but too big to add exactly
    huge[::5] += 1.0
    _assert_like_pandas(keys, huge)


def test_keys_too_wide_to_pack_at_once():
    rng = np.random.default_rng(3)
    n = 3_000
    # each key has ~n distinct values: 3000**6 > 2**62, so the sixth key is packed onto renumbered tuples
    keys = {f"k{i}": rng.integers(0, 1 << 40, n) for i in range(6)}
    assert np.prod([float(len(np.unique(k))) for k in keys.values()]) > 2.0 ** 62
    _assert_like_pandas(keys, np.ones(n))


def test_one_key_and_no_rows():
    _assert_like_pandas({"g": np.array([3, 1, 3, 2, 1])}, np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    empty = group_rows(np.zeros(0, dtype=np.int64), np.zeros(0))
    assert empty.n == 0 and empty.sizes().tolist() == [] and empty.sums(np.zeros(0)).tolist() == []


@pytest.mark.parametrize("kind", ["int", "float-nan-first", "object-none-first", "one-value"])
def test_one_key_like_pandas(kind):
    """One key is numbered by its own factorization (no second hash): groups still in order of first row, a
    missing value first or in between a group of its own."""
    rng = np.random.default_rng(11)
    n = 3_000
    key = {"int": rng.integers(-4, 40, n),
           "float-nan-first": np.concatenate(([np.nan], rng.choice(np.array([1.0, np.nan, 3.5, -0.0, 0.0]), n - 1))),
           "object-none-first": np.concatenate((np.array([None], dtype=object),
                                                rng.choice(np.array(["kind", None, "act"], dtype=object), n - 1))),
           "one-value": np.full(n, 7)}[kind]
    _assert_like_pandas({"k": key}, rng.integers(0, 4, n).astype(np.float64))


def test_int_sums_are_exact_beyond_float_precision():
    """int_sums: exact int64 sums per group, also where float64 would round (counted by hand here)."""
    groups = group_rows(np.array([5, 9, 5, 9, 5]))
    values = np.array([2**60, 3, 1, 4, 1], dtype=np.int64)
    sums = groups.int_sums(values)
    assert sums.dtype == np.int64
    assert sums.tolist() == [2**60 + 2, 7]  # (in float64, 2**60 + 1 rounds back to 2**60)
    assert groups.int_sums(np.array([1, 1, 1, 0, 1], dtype=np.int64)).tolist() == [3, 1]  # rows 0, 2, 4; 1, 3
    assert group_rows(np.zeros(0, dtype=np.int64)).int_sums(np.zeros(0, dtype=np.int64)).tolist() == []


@pytest.mark.parametrize("seed", range(4))
def test_lexsort_ints_is_lexsort(seed):
    """One stable sort of the packed keys orders rows as ``np.lexsort`` does (last key first, ties in row
    order), over negative keys, bools, sorted keys and ranges too wide to pack (lexsort itself then)."""
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 80))
        keys = []
        for _ in range(int(rng.integers(1, 4))):
            high = 1 << int(rng.integers(1, 45))  # up to 2**44: three keys may overflow 62 bits packed
            key = rng.integers(-5, high, n)
            keys.append(np.sort(key) if rng.random() < 0.3 else key)
        if rng.random() < 0.2:
            keys.append(rng.random(n) < 0.5)
        np.testing.assert_array_equal(lexsort_ints(keys), np.lexsort(keys))


def test_lexsort_ints_of_no_rows_and_non_integer_keys():
    assert lexsort_ints([np.zeros(0, np.int64), np.zeros(0, np.int64)]).tolist() == []
    floats = [np.array([2.5, 1.5, 2.5]), np.array([1, 1, 0])]
    assert lexsort_ints(floats).tolist() == np.lexsort(floats).tolist() == [2, 1, 0]
    wide = [np.array([0, 1 << 40, 5]), np.array([1 << 40, 0, 1 << 40])]  # 2**80 tuples: not packed
    assert lexsort_ints(wide).tolist() == np.lexsort(wide).tolist() == [1, 0, 2]


@pytest.mark.parametrize("seed", range(4))
def test_packed_keys_numbered_as_factorize(seed):
    """The table-indexed numbering (compiled where built) gives factorize's codes and each group's first row,
    for spans from a few keys to past the table's limit (factorize then)."""
    from treediff.report import grouped

    rng = np.random.default_rng(seed)
    for width in (1, 7, 5_000, grouped._TABLE_ENTRIES + 3):
        n = int(rng.integers(1, 20_000))
        codes = rng.integers(0, width, n).astype(np.int64)
        if rng.random() < 0.5:
            codes[:: 3] = width - 1  # the last key of the span
        got = grouped._numbered(codes, width)
        want, _ = pd.factorize(codes)
        np.testing.assert_array_equal(got.codes, want)
        np.testing.assert_array_equal(got.first, [int(np.flatnonzero(want == g)[0]) for g in range(got.n)])


def test_the_numbering_kernel_refuses_keys_outside_its_span():
    from treediff.report import tries

    if not tries.compiled_available():
        pytest.skip("the compiled kernel is not built")
    codes, first = np.empty(3, np.int64), np.empty(3, np.int64)
    assert tries._ctries.first_codes(np.array([4, 2, 4], np.int64), 5, codes, first) == 2
    assert codes.tolist() == [0, 1, 0] and first[:2].tolist() == [0, 1]
    for bad in ([0, 5, 1], [0, -1, 1]):
        with pytest.raises(ValueError, match="outside"):
            tries._ctries.first_codes(np.array(bad, np.int64), 5, codes, first)


def test_whole_float_keys_group_as_pandas():
    """Float keys that are all whole numbers are packed as integers: -0.0 and 0.0 one group (as pandas), the
    groups and their first rows' values as pandas gives them; a NaN or a fraction keeps the hash."""
    rng = np.random.default_rng(5)
    n = 3_000
    for steps in (np.array([0.0, -0.0, 1.0, 2.0, -3.0, 7.0]), np.array([0.0, 1.0, 2.5]), np.array([1.0, np.nan]),
                  np.array([2.0 ** 70, 1.0]), np.array([np.inf, 1.0])):
        keys = {"g": rng.integers(0, 9, n), "step": rng.choice(steps, n)}
        _assert_like_pandas(keys, rng.integers(0, 4, n).astype(np.float64))


@pytest.mark.parametrize("seed", range(3))
def test_isin_small_is_isin(seed):
    from treediff.report.grouped import isin_small

    rng = np.random.default_rng(seed)
    for dtype in (np.int8, np.int16, np.int64, np.uint8):
        for _ in range(50):
            low = 0 if dtype == np.uint8 else int(rng.integers(-128, 0))
            values = rng.integers(low, 127, int(rng.integers(0, 300))).astype(dtype)
            members = rng.integers(-200, 200, int(rng.integers(0, 6)))
            # (the reference on int64 values: numpy 1.24's isin casts members to a narrow values' dtype, so a
            # member of 200 matched -56 in int8 values)
            np.testing.assert_array_equal(isin_small(values, members), np.isin(values.astype(np.int64), members))
    wide = np.array([0, 1 << 40, 5])
    assert isin_small(wide, [5, 1 << 40]).tolist() == [False, True, True]
    assert isin_small(np.array([1.5, 2.0]), [2]).tolist() == [False, True]

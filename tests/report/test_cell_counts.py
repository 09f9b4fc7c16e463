"""``report.grouped.cell_counts``: records counted (or weights summed) per cell of packed keys, by the compiled
kernel and by numpy, both exactly ``np.bincount`` of the packed keys over the masked records."""
from __future__ import annotations

import numpy as np
import pytest

from treediff.report import tries
from treediff.report.grouped import cell_counts

COMPILED = pytest.mark.skipif(tries._ctries is None, reason="the compiled kernels are not built")


def _reference(size, keys, mask, weights):
    rows = np.arange(len(keys[0][0])) if mask is None else np.flatnonzero(mask)
    cell = sum((np.asarray(key, dtype=np.int64)[rows] + offset) * stride for key, offset, stride in keys)
    return np.bincount(cell, weights=None if weights is None else weights[rows], minlength=size)


@pytest.fixture(params=["compiled", "numpy"])
def implementation(request, monkeypatch):
    if request.param == "compiled" and tries._ctries is None:
        pytest.skip("the compiled kernels are not built")
    monkeypatch.setenv(tries.NUMPY_ENV, "1" if request.param == "numpy" else "0")
    return request.param


@pytest.mark.parametrize("seed", range(5))
def test_counts_and_sums_are_bincounts_of_the_packed_keys(implementation, seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(0, 300))
        spans = [int(s) for s in rng.integers(1, 9, int(rng.integers(1, 5)))]  # 1 to 4 keys
        offsets = [int(rng.integers(0, 2)) for _ in spans]
        keys, stride = [], 1
        for span, offset in reversed(list(zip(spans, offsets))):  # the last key varies fastest
            keys.insert(0, (rng.integers(-offset, span - offset, n), offset, stride))
            stride *= span
        size = stride + int(rng.integers(0, 3))
        mask = None if rng.random() < 0.3 else rng.random(n) < 0.6
        weights = None if rng.random() < 0.5 else np.round(rng.normal(0, 5, n), 2)
        got = cell_counts(size, keys, mask=mask, weights=weights)
        want = _reference(size, keys, mask, weights)
        assert got.dtype == (np.int64 if weights is None else np.float64)
        np.testing.assert_array_equal(got, want)  # float sums bit for bit: both add in record order


def test_a_hand_counted_grid(implementation):
    group = np.array([0, 0, 1, 1, 1, 0])
    act = np.array([-1, 2, 0, 0, 2, 2])   # -1: missing, counted in the act + 1 == 0 column
    move = np.array([True, True, True, False, True, True])
    flat = cell_counts(2 * 4, [(group, 0, 4), (act, 1, 1)], mask=move)
    assert flat.reshape(2, 4).tolist() == [[1, 0, 0, 2], [0, 1, 0, 1]]
    assert cell_counts(3, [(np.zeros(0, np.int64), 0, 1)]).tolist() == [0, 0, 0]


def test_a_record_outside_the_cells_is_an_error(implementation):
    with pytest.raises(ValueError):
        cell_counts(2, [(np.array([0, 1, 2]), 0, 1)])
    with pytest.raises(ValueError):
        cell_counts(4, [(np.array([0, -1]), 0, 1)])
    assert cell_counts(2, [(np.array([0, 1, 2]), 0, 1)], mask=np.array([True, True, False])).tolist() == [1, 1]


@COMPILED
def test_the_kernel_refuses_keys_it_cannot_read():
    out = np.zeros(4, np.int64)
    with pytest.raises(ValueError):
        tries._ctries.cell_counts(out, None, None, [np.array([0, 1], np.int32)], [0], [1])  # not int64
    with pytest.raises(ValueError):
        tries._ctries.cell_counts(out, np.ones(3, np.uint8), None, [np.array([0, 1])], [0], [1])  # mask length
    with pytest.raises(ValueError):
        tries._ctries.cell_counts(out, None, None, [np.array([0])] * 5, [0] * 5, [1] * 5)  # five keys


@pytest.mark.parametrize("seed", range(4))
def test_records_cell_after_cell(implementation, seed):
    """A batch's records come cell after cell: runs of one cell (the kernel keeps the running cell's total),
    a cell met again after others, masked-out records at the start, inside and at the ends of runs, a run
    wholly masked out, and an out-of-range key on a masked-out record (not counted, not an error)."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        runs = rng.integers(0, 12, int(rng.integers(1, 30)))            # cells, a cell may come back later
        cell = np.repeat(runs, rng.integers(1, 40, len(runs)))
        mask = rng.random(len(cell)) < rng.choice([0.0, 0.3, 0.9, 1.0])
        mask[: int(rng.integers(0, 5))] = False
        if rng.random() < 0.5:
            cell = cell.copy()
            off = np.flatnonzero(~mask)
            if len(off):
                cell[off[0]] = 999                                        # outside, but masked out
        weights = rng.integers(-3, 4, len(cell)).astype(np.float64) if rng.random() < 0.3 else None
        got = cell_counts(12, [(cell, 0, 1)], mask=mask, weights=weights)
        want = _reference(12, [(np.where(mask, cell, 0), 0, 1)], mask, weights)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == (np.float64 if weights is not None else np.int64)


def test_no_cells(implementation):
    """No cell at all: nothing is counted while every record is masked out; a record counted is outside."""
    keys = [(np.array([0, 3]), 0, 2), (np.array([1, 0]), 0, 1)]
    assert cell_counts(0, keys, mask=np.array([False, False])).tolist() == []
    with pytest.raises(ValueError):
        cell_counts(0, keys, mask=np.array([False, True]))

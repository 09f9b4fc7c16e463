"""scope's ``_dense_ids``: one dense id per distinct tuple, numbered in first-appearance order, as a dict of
tuples numbers them; whether the parts pack into one int64 (one hash) or not (hashed part by part)."""
from __future__ import annotations

import numpy as np
import pytest

from treediff.report.tables.scope import _dense_ids


def _reference(*parts: np.ndarray) -> list[int]:
    ids: dict[tuple[int, ...], int] = {}
    return [ids.setdefault(key, len(ids)) for key in zip(*(p.tolist() for p in parts))]


@pytest.mark.parametrize("seed", range(4))
def test_small_parts_pack_into_one_key(seed):
    rng = np.random.default_rng(seed)
    n = 5_000
    parts = (rng.integers(0, 40, n) * (1 << 16) + rng.integers(1, 9, n),  # (search row, iteration) as scope packs it
             rng.integers(-1, 300, n), rng.integers(1, 4, n))
    assert _dense_ids(*parts).tolist() == _reference(*parts)


def test_parts_too_wide_to_pack_are_hashed_one_by_one():
    rng = np.random.default_rng(9)
    n = 3_000
    wide = rng.choice(np.array([0, 1 << 40, 1 << 41, (1 << 41) + 5], dtype=np.int64), n)  # span ~2**41 each
    parts = (wide, wide[::-1].copy(), rng.integers(0, 3, n))
    assert _dense_ids(*parts).tolist() == _reference(*parts)


def test_no_records():
    empty = np.zeros(0, dtype=np.int64)
    assert _dense_ids(empty, empty, empty).tolist() == []

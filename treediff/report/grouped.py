"""Rows counted and summed by key tuples, as pandas' ``groupby(keys, sort=False)`` gives them, in one hash.

A table's partial counts a batch's records per (cell, act, kind, ...) tuple.  pandas' multi-key groupby
factorizes each key, combines the codes and factorizes again, with a frame and an index around them; here
the keys' codes are packed into one int64 and hashed once (issue 17: in a profile of ``report --table all``
of a 20M-record file they were 65% of the ``depths`` partial's samples and 29% of ``lmr``'s).  The groups come in the order of their first row, as ``sort=False``
numbers them; a sum is pandas' own (compensated) sum unless every value is a whole number, when any order
of adding gives the same float.

Two more shapes of the same work: :func:`cell_counts`, records counted per cell whose number is known in
advance (a bincount of packed keys, compiled where the kernel is built), and :func:`lexsort_ints`,
``np.lexsort`` of integer keys by one sort of the packed keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["Groups", "cell_counts", "group_rows", "isin_small", "lexsort_ints"]

#: Whole numbers up to this size add up exactly in float64 in any order (2**53 over a margin for the count).
_EXACT_SUM = float(1 << 52)


@dataclass(frozen=True)
class Groups:
    """Rows grouped by key tuples: ``codes`` (per row, its group: 0, 1, ... in order of first appearance)
    and ``first`` (per group, its first row)."""

    codes: np.ndarray
    first: np.ndarray

    @property
    def n(self) -> int:
        return len(self.first)

    def take(self, values: np.ndarray) -> np.ndarray:
        """Each group's value of a per-row array (its first row's; a key's value is the group's)."""
        return np.asarray(values)[self.first]

    def sizes(self) -> np.ndarray:
        """Rows per group (int64), ``groupby(...).size()``."""
        return np.bincount(self.codes, minlength=self.n).astype(np.int64)

    def int_sums(self, values: np.ndarray) -> np.ndarray:
        """Per group, the exact sum (int64) of integer ``values`` (no missing values)."""
        values = np.asarray(values, dtype=np.int64)
        if not len(values):
            return np.zeros(self.n, dtype=np.int64)
        if float(np.abs(values).max()) * len(values) < _EXACT_SUM:  # float64 adds them exactly
            return np.bincount(self.codes, weights=values, minlength=self.n).astype(np.int64)
        out = np.zeros(self.n, dtype=np.int64)
        np.add.at(out, self.codes, values)
        return out

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per group, the sum of ``values`` (float64) as ``groupby(...)[col].sum()`` gives it (missing values
        skipped, 0.0 for none)."""
        values = np.asarray(values, dtype=np.float64)
        if len(values) and np.all(np.isfinite(values)) and np.all(values == np.trunc(values)) \
                and float(np.abs(values).max()) * len(values) < _EXACT_SUM:
            return np.bincount(self.codes, weights=values, minlength=self.n)
        summed = pd.Series(values).groupby(self.codes, sort=True).sum()
        out = np.zeros(self.n, dtype=np.float64)
        out[summed.index.to_numpy(dtype=np.int64)] = summed.to_numpy(dtype=np.float64)
        return out


def group_rows(*keys: np.ndarray) -> Groups:
    """The :class:`Groups` of rows by the tuples of ``keys`` (equal length; integer, float or object
    arrays).  A missing value (None, NaN) is a key value of its own, as with ``dropna=False``; a caller that
    wants pandas' default drops those rows first.  Floats compare as pandas does (0.0 and -0.0 equal)."""
    n = len(keys[0]) if keys else 0
    if n == 0:
        return Groups(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    parts = []
    in_first_order = True  # every part's codes numbered 0, 1, ... in order of first appearance
    for key in keys:
        values = np.asarray(key)
        if values.dtype.kind in "iub":  # integers: their offsets from the smallest, no hash (the tuples get one)
            low, high = int(values.min()), int(values.max())
            if high - low < 1 << 40:
                parts.append((values.astype(np.int64) - low, high - low + 1))
                in_first_order = False
                continue
        elif values.dtype.kind == "f" and _whole_numbers(values):  # (depth steps in plies): as integers
            whole = values.astype(np.int64)  # (-0.0 and 0.0 both 0: equal, as pandas has them)
            low, high = int(whole.min()), int(whole.max())
            if high - low < 1 << 40:
                parts.append((whole - low, high - low + 1))
                in_first_order = False
                continue
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        parts.append((np.asarray(codes, dtype=np.int64), max(len(uniques), 1)))
    codes, width = parts[0]
    if len(parts) == 1 and in_first_order:  # one key's codes, in order of first appearance (but NaN put last)
        first = _first_rows(codes)
        if len(first) == width:
            return Groups(codes, first)

    for part, span in parts[1:]:
        if width * span >= 1 << 62:  # too many to pack: number the tuples so far first
            codes, uniques = pd.factorize(codes)
            codes, width = np.asarray(codes, dtype=np.int64), len(uniques)
        codes = codes * span + part
        width *= span
    # codes of the first key are in first-appearance order, the packed tuples are not: number them once more
    return _numbered(codes, width)


#: :func:`_numbered` takes a table of a (4-byte) entry per possible packed key up to this many entries (64 MB),
#: and up to 4 entries a row (or 64K): beyond, factorize's hash table is smaller and faster.
_TABLE_ENTRIES = 1 << 24


def _numbered(codes: np.ndarray, width: int) -> Groups:
    """The :class:`Groups` of packed keys ``codes`` (int64 in [0, width)), numbered in order of first
    appearance: through a table indexed by the key (``_ctries.first_codes``: ~1 ns a row) where the kernel is
    built and the table small, else by ``pd.factorize`` (~10-30 ns a row); the same numbers."""
    from treediff.report import tries  # (which loads the compiled module)

    n = len(codes)
    kernel = getattr(tries._ctries, "first_codes", None) if tries.compiled_available() else None  # (None: stale)
    if kernel is not None and width <= min(_TABLE_ENTRIES, max(4 * n, 1 << 16)) and n < (1 << 31) - 1:
        dense = np.empty(n, dtype=np.int64)
        first = np.empty(n, dtype=np.int64)
        groups = kernel(np.ascontiguousarray(codes, dtype=np.int64), width, dense, first)
        return Groups(dense, first[:groups].copy())
    factorized, _ = pd.factorize(codes)
    factorized = np.asarray(factorized, dtype=np.int64)
    return Groups(factorized, _first_rows(factorized))


def lexsort_ints(keys: Sequence[np.ndarray]) -> np.ndarray:
    """``np.lexsort(keys)`` of integer keys (the last key sorts first; rows with equal keys keep their
    order), by one stable sort of the keys packed into an int64 where their ranges fit, else lexsort's.

    lexsort sorts once per key: three keys of ~300K rows took 37 ms against 15 ms packed (issue 17)."""
    arrays = [np.asarray(key) for key in keys]
    if not arrays or not len(arrays[0]) or any(a.dtype.kind not in "iub" for a in arrays):
        return np.lexsort(arrays) if arrays else np.zeros(0, dtype=np.int64)
    packed: np.ndarray | None = None
    width = 1
    for key in reversed(arrays):  # the primary key first: its value is the packed number's highest part
        low, high = int(key.min()), int(key.max())
        span = high - low + 1
        width *= span
        if width >= 1 << 62:
            return np.lexsort(arrays)
        part = key.astype(np.int64) - low if low else key.astype(np.int64)
        packed = part if packed is None else packed * span + part
    assert packed is not None
    return np.argsort(packed, kind="stable")


def cell_counts(size: int, keys: Sequence[tuple[np.ndarray, int, int]], mask: np.ndarray | None = None,
                weights: np.ndarray | None = None) -> np.ndarray:
    """Records counted (or ``weights`` summed) per cell: ``np.bincount(cell[mask], weights[mask],
    minlength=size)`` where a record's cell is ``sum((key + offset) * stride)`` over ``keys`` (key arrays of
    the records with their offset and stride; 1 to 4).  int64 counts, or float64 sums with ``weights``.

    The compiled kernel (``_ctries.cell_counts``) does it in one pass, where numpy copies every key through
    the mask and packs them in temporaries (a table's counts of 1M records: ~7 ms against ~1.5); numpy is
    the fallback, with the same numbers (sums in record order, as bincount's)."""
    from treediff.report import tries  # (which loads the compiled module)

    if tries.compiled_available() and len(keys) <= 4:
        out = np.zeros(size, dtype=np.float64 if weights is not None else np.int64)
        tries._ctries.cell_counts(
            out, None if mask is None else np.ascontiguousarray(mask, dtype=bool).view(np.uint8),
            None if weights is None else np.ascontiguousarray(weights, dtype=np.float64),
            [np.ascontiguousarray(key, dtype=np.int64) for key, _, _ in keys],
            [int(offset) for _, offset, _ in keys], [int(stride) for _, _, stride in keys])
        return out
    rows = None if mask is None else np.flatnonzero(mask)
    cell: np.ndarray | None = None
    for key, offset, stride in keys:
        part = np.asarray(key, dtype=np.int64) if rows is None else np.asarray(key, dtype=np.int64)[rows]
        part = (part + offset) * stride if offset or stride != 1 else part
        cell = part if cell is None else cell + part
    assert cell is not None
    summed = None if weights is None else (np.asarray(weights, dtype=np.float64) if rows is None
                                           else np.asarray(weights, dtype=np.float64)[rows])
    out = np.bincount(cell, weights=summed, minlength=size)
    if len(out) > size:
        raise ValueError(f"cell_counts: a record falls outside the {size} cells")
    return out.astype(np.float64 if weights is not None else np.int64, copy=False)


def isin_small(values: np.ndarray, members: np.ndarray | Sequence[int]) -> np.ndarray:
    """``np.isin(values, members)`` of integers (plies, category codes) by a lookup table over the values'
    range (one gather), where numpy sorts or compares once per member; ``np.isin`` when the range is wide."""
    values = np.asarray(values)
    wanted = np.asarray(members, dtype=np.int64)
    if values.dtype.kind not in "iu" or not len(values) or not len(wanted):
        return np.isin(values, wanted)
    low, high = int(values.min()), int(values.max())
    if high - low > 1 << 20:
        return np.isin(values, wanted)
    table = np.zeros(high - low + 1, dtype=bool)
    inside = wanted[(wanted >= low) & (wanted <= high)]
    table[inside - low] = True
    at = values.astype(np.intp, copy=False)  # (no overflow of narrow codes when shifted)
    return table[at - low] if low else table[at]


def _whole_numbers(values: np.ndarray) -> bool:
    """Whether every float is a whole number an int64 holds (no NaN, no infinity)."""
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(values) < 2.0 ** 62)) and bool(np.array_equal(values, np.trunc(values)))


def _first_rows(dense: np.ndarray) -> np.ndarray:
    """Each group's first row, groups numbered as they first appear: where the running maximum grows."""
    before = np.empty(len(dense), dtype=np.int64)
    before[0] = -1
    np.maximum.accumulate(dense[:-1], out=before[1:])
    return np.flatnonzero(dense > before)

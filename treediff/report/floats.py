"""Powers, logarithms and exponentials whose bits do not depend on numpy's version or the CPU.

numpy evaluates ``**``, ``log`` and ``exp`` over arrays with SIMD kernels chosen by its version and the
CPU's instruction sets, and those kernels may differ from each other, and from the C library, in the last
bit (numpy 2.4 gave ``253 ** 0.2`` one ULP away from what the goldens were written with).  A report's
EBF columns are printed with every digit (JSON, CSV), so they go through Python's :mod:`math` (the C
library's functions) one value at a time: the same bits on every machine with the same C library.  The
arrays are per group or per search (a few thousand values at most), not per record.
"""
from __future__ import annotations

import math

import numpy as np


def _each(function, *arrays: np.ndarray | float) -> np.ndarray:
    """``function`` of the arrays' values element by element (broadcast), as float64; NaN in, NaN out."""
    columns = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in arrays))
    shape = columns[0].shape
    flat = [c.ravel().tolist() for c in columns]
    out = [math.nan if any(v != v for v in values) else function(*values) for values in zip(*flat)]
    return np.asarray(out, dtype=np.float64).reshape(shape)


def _pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except (ValueError, OverflowError):  # (a negative base's fractional power, an overflow: as numpy, no error)
        with np.errstate(all="ignore"):
            return float(np.float64(base) ** np.float64(exponent))


def _log(value: float) -> float:
    if value > 0:
        return math.log(value)
    return -math.inf if value == 0 else math.nan


def _exp(value: float) -> float:
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


def power(base: np.ndarray, exponent: np.ndarray | float) -> np.ndarray:
    """``base ** exponent`` element by element (:func:`math.pow`)."""
    return _each(_pow, base, exponent)


def log(values: np.ndarray) -> np.ndarray:
    """Natural logarithm element by element (:func:`math.log`; 0 gives -inf, a negative value NaN)."""
    return _each(_log, values)


def exp(values: np.ndarray) -> np.ndarray:
    """``e ** values`` element by element (:func:`math.exp`; an overflow gives inf)."""
    return _each(_exp, values)

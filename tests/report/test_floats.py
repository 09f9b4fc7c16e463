"""report/floats.py: EBF's powers, logs and exps, value by value through the C library.

Expected values are computed here with :mod:`decimal` at 50 digits and rounded to the nearest double, so
the test holds whatever numpy's kernels give; the edge cases (NaN, 0, negatives, overflow) are numpy's
own answers for them, written out by hand.
"""
from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np

from treediff.report import floats


def _nearest(x: Decimal) -> float:
    return float(x)  # (Decimal -> float rounds to nearest)


def test_power_is_the_correctly_rounded_value_where_libm_gives_it():
    getcontext().prec = 50
    bases = np.array([253.0, 1171.0, 4.5e6, 2.0])
    exps = np.array([0.2, 1 / 7, 1 / 11, 0.5])
    out = floats.power(bases, exps)
    for b, e, got in zip(bases.tolist(), exps.tolist(), out.tolist()):
        assert got == _nearest(Decimal(b) ** Decimal(e)), (b, e)
    assert out.tolist()[0] == 3.024294671186993  # the golden's ebf (numpy < 2.4: 3.0242946711869925)


def test_log_and_exp_match_math_and_broadcast():
    values = np.array([[1.0, 253.0], [0.5, 1e300]])
    assert floats.log(values).tolist() == [[math.log(v) for v in row] for row in values.tolist()]
    assert floats.exp(np.array([0.0, 1.0, -745.0])).tolist() == [1.0, math.e, math.exp(-745.0)]
    assert floats.power(np.array([8.0, 27.0]), 1 / 3).shape == (2,)


def test_edges_give_what_numpy_gives_without_raising():
    assert np.isnan(floats.power(np.array([np.nan]), 0.5)[0])
    assert np.isnan(floats.power(np.array([-8.0]), 1 / 3)[0])  # a negative base's fractional power
    assert floats.power(np.array([1e300]), np.array([2.0]))[0] == math.inf
    assert floats.log(np.array([0.0]))[0] == -math.inf and np.isnan(floats.log(np.array([-1.0]))[0])
    assert floats.exp(np.array([1000.0]))[0] == math.inf and np.isnan(floats.exp(np.array([np.nan]))[0])
    assert floats.power(np.array([], dtype=float), np.array([], dtype=float)).shape == (0,)

"""fh's partial groups its tries on one packed int64 key (tables/fh.py: _pack): the columns come back exactly
from the keys, and a column the packing cannot hold exactly (a fractional value) makes it step aside."""
from __future__ import annotations

import numpy as np

from treediff.report.tables.fh import _pack


def test_pack_round_trip():
    nan = np.nan
    cols = {"cell": np.array([0, 3, 3, 1]), "kind": np.array([-1, 0, 2, 2]),
            "depth": np.array([nan, -2.0, 7.0, 0.0]), "see": np.array([-350.0, nan, 0.0, 1200.0])}
    packed = _pack(cols, list(cols))
    assert packed is not None
    key, decode = packed
    assert len(set(key.tolist())) == 4  # four different rows, four keys
    back = decode(key)
    assert back["cell"].tolist() == [0, 3, 3, 1]
    assert back["kind"].tolist() == [-1, 0, 2, 2]
    np.testing.assert_array_equal(back["depth"], cols["depth"])  # NaN where NaN
    np.testing.assert_array_equal(back["see"], cols["see"])
    same = _pack({"a": np.array([5, 5]), "b": np.array([nan, nan])}, ["a", "b"])
    assert same is not None and same[0][0] == same[0][1]  # equal rows, equal keys


def test_pack_steps_aside():
    assert _pack({"a": np.array([1.0, 2.5])}, ["a"]) is None  # not a whole number
    wide = {f"c{i}": np.array([0, 2 ** 20]) for i in range(4)}  # (2^20 + 1)^4 > 2^62: the key would overflow
    assert _pack(wide, list(wide)) is None

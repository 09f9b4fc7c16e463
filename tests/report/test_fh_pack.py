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


def test_a_move_number_keeps_the_low_of_the_band_mn_band_names():
    """What a partial keeps of ``mn`` is the low end of the band :func:`mn_band` labels it with: none for a
    missing number, one below 1 or between two bands' ends, +inf in 17+ (one search over the bands' lows)."""
    import numpy as np

    from treediff.report.tables.fh import _mn_band_low
    from treediff.report.tries import MN_BANDS, mn_band

    low_of = {label: float(lo) for lo, _, label in MN_BANDS}
    values = np.array([np.nan, -np.inf, -3, 0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 4.5, 5, 8, 8.1, 9, 16, 16.5, 17, 18,
                       1e9, np.inf, -0.0, 1023, 1024, 1025, 2.0 ** 63, -2.0 ** 63, *np.arange(-2, 40, 0.25),
                       *np.arange(0, 1100)])  # (whole numbers below 1024 by the table, the rest by the search)
    values = np.concatenate([values, np.random.default_rng(1).permutation(values)])
    want = np.array([low_of[label] if label is not None else np.nan for label in mn_band(values)])
    np.testing.assert_array_equal(_mn_band_low(values), want)
    assert np.isnan(_mn_band_low(np.array([2.5, 0.0, np.nan]))).all()
    assert _mn_band_low(np.array([1, 2, 3, 4, 5, 17, np.inf])).tolist() == [1, 2, 3, 3, 5, 17, 17]


def test_mn_band_order_is_the_place_of_a_label_in_mn_bands():
    import numpy as np

    from treediff.report.tries import MN_BANDS, mn_band_order

    labels = [label for _, _, label in MN_BANDS]
    assert [mn_band_order(label) for label in labels] == list(range(len(labels)))
    assert mn_band_order(np.str_("3-4")) == labels.index("3-4")  # (numpy's strings, as frames give them)
    for other in (None, float("nan"), np.nan, "x", 1, 3.0, ["1"]):  # not a label: after them all
        assert mn_band_order(other) == len(labels)


"""compare's per-position shortcuts give what the general rules give (expected values written by hand).

* ``choose_searches`` with one search a side skips the searches frames: the same pick, label and refusal
  as :func:`~treediff.align.select.choose_pair`'s one-search rule;
* the kinds table summed over positions keeps pandas' label order (``DataFrame.add``: kept when the
  labels agree, else the union, sorted).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treediff.align.select import choose_searches
from treediff.align.summaries import _ConfusionSum
from treediff.model.errors import InputError

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWI = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def _records(search: int, pid: str | None, fen: str | None, n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"search": np.full(n, search, dtype=np.int32),
                         "position": pd.Categorical([pid] * n), "fen": pd.Categorical([fen] * n)})


def test_one_search_a_side_is_paired_and_named_by_a():
    assert choose_searches(_records(4, "p1", START), _records(9, "other", START), None) == (4, 9, "p1")


def test_one_search_a_side_without_an_id_on_a_takes_b_id():
    assert choose_searches(_records(0, None, START), _records(1, "b7", START), None) == (0, 1, "b7")


def test_one_search_a_side_with_different_fens_is_refused_naming_both():
    with pytest.raises(InputError) as err:
        choose_searches(_records(0, "p1", START), _records(0, "p2", KIWI), None)
    assert str(err.value) == f"A and B searched different positions (p1: {START} vs p2: {KIWI})"


def test_one_search_a_side_with_a_fen_missing_is_paired_by_trust():
    assert choose_searches(_records(2, "p1", START), _records(3, "p1", None), None) == (2, 3, "p1")


def test_several_searches_still_go_through_the_general_rule():
    a = pd.concat([_records(0, "p1", START), _records(1, "p2", KIWI)], ignore_index=True)
    assert choose_searches(a, _records(5, "x", KIWI), None) == (1, 5, "p2")


def test_kinds_summed_over_positions_keep_pandas_label_order():
    total = _ConfusionSum()
    total.add(["SEARCH", "PRUNE"], ["SEARCH"], np.array([[3], [1]]))
    total.add(["SEARCH", "PRUNE"], ["SEARCH"], np.array([[2], [0]]))  # same labels: order kept
    same = total.frame()
    assert list(same.index) == ["SEARCH", "PRUNE"] and same["SEARCH"].tolist() == [5, 1]
    total.add(["REDUCE"], ["PRUNE"], np.array([[4]]))  # new labels: the union, sorted
    out = total.frame()
    assert list(out.index) == ["PRUNE", "REDUCE", "SEARCH"] and list(out.columns) == ["PRUNE", "SEARCH"]
    assert out.loc["SEARCH", "SEARCH"] == 5 and out.loc["REDUCE", "PRUNE"] == 4 and out.loc["PRUNE", "PRUNE"] == 0
    assert out.index.name == "A" and out.columns.name == "B"

"""Pieces of the records table's assembly (treediff/parse/assemble.py), with values written by hand."""
from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.schema import DICT_STR
from treediff.parse.assemble import _all_null_dictionary, _last_uci_move


def test_last_uci_move_by_hand():
    paths = pl.Series(["", "e2e4", "e2e4/e7e5", "e7e8q", "e2e4/a7a8q", "e2e4/0000", "0000", None], dtype=pl.String)
    assert _last_uci_move(paths).to_list() == [None, "e2e4", "e7e5", "e7e8q", "a7a8q", "0000", "0000", None]


def test_all_null_dictionary_is_what_dictionary_encode_gives():
    made = pa.chunked_array([_all_null_dictionary(4)], type=DICT_STR)
    assert made.null_count == 4 and len(made.chunk(0).dictionary) == 0
    assert made.equals(pc.dictionary_encode(pa.chunked_array([pa.nulls(4, pa.string_view())])).cast(DICT_STR))

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


# ---------------------------------------------------------------------- compiled dictionary codes (_ctok.view_dictionary)
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from treediff.model.notation import NULL_UCI  # noqa: E402
from treediff.parse import assemble  # noqa: E402
from treediff.parse.tokenizer import compiled_function  # noqa: E402

needs_ctok = pytest.mark.skipif(compiled_function("view_dictionary") is None, reason="no compiled _ctok")


def _views(values: list[str | None], start: int = 0) -> pa.ChunkedArray:
    """``values`` (from ``start`` on) as polars gives a string column to the conversion: one chunk of string views."""
    series = pl.Series(values, dtype=pl.String).slice(start)
    return pl.DataFrame([series.alias("c")]).to_arrow(compat_level=pl.CompatLevel.newest()).column("c")


def _same_dictionary_columns(got: pa.ChunkedArray, want: pa.ChunkedArray) -> None:
    """Equal as columns, and chunk by chunk the same dictionary (order included) and indices: the Parquet bytes."""
    assert got.type == want.type == DICT_STR
    assert got.equals(want)
    got_chunks = [c for c in got.chunks if len(c)]
    want_chunks = [c for c in want.chunks if len(c)]
    assert len(got_chunks) == len(want_chunks)
    for g, w in zip(got_chunks, want_chunks):
        assert g.dictionary.equals(w.dictionary) and g.indices.equals(w.indices)


@needs_ctok
def test_dictionary_encode_by_hand():
    """First-appearance order, nulls as null indices (not entries), lengths told apart ("a" / "a\\0"), inline and
    long values (over 12 bytes: in the data buffer)."""
    values = ["MOVE", None, "RESULT", "MOVE", "a", "a\x00", "", "abcdefghijklm", "abcdefghijklm", None, ""]
    col = assemble.dictionary_encode(_views(values))
    chunk = col.chunk(0)
    assert chunk.dictionary.to_pylist() == ["MOVE", "RESULT", "a", "a\x00", "", "abcdefghijklm"]
    assert chunk.indices.to_pylist() == [0, None, 1, 0, 2, 3, 4, 5, 5, None, 4]
    _same_dictionary_columns(col, pc.dictionary_encode(_views(values)).cast(DICT_STR))


_LABELS = st.one_of(
    st.none(),
    st.sampled_from(["", "a", "a\x00", "\x00", "MOVE", "RESULT", "exact", "abcdefghijkl", "abcdefghijk", "é",
                     "abcdefghijklm", "LMR", "FULL", "SEE-QUIET"]),
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LABELS, max_size=200), st.integers(min_value=0, max_value=20))
@needs_ctok
def test_dictionary_encode_is_pyarrows(values: list[str | None], start: int):
    """The compiled encoding against pyarrow's dictionary_encode, on random columns (sliced too: views at an offset)."""
    start = min(start, len(values))
    _same_dictionary_columns(assemble.dictionary_encode(_views(values, start)),
                             pc.dictionary_encode(_views(values, start)).cast(DICT_STR))


def test_dictionary_encode_without_the_compiled_code_is_pyarrows(monkeypatch):
    """TREEDIFF_TOKENIZER=regex: no compiled step; pyarrow encodes, with the same result."""
    monkeypatch.setenv("TREEDIFF_TOKENIZER", "regex")
    assert compiled_function("view_dictionary") is None
    values = ["x", None, "y", "x"]
    _same_dictionary_columns(assemble.dictionary_encode(_views(values)),
                             pc.dictionary_encode(_views(values)).cast(DICT_STR))


def _moves_by_polars(paths: list[str | None]) -> tuple[pa.ChunkedArray, list[bool | None]]:
    """The old way: polars' _last_uci_move, then pyarrow's dictionary encoding; null_move as with_uci_paths made it."""
    last = assemble._last_uci_move(pl.Series(paths, dtype=pl.String))
    move = pc.dictionary_encode(pl.DataFrame([last.alias("m")]).to_arrow(
        compat_level=pl.CompatLevel.newest()).column("m")).cast(DICT_STR)
    return move, (last == NULL_UCI).to_list()


_MOVES = ["e2e4", "e7e5", "g1f3", "e7e8q", "a2a1n", "0000", "h7h8r"]


@needs_ctok
def test_uci_moves_by_hand():
    paths = ["", "e2e4", "e2e4/e7e5", "e7e8q", "e2e4/a7a8q", "e2e4/0000", "0000", None, "e2e4/e7e5/g1f3/b8c6/f1b5"]
    move, null_move = assemble._uci_moves(_views(paths), pl.Series(paths, dtype=pl.String))
    assert move.to_pylist() == [None, "e2e4", "e7e5", "e7e8q", "a7a8q", "0000", "0000", None, "f1b5"]
    assert move.chunk(0).dictionary.to_pylist() == ["e2e4", "e7e5", "e7e8q", "a7a8q", "0000", "f1b5"]
    assert null_move.to_pylist() == [None, False, False, False, False, True, True, None, False]


@needs_ctok
def test_uci_moves_of_every_shape_by_hand():
    """Moves looked up by their squares (a-h, 1-8, promotion q/r/b/n) and moves that are not (0000, capitals,
    other letters, other lengths) mixed in one column: one code per distinct move, in order of first appearance."""
    paths = ["e2e4", "a1/e7E8Q", "e2e4/0000", "h8a1", "e7e8q", "x/e7E8Q", "i2i4", "a1h8", "e7e8k", "e2e4/a1h8",
             "h1h8n", "e7e8q/e2e4", "0000", "a/i2i4", "a9a1", "e7e8k", "h8a1"]
    move, null_move = assemble._uci_moves(_views(paths), pl.Series(paths, dtype=pl.String))
    want = ["e2e4", "e7E8Q", "0000", "h8a1", "e7e8q", "e7E8Q", "i2i4", "a1h8", "e7e8k", "a1h8", "h1h8n", "e2e4",
            "0000", "i2i4", "a9a1", "e7e8k", "h8a1"]
    assert move.to_pylist() == want
    assert move.chunk(0).dictionary.to_pylist() == list(dict.fromkeys(want))
    assert null_move.to_pylist() == [m == "0000" for m in want]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), st.just(""), st.lists(st.sampled_from(_MOVES), min_size=1, max_size=6).map("/".join),
                          st.text(alphabet="/ab0é", max_size=8)), max_size=120),
       st.integers(min_value=0, max_value=10))
@needs_ctok
def test_uci_moves_are_polars(paths: list[str | None], start: int):
    """The compiled last moves against polars' slice-and-strip (and its fallback where a move is not ASCII), with
    odd values too ("/", "a//", non-ASCII tails): the same move column, dictionary and null_move."""
    start = min(start, len(paths))
    paths = paths[start:]
    move, null_move = assemble._uci_moves(_views(paths), pl.Series(paths, dtype=pl.String))
    want_move, want_null = _moves_by_polars(paths)
    _same_dictionary_columns(move, want_move)
    assert null_move.to_pylist() == want_null


def test_constant_column_by_hand():
    """Per-search values, a null one as a null index; the dictionary in first-seen order of the searches' values."""
    per_search = {3: "gen3", 4: None, 5: "gen3", 6: "gen6"}
    col = assemble._constant_column(per_search, [3, 4, 5, 6], np.array([3, 3, 4, 5, 6, 6, 4], dtype=np.int64))
    assert col.to_pylist() == ["gen3", "gen3", None, "gen3", "gen6", "gen6", None]
    assert col.dictionary.to_pylist() == ["gen3", "", "gen6"] and col.indices.to_pylist() == [0, 0, None, 0, 2, 2, None]
    one = assemble._constant_column({7: "stockfish"}, [7], np.array([7, 7], dtype=np.int64))
    assert one.to_pylist() == ["stockfish"] * 2 and one.dictionary.to_pylist() == ["stockfish"] and one.null_count == 0


def test_kinds_from_acts_by_hand():
    """Each act's kind through the act codes; a null act gives a null kind; an unknown act is OTHER and listed."""
    acts = pc.dictionary_encode(pa.chunked_array([["LMR", None, "FULL", "ODD", "LMR", None]])).cast(DICT_STR)
    kinds, unknown = assemble._kinds_from_acts(acts, {"LMR": "REDUCE", "FULL": "SEARCH"})
    assert kinds.to_pylist() == ["REDUCE", None, "SEARCH", "OTHER", "REDUCE", None]
    assert kinds.chunk(0).dictionary.to_pylist() == ["REDUCE", "SEARCH", "OTHER"] and unknown == ["ODD"]


# ---------------------------------------------------------------------- per-search columns (with_search_columns)
from types import SimpleNamespace  # noqa: E402


def _searches(units: list[int], dialects: list[str]) -> dict:
    """Stand-ins for SearchState with what with_search_columns reads (unit, dialect.name), searches 5, 6, ..."""
    return {5 + i: SimpleNamespace(unit=u, dialect=SimpleNamespace(name=d)) for i, (u, d) in enumerate(zip(units, dialects))}


@pytest.mark.parametrize("units, dialects, expected_units, expected_dialects", [
    # one unit and dialect for every search of the chunk (the usual case), then mixed ones; by hand
    ([1, 1], ["stockfish", "stockfish"], [1.0, 1.0, 1.0, 1.0], ["stockfish"] * 4),
    ([64, 1], ["typhoon", "stockfish"], [64.0, 64.0, 1.0, 1.0], ["typhoon", "typhoon", "stockfish", "stockfish"]),
    ([64, 64], ["typhoon", "crafty"], [64.0] * 4, ["typhoon", "typhoon", "crafty", "crafty"]),
])
def test_search_columns_by_hand(units, dialects, expected_units, expected_dialects):
    rows = pl.DataFrame({"search": pl.Series([5, 5, 6, 6], dtype=pl.Int32), "d": [64, 128, 1, 2]})
    out = assemble.with_search_columns(rows, _searches(units, dialects), [5, 6])
    assert out.schema["_unit"] == pl.Float64 and out.schema["_dialect"] == pl.String
    assert out.get_column("_unit").to_list() == expected_units
    assert out.get_column("_dialect").to_list() == expected_dialects
    assert out.height == 4 and out.get_column("d").to_list() == [64, 128, 1, 2]


def test_search_columns_of_no_rows():
    rows = pl.DataFrame({"search": pl.Series([], dtype=pl.Int32)})
    out = assemble.with_search_columns(rows, _searches([1], ["stockfish"]), [5])
    assert out.height == 0 and out.schema["_unit"] == pl.Float64 and out.schema["_dialect"] == pl.String


# ---------------------------------------------------------------------- integer columns narrowed (narrowed_ints)
_EDGES = [0, 1, -1, 2**15 - 1, 2**15, -(2**15), -(2**15) - 1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, -(2**63)]


def test_narrowed_ints_by_hand():
    col = pa.chunked_array([pa.array([5, None, 2**15 - 1, 2**15, -(2**15), -(2**15) - 1, 2**40], type=pa.int64())])
    out = assemble.narrowed_ints(col, pa.int16())
    assert out.type == pa.int16()
    assert out.to_pylist() == [5, None, 2**15 - 1, None, -(2**15), None, None]  # out of int16: null
    assert assemble.narrowed_ints(col, pa.int32()).to_pylist() == [5, None, 2**15 - 1, 2**15, -(2**15), -(2**15) - 1, None]
    assert assemble.narrowed_ints(pa.chunked_array([pa.array([], type=pa.int64())]), pa.int16()).to_pylist() == []
    assert assemble.narrowed_ints(pa.chunked_array([pa.nulls(3, pa.int64())]), pa.int32()).to_pylist() == [None] * 3


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), st.sampled_from(_EDGES), st.integers(-(2**63), 2**63 - 1)), max_size=70),
       st.sampled_from([pa.int16(), pa.int32()]), st.integers(0, 3), st.booleans())
def test_narrowed_ints_are_polars_cast(values, to, start, split):
    """Against polars' non-strict cast (what the records got before), one chunk from polars, sliced, or two chunks."""
    series = pl.Series(values, dtype=pl.Int64)
    col = pa.chunked_array([series.to_arrow()]).slice(min(start, len(values)))
    if split and len(col) > 1:
        col = pa.chunked_array([col.slice(0, 1).combine_chunks(), col.slice(1).combine_chunks()])
    want = pl.from_arrow(col).cast(pl.Int16 if to == pa.int16() else pl.Int32, strict=False)
    got = assemble.narrowed_ints(col, to)
    assert got.type == to and got.to_pylist() == want.to_list()
    assert got.null_count == want.null_count()


def _number_records_by_polars(rows, by_id, line_base):
    """number_records as it was written with polars expressions (the reference)."""
    import numpy as np
    import polars as pl

    from treediff.parse.state import run_starts

    search_col = rows.get_column("search").to_numpy()
    starts = run_starts(search_col)
    lengths = np.diff(np.append(starts, len(search_col)))
    present = search_col[starts].tolist()
    offset = np.repeat(np.array([by_id[s].seq for s in present], dtype=np.int64) - starts, lengths)
    return rows.with_columns(
        pl.Series("seq", np.arange(len(search_col), dtype=np.int64) + offset),
        (pl.col("idx").cast(pl.Int64) + line_base).alias("line"),
    )


@pytest.mark.parametrize("searches", [[0] * 5, [3, 3, 4, 4, 4, 7], [2], [1, 2, 3]])
@pytest.mark.parametrize("line_base", [1, 1000])
def test_number_records_against_polars(searches, line_base):
    import types

    import polars as pl

    from treediff.parse.assemble import number_records

    rows = pl.DataFrame({"search": pl.Series(searches, dtype=pl.Int32),
                         "idx": pl.Series([2 * i + 1 for i in range(len(searches))], dtype=pl.UInt32)})
    by_id = {s: types.SimpleNamespace(seq=10 * s + 5) for s in set(searches)}
    got, runs = number_records(rows, by_id, line_base)
    expected = _number_records_by_polars(rows, by_id, line_base)
    assert got.equals(expected) and got.schema == expected.schema
    assert got.get_column("seq").to_list()[0] == 10 * searches[0] + 5

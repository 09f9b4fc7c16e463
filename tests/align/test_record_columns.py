"""align/columns.py: the aligner's reads of an Arrow records table (hand-written tables, expected values by
hand), and align() giving the same rows from a pandas frame and from the Arrow table compare streams."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from treediff.align import LOAD_COLUMNS, align
from treediff.align.columns import codes, first_strings, has, numbers, records_table, strings
from treediff.parse.source import open_source

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _two_batches() -> pa.Table:
    """A column of two chunks with dictionaries of their own (two batches concatenated), and nulls."""
    kind = pa.chunked_array([pa.array(["SEARCH", None, "PRUNE"]).dictionary_encode(),
                             pa.array(["REDUCE", "SEARCH"]).dictionary_encode()])
    depth = pa.chunked_array([pa.array([6.0, None, 4.0], pa.float32()), pa.array([3.0, 2.0], pa.float32())])
    line = pa.chunked_array([pa.array([10, 11, None]), pa.array([13, 14])])
    path = pa.chunked_array([pa.array(["", "e2e4", None], pa.string()), pa.array(["e2e4/e7e5", "d2d4"])])
    return pa.table({"kind": kind, "depth": depth, "line": line, "path": path})


def test_codes_unify_the_batches_dictionaries_and_code_nulls_minus_one():
    values, labels = codes(_two_batches(), "kind")
    assert labels.tolist() == ["SEARCH", "PRUNE", "REDUCE"]
    assert values.tolist() == [0, -1, 1, 2, 0]
    picked, labels_picked = codes(_two_batches(), "kind", np.array([4, 1, 3]))
    assert picked.tolist() == [0, -1, 2] and labels_picked.tolist() == labels.tolist()


def test_codes_of_a_plain_string_column_are_first_seen_order():
    table = pa.table({"act": ["LMR", "FULL", None, "LMR"]})
    values, labels = codes(table, "act")
    assert labels.tolist() == ["LMR", "FULL"] and values.tolist() == [0, 1, -1, 0]
    values, labels = codes(table, "act", np.array([1, 3]))
    assert labels.tolist() == ["FULL", "LMR"] and values.tolist() == [0, 1]


def test_numbers_fill_nulls_and_keep_types():
    table = _two_batches()
    depth = numbers(table, "depth", np.float32)
    assert depth.dtype == np.float32 and np.isnan(depth[1]) and depth[[0, 2, 3, 4]].tolist() == [6, 4, 3, 2]
    assert numbers(table, "line", np.int64, fill=-1).tolist() == [10, 11, -1, 13, 14]
    with pytest.raises(ValueError, match="line"):
        numbers(table, "line", np.int64, fill=None)


def test_strings_and_first_strings():
    table = _two_batches()
    assert strings(table, "path").type == pa.large_string()
    assert strings(table, "path").to_pylist() == ["", "e2e4", None, "e2e4/e7e5", "d2d4"]
    assert strings(table, "kind").to_pylist() == ["SEARCH", None, "PRUNE", "REDUCE", "SEARCH"]
    assert first_strings(table, "path", np.array([2, 3])) == ["", "e2e4/e7e5"]
    # One row (a scalar read): the same, in either batch, from a plain or a dictionary column, nulls as "".
    for row in range(table.num_rows):
        for name in ("path", "kind"):
            assert first_strings(table, name, np.array([row])) == [
                "" if v is None else v for v in strings(table, name).to_pylist()[row:row + 1]]
    assert has(table, "path") and not has(table, "iter")


def test_a_pandas_frame_is_converted_once_and_a_table_kept():
    frame = pd.DataFrame({"tag": pd.Categorical(["MOVE", "RESULT"]), "mn": [1.0, np.nan]})
    table = records_table(frame)
    assert table.column_names == ["tag", "mn"] and pa.types.is_dictionary(table.schema.field("tag").type)
    assert table.column("mn").null_count == 1  # (NaN is read as null, and read back as NaN)
    assert records_table(table) is table


def _rebatched(table: pa.Table) -> pa.Table:
    """``table`` as three batches concatenated, each dictionary column encoded per batch (its own dictionary,
    in that batch's first-seen order), as position_pairs hands the aligner a position read in several batches."""
    n = table.num_rows
    parts = []
    for lo, hi in ((0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)):
        part = table.slice(lo, hi - lo)
        columns = {}
        for name in part.column_names:
            column = part.column(name).combine_chunks()
            if pa.types.is_dictionary(column.type):
                column = column.dictionary_decode().dictionary_encode()
            columns[name] = column
        parts.append(pa.table(columns))
    return pa.concat_tables(parts)


@pytest.mark.parametrize("visits", ["main", "all"])
def test_align_gives_the_same_rows_from_a_frame_and_from_its_arrow_batches(visits):
    """compare aligns the Arrow batches of a source; diff hands align() the same source's pandas records."""
    sa, sb = open_source(TRACES / "typhoon_start.log"), open_source(TRACES / "stockfish_start.log")
    frames = sa.records(LOAD_COLUMNS), sb.records(LOAD_COLUMNS)
    tables = [_rebatched(pa.concat_tables(list(s.arrow_batches(LOAD_COLUMNS)))) for s in (sa, sb)]
    assert tables[0].column("tag").num_chunks == 3
    assert tables[0].num_rows == len(frames[0]) and tables[1].num_rows == len(frames[1])
    from_frames, from_tables = align(*frames, visits=visits), align(*tables, visits=visits)
    pd.testing.assert_frame_equal(from_frames.rows, from_tables.rows)
    assert (from_frames.a, from_frames.b, from_frames.notes) == (from_tables.a, from_tables.b, from_tables.notes)
    assert (from_frames.rows["status"] != "same").any()  # (two engines: the trees differ somewhere)


def _masked_alignment(table_a: pa.Table, table_b: pa.Table, visits: str) -> pd.DataFrame:
    """The rows as the aligner built them before it sliced the iteration out: each side's whole search
    converted, the chosen iteration a mask over its columns (``_Side(records, keep)``)."""
    from treediff.align.core import _Side, align_sides
    from treediff.align.select import choose_iterations

    iter_a, iter_b, *_ = choose_iterations(table_a, table_b, None)
    sides = [_Side(t, numbers(t, "iter", np.int64, fill=0) == it) for t, it in ((table_a, iter_a), (table_b, iter_b))]
    return align_sides(*sides, keep_visits=visits == "all").frame()


@pytest.mark.parametrize("visits", ["main", "all"])
@pytest.mark.parametrize("chunks", [1, 3])
def test_the_sliced_iteration_gives_the_masked_rows(visits, chunks):
    """align() slices the chosen iteration's records out of the search when they are one run: the same rows,
    categories included, as converting the whole search and masking the iteration (in one chunk, and in three
    chunks with dictionaries of their own, whose labels the slice must not lose)."""
    from treediff.align.api import align_arrays

    sources = open_source(TRACES / "typhoon_start.log"), open_source(TRACES / "stockfish_start.log")
    tables = [pa.concat_tables(list(s.arrow_batches(LOAD_COLUMNS))).combine_chunks() for s in sources]
    if chunks == 3:
        tables = [_rebatched(t) for t in tables]
    rows, choice_a, choice_b, _ = align_arrays(*tables, visits=visits)
    # The slice was taken on both sides, and it is not the whole search: other iterations precede the chosen
    # one (and on B one follows it: stockfish's iteration 5 has no counterpart).
    for table, choice in ((tables[0], choice_a), (tables[1], choice_b)):
        iters = numbers(table, "iter", np.int64, fill=0)
        assert iters.min() < choice.iter and bool(np.all(iters[1:] >= iters[:-1]))
    assert numbers(tables[1], "iter", np.int64, fill=0).max() > choice_b.iter
    pd.testing.assert_frame_equal(rows.frame(), _masked_alignment(*tables, visits))

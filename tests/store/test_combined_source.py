"""CombinedSource numbers searches offset + rank per input, in its searches and in every batch of records, pandas
and Arrow; a single log's searches already are 0, 1, ... and are passed through as they are."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from treediff.parse.source import open_source
from treediff.store.source import CombinedSource

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _searches_of_batches(source, arrow: bool) -> list[int]:
    if arrow:
        tables = list(source.arrow_batches(["tag"], 300))
        assert all(t.schema.field("search").type == pa.int32() for t in tables)
        return [int(v) for t in tables for v in t.column("search").to_numpy()]
    frames = list(source.batches(["tag"], 300))
    assert all(f["search"].dtype == np.int32 for f in frames)
    return [int(v) for f in frames for v in f["search"].to_numpy()]


@pytest.mark.parametrize("arrow", [False, True], ids=["pandas", "arrow"])
def test_inputs_are_renumbered_by_offset_and_rank(arrow):
    a, b = open_source(TRACES / "typhoon_batch3.log"), open_source(TRACES / "stockfish_batch3.log")
    first_b = np.zeros(len(b.searches), dtype=bool)
    first_b[1:] = True  # B without its first search: its ids 1, 2 become 3, 4 (offset 3, ranks 0 and 1)
    combined = CombinedSource.of([a, b.select(first_b)])
    assert combined.searches["search"].tolist() == [0, 1, 2, 3, 4]
    got = _searches_of_batches(combined, arrow)
    want_a = _searches_of_batches(a, arrow)  # (a single log: 0, 1, 2 already)
    want_b = [s + 2 for s in _searches_of_batches(b.select(first_b), arrow)]  # ids 1, 2 -> 3, 4
    assert sorted(set(want_a)) == [0, 1, 2] and sorted(set(want_b)) == [3, 4]
    assert got == want_a + want_b


@pytest.mark.parametrize("arrow", [False, True], ids=["pandas", "arrow"])
def test_an_input_whose_ids_do_not_start_at_zero_is_renumbered(arrow):
    b = open_source(TRACES / "stockfish_batch3.log")
    keep = np.zeros(len(b.searches), dtype=bool)
    keep[1:] = True
    combined = CombinedSource.of([b.select(keep)])  # ids 1, 2: ranks 0, 1
    inner = _searches_of_batches(b.select(keep), arrow)
    assert sorted(set(inner)) == [1, 2]
    assert _searches_of_batches(combined, arrow) == [s - 1 for s in inner]

"""A selection's search filter (store.source._KeptIds): the whole-batch shortcut keeps exactly what the filter keeps."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.store.source import _KeptIds


def _filtered(table: pa.Table, ids: np.ndarray) -> pa.Table:
    """What the selection always did: a hash lookup of every record's search."""
    return table.filter(pc.is_in(table.column("search"), value_set=pa.array(ids, type=pa.int32())))


@settings(max_examples=300, deadline=None)
@given(searches=st.lists(st.one_of(st.none(), st.integers(0, 12)), max_size=40),
       ids=st.one_of(st.lists(st.integers(0, 14), max_size=8),
                     st.tuples(st.integers(0, 12), st.integers(0, 6)).map(lambda lh: list(range(lh[0], lh[0] + lh[1] + 1)))))
def test_kept_ids_keep_what_the_filter_keeps(searches, ids):
    """Consecutive ids (the shortcut's case) and others, batches inside, across and outside their range, nulls."""
    table = pa.table({"search": pa.array(sorted(searches, key=lambda v: (v is None, v or 0)), type=pa.int32()),
                      "row": pa.array(range(len(searches)), type=pa.int64())})
    ids_array = np.asarray(ids, dtype=np.int64)
    assert _KeptIds(ids_array).arrow(table).equals(_filtered(table, ids_array))


@pytest.mark.parametrize("searches,ids,kept", [
    ([3, 3, 4, 5], [3, 4, 5], 4),        # every search in the consecutive range: the batch whole
    ([3, 3, 4, 6], [3, 4, 5], 3),        # 6 is past the range: filtered
    ([2, 3, 4], [3, 4, 5], 2),           # 2 is before it
    ([3, None, 4], [3, 4], 2),           # a null search is never kept
    ([3, 5], [3, 5], 2),                 # not consecutive (4 missing): filtered, both kept
    ([3, 4, 5], [5, 3], 2),              # not consecutive: 4 dropped
    ([], [1, 2], 0),
])
def test_kept_ids_by_hand(searches, ids, kept):
    table = pa.table({"search": pa.array(searches, type=pa.int32())})
    assert _KeptIds(np.asarray(ids, dtype=np.int64)).arrow(table).num_rows == kept

"""The aligner's view of a records table: an Arrow table, its columns read as numpy arrays.

compare aligns every position of two inputs, a few thousand records a side each: reading the columns
through pandas (a DataFrame per position, a Series per column) cost ~5 ms a position, more than aligning
it.  The aligner therefore takes Arrow tables (:meth:`treediff.store.source.Source.arrow_batches`, sliced
per position by :mod:`treediff.align.stream`); a pandas records frame (``treediff diff``, ``align()``'s
callers) is converted once by :func:`records_table`.

Nulls: numbers read as floats are NaN where null (as pandas' ``to_numpy(dtype=float, na_value=nan)``);
string columns read as codes have code -1 where null; :func:`first_strings` gives "" for a null.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import pandas as pd

#: The string type the aligner's path passes read (64-bit offsets: a side's paths may pass 2 GB).
PATH_TYPE = pa.large_string()


def records_table(records: pa.Table | pd.DataFrame) -> pa.Table:
    """``records`` as an Arrow table (a pandas frame converted, its index dropped; a table as it is)."""
    if isinstance(records, pa.Table):
        return records
    return pa.Table.from_pandas(records, preserve_index=False)


def has(table: pa.Table, name: str) -> bool:
    """Whether ``table`` has a column ``name`` (a schema lookup: ``column_names`` builds a list each call)."""
    return table.schema.get_field_index(name) >= 0


def _array(table: pa.Table, name: str) -> pa.Array:
    column = table.column(name)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def numbers(table: pa.Table, name: str, dtype: Any, fill: float | None = np.nan) -> np.ndarray:
    """Column ``name`` as a numpy array of ``dtype``; nulls become ``fill`` (a float dtype, NaN: as pandas'
    ``to_numpy(dtype, na_value=nan)``).  ``fill`` None: the column must have no nulls."""
    arr = _array(table, name)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        if fill is None:
            raise ValueError(f"column {name} has nulls")
        if pa.types.is_floating(arr.type) and fill != fill:
            values = arr.to_numpy(zero_copy_only=False)  # (Arrow gives NaN for a null float)
        elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            # Arrow gives float64 with NaN at the nulls for an integer array: one pass, no cast, no fill kernel
            # (~25 us a column of a position, against ~50); the values are those of cast(float64).
            values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
            if fill == fill:
                values[~arr.is_valid().to_numpy(zero_copy_only=False)] = float(fill)
        else:
            values = pc.fill_null(arr.cast(pa.float64()), float(fill)).to_numpy(zero_copy_only=False)
    else:
        values = arr.to_numpy(zero_copy_only=False)
    return values if values.dtype == np.dtype(dtype) else values.astype(dtype)


def codes(table: pa.Table, name: str, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(int32 codes, labels as an object array of str) of a string column (of rows ``idx``, in that order);
    code -1 is a null.  Labels are the column's dictionary (every value of a dictionary column, used or not,
    as a pandas categorical's categories) or its distinct values in first-seen order."""
    column = table.column(name)
    if pa.types.is_dictionary(column.type):
        # (chunks of several batches have dictionaries of their own: one dictionary first)
        arr = column.chunk(0) if column.num_chunks == 1 else column.unify_dictionaries().combine_chunks()
    else:
        arr = _array(table, name)
        arr = pc.dictionary_encode(arr if idx is None else arr.take(pa.array(idx, type=pa.int64())))
        idx = None
    indices = arr.indices
    if indices.null_count == 0:
        out = indices.to_numpy(zero_copy_only=False).astype(np.int32)
    else:  # the index buffer as it is (a null's slot holds anything), then -1 where the validity bit is off
        raw = pa.Array.from_buffers(indices.type, len(indices), [None, indices.buffers()[1]], offset=indices.offset)
        out = np.where(indices.is_valid().to_numpy(zero_copy_only=False), raw.to_numpy(), -1).astype(np.int32)
    if idx is not None:
        out = out[idx]
    labels = np.asarray([str(v) for v in arr.dictionary.to_pylist()], dtype=object)
    return out, labels


def strings(table: pa.Table, name: str) -> pa.Array:
    """A string column as one :data:`PATH_TYPE` array (a dictionary column decoded)."""
    arr = _array(table, name)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr if arr.type == PATH_TYPE else arr.cast(PATH_TYPE)


def first_strings(table: pa.Table, name: str, rows: np.ndarray) -> list[str]:
    """The values at ``rows`` as strings, "" for a null (what ``astype("string").fillna("")`` gives)."""
    column = table.column(name)
    if len(rows) == 1:  # (compare: a position's one search, every position; a scalar read, not a take)
        values = [column[int(rows[0])].as_py()]
    else:
        values = column.take(pa.array(rows, type=pa.int64())).to_pylist()
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in values]


def value(table: pa.Table, name: str, row: int) -> Any:
    """The Python value at ``row`` (None for a null)."""
    return table.column(name)[row].as_py()


def filtered(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """``table``'s rows where ``mask``, the table itself when every row is kept (no copy)."""
    return table if bool(mask.all()) else table.filter(pa.array(mask, type=pa.bool_()))

"""Arrow arrays to numpy and back through their buffers, without pyarrow's converters.

pyarrow imports pandas the first time a value crosses its converters: ``pa.array`` of a numpy array,
``Array.to_numpy``, ``pa.scalar``, a compute call given a Python value (checked with pyarrow 26: each one
loads pandas, ~0.1 s).  A log's parse uses none of pandas, and runs in a child process of its own when
``report`` or ``compare`` reads a small log (issue 17 item 4: ~0.1 s of a 0.4 s command), so what it
converts goes through these functions: primitive columns read from their value and validity buffers,
string comparisons made on a dictionary's few words.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["equals", "int32_where", "numbers", "numpy_dtype", "primitive"]


def numpy_dtype(arrow_type: pa.DataType) -> np.dtype[Any]:
    """The numpy dtype of a fixed-width integer or float Arrow type, without ``to_pandas_dtype`` (which imports
    pandas in the oldest pyarrow the package allows)."""
    if pa.types.is_integer(arrow_type):
        return np.dtype(f"{'u' if pa.types.is_unsigned_integer(arrow_type) else ''}int{arrow_type.bit_width}")
    if pa.types.is_floating(arrow_type):
        return np.dtype(f"float{arrow_type.bit_width}")
    dtype: np.dtype[Any] = np.dtype(arrow_type.to_pandas_dtype())
    return dtype


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _valid(array: pa.Array) -> np.ndarray:
    """Each value's validity bit (bool) of an array with nulls."""
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
    return bits[array.offset:array.offset + len(array)].astype(bool)


def numbers(column: pa.Array | pa.ChunkedArray, dtype: Any, fill: Any) -> np.ndarray:
    """A primitive (integer or float) column as numpy ``dtype``, ``fill`` where null."""
    parts = []
    for chunk in _chunks(column):
        if pa.types.is_null(chunk.type):  # (a column of nulls only has no value buffer)
            parts.append(np.full(len(chunk), fill, dtype=dtype))
            continue
        values = np.frombuffer(chunk.buffers()[1], dtype=numpy_dtype(chunk.type), count=len(chunk),
                               offset=chunk.offset * chunk.type.byte_width)
        values = values.astype(dtype, copy=bool(chunk.null_count))
        if chunk.null_count:
            values[~_valid(chunk)] = fill
        parts.append(values)
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def equals(column: pa.Array | pa.ChunkedArray, value: str) -> np.ndarray:
    """``column == value`` (bool; nulls False) for a string or dictionary-encoded string column: the words of
    each chunk's dictionary compared, then its indices (a plain string chunk is dictionary-encoded first)."""
    parts = []
    for chunk in _chunks(column):
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.dictionary_encode(chunk)
        words = chunk.dictionary.to_pylist()
        hits = [i for i, word in enumerate(words) if word == value]
        if not hits:
            parts.append(np.zeros(len(chunk), dtype=bool))
            continue
        idx = chunk.indices
        codes = np.frombuffer(idx.buffers()[1], dtype=numpy_dtype(idx.type), count=len(idx),
                              offset=idx.offset * idx.type.byte_width)
        hit = codes == hits[0] if len(hits) == 1 else np.isin(codes, hits)
        if idx.null_count:
            hit &= _valid(idx)
        parts.append(hit)
    if not parts:
        return np.zeros(0, dtype=bool)
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def primitive(values: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """A numpy array as an Arrow array of ``arrow_type`` (fixed width, no nulls), from its buffer."""
    data = np.ascontiguousarray(values, dtype=numpy_dtype(arrow_type))
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def int32_where(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    """``values`` as an Arrow int32 array, null where not ``valid``."""
    data = np.ascontiguousarray(values, dtype=np.int32)
    valid = np.asarray(valid, dtype=bool)
    n = len(data)
    if valid.all():
        return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(data)])
    bitmap = np.packbits(valid, bitorder="little")
    return pa.Array.from_buffers(pa.int32(), n, [pa.py_buffer(bitmap), pa.py_buffer(data)],
                                 null_count=int(n - valid.sum()))

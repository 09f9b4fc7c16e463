"""Dictionary-encoded Arrow columns as pandas Categoricals, without Arrow's per-element conversion.

A records table has eleven dictionary columns (``tag``, ``act``, ``kind``, ``move``, ...).  ``to_pandas``
converts each element by element after a bounds check of every index: ~5 ns a record per column, ~1 CPU-s of
``report --table all`` of a 20M-record file (issue 17).  Here the chunks' dictionaries (a few to a few
thousand values) are unified with Arrow's hash kernels, in Arrow's order (the first chunk's values, then each
chunk's new values in its dictionary's order), and the compiled ``dictionary_codes`` (``treediff/store/_cstore.c``) writes every record's code
in one pass.  The Categorical is the one ``to_pandas`` gives: the same categories (and their dtype), codes of
the same width, -1 for a null (tests/store/test_categorical.py).

Columns this does not handle (no compiled module, an ordered dictionary, indices other than int32, values
other than strings, a null among a dictionary's values) are left to ``to_pandas``.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import pandas as pd

try:  # optional: without it to_pandas converts every column
    _cstore: Any = importlib.import_module("treediff.store._cstore")  # (compiled: no stub)
    if not hasattr(_cstore, "dictionary_codes"):  # (stale)
        _cstore = None
except ImportError:
    _cstore = None

__all__ = ["compiled_available", "dictionary_categorical"]


def compiled_available() -> bool:
    """Whether dictionary columns are converted by the compiled pass (else by ``to_pandas``)."""
    return _cstore is not None


def _codes_dtype(n_categories: int) -> type[np.signedinteger[Any]]:
    """The codes' dtype pandas gives ``n_categories`` categories (``coerce_indexer_dtype``)."""
    if n_categories < np.iinfo(np.int8).max:
        return np.int8
    if n_categories < np.iinfo(np.int16).max:
        return np.int16
    return np.int32


def dictionary_categorical(column: pa.ChunkedArray | pa.Array) -> pd.Categorical | None:
    """The pandas Categorical of a dictionary column of strings, as ``to_pandas`` converts it; None where
    this module does not handle the column (see the module docstring): convert it with ``to_pandas`` then."""
    t = column.type
    if (_cstore is None or not pa.types.is_dictionary(t) or t.ordered or t.index_type != pa.int32()
            or not (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)) or not len(column)):
        return None
    chunks = [c for c in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]) if len(c)]
    # The chunks' dictionaries unified as Arrow's DictionaryUnifier does: the first chunk's values, then each
    # chunk's new values in its dictionary's order; hashed in Arrow (a few thousand values at most).
    values: pa.Array | None = None
    transposes: list[np.ndarray] = []
    last_dictionary: pa.Array | None = None
    for chunk in chunks:
        dictionary = chunk.dictionary.cast(pa.large_string())
        if dictionary.null_count:
            return None
        if last_dictionary is not None and dictionary.equals(last_dictionary):
            transposes.append(transposes[-1])  # (row groups of one file often share their dictionary)
            continue
        if values is None:
            values = pc.unique(dictionary)
        else:
            new = dictionary.filter(pc.is_null(pc.index_in(dictionary, value_set=values)))
            if len(new):
                values = pa.concat_arrays([values, pc.unique(new)])
        transposes.append(np.asarray(pc.index_in(dictionary, value_set=values).to_numpy(zero_copy_only=False),
                                     dtype=np.int32))
        last_dictionary = dictionary
    if values is None or not len(values):
        return None
    out = np.empty(len(column), dtype=_codes_dtype(len(values)))
    at = 0
    for chunk, transpose in zip(chunks, transposes):
        indices = chunk.indices
        validity, data = indices.buffers()[:2]
        if chunk.null_count == 0:
            validity = None
        try:
            _cstore.dictionary_codes(out, at, data, indices.offset, len(chunk), validity, transpose)
        except ValueError:
            return None  # (an index outside its dictionary: to_pandas says what is wrong)
        at += len(chunk)
    import pandas as pd

    # As pyarrow builds it (pandas_compat): the codes, the categories as an object array, unordered.
    return pd.Categorical.from_codes(out, categories=np.asarray(values.to_pylist(), dtype=object), ordered=False)

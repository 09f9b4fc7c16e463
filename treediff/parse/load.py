"""Loading any mix of inputs (logs, Parquet pairs, dataset directories) into pandas."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa

from treediff.model.errors import InputError
from treediff.store.dataset import (
    Loaded,
    _concat_keeping_categories,
    _finish_searches,
    _is_parquet,
    _read_dataset_dir,
    _read_parquet_pair,
    _renumber,
)


def read_input(
    path: str | os.PathLike,
    columns: Sequence[str] | None = None,
    **parse_options,
) -> tuple[pa.Table, pa.Table]:
    """Records and searches (Arrow tables) of one input: a log, a parsed Parquet file or a dataset directory.

    ``parse_options`` go to :func:`treediff.parse.core.parse_logs` for logs.
    """
    records, searches, _ = _read_input_with_warnings(path, columns, **parse_options)
    return records, searches


def _read_input_with_warnings(
    path: str | os.PathLike,
    columns: Sequence[str] | None = None,
    **parse_options,
) -> tuple[pa.Table, pa.Table, list[str]]:
    """:func:`read_input` plus what parsing a log warned about."""
    p = Path(path)
    if str(path) != "-" and p.is_dir():
        return (*_read_dataset_dir(p, columns), [])
    if str(path) != "-" and not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if str(path) != "-" and _is_parquet(p):
        return (*_read_parquet_pair(p, columns), [])
    from treediff.parse.core import parse_logs

    result = parse_logs([str(path)], **parse_options)
    records = result.records
    if columns:
        records = records.select([c for c in columns if c in records.column_names])
    return records, result.searches, result.warnings


def load(
    inputs: Iterable[str | os.PathLike],
    columns: Sequence[str] | None = None,
    **parse_options,
) -> Loaded:
    """Load any mix of inputs into pandas; ``search`` is renumbered to stay unique across inputs.

    ``columns`` limits the records columns read (``engine`` and ``search`` are
    always included).  String columns come back as pandas categoricals where
    they were dictionary-encoded.
    """
    if columns is not None:
        columns = list(dict.fromkeys(["engine", "search", *columns]))
    rec_frames, srch_frames = [], []
    warnings: list[str] = []
    offset = 0
    for path in inputs:
        records, searches, input_warnings = _read_input_with_warnings(path, columns, **parse_options)
        warnings.extend(input_warnings)
        rec = records.to_pandas()
        srch = searches.to_pandas()
        offset = _renumber(srch, rec, offset)
        rec_frames.append(rec)
        srch_frames.append(srch)
    if not srch_frames:
        raise InputError("no input given")
    records = _concat_keeping_categories(rec_frames)
    searches = _finish_searches(srch_frames)
    return Loaded(records=records, searches=searches, warnings=warnings)

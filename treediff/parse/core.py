"""The parser's public names, where callers have always imported them from.

The parser itself is in parts: :mod:`~treediff.parse.chunks` (reading and
tokenizing), :mod:`~treediff.parse.state` (the header/ITER/END/context state
machine), :mod:`~treediff.parse.paths` (paths to UCI, the SAN worker),
:mod:`~treediff.parse.assemble` (records to Arrow), :mod:`~treediff.parse.summary`
(the searches table) and :mod:`~treediff.parse.pipeline` (the threads,
:func:`parse_logs`, :func:`parse_to_parquet`).
"""
from __future__ import annotations

from treediff.parse.pipeline import (
    RECORDS_PARQUET_OPTIONS,
    ParseResult,
    TreedumpParser,
    parse_logs,
    parse_to_parquet,
    total_input_bytes,
)
from treediff.parse.state import ParseOptions

__all__ = [
    "RECORDS_PARQUET_OPTIONS",
    "ParseOptions",
    "ParseResult",
    "TreedumpParser",
    "parse_logs",
    "parse_to_parquet",
    "total_input_bytes",
]

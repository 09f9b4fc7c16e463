"""Checking Parquet inputs against the schemas before their numbers are used.

A Parquet file given to treediff (a ``treediff parse`` pair, a dataset's
files) may come from another tool, an older treediff, or be garbage.  Its
columns are checked against :data:`~treediff.model.schema.RECORDS_SCHEMA` /
:data:`~treediff.model.schema.SEARCHES_SCHEMA` by *kind* (text, integer,
float, flag: the width and dictionary encoding may differ), the required
columns must be there (columns added after the first format, such as
``visit``, may be missing: older files lack them), and float columns read
must hold finite numbers.  Every failure is an :class:`InputError` naming the
file and the column.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.errors import InputError
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA

if TYPE_CHECKING:
    import pyarrow.parquet as pq

#: Records columns every records file must have (the first format's core; later columns are optional).
REQUIRED_RECORDS = ("search", "iter", "seq", "tag", "path", "ply", "move", "depth", "new_depth", "reduction",
                    "act", "kind", "score")
#: Searches columns every searches file must have.
REQUIRED_SEARCHES = ("search", "position", "records", "result_nodes")


def _kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "text"
    if pa.types.is_boolean(t):
        return "flag"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_null(t):
        return "null"
    return str(t)


#: What a file's column may be for each kind the schema asks (an integer column reads as a float exactly).
_ACCEPTED = {"text": {"text"}, "flag": {"flag"}, "integer": {"integer"}, "float": {"float", "integer"}}


def check_schema(file: str | os.PathLike[str], schema: pa.Schema, expected: pa.Schema,
                 required: Iterable[str], what: str) -> None:
    """Raise :class:`InputError` when ``schema`` (of ``file``) lacks a required column or has a column of
    ``expected`` of another kind (``tag`` as integers, ``reduction`` as flags ...)."""
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise InputError(f"{file}: not a treediff {what} file: the required column"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"{'are' if len(missing) > 1 else 'is'} missing")
    for field in expected:
        if field.name not in schema.names:
            continue
        want, got = _kind(field.type), _kind(schema.field(field.name).type)
        if got == "null" and field.nullable:
            continue
        if got not in _ACCEPTED.get(want, {want}):
            raise InputError(f"{file}: column {field.name} holds {got} values ({schema.field(field.name).type}) "
                             f"where a treediff {what} file has {want} values ({field.type}): "
                             "not a file treediff wrote, or edited since")


def check_records_schema(file: str | os.PathLike[str], schema: pa.Schema,
                         required: Iterable[str] = REQUIRED_RECORDS) -> None:
    check_schema(file, schema, RECORDS_SCHEMA, required, "records")


def check_searches_schema(file: str | os.PathLike[str], schema: pa.Schema,
                          required: Iterable[str] = REQUIRED_SEARCHES, expected: pa.Schema = SEARCHES_SCHEMA) -> None:
    check_schema(file, schema, expected, required, "searches")


def check_finite(file: str | os.PathLike[str], table: pa.Table) -> None:
    """Raise :class:`InputError` when a float column of ``table`` holds an infinity or NaN (a depth or a
    reduction in plies is a finite number; a missing one is null)."""
    for name, column in zip(table.column_names, table.columns):
        if not pa.types.is_floating(column.type) or column.null_count == len(column):
            continue
        finite = pc.is_finite(column)
        if pc.any(pc.invert(finite)).as_py():
            bad = pc.filter(column, pc.invert(finite))
            raise InputError(f"{file}: column {name} holds {bad[0].as_py()} (not a finite number) in "
                             f"{len(bad):,} rows: not a file treediff wrote, or edited since")


def open_parquet(file: str | os.PathLike[str], what: str) -> "pq.ParquetFile":
    """``pq.ParquetFile(file)``, a file that is not Parquet (or is cut short) an :class:`InputError` naming it."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(file)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable Parquet {what} file ({_reason(exc)})") from None


def read_parquet(file: str | os.PathLike[str], what: str, **kwargs: Any) -> pa.Table:
    """``pq.read_table(file, **kwargs)``, a corrupt file an :class:`InputError` naming it."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file, **kwargs)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable Parquet {what} file ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text[:200]

"""Machine formats: CSV, JSON and JSON Lines, full precision, long layout; the one JSON serializer.

* CSV: one section gives a plain CSV file.  Several sections written to a
  directory (``--format csv -o DIR``) give one ``DIR/<name>.csv`` per table
  (:func:`csv_files`); on stdout they follow one another, each preceded by a
  ``# <name>: <title>`` line and followed by a blank line.
* JSON: ``{"tables": [{"name", "title", "keys", "columns", "rows": [{column: value}]}]}``;
  NaN and missing values are ``null``.
* JSON Lines: one object per row, ``{"table": <name>, column: value, ...}``.

Counts stay integers: a float column whose values are all whole numbers (a
count that became float because a merge left holes) is written as integers
unless its name says it is a rate, ratio, mean or depth (:func:`integral_columns`,
the same naming rule the table format uses).  Every JSON document treediff
writes (report, compare, diff) goes through :func:`json_records` and
:func:`dumps`, so values are converted one way everywhere.
"""
from __future__ import annotations

import io
import json
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from treediff.render.formatting import always_decimal


def integral_columns(frame: pd.DataFrame) -> list[str]:
    """Float columns holding only whole numbers (and missing values) whose name does not say they are
    fractional (``pct``, ``ratio``, ``ebf``, ``mean``, ``plies``, ...): counts to write as integers."""
    found = []
    for column in frame.columns:
        series = frame[column]
        if not pd.api.types.is_float_dtype(series.dtype) or always_decimal(str(column)):
            continue
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = values[~np.isnan(values)]
        if np.isfinite(finite).all() and (finite == np.round(finite)).all() and (np.abs(finite) < 2**53).all():
            found.append(column)
    return found


def exported(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its integral float columns as nullable integers (``Int64``); others untouched."""
    columns = integral_columns(frame)
    if not columns:
        return frame
    return frame.assign(**{str(c): frame[c].astype("Int64") for c in columns})


def _python_column(series: pd.Series) -> list[Any]:
    """One column as JSON-safe Python values, converted column-wise (NaN/NA -> None, numpy -> Python)."""
    dtype = series.dtype
    missing = series.isna().to_numpy()
    if pd.api.types.is_bool_dtype(dtype):
        values: list[Any] = series.to_numpy(dtype=object, na_value=None).tolist()
        return [None if m else bool(v) for v, m in zip(values, missing)]
    if pd.api.types.is_integer_dtype(dtype):
        ints = series.to_numpy(dtype=np.int64, na_value=0).tolist()
        return [None if m else v for v, m in zip(ints, missing)] if missing.any() else ints
    if pd.api.types.is_float_dtype(dtype):
        floats = series.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = missing | ~np.isfinite(floats)
        values = floats.tolist()
        return [None if b else v for v, b in zip(values, bad)] if bad.any() else values
    objects = series.to_numpy(dtype=object)
    from treediff.render.formatting import to_python

    return [to_python(v) for v in objects]


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as ``{column: value}`` dicts with JSON-safe values (counts as ints)."""
    frame = exported(frame)
    columns = [str(c) for c in frame.columns]
    values = [_python_column(frame.iloc[:, i]) for i in range(len(columns))]
    return [dict(zip(columns, row)) for row in zip(*values)] if columns else [{} for _ in range(len(frame))]


def dumps(doc: Any, indent: int | None = 2) -> str:
    """The one JSON encoder: UTF-8 text kept as is, NaN refused (values come through :func:`json_records`)."""
    return json.dumps(doc, indent=indent, ensure_ascii=False, allow_nan=False)


def frame_csv(frame: pd.DataFrame) -> str:
    """One frame as CSV text (counts as integers, ``\\n`` line ends)."""
    return exported(frame).to_csv(index=False, lineterminator="\n")


def render_csv(sections) -> str:
    buf = io.StringIO()
    several = len(sections) > 1
    for i, section in enumerate(sections):
        if several:
            if i:
                buf.write("\n")
            buf.write(f"# {section.name}: {section.title}\n")
        buf.write(frame_csv(section.frame))
    return buf.getvalue()


def csv_files(sections) -> dict[str, str]:
    """``{"<name>.csv": text}``: one plain CSV file per section (``--format csv -o DIR``)."""
    files: dict[str, str] = {}
    for section in sections:
        name = f"{section.name}.csv"
        if name in files:
            raise ValueError(f"two tables named {section.name!r}")
        files[name] = frame_csv(section.frame)
    return files


def sections_to_json(sections) -> dict:
    tables = []
    for section in sections:
        tables.append({"name": section.name, "title": section.title, "keys": list(section.keys),
                       "columns": [str(c) for c in section.frame.columns], "rows": json_records(section.frame)})
    return {"tables": tables}


def render_json(sections, extra: dict | None = None) -> str:
    doc = sections_to_json(sections)
    if extra:
        doc.update(extra)
    return dumps(doc) + "\n"


def jsonl_lines(sections: Sequence) -> Iterator[str]:
    """JSON Lines: one compact object per row of every section, ``"table"`` naming its section first."""
    for section in sections:
        for row in json_records(section.frame):
            yield dumps({"table": section.name, **row}, indent=None)


def render_jsonl(sections) -> str:
    return "".join(line + "\n" for line in jsonl_lines(sections))

"""Machine formats: CSV and JSON, full precision, long layout.

* CSV: one section gives a plain CSV file; several sections are written one
  after another, each preceded by a ``# <name>: <title>`` line and followed
  by a blank line.
* JSON: ``{"tables": [{"name", "title", "keys", "columns", "rows": [{column: value}]}]}``;
  NaN and missing values are ``null``.
"""
from __future__ import annotations

import io
import json

from treediff.render.formatting import to_python


def render_csv(sections) -> str:
    buf = io.StringIO()
    several = len(sections) > 1
    for i, section in enumerate(sections):
        if several:
            if i:
                buf.write("\n")
            buf.write(f"# {section.name}: {section.title}\n")
        section.frame.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


def sections_to_json(sections) -> dict:
    tables = []
    for section in sections:
        columns = [str(c) for c in section.frame.columns]
        rows = [{c: to_python(v) for c, v in zip(columns, row)}
                for row in section.frame.itertuples(index=False, name=None)]
        tables.append({"name": section.name, "title": section.title, "keys": list(section.keys),
                       "columns": columns, "rows": rows})
    return {"tables": tables}


def render_json(sections, extra: dict | None = None) -> str:
    doc = sections_to_json(sections)
    if extra:
        doc.update(extra)
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"

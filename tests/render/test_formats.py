"""The same numbers in every format: JSON and CSV exactly, markdown and plain text to the shown precision."""
from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest


from support.tracebuild import concat, read_fixture

from treediff.render.data import render_csv, render_json
from treediff.render.formatting import format_cell, precision
from treediff.render.text import human_view, render_markdown, render_plain
from treediff.report.core import report_frames

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


@pytest.fixture(scope="module", params=[("engine",), ("engine", "phase"), ("engine", "iter")], ids=str)
def report(request):
    pairs = [read_fixture(FIX / f"report_{e}.log") for e in ("typhoon", "stockfish", "crafty")]
    return report_frames(*concat(*pairs), by=request.param)


def _markdown_tables(text: str) -> dict[str, list[list[str]]]:
    """title -> rows of cells (header first, the alignment row dropped)."""
    out, title = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            title = line[4:]
            out[title] = []
        elif line.startswith("|") and title is not None:
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= set("-:") for c in cells):
                out[title].append(cells)
    return out


def _plain_tables(text: str) -> dict[str, list[list[str]]]:
    out, title = {}, None
    for line in text.splitlines():
        if line.startswith("== ") and line.endswith(" =="):
            title = line[3:-3]
            out[title] = []
        elif line.strip() and title is not None and not line.startswith(("note: ", "columns: ")):
            # a section's column legend and notes follow it
            out[title].append(re.split(r"\s{2,}", line.strip()))
    return out


def _close(shown: str, value, column: str) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return shown == "-"
    if isinstance(value, str):
        return shown == value
    number = float(shown.replace(",", ""))
    return abs(number - float(value)) <= 0.5 * 10 ** -precision(column) + 1e-9


def test_csv_and_json_hold_identical_values(report):
    doc = json.loads(render_json(report.sections))
    csv_text = render_csv(report.sections)
    chunks = [c for c in csv_text.split("\n# ") if c.strip()]
    assert len(chunks) == len(doc["tables"])
    for chunk, table in zip(chunks, doc["tables"]):
        header, _, body = chunk.lstrip("# ").partition("\n")
        assert header.startswith(table["name"] + ":")
        # Only an empty cell is missing: "null" is a value (the cutoffs table's null-move class).
        frame = pd.read_csv(io.StringIO(body), keep_default_na=False, na_values=[""])
        assert list(frame.columns) == table["columns"]
        assert len(frame) == len(table["rows"])
        for (_, row), jrow in zip(frame.iterrows(), table["rows"]):
            for col in table["columns"]:
                jv, cv = jrow[col], row[col]
                if jv is None:
                    assert pd.isna(cv), (table["name"], col)
                elif isinstance(jv, str):
                    assert str(cv) == jv
                else:
                    assert float(cv) == float(jv), (table["name"], col, cv, jv)


@pytest.mark.parametrize("renderer,reader", [(render_markdown, _markdown_tables), (render_plain, _plain_tables)],
                         ids=["markdown", "plain"])
def test_human_formats_show_the_json_numbers(report, renderer, reader):
    doc = {t["name"]: t for t in json.loads(render_json(report.sections))["tables"]}
    shown = reader(renderer(report.sections))
    checked = 0
    for section in report.sections:
        rows = shown[section.title]
        table = doc[section.name]
        view = human_view(section)
        if not table["rows"]:
            continue
        header, body = rows[0], rows[1:]
        assert header == [str(c) for c in view.columns]
        if list(view.columns) == table["columns"]:
            assert len(body) == len(table["rows"])
            for cells, jrow in zip(body, table["rows"]):
                for col, cell in zip(header, cells):
                    assert _close(cell, jrow[col], col), (section.name, col, cell, jrow[col])
                    checked += 1
        else:  # side by side: rebuild (engine, label, count, pct) from the blocks
            label = header[0].split(" ", 1)[1]
            seen = set()
            engines = list(dict.fromkeys(h.split(" ", 1)[0] for h in header))
            for cells in body:
                for e in engines:
                    i = header.index(f"{e} {label}")
                    if cells[i] == "-":
                        continue
                    seen.add((e, cells[i], cells[i + 1], cells[i + 2]))
            expected = {(r["engine"], r[label], format_cell("count", r["count"]),
                         format_cell("pct_of_moves", r["pct_of_moves"])) for r in table["rows"]}
            assert seen == expected
            checked += len(seen)
    assert checked > 100


def test_side_by_side_only_when_grouped_by_engine_alone(report):
    acts = next(s for s in report.sections if s.name == "acts")
    wide = human_view(acts)
    if report.keys == ("engine",):
        assert list(wide.columns[:3]) == ["typhoon act", "typhoon count", "typhoon pct_of_moves"]
        assert wide["stockfish act"].iloc[0] == "FULL" and wide["stockfish count"].iloc[0] == 16
    else:
        assert wide is acts.frame


def test_json_has_no_nan_and_keeps_keys(report):
    text = render_json(report.sections)
    assert "NaN" not in text
    doc = json.loads(text)
    ebf = next(t for t in doc["tables"] if t["name"] == "ebf")
    assert ebf["keys"][0] == "engine"
    stockfish = [r for r in ebf["rows"] if r["engine"] == "stockfish"]
    if "phase" in report.keys:  # one depth per phase: 10^(1/3) in the opening, 4^(1/2) in the endgame
        assert [r["ebf"] for r in stockfish] == [pytest.approx(10 ** (1 / 3)), pytest.approx(2.0)]
    else:
        assert [r["ebf"] for r in stockfish] == [None]  # mixed depths 3 and 2 -> NaN -> null


def test_format_cell():
    assert format_cell("count", 212501) == "212,501"
    assert format_cell("pct_of_moves", 22.3567) == "22.36"
    assert format_cell("ebf", 2.0) == "2.000"
    assert format_cell("nodes", 14.0) == "14"
    assert format_cell("ebf", float("nan")) == "-"
    assert format_cell("act", "LMR") == "LMR"

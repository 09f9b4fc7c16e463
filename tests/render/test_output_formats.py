"""Machine formats (issue 16 items 4 and 5): counts stay integers, JSON Lines, one CSV per table into a
directory, the format following -o's extension, files honouring the umask, one JSON serializer.

Expected counts come from typhoon_py's own counters (fixtures/traces/*.counters.json), not from treediff.
"""
from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.cli.common import format_from_output
from treediff.model.errors import InputError
from treediff.render.data import dumps, integral_columns, json_records, jsonl_lines, render_csv
from treediff.render.output import emit, write_csv

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
START_A = TRACES / "typhoon_start.log"
START_B = TRACES / "stockfish_start.log"
#: Searched to the same depth as typhoon_start (4 plies), so compare and diff count its whole tree.
START_C = TRACES / "crafty_start.log"


def _nodes(profile: str) -> int:
    return int(json.loads((TRACES / f"{profile}_start.counters.json").read_text())["nodes"])


def _last_iteration_results(log: Path) -> int:
    """RESULT lines after the log's last ITER line: the root's subtree in the iteration diff aligns."""
    lines = log.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("ITER "))
    return sum(line.startswith("RESULT ") for line in lines[last:])


class _Section:
    def __init__(self, name: str, frame: pd.DataFrame, title: str = "t", keys: tuple[str, ...] = ()):
        self.name, self.frame, self.title, self.keys, self.notes = name, frame, title, keys, []


def _counts_frame() -> pd.DataFrame:
    # A count column that became float because a merge left a hole, next to genuinely fractional columns.
    return pd.DataFrame({"engine": ["a", "b"], "nodes": [353.0, np.nan], "ratio": [1.0, 2.0],
                         "pct_of_moves": [50.0, 100.0], "depth_a": [4.0, 3.0], "mean_nodes": [4.0, 2.0]})


def test_whole_float_counts_are_integers_but_rates_stay_float():
    frame = _counts_frame()
    assert integral_columns(frame) == ["nodes"]
    text = render_csv([_Section("nodes", frame)])
    assert text.splitlines() == ["engine,nodes,ratio,pct_of_moves,depth_a,mean_nodes",
                                 "a,353,1.0,50.0,4.0,4.0", "b,,2.0,100.0,3.0,2.0"]
    rows = json_records(frame)
    assert rows[0]["nodes"] == 353 and isinstance(rows[0]["nodes"], int)
    assert rows[1]["nodes"] is None
    assert isinstance(rows[0]["ratio"], float) and isinstance(rows[0]["pct_of_moves"], float)
    assert '"nodes": 353,' in dumps(rows)


def test_json_values_nan_inf_and_text():
    frame = pd.DataFrame({"x": [1.5, np.inf, np.nan], "s": ["d2d4/g8f6", None, "→"],
                          "n": pd.array([1, None, 3], dtype="Int64"), "b": [True, False, True]})
    rows = json_records(frame)
    assert rows == [{"x": 1.5, "s": "d2d4/g8f6", "n": 1, "b": True},
                    {"x": None, "s": None, "n": None, "b": False},
                    {"x": None, "s": "→", "n": 3, "b": True}]
    text = dumps(rows, indent=None)
    assert "d2d4/g8f6" in text and "→" in text  # neither slashes nor non-ASCII escaped
    assert json.loads(text) == rows


def test_jsonl_one_object_per_row_naming_its_table():
    sections = [_Section("nodes", _counts_frame()), _Section("acts", pd.DataFrame({"act": ["LMR"], "count": [7]}))]
    lines = list(jsonl_lines(sections))
    assert len(lines) == 3
    objects = [json.loads(line) for line in lines]
    assert [o["table"] for o in objects] == ["nodes", "nodes", "acts"]
    assert objects[0]["nodes"] == 353 and objects[2] == {"table": "acts", "act": "LMR", "count": 7}


def test_csv_into_a_directory_writes_one_plain_csv_per_table(tmp_path):
    sections = [_Section("nodes", _counts_frame()), _Section("acts", pd.DataFrame({"act": ["LMR"], "count": [7]}))]
    written = write_csv(sections, tmp_path / "out")
    assert sorted(p.name for p in written) == ["acts.csv", "nodes.csv"]
    back = pd.read_csv(tmp_path / "out" / "nodes.csv")
    assert list(back["nodes"].fillna(-1).astype(int)) == [353, -1]
    assert pd.read_csv(tmp_path / "out" / "acts.csv").to_dict("records") == [{"act": "LMR", "count": 7}]
    assert not any(line.startswith("#") for line in (tmp_path / "out" / "nodes.csv").read_text().splitlines())


def test_csv_several_tables_into_one_file_is_refused_naming_the_file(tmp_path):
    sections = [_Section("nodes", _counts_frame()), _Section("acts", pd.DataFrame({"act": ["LMR"]}))]
    with pytest.raises(InputError, match=r"x\.csv: 2 tables \(nodes, acts\)"):
        write_csv(sections, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    write_csv(sections[:1], tmp_path / "one.csv")
    assert (tmp_path / "one.csv").read_text().startswith("engine,nodes,")


@pytest.mark.parametrize(("output", "expected"), [
    ("r.csv", "csv"), ("r.JSON", "json"), ("r.jsonl", "jsonl"), ("r.md", "markdown"), ("r.txt", "table"),
    ("r.html", "html"), ("r", "table"), ("-", "table"), (None, "table"), ("r.parquet", "table"),
])
def test_format_follows_the_output_extension(output, expected):
    assert format_from_output(None, output) == expected


def test_explicit_format_wins_and_unavailable_format_is_a_usage_error():
    assert format_from_output("json", "r.csv") == "json"
    assert format_from_output(None, "r.txt", aliases={"table": "text"}) == "text"
    with pytest.raises(click.UsageError, match="html"):
        format_from_output(None, "r.html", choices=("table", "csv"))


def _invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result


def test_report_csv_directory_and_integer_nodes_from_the_cli(tmp_path):
    out = tmp_path / "tables"
    result = _invoke("report", str(START_A), str(START_B), "--format", "csv", "-o", str(out) + "/")
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.iterdir())
    assert "nodes.csv" in files and "acts.csv" in files and len(files) > 2
    nodes = pd.read_csv(out / "nodes.csv")
    assert dict(zip(nodes["engine"], nodes["nodes"])) == {"typhoon": _nodes("typhoon"), "stockfish": _nodes("stockfish")}
    assert f",{_nodes('typhoon')}," in (out / "nodes.csv").read_text()  # no "353.0"


def test_report_output_extension_chooses_json_and_jsonl(tmp_path):
    result = _invoke("report", str(START_A), "--table", "nodes", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    row = doc["tables"][0]["rows"][0]
    assert row["nodes"] == _nodes("typhoon") and isinstance(row["nodes"], int)
    result = _invoke("report", str(START_A), "--table", "nodes", "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(line)["nodes"] for line in lines] == [_nodes("typhoon")]


def test_compare_json_nodes_are_integers(tmp_path):
    result = _invoke("compare", str(START_A), str(START_C), "--top", "0", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    nodes = {t["name"]: t for t in doc["tables"]}["nodes"]["rows"][0]
    assert (nodes["nodes_a"], nodes["nodes_b"]) == (_nodes("typhoon"), _nodes("crafty"))
    assert isinstance(nodes["nodes_a"], int)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_outputs_honour_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        emit([_Section("nodes", _counts_frame())], "json", tmp_path / "r.json")
        write_csv([_Section("nodes", _counts_frame())], tmp_path / "d")
        result = _invoke("parse", str(START_A), "-o", str(tmp_path / "p.parquet"))
        assert result.exit_code == 0, result.output
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    for path in (tmp_path / "r.json", tmp_path / "d" / "nodes.csv", tmp_path / "p.parquet",
                 tmp_path / "p.searches.parquet"):
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_diff_json_is_written_by_the_one_serializer():
    result = _invoke("diff", str(START_A), str(START_C), "--format", "json", "--notation", "uci")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "\\/" not in text  # pandas' to_json escaped every '/' of a path; the one serializer does not
    doc = json.loads(text)
    root = next(r for r in doc["rows"] if r["path"] == "")
    assert (root["nodes_a"], root["nodes_b"]) == (_last_iteration_results(START_A), _last_iteration_results(START_C))
    assert all(isinstance(r["nodes_a"], int) for r in doc["rows"] if r["nodes_a"] is not None)
    assert any("/" in r["path"] for r in doc["rows"])
    assert io.StringIO(text).read().count("\n") <= 1


def test_diff_jsonl_rows_are_the_json_rows():
    from treediff.align import LOAD_COLUMNS, align
    from treediff.parse.source import open_source
    from treediff.render.diffview import to_json, to_jsonl

    records = [open_source(p).records(tuple(dict.fromkeys((*LOAD_COLUMNS, "line")))) for p in (START_A, START_C)]
    alignment = align(*records)
    lines = to_jsonl(alignment.rows).splitlines()
    assert len(lines) == len(alignment.rows)
    assert [json.loads(line) for line in lines] == json.loads(to_json(alignment, alignment.rows))["rows"]


def test_compare_csv_into_a_directory(tmp_path):
    result = _invoke("compare", str(START_A), str(START_C), "--top", "0", "--format", "csv", "-o", str(tmp_path / "cmp"))
    assert result.exit_code == 0, result.output
    files = {p.name for p in (tmp_path / "cmp").iterdir()}
    assert {"nodes.csv", "acts.csv"} <= files
    nodes = pd.read_csv(tmp_path / "cmp" / "nodes.csv")
    assert (int(nodes["nodes_a"][0]), int(nodes["nodes_b"][0])) == (_nodes("typhoon"), _nodes("crafty"))
    refused = _invoke("compare", str(START_A), str(START_C), "--top", "0", "-o", str(tmp_path / "all.csv"))
    assert refused.exit_code == 2 and "do not fit one CSV file" in refused.stderr
    assert not (tmp_path / "all.csv").exists()

"""Parquet pairs written before the visit columns existed still open and align (the columns are worked out)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from treediff.cli import main

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _old_parquet(log: Path, out: Path) -> Path:
    assert CliRunner().invoke(main, ["parse", str(log), "-o", str(out)]).exit_code == 0
    table = pq.read_table(out)
    pq.write_table(table.drop_columns([c for c in ("visit", "parent_visit") if c in table.column_names]), out)
    return out


def test_diff_and_report_on_parquet_without_visit_columns(tmp_path):
    a = _old_parquet(TRACES / "typhoon_start.log", tmp_path / "a.parquet")
    b = _old_parquet(TRACES / "stockfish_start.log", tmp_path / "b.parquet")
    assert "visit" not in pq.read_schema(a).names
    from_files = CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json"])
    assert from_files.exit_code == 0, from_files.output
    from_logs = CliRunner().invoke(main, ["diff", str(TRACES / "typhoon_start.log"),
                                          str(TRACES / "stockfish_start.log"), "--format", "json"])
    rows = lambda out: [(r["path"], r["status"], r["nodes_a"], r["nodes_b"]) for r in json.loads(out)["rows"]]
    assert rows(from_files.output) == rows(from_logs.output)
    report = CliRunner().invoke(main, ["report", str(a), "--table", "nodes,ebf", "--format", "json"])
    assert report.exit_code == 0, report.output

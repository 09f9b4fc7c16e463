"""Self-describing outputs (issue 16 item 4): Parquet schema and field metadata, the dataset manifest,
`treediff info --schema`, and `parse -o -`.

Expected dialects and record counts are read from the logs' own text (TREEDUMP headers, record lines);
column names from docs/TREEDUMP_FORMAT.md, not from the schema under test.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import treediff
from support.runner_helpers import fake_spec
from treediff.cli import main
from treediff.model.positions import Position
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA
from treediff.run.batch import SerialExecutor, plan_batch, run_batch
from treediff.run.search import Limits
from treediff.store.layout import DATASET_RECORDS_SCHEMA, DATASET_SEARCHES_SCHEMA, FAILURES_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
LOGS = [TRACES / "typhoon_start.log", TRACES / "crafty_start.log"]
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _doc_columns(section: str) -> list[str]:
    """The column names of a table in docs/TREEDUMP_FORMAT.md (the section starting with ``section``)."""
    text = (ROOT / "docs" / "TREEDUMP_FORMAT.md").read_text()
    body = text.split(section, 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| ([a-z_]+) \| ", body, re.M) if m.group(1) != "column"]


@pytest.mark.parametrize("schema", [RECORDS_SCHEMA, SEARCHES_SCHEMA, DATASET_RECORDS_SCHEMA,
                                    DATASET_SEARCHES_SCHEMA, FAILURES_SCHEMA],
                         ids=["records", "searches", "dataset-records", "dataset-searches", "failures"])
def test_every_column_has_a_unit_and_a_description(schema):
    for field in schema:
        meta = field.metadata or {}
        assert meta.get(b"unit"), field.name
        assert len(meta.get(b"description", b"")) > 3, field.name
    assert schema.metadata[b"treediff.format_version"] == b"1"
    assert schema.metadata[b"treediff.version"] == treediff.__version__.encode()


def test_documented_columns_are_the_schema_columns():
    assert _doc_columns("## 3. The records table") == RECORDS_SCHEMA.names
    assert _doc_columns("## 4. The searches table") == SEARCHES_SCHEMA.names


def _header_dialects(logs: list[Path]) -> list[str]:
    found = []
    for log in logs:
        for line in log.read_text().splitlines():
            if line.startswith("TREEDUMP "):
                found.append(re.search(r"\bengine=(\S+)", line).group(1))
    return list(dict.fromkeys(found))


def test_parse_writes_format_producer_dialects_and_units(tmp_path):
    out = tmp_path / "p.parquet"
    result = CliRunner().invoke(main, ["parse", *map(str, LOGS), "-o", str(out)])
    assert result.exit_code == 0, result.output
    footer = pq.read_metadata(out).metadata
    assert footer[b"treediff.format"] == b"treediff-records"
    assert footer[b"treediff.version"] == treediff.__version__.encode()
    assert footer[b"treediff.dialects"].decode().split(",") == _header_dialects(LOGS) == ["typhoon", "crafty"]
    schema = pq.read_schema(out)
    assert schema.field("see").metadata[b"unit"] == b"centipawns"
    assert schema.field("depth").metadata[b"unit"] == b"plies"
    searches = pq.read_schema(tmp_path / "p.searches.parquet")
    assert searches.metadata[b"treediff.format"] == b"treediff-searches"
    assert searches.metadata[b"treediff.dialects"] == b"typhoon,crafty"
    assert searches.field("result_nodes").metadata[b"unit"] == b"nodes"


def test_info_schema_prints_the_files_metadata(tmp_path):
    out = tmp_path / "p.parquet"
    assert CliRunner().invoke(main, ["parse", str(LOGS[0]), "-o", str(out)]).exit_code == 0
    result = CliRunner().invoke(main, ["info", str(out), "--schema"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (f"{out}: format=treediff-records, format_version=1, version={treediff.__version__}, "
                        "dialects=typhoon")
    assert "see\tint32\tcentipawns\tstatic exchange evaluation of the move" in lines
    assert any(line.startswith(f"{tmp_path / 'p.searches.parquet'}: format=treediff-searches") for line in lines)
    result = CliRunner().invoke(main, ["info", str(LOGS[1]), "--schema"])
    assert result.exit_code == 0, result.output
    assert "dialects=crafty" in result.stdout.splitlines()[0]


def test_info_schema_of_a_parquet_file_treediff_did_not_write(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    result = CliRunner().invoke(main, ["info", str(tmp_path / "other.parquet"), "--schema"])
    assert result.exit_code == 0, result.output
    assert "not written by treediff" in result.stdout.splitlines()[0]
    assert "x\tint64\t\t" in result.stdout


def test_dataset_manifest_and_files_describe_themselves(tmp_path):
    dataset = tmp_path / "ds"
    umask = 0o002  # a dataset shared by a group: files 0664, directories 0775
    old = os.umask(umask)
    try:
        plan = plan_batch([Position("start", START, "opening", 1)], [fake_spec(name="sf")], 2, dataset,
                          Limits(timeout=10, quit_grace=1))
        run_batch(plan, SerialExecutor())
    finally:
        os.umask(old)
    manifest = json.loads((dataset / "batch.json").read_text())
    assert manifest["treediff_version"] == treediff.__version__
    assert manifest["dialects"] == ["stockfish"]  # the stockfish-treedump preset's dialect
    records = {c["column"]: c for c in manifest["tables"]["records"]["columns"]}
    assert "engine" not in records  # the partition directory carries it
    assert records["reduction"]["unit"] == "plies" and records["alpha"]["unit"] == "centipawns"
    assert manifest["tables"]["searches"]["format"] == "treediff-searches"
    (records_file,) = (dataset / "records" / "engine=sf").iterdir()
    (searches_file,) = (dataset / "searches" / "engine=sf").iterdir()
    assert pq.read_schema(records_file).metadata[b"treediff.format"] == b"treediff-records"
    assert pq.read_schema(records_file).field("depth").metadata[b"unit"] == b"plies"
    assert pq.read_schema(searches_file).field("seconds").metadata[b"unit"] == b"seconds"
    for path in (dataset / "batch.json", records_file, searches_file):  # shared datasets: the umask decides
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path
    for directory in (dataset, records_file.parent, searches_file.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o777 & ~umask, directory
    result = CliRunner().invoke(main, ["info", str(dataset), "--schema"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith(f"{dataset} (batch.json): format=treediff-batch")
    assert f"version={treediff.__version__}" in result.stdout.splitlines()[0]


def _records_in(log: Path) -> int:
    return sum(line.startswith(("MOVE ", "RESULT ")) for line in log.read_text().splitlines())


def test_parse_to_stdout_writes_the_records_parquet_and_no_file_named_dash(tmp_path):
    out = tmp_path / "from-stdout.parquet"
    scratch = tmp_path.parent / f"{tmp_path.name}-tmp"  # (the records are written there first)
    scratch.mkdir()
    with open(out, "wb") as sink:
        proc = subprocess.run([sys.executable, "-c", "import sys; from treediff.cli import main; sys.exit(main())",
                               "parse", str(LOGS[0]), "-o", "-"], stdout=sink, stderr=subprocess.PIPE,
                              cwd=tmp_path, timeout=120, env=dict(os.environ, TMPDIR=str(scratch)))
    assert proc.returncode == 0, proc.stderr
    assert list(scratch.iterdir()) == []
    assert pq.read_table(out).num_rows == _records_in(LOGS[0])
    assert pq.read_metadata(out).metadata[b"treediff.dialects"] == b"typhoon"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from-stdout.parquet"]  # no '-' nor '-.searches.parquet'
    assert b"searches table is not written" in proc.stderr


def test_parse_to_stdout_stopped_as_its_scratch_directory_is_made_leaves_nothing(tmp_path, monkeypatch):
    """SIGTERM raised as the scratch directory's ``mkdir`` returns: status 143 and the directory removed (a
    ``TemporaryDirectory`` was orphaned there)."""
    import tempfile

    from click.testing import CliRunner

    from support.signal_windows import sigterm_as_it_returns
    from treediff.cli import main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with sigterm_as_it_returns(os, "mkdir", lambda path, *rest: "treediff-parse-" in str(path)) as hit:
        result = CliRunner().invoke(main, ["parse", str(LOGS[0]), "-o", "-"])
    assert len(hit) == 1
    assert result.exit_code == 143, result.output
    assert list(tmp_path.iterdir()) == []

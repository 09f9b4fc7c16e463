"""Out-of-core reports: batch by batch and combined == all records in one batch, on fixture traces and a real batch."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from support.scale_helpers import dataset_from_logs, fixture_logs
from treediff.cli import main
from treediff.parse.source import open_source, open_sources
from treediff.report.core import TABLES, build_report, columns_for, report_frames
from treediff.report.tables.lmr import weighted_quantiles

ROOT = Path(__file__).resolve().parents[2]
EPD = ROOT / "fixtures" / "positions20.epd"
GROUPINGS = ["engine", "engine,phase", "engine,iter", "engine,position", "engine,phase,iter", "engine,source"]


@pytest.fixture(scope="module")
def fixture_dataset(tmp_path_factory) -> Path:
    """The nine fixture traces (three dialects, 15 searches) as a dataset."""
    return dataset_from_logs(fixture_logs(), tmp_path_factory.mktemp("fix") / "ds")


@pytest.fixture(scope="module")
def batch_dataset(tmp_path_factory) -> Path:
    """A real batch: three typhoon_py dialects, an engine without TREEDUMP (own counts) and a crashing one."""
    base = tmp_path_factory.mktemp("batch")
    epd = base / "five.epd"
    epd.write_text("\n".join(EPD.read_text().splitlines()[:5]) + "\n")
    fake = f"{sys.executable} {ROOT / 'fixtures' / 'engines' / 'fake_engine.py'}"
    dataset = base / "ds"
    result = CliRunner().invoke(main, [
        "batch", str(epd), "--engine", "typhoon_py", "--engine", "typhoon_py:stockfish", "--engine",
        "typhoon_py:crafty", "--engine", f"plain@uci={fake}", "--engine", f"bad@stockfish-treedump={fake} --mode crash",
        "--depth", "3", "-o", str(dataset), "-j", "2", "--logs", "none"], catch_exceptions=False)
    assert result.exit_code == 1 and "20 done, 5 failed" in result.output
    return dataset


def _assert_same(inputs: list[Path], by: str, target: int) -> None:
    source = open_sources(inputs)
    expected = report_frames(source.records(columns_for(TABLES)), source.searches, TABLES, by)
    got = build_report(source, TABLES, by, target=target)
    assert got.names == expected.names
    for name in expected.names:
        pd.testing.assert_frame_equal(got[name], expected[name], check_exact=True, obj=f"{name} by {by}")


@pytest.mark.parametrize("by", GROUPINGS)
def test_fixture_traces_partitioned_equals_in_memory(fixture_dataset, by):
    # target=1: every search is its own read; a huge target: everything in one read.
    for target in (1, 10**9):
        _assert_same([fixture_dataset], by, target)


@pytest.mark.parametrize("by", ["engine", "engine,phase", "engine,phase,iter", "engine,position"])
def test_batch_partitioned_equals_in_memory(batch_dataset, fixture_dataset, by):
    _assert_same([batch_dataset], by, 1000)
    _assert_same([batch_dataset, fixture_dataset], by, 1)  # several datasets: search numbers unique across them


def test_reads_whole_searches_and_only_the_needed_columns(fixture_dataset, monkeypatch):
    calls = []
    real = pq.read_table

    def spy(path, columns=None, **kw):
        calls.append((path, tuple(columns or ())))
        return real(path, columns=columns, **kw)

    monkeypatch.setattr(pq, "read_table", spy)
    source = open_source(fixture_dataset)
    build_report(source, ("acts",), "engine", target=1)
    assert len(calls) == len(source.searches) == 15          # one file (search) per read
    assert {c for _, cols in calls for c in cols} == {"tag", "act", "kind", "iter"}


def test_weighted_quantiles_match_numpy():
    rng = np.random.default_rng(7)
    groups, values = rng.integers(0, 5, 3000), rng.integers(0, 16, 3000) / 4.0
    frame = pd.DataFrame({"g": groups, "v": values}).value_counts().reset_index()
    got = weighted_quantiles(frame["g"].to_numpy(), frame["v"].to_numpy(), frame["count"].to_numpy(), 6, (0.5, 0.9))
    for g in range(5):
        assert got[g].tolist() == pytest.approx(np.percentile(values[groups == g], [50, 90]).tolist(), abs=1e-12)
    assert np.isnan(got[5]).all()


def _cli(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_report_cli_out_of_core_equals_in_memory(batch_dataset, tmp_path):
    args = ["report", batch_dataset, "--table", "all", "--by", "phase", "--format", "json"]
    assert _cli(*args) == _cli(*args, "--in-memory")
    plots = _cli("report", batch_dataset, "--table", "nodes", "--plot", tmp_path / "p")
    assert "ebf_iter.png" in plots and (tmp_path / "p" / "lmr_phase.png").exists()


def test_compare_cli_out_of_core_equals_in_memory(batch_dataset):
    args = ["compare", batch_dataset, batch_dataset, "--engine-a", "typhoon_py", "--engine-b", "typhoon_py:crafty",
            "--format", "json", "--top", "5"]
    out = _cli(*args)
    assert out == _cli(*args, "--in-memory")
    names = [t["name"] for t in json.loads(out)["tables"]]
    assert "divergences" in names and "divergence_kinds" in names


def test_position_selection_reads_only_the_position_partitions(tmp_path, monkeypatch):
    """What ``diff`` on datasets needs: one position's files only, aligned exactly as the logs themselves."""
    from support.scale_helpers import TRACES
    from treediff.align import LOAD_COLUMNS, align

    side_a = dataset_from_logs([TRACES / "typhoon_start.log", TRACES / "typhoon_tactical-f6f7.log"], tmp_path / "a")
    side_b = dataset_from_logs([TRACES / "stockfish_start.log", TRACES / "stockfish_tactical-f6f7.log"], tmp_path / "b")
    log_a = open_source(TRACES / "typhoon_start.log").records(LOAD_COLUMNS)
    log_b = open_source(TRACES / "stockfish_start.log").records(LOAD_COLUMNS)
    expected = align(log_a, log_b)
    files = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda p, **kw: files.append(Path(p).name) or real(p, **kw))
    la = open_source(side_a).select_position("start").records(LOAD_COLUMNS)
    assert files == ["000000.parquet"]                      # the start search only, not the tactical one
    lb = open_source(side_b).select_position("start").records(LOAD_COLUMNS)
    got = align(la, lb, position="start")
    pd.testing.assert_frame_equal(got.rows, expected.rows)
    monkeypatch.undo()
    ambiguous = CliRunner().invoke(main, ["diff", str(side_a), str(side_b)])
    assert ambiguous.exit_code == 2 and "share 2 positions; choose one with --position" in ambiguous.output
    missing = CliRunner().invoke(main, ["diff", str(side_a), str(side_b), "--position", "nowhere"])
    assert missing.exit_code == 2 and "no search of position nowhere" in missing.output


def test_dataset_of_engines_without_treedump_has_no_records_dir(tmp_path):
    epd = tmp_path / "two.epd"
    epd.write_text("\n".join(EPD.read_text().splitlines()[:2]) + "\n")
    fake = f"{sys.executable} {ROOT / 'fixtures' / 'engines' / 'fake_engine.py'}"
    dataset = tmp_path / "ds"
    _cli("batch", epd, "--engine", f"plain@uci={fake}", "--depth", "3", "-o", dataset, "-j", "1")
    assert not (dataset / "records").exists()
    args = ["report", dataset, "--table", "nodes,ebf", "--format", "json"]
    out = _cli(*args)
    assert out == _cli(*args, "--in-memory")
    nodes = json.loads(out)["tables"][0]["rows"][0]
    assert nodes["searches"] == 2 and nodes["node_source"] == "engine"


def test_diff_on_datasets_reads_one_position_and_equals_diff_on_logs(tmp_path):
    """`treediff diff` on a dataset (engines chosen with --engine-a/-b) aligns exactly as on the raw logs."""
    traces = ROOT / "fixtures" / "traces"
    logs = [traces / "typhoon_start.log", traces / "stockfish_start.log", traces / "typhoon_tactical-f6f7.log"]
    dataset = dataset_from_logs(logs, tmp_path / "ds")

    def diff_json(*args) -> dict:
        result = CliRunner().invoke(main, ["diff", *map(str, args), "--format", "json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    from_logs = diff_json(logs[0], logs[1])
    from_dataset = diff_json(dataset, dataset, "--position", "start", "--engine-a", "typhoon", "--engine-b", "stockfish")
    assert from_dataset["rows"] == from_logs["rows"] and len(from_logs["rows"]) > 100
    unknown = CliRunner().invoke(main, ["diff", str(dataset), str(dataset), "--position", "start", "--engine-a", "crafty"])
    assert unknown.exit_code == 2 and "holds no engine 'crafty'" in unknown.output

"""The dataset as other tools read it: the one-liners of docs/SCALING.md, checked against treediff's loader."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from support.scale_helpers import dataset_from_logs, fixture_logs
from treediff.parse.source import open_source

DOC = Path(__file__).resolve().parents[2] / "docs" / "SCALING.md"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return dataset_from_logs(fixture_logs(), tmp_path_factory.mktemp("interop") / "ds")


def _move_counts_by_treediff(ds: Path) -> dict[tuple[str, str], int]:
    rec = open_source(ds).records(["tag", "act"])
    moves = rec[rec["tag"] == "MOVE"]
    return {(str(e), str(a)): int(n) for (e, a), n in moves.groupby(["engine", "act"], observed=True).size().items()}


def test_the_documented_one_liners_are_the_ones_tested():
    text = DOC.read_text()
    assert 'pd.read_parquet("DS/records", columns=["engine", "search", "tag", "act"])' in text
    assert "read_parquet('DS/records/*/*.parquet', hive_partitioning = true)" in text


def test_pandas_reads_the_dataset(dataset):
    records = pd.read_parquet(dataset / "records", columns=["engine", "search", "tag", "act"])
    searches = pd.read_parquet(dataset / "searches")
    assert set(records["engine"].astype(str)) == {"typhoon", "stockfish", "crafty"}
    assert len(searches) == 15 and len(records) == int(searches["records"].sum())
    moves = records[records["tag"] == "MOVE"]
    got = {(str(e), str(a)): int(n) for (e, a), n in moves.groupby(["engine", "act"], observed=True).size().items()}
    assert got == _move_counts_by_treediff(dataset)


def test_duckdb_reads_the_dataset(dataset):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (pip install -e '.[test]')")
    glob = str(dataset / "records" / "*" / "*.parquet")
    rows = duckdb.sql(f"SELECT engine, act, count(*) AS n FROM read_parquet('{glob}', hive_partitioning = true) "
                      "WHERE tag = 'MOVE' GROUP BY ALL").fetchall()
    assert {(e, a): n for e, a, n in rows} == _move_counts_by_treediff(dataset)
    nodes = duckdb.sql(f"SELECT sum(result_nodes) FROM read_parquet('{dataset / 'searches' / '*' / '*.parquet'}', "
                       "hive_partitioning = true)").fetchall()[0][0]
    assert nodes == int(open_source(dataset).searches["result_nodes"].sum())

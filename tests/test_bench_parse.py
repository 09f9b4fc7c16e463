"""``benchmarks/bench_parse.py``'s two limits: the parse into a spill and the Parquet writer alone, each in a
fresh interpreter (``run_child``), on a fixture."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from support.benchmark_scripts import load_benchmark
from treediff.parse.core import parse_to_parquet
from treediff.store.spill import spill_source

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "stockfish_tactical-f6f7.log"


def test_the_spill_child_parses_the_log_into_a_spill(tmp_path):
    bench = load_benchmark("bench_parse")
    spill = tmp_path / "spill"
    spill.mkdir()
    figures = bench.run_child("spill", str(LOG), str(spill))
    assert figures["seconds"] > 0 and figures["cpu_seconds"] > 0 and figures["peak_rss_mb"] > 0
    parquet = tmp_path / "records.parquet"
    parse_to_parquet([LOG], parquet)
    rows = sum(batch.num_rows for batch in spill_source(spill).arrow_batches(["search"]))
    assert rows == pq.read_metadata(parquet).num_rows > 0


def test_the_writer_child_rewrites_every_record(tmp_path):
    bench = load_benchmark("bench_parse")
    parquet = tmp_path / "records.parquet"
    parse_to_parquet([LOG], parquet)
    out = tmp_path / "rewritten.parquet"
    figures = bench.run_child("writer", str(parquet), str(out))
    assert figures["records"] == pq.read_metadata(parquet).num_rows > 0
    assert figures["cpu_seconds"] > 0
    assert pq.read_table(out).equals(pq.read_table(parquet))

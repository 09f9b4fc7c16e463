"""Commands reading logs give the same bytes with the Arrow IPC spill as with the Parquet spill it replaced.

The reference run spills each log to a Parquet pair read through ``parquet_source``, as before
(support/parquet_spill.py); the other run is the code as it is.  compare (JSON), report (every table) and diff
on the fixtures and on the real Stockfish traces; some with tiny parse chunks, so a log spills as many parts
and batches are cut inside them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.parse import chunks
from support.parquet_spill import use_parquet_spill

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
#: The real Stockfish traces (shared/real-traces/stockfish, beside the clone in CI).
REAL = next((p for p in (ROOT.parent / "shared" / "real-traces" / "stockfish",
                         Path("/work/shared/real-traces/stockfish")) if p.is_dir()), None)
ENV = {"COLUMNS": "140", "LINES": "50", "TERM": "dumb", "NO_COLOR": "1"}


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(main, args, env=ENV, catch_exceptions=False)
    return f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"


def _same_both_ways(monkeypatch, args: list[str], chunk_bytes: int | None = None) -> str:
    if chunk_bytes is not None:
        monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    new = _run(args)
    with monkeypatch.context() as m:
        use_parquet_spill(m)
        old = _run(args)
    assert new == old
    return new


def _traces(*names: str) -> list[str]:
    return [str(TRACES / name) for name in names]


FIXTURE_COMMANDS = [
    ["compare", *_traces("typhoon_tactical-f6f7.log", "stockfish_tactical-f6f7.log"), "--format", "json"],
    ["compare", *_traces("crafty_batch3.log", "typhoon_batch3.log"), "--format", "json"],
    ["report", *_traces("typhoon_batch3.log", "stockfish_batch3.log"), "--table", "all", "--format", "json"],
    ["report", *_traces("crafty_batch3.log"), "--table", "all", "--by", "phase,position,iter"],
    ["diff", *_traces("typhoon_start.log", "stockfish_start.log"), "--format", "csv"],
]


@pytest.mark.parametrize("args", FIXTURE_COMMANDS, ids=lambda a: "-".join([a[0], Path(a[1]).stem]))
@pytest.mark.parametrize("chunk_bytes", [None, 8192])
def test_fixture_outputs_are_the_parquet_spills(args, chunk_bytes, monkeypatch):
    out = _same_both_ways(monkeypatch, args, chunk_bytes)
    assert out.startswith("exit 0")


def test_compare_within_a_small_memory_limit_is_the_parquet_spills(monkeypatch):
    args = ["compare", *_traces("typhoon_batch3.log", "stockfish_batch3.log"), "--format", "json",
            "--memory-limit", "3MB"]
    assert _same_both_ways(monkeypatch, args, 16384).startswith("exit 0")


@pytest.mark.skipif(REAL is None, reason="the real Stockfish traces are not here (shared/real-traces)")
@pytest.mark.parametrize("args", [
    ["compare", "{typhoon_start}", "{start_d8}", "--format", "json"],
    ["compare", "{start_d8}", "{italian_d9}", "--allow-different-positions", "--format", "json"],
    ["report", "{kp_end_d12}", "{rook_end_d8}", "--table", "all", "--format", "json"],
    ["diff", "{typhoon_start}", "{start_d8}", "--format", "csv"],
], ids=["compare-start", "compare-start-italian", "report-all", "diff-start"])
def test_real_trace_outputs_are_the_parquet_spills(args, monkeypatch):
    names = {p.stem: str(p) for p in REAL.glob("*.log")}
    names["typhoon_start"] = str(TRACES / "typhoon_start.log")
    out = _same_both_ways(monkeypatch, [a.format(**names) for a in args], 65536)
    assert out.startswith("exit 0"), out[:2000]


def test_diffs_one_search_read_is_the_full_parquet_parse(monkeypatch):
    """diff of a position of a log of several searches reads only that search (parse_span, spilled as IPC);
    the reference is the whole log parsed into the old Parquet spill."""
    from treediff.parse import index as log_index

    args = ["diff", *_traces("typhoon_batch3.log", "stockfish_batch3.log"), "--position", "kiwipete",
            "--format", "csv"]
    spans = []
    real = log_index.parse_span
    with monkeypatch.context() as m:
        m.setattr(log_index, "parse_span", lambda *a, **k: spans.append(a[1].search) or real(*a, **k))
        new = _run(args)
    assert spans == [1, 1]  # (the one-search read ran, on both sides)
    with monkeypatch.context() as m:
        use_parquet_spill(m)
        m.setenv(log_index.FULL_PARSE_ENV, "1")
        old = _run(args)
    assert new == old and new.startswith("exit 0")

"""benchmarks/bench_fidelity.py: its pooled figures equal an independent count of the traces,
and its metrics follow their documented definitions on hand-made counts."""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from support.typhoon_trace_tools import read_trace
from typhoon_py import make_config, read_epd, run_search
from support.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_fidelity")


def test_pooled_figures_equal_the_traces_counted_independently(bench):
    positions = read_epd(ROOT / "fixtures" / "positions20.epd")[:3]
    fig = bench.measure("stockfish", positions, 4)
    nodes, acts, red = 0, Counter(), 0
    for p in positions:
        buf = io.StringIO()
        run_search(p.board, 4, make_config("stockfish"), buf, p.id, p.phase)
        (search,) = read_trace(buf.getvalue())
        nodes += len(search.tagged("RESULT"))
        moves = search.tagged("MOVE")
        acts.update(g["act"] for g in moves)
        red += sum(int(g["red"]) for g in moves if g["act"] == "LMR")
    assert fig.searches == 3 and fig.nodes == nodes and fig.acts == acts
    assert fig.metric("LMR plies") == pytest.approx(red / acts["LMR"])
    assert fig.metric("EBF") == pytest.approx((nodes / 3) ** 0.25)


def test_metrics_on_hand_made_counts(bench):
    # 2 searches at depth 2, 18 nodes: 9 nodes a search, EBF 3
    fig = bench.Figures(depth=2, searches=2, nodes=18, unit=64,
                        acts=Counter({"FULL": 5, "LMR": 2, "FP-QUIET": 2, "SEE-CAP": 1, "NMP": 0}),
                        lmr_red_ticks=64 + 128)
    assert fig.metric("mean nodes") == 9
    assert fig.metric("EBF") == pytest.approx(3.0)
    assert fig.metric("LMR %") == pytest.approx(20.0)  # 2 of 10 records
    assert fig.metric("LMR plies") == pytest.approx(1.5)  # 1 and 2 plies at 64 ticks a ply
    assert fig.metric("skips %") == pytest.approx(30.0)  # FP-QUIET and SEE-CAP: 3 of 10
    with pytest.raises(KeyError):
        fig.metric("no such metric")


def test_verdicts_and_bands(bench):
    row = bench.Row("stockfish", False, "EBF", "2.79", None, 3.0)
    assert bench.verdict(row, 3.0) == "pass" and bench.verdict(row, 3.01) == "FAIL"
    assert bench.band_text(row) == "<= 3"
    band = bench.Row("stockfish", False, "LMR %", "19.7", 16.0, 24.0)
    assert bench.verdict(band, 15.9) == "FAIL" and bench.verdict(band, 16.0) == "pass"
    assert bench.band_text(band) == "16-24"
    reference = bench.Row("stockfish", False, "NMP %", "3.1")
    assert bench.verdict(reference, 99.0) == "" and bench.band_text(reference) == "-"

"""Aligning two reference-engine profiles (typhoon_py traces) on the same position.

Node counts are checked against two independent sources: the parsed RESULT
records (counted here with plain pandas string prefixes) and the engine's own
counters written next to each trace.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treediff.align import align, kind_confusion, top_divergences
from treediff.align.summaries import divergence_summary
from treediff.parse.source import open_source

TRACES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "traces"

pytestmark = pytest.mark.skipif(not (TRACES / "typhoon_start.log").exists(), reason="reference traces not generated")


@pytest.fixture(scope="module")
def start():
    return open_source(TRACES / "typhoon_start.log").records(), open_source(TRACES / "stockfish_start.log").records()


def _results_below(records, iteration: int, path: str) -> int:
    res = records[(records["tag"] == "RESULT") & (records["iter"] == iteration)]["path"].astype(str)
    if not path:
        return len(res)
    return int(((res == path) | res.str.startswith(path + "/")).sum())


def test_subtree_counts_match_parsed_results(start):
    typhoon, stockfish = start
    al = align(typhoon, stockfish)
    assert (al.iter_a, al.iter_b) == (4, 4)  # typhoon searched to 4, stockfish to 5
    rows = al.rows.set_index("path")
    assert set(rows["status"].astype(str)) == {"same", "differs", "only-A", "only-B"}
    rng = np.random.default_rng(5)
    picks = list(rng.choice(rows.index.to_numpy(dtype=object), size=60, replace=False)) + [""]
    for path in picks:
        assert rows.loc[path, "nodes_a"] == _results_below(typhoon, 4, path), path
        assert rows.loc[path, "nodes_b"] == _results_below(stockfish, 4, path), path


def test_iteration_totals_match_engine_counters(start):
    typhoon, stockfish = start
    for records, name in ((typhoon, "typhoon"), (stockfish, "stockfish")):
        counters = json.loads((TRACES / f"{name}_start.counters.json").read_text())
        per_iteration = [
            int(align(records, records, iter=k).rows["nodes_a"].iloc[0]) for k in range(1, counters["iterations"] + 1)
        ]
        assert sum(per_iteration) == counters["nodes"]


def test_summaries_are_consistent(start):
    typhoon, stockfish = start
    al = align(typhoon, stockfish)
    table = kind_confusion(al)
    shared = al.rows[al.rows["status"].isin(["same", "differs"]) & (al.rows["decisions_a"] + al.rows["decisions_b"] > 0)]
    assert int(table.to_numpy().sum()) == len(shared)
    # stockfish's pruning acts land in PRUNE (its calibrated tree decides none of the paths typhoon prunes).
    assert "PRUNE" in table.columns
    # Pruning in typhoon (LMP) vs crafty's pruning acts (FP-*, LMP) both land in PRUNE, at the same paths.
    crafty_table = kind_confusion(align(typhoon, open_source(TRACES / "crafty_start.log").records()))
    assert crafty_table.loc["PRUNE", "PRUNE"] > 0
    top = top_divergences(al, n=5)
    shown = top[top["path"] != "(rest)"]
    assert list(shown["delta"].abs()) == sorted(shown["delta"].abs(), reverse=True)
    first = top.iloc[0]
    assert first["delta"] == first["nodes_a"] - first["nodes_b"]
    assert f"`{first['path']}`" in first["sentence"]
    # Every node is counted once: the listed deltas, (rest) included, and the shared residual add up.
    residual = divergence_summary(al, n=5).total["shared_residual"]
    assert int(top["delta"].sum()) + residual == int(al.rows["nodes_a"].iloc[0] - al.rows["nodes_b"].iloc[0])

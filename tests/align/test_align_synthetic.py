"""The vectorized aligner against the benchmark's straightforward dict-based aligner, on synthetic trees."""
from __future__ import annotations


import numpy as np
import pytest

from treediff.align import align
from support.synthetic import STOCKFISH_LIKE, TYPHOON_LIKE, synthetic_tree
from support.benchmark_scripts import load_benchmark



@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_align")


def _columns(rows):
    return rows[["path", "status", "seq_a", "seq_b", "nodes_a", "nodes_b"]].astype(
        {"path": str, "status": str, "seq_a": str, "seq_b": str}
    ).reset_index(drop=True)


@pytest.mark.parametrize("depth,seed,cut", [(5, 1, None), (5, 7, 3000), (4, 3, None), (6, 2, 20000)])
def test_matches_straightforward_aligner(bench, depth, seed, cut):
    a = synthetic_tree(TYPHOON_LIKE, depth, seed)
    b = synthetic_tree(STOCKFISH_LIKE, depth, seed)
    if cut:  # an iteration stopped early: ancestors' RESULTs are missing
        a, b = a.iloc[:cut], b.iloc[: cut // 2]
    rows = align(a, b).rows
    expected = bench.baseline_align(a, b)
    got = _columns(rows)
    assert got.equals(expected)
    assert set(got["status"]) == {"same", "differs", "only-A", "only-B"}


def test_subtree_counts_are_result_counts():
    a = synthetic_tree(TYPHOON_LIKE, 5, 11)
    b = synthetic_tree(STOCKFISH_LIKE, 5, 11)
    rows = align(a, b).rows.set_index("path")
    results = a[a["tag"] == "RESULT"]["path"].astype(str)
    assert rows.loc["", "nodes_a"] == len(results)
    rng = np.random.default_rng(0)
    for path in rng.choice(rows.index.to_numpy(), size=40, replace=False):
        below = ((results == path) | results.str.startswith(path + "/")).sum() if path else len(results)
        assert rows.loc[path, "nodes_a"] == below


def test_depth_first_order_and_subtree_rows():
    a = synthetic_tree(TYPHOON_LIKE, 5, 5)
    b = synthetic_tree(STOCKFISH_LIKE, 5, 5)
    rows = align(a, b).rows
    paths = rows["path"].astype(str).tolist()
    sizes = rows["subtree_rows"].to_numpy()
    for i in np.random.default_rng(1).choice(len(paths), size=50, replace=False):
        block = paths[i : i + sizes[i]]
        prefix = paths[i] + "/" if paths[i] else ""
        assert all(p.startswith(prefix) for p in block[1:])
        nxt = paths[i + sizes[i]] if i + sizes[i] < len(paths) else None
        assert nxt is None or not (nxt.startswith(prefix) and prefix)

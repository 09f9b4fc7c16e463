"""The residual table on RESIDUAL_CASES (tests/support/analytics_traces.py; residual depths in its comment).

Moves decided in 3+ iterations: e2e4, d2d4, g1f3 -> paths 3.  Stalled (last <= first): g1f3 (0 -> 0), the
stalled path; e2e4 (0 -> 3) and d2d4 (0 -> 3) grow.  Growth per root ply: e2e4 3/3 = 1, d2d4 3/3 = 1, g1f3
0 -> median 1.  Mean residual per iteration: 0, 1/3, 2/3, (3 + 3 + 0)/3 = 2.  g1f3's subtree nodes: its
RESULT in iterations 1 and 3 (pruned in 2 and in 4's main visit; 4's first root visit is not main) -> 2.
PV: e2e4, e2e4, e2e4, d2d4 -> final d2d4, stable from iteration 4, 1 change (the late flip).
"""
from __future__ import annotations

import pytest

from support.analytics_traces import RESIDUAL_CASES, source_of
from treediff.report.core import build_report


@pytest.fixture()
def report(tmp_path):
    return build_report(source_of(tmp_path, RESIDUAL_CASES), ["residual"])


def test_stalled_paths_hand_counted(report):
    row = report["residual"].iloc[0]
    assert (row["paths"], row["stalled"]) == (3, 1)
    assert row["stalled_pct"] == pytest.approx(100 / 3)
    assert row["median_growth"] == pytest.approx(1.0)
    top = report["residual_stalled"]
    assert list(top["path"]) == ["g1f3"]
    assert (top.iloc[0]["iterations"], top.iloc[0]["first_residual"], top.iloc[0]["last_residual"]) == (4, 0, 0)
    assert top.iloc[0]["subtree_nodes"] == 2


def test_residual_by_iteration(report):
    it = report["residual_iter"].set_index("iteration")
    assert it["paths"].to_dict() == {1: 3, 2: 3, 3: 3, 4: 3}
    assert it["mean_residual"].to_numpy() == pytest.approx([0, 1 / 3, 2 / 3, 2])


def test_pv_flip_at_the_last_iteration(report):
    pv = report["pv_stability"].iloc[0]
    assert pv["best_moves"] == "1:e2e4 2:e2e4 3:e2e4 4:d2d4"
    assert (pv["final_best"], pv["stable_from"], pv["changes"], pv["iterations"]) == ("d2d4", 4, 1, 4)


def test_no_scores_no_best_move(tmp_path):
    # RESULT records without score= give no root best move (and no error).
    text = "\n".join(" ".join(t for t in line.split() if not t.startswith("score="))
                     for line in RESIDUAL_CASES.splitlines()) + "\n"
    r = build_report(source_of(tmp_path, text), ["residual"])
    assert len(r["pv_stability"]) == 0
    assert r["residual"].iloc[0]["paths"] == 3


def _pv_rule(best: list, iters: list) -> dict:
    """pv_stability of one search, by its definition (module docstring), one run at a time."""
    final = best[-1]
    k = len(best) - 1
    while k > 0 and best[k - 1] == final:
        k -= 1
    return {"iterations": len(best), "final_best": final, "stable_from": iters[k],
            "changes": sum(a != b for a, b in zip(best[:-1], best[1:])),
            "best_moves": " ".join(f"{i}:{m}" for i, m in zip(iters, best))}


@pytest.mark.parametrize("seed", range(3))
def test_pv_stability_of_many_searches_is_the_rule_search_by_search(seed):
    """The columnar pv_frame gives, search by search, what the definition gives (runs out of order in the
    partial rows, one-run searches, a flip back to an earlier move, a missing best path)."""
    import numpy as np
    import pandas as pd

    from treediff.report.grouping import parse_by
    from treediff.report.table import Grouping
    from treediff.report.tables.residual import pv_frame

    rng = np.random.default_rng(seed)
    n_searches = 40
    searches = pd.DataFrame({"engine": ["sf"] * n_searches, "search": np.arange(100, 100 + n_searches),
                             "position": [f"p{i}" for i in range(n_searches)]})
    rows = []
    for srow in rng.permutation(n_searches)[:30]:  # some searches without a best move at all
        runs = int(rng.integers(1, 8))
        for run in rng.permutation(runs):
            rows.append({"srow": int(srow), "run": int(run), "iter": int(run) + 1,
                         "best": None if rng.random() < 0.05 else str(rng.choice(["e2e4", "d2d4", "g1f3"]))})
    pv = pd.DataFrame(rows)
    grouping = Grouping(searches, tuple(parse_by(None)), pd.DataFrame({"srow": [], "iter": []}))
    frame = pv_frame(searches, grouping, pv)
    assert len(frame) == pv["srow"].nunique()
    for _, row in frame.iterrows():
        part = pv[pv["search"] == row["search"]] if "search" in pv else \
            pv[pv["srow"] == int(row["search"]) - 100].sort_values("run")
        want = _pv_rule(part["best"].tolist(), part["iter"].tolist())
        got = {c: row[c] for c in want}
        assert got == want, (row["search"], got, want)
        assert row["position"] == f"p{int(row['search']) - 100}"


@pytest.mark.parametrize("seed", range(5))
def test_last_decisions_one_pass_or_sorted(seed, monkeypatch):
    """The last row of each (run, path): the compiled pass (runs one after the other) and the sort give the
    same rows, each counted by hand here; runs out of order go to the sort."""
    import numpy as np

    from treediff.report import tries
    from treediff.report.tables import residual

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3_000))
    run = np.sort(rng.integers(0, 12, n))
    path = rng.integers(0, int(rng.integers(1, 60)), n)
    rows = np.sort(rng.choice(10 * n, n, replace=False))
    want = sorted(max(rows[(run == r) & (path == p)]) for r, p in set(zip(run.tolist(), path.tolist())))
    assert sorted(residual._last_decisions(rows, run, path).tolist()) == want
    shuffled = rng.permutation(n)  # runs no longer one stretch each: sorted instead
    assert sorted(residual._last_decisions(rows, run[shuffled], path[shuffled]).tolist()) == sorted(
        max(rows[(run[shuffled] == r) & (path[shuffled] == p)]) for r, p in set(zip(run.tolist(), path.tolist())))
    monkeypatch.setenv(tries.NUMPY_ENV, "1")  # no kernel: the sort alone
    assert sorted(residual._last_decisions(rows, run, path).tolist()) == want


def test_the_last_in_runs_kernel_refuses_what_it_cannot_number():
    import numpy as np

    from treediff.report import tries

    if not tries.compiled_available():
        pytest.skip("the compiled kernel is not built")
    last = np.empty(4, np.uint8)
    tries._ctries.last_in_runs(np.array([0, 0, 1, 1]), np.array([2, 2, 2, 0]), 3, last)
    assert last.tolist() == [0, 1, 1, 1]
    with pytest.raises(ValueError, match="decrease"):
        tries._ctries.last_in_runs(np.array([0, 1, 0, 1]), np.array([0, 0, 0, 0]), 3, last)
    with pytest.raises(ValueError, match="outside"):
        tries._ctries.last_in_runs(np.array([0, 0, 0, 0]), np.array([0, 3, 0, 0]), 3, last)


def test_residual_with_the_kernel_or_the_sort_is_the_same(tmp_path, monkeypatch):
    """The whole table on the real Stockfish trace with repeated visits, last decisions by the pass and by the
    sort (the kernel removed)."""
    from pathlib import Path

    import pandas as pd

    from treediff.report import tries
    from treediff.report.tables import residual

    log = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "mid_a_d7.log"
    from treediff.parse.source import open_source

    with_kernel = build_report(open_source(log), ["residual"])
    monkeypatch.setattr(residual, "_last_decisions", _sorted_last_decisions)
    sorted_only = build_report(open_source(log), ["residual"])
    assert len(with_kernel["residual_iter"]) > 3
    for name in ("residual", "residual_iter", "residual_stalled", "pv_stability"):
        pd.testing.assert_frame_equal(with_kernel[name], sorted_only[name])


def _sorted_last_decisions(rows, run, path):
    import numpy as np

    order = np.lexsort((rows, path, run))
    key = run[order] * (int(path.max(initial=0)) + 1) + path[order]
    return rows[order][np.r_[key[1:] != key[:-1], True]] if len(rows) else rows[:0]

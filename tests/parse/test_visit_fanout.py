"""The per-ply fanout over main visits (report table ``ebf_ply``: ``nodes_main``, ``fanout_main``), counted by hand.

It reads no paths: main visits come from ply, last move and the visit columns
(:func:`treediff.parse.visits.main_visit_flags`), checked here against the
path-based visit tree on the real Stockfish trace and on random traces.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support import visits_reference as ref
from treediff.parse import visits
from treediff.parse.pipeline import parse_logs
from treediff.parse.source import open_source
from treediff.report.core import build_report

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "fixtures" / "hand"
REAL = ROOT / "fixtures" / "real" / "mid_a_d7.log"


def ebf_ply(path: Path) -> pd.DataFrame:
    return build_report(open_source(str(path)), ["ebf"], "engine")["ebf_ply"]


def _values(series: pd.Series) -> list:
    return [None if pd.isna(v) else float(v) for v in series]


def test_root_visited_twice_counts_one_root():
    t = ebf_ply(HAND / "visits_aspiration.log")  # final iteration 3
    # All visits: 2 root RESULTs, 4 at ply 1 (e2e4 and d2d4 twice each), e2e4/e7e5 once.
    assert t["nodes"].tolist() == [2, 4, 1]
    assert _values(t["fanout"]) == [2.0, 0.25, None]
    # Main visits: the root's last; e2e4's and d2d4's visits in it; e2e4/e7e5 is under e2e4's first visit.
    assert t["nodes_main"].tolist() == [1, 2, 0]
    assert _values(t["fanout_main"]) == [2.0, None, None]


def test_verification_visit_is_not_a_main_visit():
    t = ebf_ply(HAND / "visits_verify.log")
    assert t["nodes"].tolist() == [1, 3, 5]
    # e2e4's verification (and its two children's visits in it) are not main visits.
    assert t["nodes_main"].tolist() == [1, 2, 3]
    assert _values(t["fanout_main"]) == [2.0, 1.5, None]


def test_real_trace_final_iteration():
    t = ebf_ply(REAL)
    rec = parse_logs([REAL]).records.to_pandas()
    res = rec[(rec["iter"] == 7) & (rec["tag"] == "RESULT")]
    assert t["nodes"].tolist() == res.groupby("ply").size().tolist()
    assert t.loc[0, "nodes"] == 2 and t.loc[0, "nodes_main"] == 1  # the README's two root RESULTs at d=7
    assert (t["nodes_main"] <= t["nodes"]).all()
    expected = _main_per_ply(rec[rec["iter"] == 7])
    assert t["nodes_main"].tolist() == expected


def test_without_visit_columns_main_is_unknown(tmp_path):
    rec = parse_logs([HAND / "visits_verify.log"])
    table = rec.records.drop_columns(["visit", "parent_visit"])
    import pyarrow.parquet as pq
    from treediff.model.schema import searches_path_for
    out = tmp_path / "old.parquet"
    pq.write_table(table, out)
    pq.write_table(rec.searches, searches_path_for(str(out)))
    t = ebf_ply(out)
    assert t["nodes"].tolist() == [1, 3, 5]
    assert t["nodes_main"].isna().all() and t["fanout_main"].isna().all()


def _main_per_ply(part: pd.DataFrame) -> list[int]:
    """Main visits per ply by the path-based visit tree."""
    paths = sorted(set(part["path"]) | {""})
    code_of = {p: i for i, p in enumerate(paths)}
    parent = np.array([code_of.get(ref.parent_of(p), -1) if p else -1 for p in paths])
    ply = np.array([p.count("/") + 1 if p else 0 for p in paths])
    tree = visits.visit_tree(
        np.array([code_of[p] for p in part["path"]]), parent, ply,
        (part["tag"] == "RESULT").to_numpy(), (part["tag"] == "MOVE").to_numpy(), part["depth"].to_numpy(),
        part["visit"].fillna(0).to_numpy(), part["parent_visit"].fillna(0).to_numpy())
    main_ply = ply[tree.code[tree.is_main]]
    return np.bincount(main_ply, minlength=int(ply[tree.code].max()) + 1).tolist()


@pytest.mark.parametrize("seed", range(30))
def test_path_free_main_visits_match_the_visit_tree(seed):
    records = ref.random_search(random.Random(200 + seed))
    for r in records:
        r.pop("given", None)
    numbers, parents = ref.visits(records), ref.parent_visits(records)
    moves = sorted({r["path"].rsplit("/", 1)[-1] for r in records if r["path"]})
    flags = visits.main_visit_flags(
        np.array([r["iter"] for r in records]),
        np.array([r["path"].count("/") + 1 if r["path"] else 0 for r in records]),
        np.array([r["tag"] == "RESULT" for r in records]), np.array([r["tag"] == "MOVE" for r in records]),
        np.array([moves.index(r["path"].rsplit("/", 1)[-1]) if r["path"] else -1 for r in records]),
        np.array([r["d"] for r in records], dtype=float),
        np.array([v or 0 for v in numbers]), np.array([p or 0 for p in parents]))
    for it in (1, 2, 3, 4):
        idx = [i for i, r in enumerate(records) if r["iter"] == it]
        part = [dict(records[i], visit=numbers[i], parent_visit=parents[i]) for i in idx]
        main = ref.main_visits(part)
        want = set()
        for path, v in main.items():
            want |= {i for i, r in zip(idx, part) if r["tag"] == "RESULT" and r["path"] == path and r["visit"] == v}
        got = {i for i in idx if flags[i]}
        assert got == want, (seed, it)

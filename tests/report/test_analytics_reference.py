"""cutoffs, fh, whatif and residual against the straightforward reference (tests/support/analytics_reference.py)
on random depth-first traces with every shape the definitions name: LMR re-searches, extensions, prunes,
null moves, ProbCut tries of their own, nested verification visits (multicut candidates), aspiration
re-searches at the root, random bounds, several iterations and searches.  The trace goes through the real
parser (its visit columns)."""
from __future__ import annotations

import math
import random

import pytest

from support.analytics_reference import cutoffs as ref_cutoffs, derive as ref_derive, fh_by_kind, residual, rows_of
from support.analytics_reference import whatif as ref_whatif
from support.analytics_traces import source_of
from treediff.report.core import build_report
from treediff.report.table import ReportOptions
from treediff.report.whatif import whatif

MOVES = ["a2a3", "b2b3", "c2c4", "d2d4", "e2e4", "g1f3"]
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def random_log(seed: int, searches: int = 2, truncate: bool = False) -> str:
    rng = random.Random(seed)
    out: list[str] = []

    def result(path: str, ply: int, d: int, bound: str | None = None) -> str:
        bound = bound or rng.choice(["lower", "lower", "upper", "exact"])
        out.append(f"RESULT path={path or '-'} ply={ply} d={d} score={rng.randint(-50, 50)} bound={bound}")
        return bound

    def node(path: str, ply: int, d: int) -> str:
        prefix = path + "/" if path else ""
        if d >= 3 and path and rng.random() < 0.3:  # nested verification visit of the same node, half depth
            if rng.random() < 0.5:  # a null-move record at the outer depth first
                out.append(f"MOVE path={prefix}0000 ply={ply + 1} mn=0 d={d} nd=0 act=NMP")
            if node(path, ply, d // 2) == "lower" and rng.random() < 0.6:
                return result(path, ply, d, "lower")  # multi-cut: no decision after the verification
        if path and d >= 2 and rng.random() < 0.3:
            out.append(f"MOVE path={prefix}0000 ply={ply + 1} mn=0 d={d} nd={d - 3 if d > 3 else 0} act=NMP")
            if d > 3:
                node(prefix + "0000", ply + 1, d - 3)
        if d >= 2 and rng.random() < 0.15:
            m = rng.choice(MOVES)
            out.append(f"MOVE path={prefix}{m} ply={ply + 1} mn=0 d={d} nd={d - 2} act=PROBCUT")
            if d - 2 >= 1:
                node(prefix + m, ply + 1, d - 2)
        count = rng.randint(3, 6) if not path else rng.randint(0, 4)
        for mn, m in enumerate(rng.sample(MOVES, count), start=1):
            child = prefix + m
            act = rng.choice(["FULL", "FULL", "LMR", "EXT", "FP-QUIET"])
            if act == "FP-QUIET":
                out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d} act=FP-QUIET")
                continue
            nd = d - 1 + (act == "EXT") - (act == "LMR")
            red = " red=1" if act == "LMR" else ""
            out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d} nd={max(nd, 0)} act={act}{red}")
            if nd >= 1 and ply < 5:
                node(child, ply + 1, nd)
            if act == "LMR" and rng.random() < 0.5:
                out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d} nd={d - 1} act=LMR-RESEARCH")
                if d - 1 >= 1 and ply < 5:
                    node(child, ply + 1, d - 1)
        if count >= 2 and d >= 2 and rng.random() < 0.15:  # a move decided again after another move's decision
            m = prefix + rng.choice(MOVES)
            out.append(f"MOVE path={m} ply={ply + 1} mn=1 d={d} nd={d - 1} act=FULL")
            if ply < 5:
                node(m, ply + 1, d - 1)
        return result(path, ply, d)

    for s in range(searches):
        out.append(f"TREEDUMP engine=stockfish v=1 unit=1 id=p{s} fen={START}")
        for it in (1, 2, 3, 4):
            out.append(f"ITER d={it}")
            start = len(out)
            for attempt in range(rng.randint(1, 2)):  # an aspiration re-search at the root
                node("", 0, it)
        if truncate:  # the last iteration stopped by the clock: its open visits never close
            del out[rng.randint(start + 1, len(out) - 1):]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed, truncate", [(1, False), (2, False), (3, False), (4, True), (5, True), (6, True)])
def test_tables_match_the_reference(tmp_path, seed, truncate):
    source = source_of(tmp_path, random_log(seed, truncate=truncate), f"r{seed}.log")
    rows = rows_of(source.records(["tag", "path", "ply", "kind", "act", "mn", "depth", "new_depth", "bound",
                                   "visit", "parent_visit", "score", "null_move", "line", "seq", "iter"]))
    ref = ref_derive(rows)

    report = build_report(source, ["cutoffs", "fh", "residual"], options=ReportOptions(fh_buckets=("kind",)))
    want = ref_cutoffs(ref)
    got = report["cutoffs"].set_index("class")["cutoffs"].to_dict()
    assert got == {c: want[c] for c in ("all", "move", "null", "probcut", "multicut", "none")}
    assert int(report["cutoffs"]["visits"].iloc[0]) == want["visits"]
    mn = report["cutoff_mn"].iloc[0]
    if want["mn_known"]:
        assert mn["mn1_pct"] == pytest.approx(100 * want["mn1"] / want["mn_known"])
        assert mn["mean_mn"] == pytest.approx(want["mean_mn"])

    fh = {r.kind: (r.tries, r.fail_highs) for r in report["fh"].itertuples()}
    assert fh == fh_by_kind(ref)

    table = whatif(source, "mn >= 2 and depth <= 3")[0].frame.iloc[0]
    exp = ref_whatif(ref, lambda r: r["mn"] is not None and r["mn"] >= 2 and r["depth"] <= 3)
    assert {k: int(table[k]) for k in exp} == exp
    every = whatif(source, "depth >= 0", as_="reduce")[0].frame.iloc[0]
    exp = ref_whatif(ref, lambda r: r["depth"] >= 0, eligible=("SEARCH", "EXTEND"))
    assert {k: int(every[k]) for k in exp} == exp

    res = residual(ref)
    row = report["residual"].iloc[0]
    assert (row["paths"], row["stalled"]) == (res["paths"], res["stalled"])
    if not math.isnan(res["median_growth"]):
        assert row["median_growth"] == pytest.approx(res["median_growth"])

"""The parser's node-visit columns: ``visit`` on RESULT records, ``parent_visit`` on MOVE records.

Expected values are counted by hand from the fixtures (docs/TREEDUMP_FORMAT.md §3):
a RESULT numbers its node's visits in the iteration; a MOVE belongs to the first
following visit of its parent whose RESULT ``d`` is ≥ the MOVE's ``d`` (the next
visit if none is, the open one if none follows).
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from support import visits_reference as ref
from treediff.parse import chunks, visits
from treediff.parse.pipeline import parse_logs, parse_to_parquet

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "fixtures" / "hand"
REAL = ROOT / "fixtures" / "real" / "mid_a_d7.log"
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def by_line(path: Path, **kw) -> dict[int, tuple[str, str, int | None, int | None]]:
    """line -> (tag, path, visit, parent_visit)."""
    rec = parse_logs([path], **kw).records.to_pylist()
    return {r["line"]: (r["tag"], r["path"], r["visit"], r["parent_visit"]) for r in rec}


def test_verification_visit_nested_in_the_outer_visit():
    rows = by_line(HAND / "visits_verify.log")
    assert rows == {
        6: ("MOVE", "e2e4", None, 1),
        # e2e4's NMP at d=11 precedes the d=5 verification RESULT: it belongs to the outer visit (2).
        7: ("MOVE", "e2e4/0000", None, 2),
        8: ("RESULT", "e2e4/0000", 1, None),
        9: ("MOVE", "e2e4/e7e5", None, 1),   # the verification's own records (d=5): visit 1
        10: ("RESULT", "e2e4/e7e5", 1, None),
        11: ("MOVE", "e2e4/c7c5", None, 1),
        12: ("RESULT", "e2e4/c7c5", 1, None),
        13: ("RESULT", "e2e4", 1, None),      # the verification closes visit 1 of e2e4
        14: ("MOVE", "e2e4/e7e5", None, 2),
        15: ("RESULT", "e2e4/e7e5", 2, None),
        16: ("MOVE", "e2e4/c7c5", None, 2),
        17: ("RESULT", "e2e4/c7c5", 2, None),
        18: ("RESULT", "e2e4", 2, None),
        19: ("MOVE", "d2d4", None, 1),
        20: ("RESULT", "d2d4", 1, None),
        21: ("RESULT", "", 1, None),
    }


def test_lmr_then_re_search():
    rows = by_line(HAND / "visits_lmr_research.log")
    d2d4 = {line: v for line, v in rows.items() if v[1].startswith("d2d4")}
    assert d2d4 == {
        13: ("MOVE", "d2d4", None, 1),
        14: ("MOVE", "d2d4/d7d5", None, 1),
        15: ("RESULT", "d2d4/d7d5", 1, None),
        16: ("RESULT", "d2d4", 1, None),      # the reduced search
        17: ("MOVE", "d2d4", None, 1),        # LMR-RESEARCH: the same visit of the root
        18: ("MOVE", "d2d4/d7d5", None, 2),
        19: ("RESULT", "d2d4/d7d5", 2, None),
        20: ("MOVE", "d2d4/g8f6", None, 2),
        21: ("RESULT", "d2d4/g8f6", 1, None),
        22: ("RESULT", "d2d4", 2, None),      # the re-search
    }
    assert rows[23] == ("RESULT", "", 1, None)
    assert all(v[3] == 1 for line, v in rows.items() if v[0] == "MOVE" and line < 13)


def test_root_visited_twice_in_one_iteration():
    rows = by_line(HAND / "visits_aspiration.log")
    assert rows == {
        5: ("MOVE", "e2e4", None, 1),
        6: ("MOVE", "d2d4", None, 1),
        7: ("RESULT", "", 1, None),           # iteration 1
        9: ("MOVE", "e2e4", None, 1),         # iteration 3, first attempt (d=3)
        10: ("MOVE", "e2e4/e7e5", None, 1),
        11: ("RESULT", "e2e4/e7e5", 1, None),
        12: ("RESULT", "e2e4", 1, None),
        13: ("MOVE", "d2d4", None, 1),
        14: ("RESULT", "d2d4", 1, None),
        15: ("RESULT", "", 1, None),          # fail high: numbering starts again in each iteration
        16: ("MOVE", "e2e4", None, 2),        # the re-search at d=2 belongs to the root's visit 2
        17: ("RESULT", "e2e4", 2, None),
        18: ("MOVE", "d2d4", None, 2),
        19: ("MOVE", "d2d4/d7d5", None, 2),
        20: ("RESULT", "d2d4", 2, None),
        21: ("RESULT", "", 2, None),
    }


def _log(tmp_path: Path, body: str) -> Path:
    log = tmp_path / "t.log"
    log.write_text(f"TREEDUMP engine=stockfish v=1 unit=1 id=x fen={START}\n" + body)
    return log


def test_next_visit_when_none_is_deep_enough_and_the_open_visit(tmp_path):
    log = _log(tmp_path, (
        "ITER d=4\n"
        "MOVE path=e2e4 ply=1 mn=1 d=4 nd=3 act=FULL\n"    # 3: the only later root RESULT is at d=2: visit 1
        "RESULT path=e2e4 ply=1 d=3 score=0\n"
        "RESULT path=- ply=0 d=2 score=0\n"
        "MOVE path=d2d4 ply=1 mn=2 d=4 nd=3 act=FULL\n"    # 6: no later root RESULT: the open visit, 2
        "MOVE path=d2d4/d7d5 ply=2 mn=1 d=3 nd=2 act=FULL\n"  # 7: d2d4 never closes: 0 RESULTs + 1
    ))
    rows = by_line(log)
    assert rows[3][3] == 1 and rows[6][3] == 2 and rows[7][3] == 1
    assert rows[4][2] == 1 and rows[5][2] == 1


def test_engine_written_visits_are_used_as_is(tmp_path):
    log = _log(tmp_path, (
        "ITER d=2\n"
        "MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL visit=5\n"
        "RESULT path=e2e4 ply=1 d=1 score=0 visit=3\n"
        "RESULT path=e2e4 ply=1 d=1 score=0\n"
        "MOVE path=d2d4 ply=1 mn=2 d=2 nd=1 act=FULL\n"
        "RESULT path=- ply=0 d=2 score=0 visit=4\n"
    ))
    parsed = parse_logs([log])
    rows = {r["line"]: (r["visit"], r["parent_visit"], r["extra"]) for r in parsed.records.to_pylist()}
    assert rows[3] == (None, 5, None)          # a known key: not kept in extra
    assert rows[4] == (3, None, None)
    assert rows[5] == (2, None, None)          # the second RESULT of e2e4, counted
    assert rows[6] == (None, 4, None)          # the next root RESULT says it is visit 4
    assert rows[7] == (4, None, None)
    assert [w for w in parsed.warnings if "no END record" not in w] == []  # (the log has no END line)


def test_bad_visit_value_is_flagged(tmp_path):
    log = _log(tmp_path, "ITER d=1\nRESULT path=- ply=0 d=1 score=0 visit=x\n")
    parsed = parse_logs([log])
    rec = parsed.records.to_pylist()
    assert rec[0]["problem"] == "bad-number:visit" and rec[0]["visit"] == 1
    assert any("non-numeric visit=" in w for w in parsed.warnings)


@pytest.mark.parametrize("name", ["visits_verify.log", "visits_lmr_research.log", "visits_aspiration.log"])
@pytest.mark.parametrize("all_contexts", [False, True])
def test_chunk_boundaries_do_not_change_visits(monkeypatch, tmp_path, name, all_contexts):
    whole = parse_logs([HAND / name, HAND / name], all_contexts=all_contexts)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 83)
    chunked = parse_logs([HAND / name, HAND / name], all_contexts=all_contexts)
    assert chunked.records.to_pylist() == whole.records.to_pylist()
    out = tmp_path / "o.parquet"
    parse_to_parquet([HAND / name], out)
    import pyarrow.parquet as pq
    assert pq.read_table(out).to_pylist() == parse_logs([HAND / name]).records.to_pylist()


def test_contexts_number_their_own_visits(tmp_path):
    log = _log(tmp_path, (
        "ITER d=1 ctx=0\nITER d=1 ctx=1\n"
        "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL ctx=0\n"
        "RESULT path=- ply=0 d=1 score=0 ctx=1\n"
        "RESULT path=- ply=0 d=1 score=0 ctx=0\n"
        "RESULT path=- ply=0 d=1 score=0\n"          # no ctx: the kept context (0)
    ))
    rows = by_line(log, all_contexts=True)
    assert rows[4][3] == 1 and rows[5][2] == 1 and rows[6][2] == 1 and rows[7][2] == 2


# ---------------------------------------------------------------- the real Stockfish trace
def test_real_stockfish_trace_matches_its_readme():
    """mid_a_d7.log (Stockfish 15.1): its README counts 2 iterations with more than one root RESULT
    (d=6, 7) and 71 (iteration, path) nodes with a shallower RESULT before a deeper one."""
    rec = parse_logs([REAL], strict=True).records.to_pandas()
    res = rec[rec["tag"] == "RESULT"]
    root = res[res["ply"] == 0]
    multi = sorted(int(i) for i, n in root.groupby("iter")["visit"].max().items() if n > 1)
    assert multi == [6, 7]
    # A node has a shallower-then-deeper pair when, in visit order, a later visit is deeper than an earlier one.
    res = res.sort_values(["iter", "path", "visit"])
    running_min = res.groupby(["iter", "path"])["depth"].cummin()
    deeper = res["depth"] > running_min
    assert int(deeper.groupby([res["iter"], res["path"]]).any().sum()) == 71
    # visit numbers are 1..k in RESULT order, per node and iteration.
    counts = res.groupby(["iter", "path"])["visit"].agg(["max", "count"])
    assert (counts["max"] == counts["count"]).all()
    moves = rec[rec["tag"] == "MOVE"]
    assert moves["parent_visit"].notna().all() and res["visit"].notna().all()
    assert moves["visit"].isna().all() and res["parent_visit"].isna().all()


def test_real_trace_main_visits_match_the_reference():
    rec = parse_logs([REAL]).records.to_pylist()
    for it in (6, 7):
        records = [{"tag": r["tag"], "path": r["path"], "d": r["depth"], "visit": r["visit"],
                    "parent_visit": r["parent_visit"]} for r in rec if r["iter"] == it]
        expected = ref.main_visits(records)
        got = _main_visits_by_code(records)
        assert got == expected


def _main_visits_by_code(records: list[dict]) -> dict[str, int]:
    paths = sorted({r["path"] for r in records} | {""})
    code_of = {p: i for i, p in enumerate(paths)}
    parent = np.array([code_of.get(ref.parent_of(p), -1) if p else -1 for p in paths])
    ply = np.array([p.count("/") + 1 if p else 0 for p in paths])
    tree = visits.visit_tree(
        np.array([code_of[r["path"]] for r in records]), parent, ply,
        np.array([r["tag"] == "RESULT" for r in records]), np.array([r["tag"] == "MOVE" for r in records]),
        np.array([r["d"] for r in records], dtype=float),
        np.array([r["visit"] or 0 for r in records]), np.array([r["parent_visit"] or 0 for r in records]),
    )
    return {paths[c]: int(v) for c, v in enumerate(tree.main_visit) if v > 0}


# ---------------------------------------------------------------- columnar = definition, on random traces
@pytest.mark.parametrize("seed", range(25))
def test_columnar_passes_match_the_definitions(seed):
    records = ref.random_search(random.Random(seed))
    want_v, want_p = ref.visits(records), ref.parent_visits(records)
    iters = np.array([r["iter"] for r in records], dtype=np.int64)
    path = pa.array([r["path"] for r in records], pa.string())
    is_result = np.array([r["tag"] == "RESULT" for r in records])
    depth = np.array([r["d"] for r in records], dtype=np.float32)
    given = np.array([r.get("given") or visits.NO_VISIT for r in records], dtype=np.int32)
    passes = [visits._by_sorting(path, iters, is_result, depth, given, contiguous=True)]
    if visits.compiled_available():
        passes.append(visits._compiled(path, iters, is_result, depth, given, contiguous=True))
        passes.append(visits._compiled(path, iters, is_result, depth, given, contiguous=False))
    for v, p in passes:
        assert [int(x) if r else None for x, r in zip(v, is_result)] == want_v
        assert [int(x) if not r else None for x, r in zip(p, is_result)] == want_p


@pytest.mark.parametrize("seed", range(25))
def test_visit_tree_matches_the_definitions(seed):
    records = ref.random_search(random.Random(100 + seed))
    for r in records:
        r.pop("given", None)
    numbers, parents = ref.visits(records), ref.parent_visits(records)
    for r, v, p in zip(records, numbers, parents):
        r["visit"], r["parent_visit"] = v, p
    for it in (1, 2, 3, 4):
        part = [r for r in records if r["iter"] == it]
        assert _main_visits_by_code(part) == ref.main_visits(part)

"""Node visits in aligned rows (docs/ALIGN.md, "Node visits"), counted by hand from fixtures/hand/visits_*.log.

A row's decisions are those made in its parent's main visit; ``visits_*``
counts the row's visits, ``other_visit_nodes_*`` the nodes under its other
visits; subtree counts (``nodes_*``) still count every visit; ``line_*`` is
the source line of the row's main decision.  ``visits="all"`` adds a row per
other visit, labelled ``verify`` or ``re-search``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from treediff.align import align, align_trees
from treediff.parse.pipeline import parse_logs

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "fixtures" / "hand"
REAL = ROOT / "fixtures" / "real" / "mid_a_d7.log"

COLS = ["status", "seq_a", "seq_b", "depth_a", "new_depth_a", "visits_a", "visits_b", "nodes_a", "nodes_b",
        "other_visit_nodes_a", "other_visit_nodes_b", "line_a", "line_b"]


def records(name: str) -> pd.DataFrame:
    return parse_logs([HAND / name]).records.to_pandas()


def table(rows: pd.DataFrame) -> dict[str, tuple]:
    out = {}
    for r in rows.itertuples(index=False):
        out[r.path] = tuple(
            (None if pd.isna(v) else (float(v) if isinstance(v, (float, np.floating)) else
                                      (int(v) if isinstance(v, (int, np.integer)) else str(v))))
            for v in (getattr(r, c) for c in COLS)
        )
    return out


def test_verification_visit_does_not_hide_the_real_decision():
    al = align(records("visits_verify.log"), records("visits_plain.log"))
    rows = al.rows
    assert rows["path"].tolist() == ["", "e2e4", "e2e4/0000", "e2e4/e7e5", "e2e4/c7c5", "d2d4", "d2d4/d7d5"]
    t = table(rows)
    #                 status  seq_a   seq_b   d_a  nd_a vis_a vis_b n_a n_b oth_a oth_b line_a line_b
    assert t[""] == ("same", "", "", 12.0, None, 1, 1, 9, 7, 0, 0, 21, 16)
    assert t["e2e4"] == ("same", "FULL", "FULL", 12.0, 11.0, 2, 1, 7, 4, 3, 0, 6, 4)
    assert t["e2e4/0000"] == ("same", "NMP", "NMP", 11.0, 7.0, 1, 1, 1, 1, 0, 0, 7, 5)
    # The rows read the outer move loop's decisions (d=11), not the verification's (d=5).
    assert t["e2e4/e7e5"] == ("same", "FULL", "FULL", 11.0, 10.0, 2, 1, 2, 1, 1, 0, 14, 7)
    assert t["e2e4/c7c5"] == ("same", "LMR", "LMR", 11.0, 8.0, 2, 1, 2, 1, 1, 0, 16, 9)
    c7c5 = rows.set_index("path").loc["e2e4/c7c5"]
    assert (c7c5["reduction_a"], c7c5["kind_a"], c7c5["decisions_a"]) == (2.0, "REDUCE", 1)
    assert t["d2d4"] == ("same", "LMR", "LMR", 12.0, 9.0, 1, 1, 1, 2, 0, 0, 19, 12)
    assert t["d2d4/d7d5"][:3] == ("only-B", "", "FULL")


def test_lmr_then_re_search():
    rows = align(records("visits_lmr_research.log"), records("visits_plain.log")).rows
    t = table(rows)
    # Both decisions about d2d4 are made in the root's one visit: the row lists both.
    assert t["d2d4"] == ("differs", "LMR→LMR-RESEARCH", "LMR", 12.0, 9.0, 2, 1, 5, 2, 2, 0, 13, 12)
    assert rows.set_index("path").loc["d2d4", "final_depth_a"] == 11.0
    # d2d4/d7d5 reads the re-search's decision (d2d4's main visit, d=11), not the reduced one's (d=9).
    assert t["d2d4/d7d5"] == ("differs", "FULL", "FULL", 11.0, 10.0, 2, 1, 2, 1, 1, 0, 18, 13)
    assert t["d2d4/g8f6"] == ("only-A", "LMR", "", 11.0, 8.0, 1, 0, 1, 0, 0, 0, 20, None)
    assert {t[p][0] for p in ("", "e2e4", "e2e4/0000", "e2e4/e7e5", "e2e4/c7c5")} == {"same"}


def test_root_visited_twice():
    al = align(records("visits_aspiration.log"), records("visits_aspiration_b.log"))
    assert (al.iter_a, al.iter_b) == (3, 3)
    t = table(al.rows)
    # The root's main visit is its last (d=2), although its first was deeper (d=3).
    assert t[""] == ("same", "", "", 2.0, None, 2, 1, 7, 4, 4, 0, 21, 14)
    assert al.rows.set_index("path").loc["", "depth_b"] == 3.0
    # e2e4: the decision of the root's final attempt (FULL 2->1), B's FULL 3->2.
    assert t["e2e4"] == ("differs", "FULL", "FULL", 2.0, 1.0, 2, 1, 3, 2, 2, 0, 16, 8)
    # Reached only under e2e4's other visit: no decision in e2e4's main visit, so it keeps its own.
    assert t["e2e4/e7e5"] == ("same", "FULL", "FULL", 2.0, 1.0, 1, 1, 1, 1, 1, 0, 10, 9)
    assert t["d2d4"] == ("differs", "FULL", "LMR", 2.0, 1.0, 2, 1, 2, 1, 1, 0, 18, 12)
    assert t["d2d4/d7d5"] == ("only-A", "FULL", "", 1.0, 0.0, 0, 0, 0, 0, 0, 0, 19, None)


def test_each_visit_as_its_own_row():
    rows = align(records("visits_verify.log"), records("visits_plain.log"), visits="all").rows
    assert rows["path"].tolist() == ["", "e2e4", "e2e4", "e2e4/0000", "e2e4/e7e5", "e2e4/c7c5", "d2d4", "d2d4/d7d5"]
    assert rows["visit_label"].astype(str).tolist() == ["main"] * 2 + ["verify"] + ["main"] * 5
    verify = rows.iloc[2]
    assert verify["status"] == "only-A"
    assert (verify["visit_a"], verify["visit_depth_a"], verify["nodes_a"], verify["line_a"]) == (1, 5.0, 3, 13)
    assert (verify["seq_a"], verify["depth_a"], verify["new_depth_a"]) == ("FULL", 12.0, 11.0)  # its entering decision
    assert pd.isna(verify["visit_b"]) and verify["nodes_b"] == 0 and verify["parent"] == 0
    main = rows.iloc[1]
    assert (main["visit_a"], main["visit_depth_a"], main["visit_b"], main["nodes_a"]) == (2, 11.0, 1, 7)
    # The tree is kept: e2e4's subtree holds its visit row; parents point at the path rows.
    assert rows["subtree_rows"].tolist() == [8, 5, 1, 1, 1, 1, 2, 1]
    assert rows["parent"].tolist() == [-1, 0, 0, 1, 1, 1, 0, 6]


def test_visit_labels_re_search_and_shallower():
    rows = align(records("visits_aspiration.log"), records("visits_aspiration_b.log"), visits="all").rows
    root = rows[rows["path"] == ""]
    assert root["visit_label"].astype(str).tolist() == ["main", "re-search"]  # the fail high, at d=3 >= 2
    attempt = root.iloc[1]
    assert (attempt["visit_a"], attempt["visit_depth_a"], attempt["nodes_a"], attempt["status"]) == (1, 3.0, 4, "only-A")
    # e2e4's first visit belongs to the root's first attempt, not to its main visit: no row of its own.
    assert (rows["path"] == "e2e4").sum() == 1
    rows = align(records("visits_lmr_research.log"), records("visits_plain.log"), visits="all").rows
    d2d4 = rows[rows["path"] == "d2d4"]
    # The reduced visit is shallower than the main one and before it.
    assert d2d4["visit_label"].astype(str).tolist() == ["main", "verify"]
    reduced = d2d4.iloc[1]
    assert (reduced["seq_a"], reduced["new_depth_a"], reduced["visit_depth_a"], reduced["nodes_a"]) == ("LMR", 9.0, 9.0, 2)
    assert pd.isna(reduced["visit_b"]) and reduced["status"] == "only-A"


def test_visits_all_pairs_visits_of_both_sides():
    recs = records("visits_verify.log")
    rows = align(recs, recs, visits="all").rows
    assert set(rows["status"].astype(str)) == {"same"}
    assert rows["visit_label"].astype(str).tolist().count("verify") == 1
    with pytest.raises(ValueError):
        align(recs, recs, visits="some")


def test_visits_are_worked_out_when_the_records_lack_them():
    a, b = records("visits_verify.log"), records("visits_plain.log")
    with_columns = align(a, b).rows
    without = align(a.drop(columns=["visit", "parent_visit", "line"]), b.drop(columns=["visit", "parent_visit"])).rows
    same_cols = [c for c in with_columns.columns if c not in ("line_a",)]
    pd.testing.assert_frame_equal(without[same_cols], with_columns[same_cols])
    assert without["line_a"].isna().all()


def test_real_trace_root_re_searches():
    """mid_a_d7.log iteration 7 (its README: more than one root RESULT): the root row's other
    visits hold every RESULT up to the last root RESULT but one (the earlier attempts come first)."""
    rec = parse_logs([REAL]).records.to_pandas()
    rows = align(rec, rec).rows
    it7 = rec[rec["iter"] == 7]
    res = it7[it7["tag"] == "RESULT"]
    root_lines = res.loc[res["ply"] == 0, "line"].tolist()
    assert len(root_lines) > 1
    earlier = int((res["line"] <= root_lines[-2]).sum())
    root = rows.iloc[0]
    assert (root["visits_a"], root["nodes_a"], root["other_visit_nodes_a"]) == (len(root_lines), len(res), earlier)
    assert root["line_a"] == root_lines[-1]
    assert (rows["status"] == "same").all()
    assert (rows["other_visit_nodes_a"] <= rows["nodes_a"]).all()
    # Each row's decisions are those of one visit of its parent (its main visit, else the last that decided
    # the move): the row's acts are the acts of the path's MOVE records with one parent_visit.
    moves = it7[it7["tag"] == "MOVE"]
    per_visit = moves.groupby(["path", "parent_visit"])["act"].agg(lambda acts: "→".join(acts.astype(str)))
    options = per_visit.groupby(level=0).agg(set)
    decided = rows[rows["decisions_a"] > 0]
    assert all(seq in options[path] for path, seq in zip(decided["path"], decided["seq_a"].astype(str)))
    assert rows["decisions_a"].max() == 2


def test_synthetic_trees_without_visit_columns():
    from support.synthetic import STOCKFISH_LIKE, TYPHOON_LIKE, synthetic_tree

    a, b = synthetic_tree(TYPHOON_LIKE, 4, 3), synthetic_tree(STOCKFISH_LIKE, 4, 3)
    rows = align_trees(a, b)
    bare = align_trees(a.drop(columns=["line", "visit", "parent_visit"]), b.drop(columns=["line", "visit", "parent_visit"]))
    assert bare["line_a"].isna().all() and (rows["line_a"].notna() | (rows["decisions_a"] == 0)).all()
    pd.testing.assert_frame_equal(bare.drop(columns=["line_a", "line_b"]), rows.drop(columns=["line_a", "line_b"]))
    assert (rows["other_visit_nodes_a"] >= 0).all() and (rows["other_visit_nodes_a"] <= rows["nodes_a"]).all()
    all_rows = align_trees(a, b, visits="all")
    main = all_rows[all_rows["visit_label"] == "main"].reset_index(drop=True)
    pd.testing.assert_series_equal(main["path"], rows["path"])
    # subtree_rows still delimit subtrees: a row's subtree is the rows that follow it with a longer path.
    paths = all_rows["path"].tolist()
    sizes = all_rows["subtree_rows"].tolist()
    for i in np.flatnonzero(all_rows["visit_label"] == "main")[:200]:
        inside = paths[i + 1:i + sizes[i]]
        assert all(p == paths[i] or p.startswith(paths[i] + "/") or paths[i] == "" for p in inside)


# ---------------------------------------------------------------- random traces
def _frame(records: list[dict]) -> pd.DataFrame:
    acts = {"FULL": "SEARCH", "LMR": "REDUCE"}
    rows = [{"tag": r["tag"], "path": r["path"], "seq": i, "line": i + 3,
             "act": r.get("act", "FULL") if r["tag"] == "MOVE" else None,
             "kind": acts[r.get("act", "FULL")] if r["tag"] == "MOVE" else None,
             "depth": float(r["d"]), "new_depth": float(r["d"] - 1) if r["tag"] == "MOVE" else np.nan,
             "reduction": np.nan, "mn": 1 if r["tag"] == "MOVE" else None}
            for i, r in enumerate(records)]
    frame = pd.DataFrame(rows)
    for col in ("tag", "act", "kind"):
        frame[col] = frame[col].astype("category")
    frame["mn"] = frame["mn"].astype("Int16")
    return frame


@pytest.mark.parametrize("seed", range(20))
def test_rows_read_the_parents_main_visit_on_random_traces(seed):
    import random

    from support import visits_reference as ref

    records = [r for r in ref.random_search(random.Random(300 + seed)) if r["iter"] == 4]
    for r in records:
        r.pop("given", None)
    for r, v, p in zip(records, ref.visits(records), ref.parent_visits(records)):
        r["visit"], r["parent_visit"] = v, p
    main = ref.main_visits(records)
    frame = _frame(records)
    rows = align_trees(frame, frame).set_index("path")
    for path in {r["path"] for r in records if r["tag"] == "MOVE"}:
        parent = ref.parent_of(path)
        moves = [(r, i) for i, r in enumerate(records) if r["tag"] == "MOVE" and r["path"] == path]
        chosen = [i for r, i in moves if parent in main and r["parent_visit"] == main[parent]]
        if not chosen:  # the last visit of the parent that decided the move
            last = max(r["parent_visit"] for r, _ in moves)
            chosen = [i for r, i in moves if r["parent_visit"] == last]
        row = rows.loc[path]
        assert row["decisions_a"] == len(chosen), path
        assert row["line_a"] == chosen[0] + 3 and row["depth_a"] == records[chosen[0]]["d"], path
        assert row["visits_a"] == sum(r["tag"] == "RESULT" and r["path"] == path for r in records)
    # Visit rows: every other visit inside the parent's main visit, and the tree kept.
    every = align_trees(frame, frame, visits="all")
    assert every["status"].astype(str).eq("same").all()
    main_rows = every[every["visit_label"] == "main"].reset_index(drop=True)
    pd.testing.assert_series_equal(main_rows["path"], align_trees(frame, frame)["path"])
    sizes, paths = every["subtree_rows"].to_numpy(), every["path"].tolist()
    for i in range(len(every)):
        inside = paths[i + 1:i + sizes[i]]
        assert all(p == paths[i] or p.startswith(paths[i] + "/") or paths[i] == "" for p in inside)
        parent = every["parent"].iloc[i]
        if parent >= 0:
            assert every["visit_label"].iloc[parent] == "main" and parent < i


def test_visits_all_on_messy_traces_keeps_the_path_rows():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    record = st.tuples(st.lists(st.sampled_from(["e2e4", "d2d4", "0000"]), max_size=3).map("/".join),
                       st.booleans(), st.sampled_from([1.0, 2.0, np.nan]))

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(record, min_size=1, max_size=20), st.lists(record, min_size=1, max_size=20))
    def check(ra, rb):
        def frame(recs):
            return _frame([{"tag": "MOVE" if m and p else "RESULT", "path": p, "d": d} for p, m, d in recs])

        a, b = frame(ra), frame(rb)
        rows = align_trees(a, b)
        every = align_trees(a, b, visits="all")
        main = every[every["visit_label"] == "main"].reset_index(drop=True)
        pd.testing.assert_frame_equal(main[rows.columns].drop(columns=["parent", "subtree_rows"]),
                                      rows.drop(columns=["parent", "subtree_rows"]), check_categorical=False)
        assert int(every["subtree_rows"].iloc[0]) == len(every)
        assert (rows["other_visit_nodes_a"] <= rows["nodes_a"]).all()

    check()

"""Divergences that add up: every node counted once, at its topmost non-``same`` row.

The property tests check the identity Σ delta(frontier rows) + shared residual
= nodes_a - nodes_b against an independent record-by-record attribution
(tests/support/attribution_helpers.py); the hand cases were counted from
fixtures/hand/align_basic_{a,b}.log (rows in test_align_hand.EXPECTED_BASIC).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.align_helpers import records_from_fixture, records_from_text
from support.attribution_helpers import brute_attribution, frame_of, record
from support.synthetic import STOCKFISH_LIKE, TYPHOON_LIKE, synthetic_tree
from treediff.align import align, align_trees
from treediff.align.attribution import attribute, by_kind, by_ply, difference, divergence_rows, main_rows, sentence
from treediff.align.summaries import divergence_summary


def _check_identity(ra: pd.DataFrame, rb: pd.DataFrame, rows: pd.DataFrame, scope_row: int, drill: bool) -> None:
    att = attribute(rows, scope_row, drill=drill)
    scope = str(rows["path"].iloc[scope_row])
    results_a = int((ra["tag"].astype(str) == "RESULT").sum())
    results_b = int((rb["tag"].astype(str) == "RESULT").sum())
    if scope_row == 0:
        assert (att.total_a, att.total_b) == (results_a, results_b)  # every RESULT record of either tree
    # The identity, exactly; the residual is summed from uncovered rows' own counts, not taken as the difference.
    assert int(att.delta.sum()) + att.shared_residual == att.total_a - att.total_b
    assert int(att.nodes_a.sum()) + att.residual_a == att.total_a
    assert int(att.nodes_b.sum()) + att.residual_b == att.total_b
    # The same frontier rows and counts as following every record up its path.
    frontier, residual = brute_attribution(ra, rb, rows, scope, drill)
    got = {str(rows["path"].iloc[i]): [int(a), int(b)] for i, a, b in zip(att.frontier, att.nodes_a, att.nodes_b)}
    assert got == frontier
    assert [att.residual_a, att.residual_b] == residual
    # Frontier rows never nest, and never have status same.
    status = rows["status"].astype(str).to_numpy()
    assert (status[att.frontier] != "same").all()
    size = rows["subtree_rows"].to_numpy()
    ends = att.frontier + size[att.frontier]
    assert (att.frontier[1:] >= ends[:-1]).all()
    # The breakdowns add up to the scope's delta too.
    assert int(by_kind(rows, att)["delta"].sum()) == att.total_delta
    assert int(by_ply(rows, att)["delta"].sum()) == att.total_delta
    # The listed rows, (rest) included, and the residual add up.
    listed = divergence_rows(rows, att, n=2)
    assert int(listed["delta"].sum()) + att.shared_residual == att.total_delta


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record, min_size=1, max_size=30), st.lists(record, min_size=1, max_size=30), st.data())
def test_identity_on_random_trace_pairs(recs_a, recs_b, data):
    ra, rb = frame_of(recs_a), frame_of(recs_b)
    rows = align_trees(ra, rb)
    _check_identity(ra, rb, rows, 0, False)
    # Inside any row's subtree, the row itself allowed as a frontier row (--under) or not (--drill).
    scope_row = data.draw(st.integers(0, len(rows) - 1))
    _check_identity(ra, rb, rows, scope_row, data.draw(st.booleans()))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 10_000), st.integers(2, 4))
def test_identity_on_synthetic_engine_trees(seed, depth):
    ra, rb = synthetic_tree(TYPHOON_LIKE, depth, seed), synthetic_tree(STOCKFISH_LIKE, depth, seed)
    rows = align_trees(ra, rb)
    _check_identity(ra, rb, rows, 0, False)
    ply1 = np.flatnonzero(rows["ply"].to_numpy() == 1)
    _check_identity(ra, rb, rows, int(ply1[seed % len(ply1)]), True)


# --- hand-counted ------------------------------------------------------------------------------------------

def _basic():
    return align(records_from_fixture("align_basic_a.log"), records_from_fixture("align_basic_b.log"))


def test_nested_divergences_count_once():
    """The old top list nested: g1f3 (3) and, inside it, g1f3/g8f6 (1) and g1f3/d7d5 (1); d2d4 (2) and d2d4/d7d5 (1).

    Its costs added up to 12 against a real difference of 9 - 8 = 1.  Frontier
    rows (topmost non-same), counted from EXPECTED_BASIC: 0000 (A 0, B 1),
    e2e4/a7a6 (0, 1), d2d4 (3, 1), g1f3 (3, 0), c2c4 (0, 2).  The rest is under
    same rows only: A's root RESULT, e2e4's and e2e4/e7e5's (3 in all), B's the
    same three.
    """
    al = _basic()
    att = attribute(al.rows)
    got = {str(al.rows["path"].iloc[i]): (int(a), int(b)) for i, a, b in zip(att.frontier, att.nodes_a, att.nodes_b)}
    assert got == {"0000": (0, 1), "e2e4/a7a6": (0, 1), "d2d4": (3, 1), "g1f3": (3, 0), "c2c4": (0, 2)}
    assert (att.residual_a, att.residual_b, att.shared_residual) == (3, 3, 0)
    assert (att.total_a, att.total_b, att.total_delta) == (9, 8, 1)
    assert -1 - 1 + 2 + 3 - 2 + 0 == att.total_delta
    summary = divergence_summary(al, n=4)
    # Largest |delta| first, ties (0000 and e2e4/a7a6, both -1) in tree order; the fifth is in (rest).
    assert list(summary.rows["path"]) == ["g1f3", "d2d4", "c2c4", "0000", "(rest)"]
    assert list(summary.rows["delta"]) == [3, 2, -2, -1, -1]
    nested = {"g1f3/g8f6", "g1f3/d7d5", "d2d4/d7d5", "d2d4/d7d5/c2c4", "0000/e7e5", "c2c4/e7e5"}
    assert not nested & set(divergence_summary(al, n=100).rows["path"])
    assert summary.total == {"nodes_a": 9, "nodes_b": 8, "delta": 1, "shared_residual": 0,
                             "shared_residual_a": 3, "shared_residual_b": 3, "frontier_rows": 5}


def test_sentences_say_what_differs_at_the_row():
    al = _basic()
    rows = divergence_summary(al, n=5).rows.set_index("path")
    assert rows.loc["g1f3", "sentence"] == (
        "A searched `g1f3` at full depth (3→2 plies); B pruned it (FP-QUIET); delta +3 nodes (A 3, B 0)")
    # The same act at other depths: NMP to depth 0 in A, to depth 1 in B.
    assert rows.loc["0000", "sentence"] == (
        "both decided `0000` with NMP but at other depths: A 3→0 plies, B 3→1 plies; delta -1 node (A 0, B 1)")
    assert rows.loc["c2c4", "sentence"] == (
        "B searched `c2c4` at full depth (3→2 plies); A never reached it; delta -2 nodes (A 0, B 2)")
    # A visited d2d4 twice (RESULTs on lines 18 and 23; the LMR visit has 1 node), said when the rows count visits.
    visits = "; A visited it 2 times (1 node outside the main visit)" if "visits_a" in al.rows.columns else ""
    assert rows.loc["d2d4", "sentence"] == (
        "A reduced `d2d4` by 1 ply (LMR, 3→1 plies), then LMR-RESEARCH at 2 plies; "
        f"B reduced it by 1 ply (LMR, 3→1 plies){visits}; delta +2 nodes (A 3, B 1)")


def test_sentence_counts_visits_when_the_rows_do():
    row = pd.Series({"path": "", "status": "differs", "seq_a": "", "seq_b": "", "kind_a": None, "kind_b": None,
                     "nodes_a": 10297, "nodes_b": 4000, "visits_a": 2, "visits_b": 1,
                     "other_visit_nodes_a": 4466, "other_visit_nodes_b": 0})
    assert sentence(row) == ("A visited `(root)` without a move decision; B visited it without a move decision; "
                             "A visited it 2 times (4,466 nodes outside the main visit); "
                             "delta +6,297 nodes (A 10,297, B 4,000)")
    assert "times" not in sentence(row.drop(["visits_a", "visits_b"]))


def test_identical_decision_with_a_different_subtree_is_not_blamed():
    """e2e4 is decided identically (FULL 3→2) but has 2 nodes in A and 3 in B: the -1 is e2e4/a7a6's.

    A second case, written out: both sides search m (a1a2) the same way, A
    searches its child h1h2 with 3 nodes below it, B prunes h1h2; the root and
    a1a2 are same, so the whole +3 is h1h2's, and the own RESULTs of the root and a1a2 (one
    each) is shared residual.
    """
    al = _basic()
    sentences = " ".join(divergence_summary(al, n=100).rows["sentence"])
    assert "`e2e4`" not in sentences and "`e2e4/e7e5`" not in sentences
    head = ("TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\nITER d=3\n"
            "MOVE path=a1a2 ply=1 mn=1 d=3 nd=2 act=FULL\n")
    text_a = head + (
        "MOVE path=a1a2/h1h2 ply=2 mn=1 d=2 nd=1 act=FULL\n"
        "MOVE path=a1a2/h1h2/a2a3 ply=3 mn=1 d=1 nd=0 act=FULL\n"
        "RESULT path=a1a2/h1h2/a2a3 ply=3 d=0\n"
        "MOVE path=a1a2/h1h2/a2b2 ply=3 mn=2 d=1 nd=0 act=FULL\n"
        "RESULT path=a1a2/h1h2/a2b2 ply=3 d=0\n"
        "RESULT path=a1a2/h1h2 ply=2 d=1\n"
        "RESULT path=a1a2 ply=1 d=2\nRESULT path=- ply=0 d=3\n")
    text_b = head + ("MOVE path=a1a2/h1h2 ply=2 mn=1 d=2 act=FP-QUIET\n"
                     "RESULT path=a1a2 ply=1 d=2\nRESULT path=- ply=0 d=3\n")
    al = align(records_from_text(text_a), records_from_text(text_b))
    summary = divergence_summary(al, n=10)
    assert list(summary.rows["path"]) == ["a1a2/h1h2"]
    assert (summary.rows["nodes_a"][0], summary.rows["nodes_b"][0], summary.rows["delta"][0]) == (3, 0, 3)
    assert summary.rows["sentence"][0] == ("A searched `a1a2/h1h2` at full depth (2→1 plies); B pruned it "
                                           "(FP-QUIET); delta +3 nodes (A 3, B 0)")
    # Root and a1a2: one RESULT each on each side.
    assert (summary.total["shared_residual_a"], summary.total["shared_residual_b"]) == (2, 2)
    assert summary.total["delta"] == 5 - 2
    a1a2 = al.rows.set_index("path").loc["a1a2"]
    assert a1a2["status"] == "same" and (a1a2["nodes_a"], a1a2["nodes_b"]) == (4, 1)


def test_rest_row_sums_the_frontier_rows_not_shown():
    summary = divergence_summary(_basic(), n=2)
    rest = summary.rows.iloc[-1]
    # Not shown: c2c4 (0, 2), 0000 (0, 1), e2e4/a7a6 (0, 1).
    assert (rest["path"], rest["status"], rest["nodes_a"], rest["nodes_b"], rest["delta"]) == ("(rest)", "", 0, 4, -4)
    assert rest["sentence"] == "3 other frontier rows; delta -4 nodes (A 0, B 4)"
    assert int(summary.rows["delta"].sum()) + summary.total["shared_residual"] == 1
    # Every frontier row shown: no (rest) row.
    assert "(rest)" not in set(divergence_summary(_basic(), n=5).rows["path"])


def test_drill_attributes_inside_the_row():
    """--drill d2d4: d2d4 itself left out.  A's subtree: two RESULTs of d2d4 (the LMR visit and the
    re-search) and one of d2d4/d7d5; B's: one RESULT of d2d4.  d2d4/d7d5 (FULL→FULL vs FULL) is
    the one frontier row, +1 (A 1, B 0); d2d4's own RESULTs are the residual, A 2, B 1."""
    summary = divergence_summary(_basic(), n=10, under="d2d4", drill=True)
    assert list(summary.rows["path"]) == ["d2d4/d7d5"]
    assert list(summary.rows["delta"]) == [1]
    assert summary.total == {"nodes_a": 3, "nodes_b": 1, "delta": 2, "shared_residual": 1,
                             "shared_residual_a": 2, "shared_residual_b": 1, "frontier_rows": 1}
    # Without drill (--under), d2d4 is its own frontier row and takes its whole subtree.
    under = divergence_summary(_basic(), n=10, under="d2d4")
    assert list(under.rows["path"]) == ["d2d4"] and under.total["shared_residual"] == 0


def test_min_cost_lists_only_large_frontier_rows():
    summary = divergence_summary(_basic(), n=10, min_cost=2)
    assert list(summary.rows["path"]) == ["g1f3", "d2d4", "c2c4", "(rest)"]
    assert list(summary.rows["delta"]) == [3, 2, -2, -2]  # (rest): 0000 and e2e4/a7a6, -1 each


def test_breakdowns_hand_counted():
    summary = divergence_summary(_basic(), n=10)
    kinds = {(r.kind_a, r.kind_b): (r.rows, r.nodes_a, r.nodes_b, r.delta) for r in summary.by_kind.itertuples()}
    assert kinds == {
        ("SEARCH", "PRUNE"): (1, 3, 0, 3),          # g1f3
        ("REDUCE", "REDUCE"): (1, 3, 1, 2),         # d2d4
        ("(absent)", "SEARCH"): (1, 0, 2, -2),      # c2c4, only B
        ("PRUNE", "SEARCH"): (1, 0, 1, -1),         # e2e4/a7a6
        ("NULL_PROBE", "NULL_PROBE"): (1, 0, 1, -1),  # 0000
        ("(shared)", "(shared)"): (5, 3, 3, 0),     # root, e2e4, e2e4/e7e5(/g1f3), b1c3
    }
    assert list(summary.by_kind["kind_a"])[-1] == "(shared)"
    plies = {r.ply: (r.rows, r.nodes_a, r.nodes_b, r.delta) for r in summary.by_ply.itertuples()}
    assert plies == {1: (4, 6, 4, 2), 2: (1, 0, 1, -1), "(shared)": (5, 3, 3, 0)}


def test_difference_of_a_row_alone():
    rows = _basic().rows.set_index("path", drop=False)
    assert difference(rows.loc["e2e4/a7a6"], "`a7a6`") == (
        "A pruned `a7a6` (FP-QUIET); B searched it at full depth (2→1 plies)")


def test_extra_visit_rows_are_left_to_their_paths_row():
    """With a row per other visit (``visits="all"``: right after its path's row, inside that row's span,
    its parent the path's parent), the attribution is the one of the main rows: the visit's nodes are
    already in its path's subtree count."""
    rows = _basic().rows.copy()
    rows["visit_label"] = "main"
    at = int((rows["path"] == "d2d4").to_numpy().nonzero()[0][0])  # row 7
    extra = rows.iloc[[at]].copy()
    extra["visit_label"], extra["subtree_rows"], extra["status"] = "verify", 1, "differs"
    extra["nodes_a"], extra["nodes_b"] = 1, 0
    with_extra = pd.concat([rows.iloc[: at + 1], extra, rows.iloc[at + 1:]], ignore_index=True)
    parent = with_extra["parent"].to_numpy()
    with_extra["parent"] = np.where(parent > at, parent + 1, parent)
    size = with_extra["subtree_rows"].to_numpy().copy()
    size[0] += 1      # the root's span
    size[at] += 1     # d2d4's span holds its other visit
    with_extra["subtree_rows"] = size
    back = main_rows(with_extra)
    pd.testing.assert_frame_equal(back[["path", "parent", "subtree_rows"]],
                                  rows[["path", "parent", "subtree_rows"]].reset_index(drop=True))
    a, b = attribute(back), attribute(rows)
    assert list(a.frontier) == list(b.frontier) and (a.residual_a, a.residual_b) == (b.residual_a, b.residual_b)

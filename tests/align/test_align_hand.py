"""The aligner on hand-built trees; every expectation here was counted by hand from the fixtures."""
from __future__ import annotations

import pandas as pd
import pytest

from support.align_helpers import records_from_fixture, records_from_text
from treediff.align import align, kind_confusion, top_divergences
from treediff.model.errors import InputError

# fixtures/hand/align_basic_{a,b}.log, iteration 3:
# (path, status, seq_a, seq_b, nodes_a, nodes_b) in depth-first order.  Siblings
# follow A's move numbers; B-only c2c4 (B's mn 3) sorts after A's g1f3 (mn 3).
EXPECTED_BASIC = [
    ("", "same", "", "", 9, 8),
    ("0000", "differs", "NMP", "NMP", 0, 1),  # same act, nd 0 vs 1
    ("0000/e7e5", "only-B", "", "FULL", 0, 0),
    ("e2e4", "same", "FULL", "FULL", 2, 3),
    ("e2e4/e7e5", "same", "FULL", "FULL", 1, 1),
    ("e2e4/e7e5/g1f3", "same", "FULL", "FULL", 0, 0),
    ("e2e4/a7a6", "differs", "FP-QUIET", "FULL", 0, 1),
    ("d2d4", "differs", "LMR→LMR-RESEARCH", "LMR", 3, 1),
    # d2d4 has two visits in A (LMR, then its LMR-RESEARCH); d7d5's row reads the decision of d2d4's main
    # (deeper) visit only: one FULL at d=2 (the first visit's FULL at d=1 belongs to the other visit).
    ("d2d4/d7d5", "differs", "FULL", "FULL", 1, 0),
    ("d2d4/d7d5/c2c4", "only-A", "FULL", "", 0, 0),
    ("g1f3", "differs", "FULL", "FP-QUIET", 3, 0),
    ("g1f3/g8f6", "only-A", "FULL", "", 1, 0),
    ("g1f3/g8f6/b1c3", "only-A", "FULL", "", 0, 0),
    ("g1f3/d7d5", "only-A", "FULL", "", 1, 0),
    ("c2c4", "only-B", "", "FULL", 0, 2),
    ("c2c4/e7e5", "only-B", "", "FULL", 0, 1),
    ("b1c3", "same", "SEE-QUIET", "SEE-QUIET", 0, 0),
]


@pytest.fixture(scope="module")
def basic():
    return align(records_from_fixture("align_basic_a.log"), records_from_fixture("align_basic_b.log"))


def _summary(rows: pd.DataFrame) -> list[tuple]:
    return [
        (r.path, r.status, r.seq_a, r.seq_b, int(r.nodes_a), int(r.nodes_b))
        for r in rows[["path", "status", "seq_a", "seq_b", "nodes_a", "nodes_b"]].astype(
            {"status": str, "seq_a": str, "seq_b": str}
        ).itertuples()
    ]


def test_every_status_in_tree_order(basic):
    assert _summary(basic.rows) == EXPECTED_BASIC


def test_default_iteration_is_deepest_completed_by_both(basic):
    # Both sides start ITER 4 but never finish it (no root RESULT).
    assert (basic.iter_a, basic.iter_b) == (3, 3)
    assert basic.a.iterations == (1, 3, 4) and basic.a.completed == (1, 3)


def test_row_details(basic):
    rows = basic.rows.set_index("path")
    d2d4 = rows.loc["d2d4"]
    assert (d2d4.depth_a, d2d4.new_depth_a, d2d4.final_depth_a, d2d4.reduction_a) == (3, 1, 2, 1)
    assert d2d4.decisions_a == 2 and d2d4.decisions_b == 1
    assert d2d4.kind_a == "REDUCE" and rows.loc["g1f3"].kind_b == "PRUNE"
    assert rows.loc[""].depth_a == 3  # the root's depth comes from its RESULT
    assert list(rows["ply"])[:4] == [0, 1, 2, 1]
    # Parent row numbers point at the parent path.
    paths = list(basic.rows["path"])
    for path, parent in zip(paths, basic.rows["parent"]):
        assert (paths[parent] if parent >= 0 else None) == (path.rpartition("/")[0] if path else None)


def test_explicit_iteration():
    al = align(records_from_fixture("align_basic_a.log"), records_from_fixture("align_basic_b.log"), iter=1)
    assert _summary(al.rows) == [
        ("", "same", "", "", 1, 1),
        ("e2e4", "same", "FULL", "FULL", 0, 0),
        ("d2d4", "only-B", "", "FULL", 0, 0),
    ]
    with pytest.raises(InputError, match="no iteration 2; it has iterations 1, 3, 4"):
        align(records_from_fixture("align_basic_a.log"), records_from_fixture("align_basic_b.log"), iter=2)


def test_kind_confusion_hand_counted(basic):
    table = kind_confusion(basic)
    # Shared decided paths: 0000 NP/NP; e2e4, e2e4/e7e5, e2e4/e7e5/g1f3, d2d4/d7d5 S/S;
    # g1f3 S/P; e2e4/a7a6 P/S; b1c3 P/P; d2d4 R/R.
    kinds = ["SEARCH", "REDUCE", "PRUNE", "NULL_PROBE"]
    expected = pd.DataFrame(
        [[4, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]],
        index=pd.Index(kinds, name="A"),
        columns=pd.Index(kinds, name="B"),
    )
    pd.testing.assert_frame_equal(table, expected)
    assert int(table.to_numpy().sum()) == 9


def test_top_divergences_by_node_cost(basic):
    top = top_divergences(basic, n=4)
    # Frontier rows (topmost non-same): g1f3 +3, d2d4 +2, c2c4 -2, then the |delta| 1 rows in tree
    # order: 0000, e2e4/a7a6 (the latter in the (rest) row).  Rows inside a frontier row's subtree
    # (g1f3/g8f6, d2d4/d7d5, c2c4/e7e5, ...) are never listed: their nodes are already counted.
    assert list(top["path"]) == ["g1f3", "d2d4", "c2c4", "0000", "(rest)"]
    assert list(top["delta"]) == [3, 2, -2, -1, -1]
    assert top["sentence"][0] == "A searched `g1f3` at full depth (3→2 plies); B pruned it (FP-QUIET); delta +3 nodes (A 3, B 0)"
    # A's d2d4 has two RESULTs (the LMR visit, 1 node, and the re-search): when the rows count visits, so does
    # the sentence.
    visits = "; A visited it 2 times (1 node outside the main visit)" if "visits_a" in basic.rows.columns else ""
    assert top["sentence"][1] == (
        "A reduced `d2d4` by 1 ply (LMR, 3→1 plies), then LMR-RESEARCH at 2 plies; "
        f"B reduced it by 1 ply (LMR, 3→1 plies){visits}; delta +2 nodes (A 3, B 1)"
    )
    assert top["sentence"][2] == "B searched `c2c4` at full depth (3→2 plies); A never reached it; delta -2 nodes (A 0, B 2)"
    everything = top_divergences(basic, n=100)
    assert "g1f3/g8f6/b1c3" not in set(everything["path"]) and "c2c4/e7e5" not in set(everything["path"])
    assert len(everything) == 5
    # They add up: Σ delta + shared residual (0: A and B each have 3 nodes under same rows only) = 9 - 8.
    assert int(everything["delta"].sum()) == 1


def test_notation_variants_meet():
    """typhoon e7e8Q/(null)/ticks and stockfish e7e8q/0000/plies align as the same paths."""
    ty = records_from_fixture("align_promo_typhoon.log")
    sf = records_from_fixture("align_promo_stockfish.log")
    al = align(ty, sf)
    assert _summary(al.rows) == [
        ("", "same", "", "", 2, 2),
        ("0000", "same", "NMP", "NMP", 0, 0),
        ("e7e8q", "same", "FULL", "FULL", 1, 1),
        ("e7e8q/a2b2", "same", "FULL", "FULL", 0, 0),
        ("e7e8q/a2a1", "same", "FULL", "FULL", 0, 0),
        ("e7e8n", "differs", "LMR", "FP-QUIET", 0, 0),
        ("e1d2", "differs", "LMP", "FP-QUIET", 0, 0),
    ]
    assert al.rows.set_index("path").loc["e7e8n"].new_depth_a == 0.75


def test_searches_without_iter_align_as_one_iteration():
    text = (
        "TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\n"
        "MOVE path=a1a2 ply=1 mn=1 d=2 nd=1 act=FULL\n"
        "RESULT path=a1a2 ply=1 d=1\n"
        "MOVE path=a1a2 ply=1 mn=1 d=3 nd=2 act=FULL\n"
        "MOVE path=a1a2/h1h2 ply=2 mn=1 d=2 nd=1 act=FULL\n"
        "RESULT path=a1a2/h1h2 ply=2 d=1\n"
        "RESULT path=a1a2 ply=1 d=2\n"
        "RESULT path=- ply=0 d=3\n"
    )
    flat = records_from_text(text)
    with_iters = records_from_text(
        "TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\n"
        "ITER d=2\n"
        "MOVE path=a1a2 ply=1 mn=1 d=2 nd=1 act=FULL\n"
        "RESULT path=a1a2 ply=1 d=1\n"
        "RESULT path=- ply=0 d=2\n"
        "ITER d=3\n"
        "MOVE path=a1a2 ply=1 mn=1 d=3 nd=2 act=FULL\n"
        "MOVE path=a1a2/h1h2 ply=2 mn=1 d=2 nd=1 act=FULL\n"
        "RESULT path=a1a2/h1h2 ply=2 d=1\n"
        "RESULT path=a1a2 ply=1 d=2\n"
        "RESULT path=- ply=0 d=3\n"
    )
    both_flat = align(flat, flat)
    assert (both_flat.iter_a, both_flat.iter_b) == (0, 0)
    # Both visits of a1a2 in one row; 3 RESULTs under a1a2 (two of a1a2, one below).
    assert _summary(both_flat.rows)[:2] == [("", "same", "", "", 4, 4), ("a1a2", "same", "FULL→FULL", "FULL→FULL", 3, 3)]
    mixed = align(flat, with_iters)
    assert (mixed.iter_a, mixed.iter_b) == (0, 3)
    assert any("no ITER markers" in n for n in mixed.notes)
    assert _summary(mixed.rows)[1] == ("a1a2", "differs", "FULL→FULL", "FULL", 3, 2)


def test_position_choice_and_errors():
    multi = records_from_fixture("align_multi.log")
    basic = records_from_fixture("align_basic_a.log")
    with pytest.raises(InputError, match="share 2 positions; choose one with --position: kiwi, start"):
        align(multi, multi)
    al = align(multi, multi, position="kiwi")
    assert (al.iter_a, al.position) == (0, "kiwi") and int(al.rows["nodes_a"].iloc[0]) == 2
    al = align(multi, basic)  # only "start" is shared
    assert al.position == "start" and (al.iter_a, al.iter_b) == (1, 1)
    with pytest.raises(InputError, match="B has no records for position kiwi; B has: start"):
        align(multi, basic, position="kiwi")
    with pytest.raises(InputError, match="A has no MOVE or RESULT records"):
        align(basic.iloc[0:0], basic)
    other = records_from_text(
        "TREEDUMP engine=stockfish v=1 id=x fen=8/8/8/8/8/8/8/K6k w - - 0 1\nRESULT path=- ply=0 d=1\n"
    )
    with pytest.raises(InputError, match="different positions"):
        align(other, basic)


def test_missing_parents_are_synthesized():
    """A trace that lost a node's own MOVE still yields one connected tree."""
    text = (
        "TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\n"
        "MOVE path=a1a2/h1h2/a2a3 ply=3 mn=1 d=1 nd=0 act=FULL\n"
        "RESULT path=a1a2/h1h2 ply=2 d=1\n"
    )
    rec = records_from_text(text)
    al = align(rec, rec.iloc[:1])
    assert _summary(al.rows) == [
        ("", "same", "", "", 1, 0),
        ("a1a2", "same", "", "", 1, 0),
        ("a1a2/h1h2", "same", "", "", 1, 0),
        ("a1a2/h1h2/a2a3", "same", "FULL", "FULL", 0, 0),
    ]

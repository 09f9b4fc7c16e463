"""The scope table's unrecorded moves on a continue-pruning node whose remaining quiet moves are dropped silently.

Position K: white Ke1, Pe2; black Ke8; white to move.  Legal moves (counted on the board): e2e3, e2e4,
Ke1-d1, Ke1-f1, Ke1-d2, Ke1-f2 -> 6.

Iteration 1, root visit (RESULT bound=exact):
  PROBCUT e1f1 (does not count as decided), FULL e2e4, FP-QUIET e2e3 (prune), RESULT.
  The prune: decided so far {e2e4, e2e3} -> remaining 6 - 2 = 4 (d1, f1, d2, f2), none decided later:
  later_decided 0, unrecorded 4; no later sibling (not followed).
Iteration 2, root visit (RESULT bound=exact):
  FULL e2e4, FP-QUIET e1d1 (prune), FULL e1f1, HIST-PRUNE e1d2 (prune), RESULT.
  FP-QUIET e1d1: decided {e2e4, e1d1} -> remaining 4 (e2e3, e1f1, e1d2, e1f2); later e1f1, e1d2 -> 2;
  unrecorded 2 (e2e3, e1f2); followed (e1f1 comes after it).
  HIST-PRUNE e1d2: decided {e2e4, e1d1, e1f1, e1d2} -> remaining 2 (e2e3, e1f2), later 0, unrecorded 2;
  not followed.
Iteration 3, root visit ending in a cutoff (RESULT bound=lower):
  FULL e2e4, FP-QUIET e1d1, RESULT.  Counted in prunes, nodes and followed (not followed), but a cutoff
  legitimately leaves moves untried: not in remaining / later_decided / unrecorded.

Per act:
  FP-QUIET: prunes 3, visits 3, continued 1 (iteration 2), followed 1 -> 33.33 %;
            remaining 4 + 4 = 8, later 0 + 2 = 2, unrecorded 4 + 2 = 6 -> 75 %.
  HIST-PRUNE: prunes 1, visits 1, continued 0, followed 0; remaining 2, later 0, unrecorded 2 -> 100 %.
  (all): prunes 4, visits 3, continued 1 (iteration 2's first prune is followed), followed 1 -> 25 %;
         remaining 10, later 2, unrecorded 8 -> 80 %.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from treediff.parse.source import open_source
from treediff.report.core import build_report
from treediff.store.source import FrameSource

FEN_K = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"

LOG = f"""TREEDUMP engine=stockfish v=1 unit=1 id=k fen={FEN_K}
ITER d=1
MOVE path=e1f1 ply=1 mn=0 d=1 nd=0 act=PROBCUT
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
MOVE path=e2e3 ply=1 mn=2 d=1 act=FP-QUIET
RESULT path=- ply=0 d=1 score=10 bound=exact
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 nd=0 act=FULL
MOVE path=e1d1 ply=1 mn=2 d=2 act=FP-QUIET
MOVE path=e1f1 ply=1 mn=3 d=2 nd=0 act=FULL
MOVE path=e1d2 ply=1 mn=4 d=2 act=HIST-PRUNE
RESULT path=- ply=0 d=2 score=10 bound=exact
ITER d=3
MOVE path=e2e4 ply=1 mn=1 d=3 nd=0 act=FULL
MOVE path=e1d1 ply=1 mn=2 d=3 act=FP-QUIET
RESULT path=- ply=0 d=3 score=900 bound=lower
END nodes=3 best=e2e4 score=10
"""


@pytest.fixture()
def source(tmp_path: Path):
    path = tmp_path / "k.log"
    path.write_text(LOG)
    return open_source(str(path))


def _rows(source) -> dict:
    scope = build_report(source, ["scope"])["scope"]
    return {r["act"]: r for r in scope.to_dict("records")}


EXPECTED = {
    "FP-QUIET": dict(prunes=3, nodes=3, continued=1, followed=1, remaining=8, later_decided=2, unrecorded=6),
    "HIST-PRUNE": dict(prunes=1, nodes=1, continued=0, followed=0, remaining=2, later_decided=0, unrecorded=2),
    "(all)": dict(prunes=4, nodes=3, continued=1, followed=1, remaining=10, later_decided=2, unrecorded=8),
}
PCT = {"FP-QUIET": (100 / 3, 75.0), "HIST-PRUNE": (0.0, 100.0), "(all)": (25.0, 80.0)}


def test_unrecorded_moves_of_a_continue_pruning_node(source):
    rows = _rows(source)
    for act, expected in EXPECTED.items():
        got = {k: int(rows[act][k]) for k in expected}
        assert got == expected, act
        assert rows[act]["pct_followed"] == pytest.approx(PCT[act][0])
        assert rows[act]["pct_remaining_unrecorded"] == pytest.approx(PCT[act][1])


def test_the_same_without_the_parsers_visit_columns(source):
    # Visits delimited without paths (older inputs) give the same numbers as visits from parent_visit.
    records = source.records(None)
    assert "parent_visit" in records.columns and records["parent_visit"].notna().any()
    bare = FrameSource(records.drop(columns=["visit", "parent_visit"]), source.searches)
    assert _rows(bare) == _rows(source)


def test_unknown_positions_leave_the_move_counts_out(source):
    searches = source.searches.copy()
    searches["fen"] = "not a fen"
    rows = _rows(source.with_searches(searches))
    assert int(rows["(all)"]["prunes"]) == 4 and int(rows["(all)"]["remaining"]) == 0
    assert rows["(all)"]["pct_remaining_unrecorded"] != rows["(all)"]["pct_remaining_unrecorded"]  # NaN
    assert rows["(all)"]["pct_followed"] == pytest.approx(25.0)


def test_logs_without_prunes_have_no_scope_rows(tmp_path):
    path = tmp_path / "plain.log"
    path.write_text("\n".join(line for line in LOG.splitlines() if "act=FP" not in line and "HIST" not in line))
    scope = build_report(open_source(str(path)), ["scope"])["scope"]
    assert scope.empty


#: K's position with a white knight on b1: 9 legal moves (b1a3, b1c3 and b1d2 besides K's 6).
FEN_N = "4k3/8/8/8/8/8/4P3/1N2K3 w - - 0 1"
#: Two searches (K's position, then N's) that prune under the same node path, the root, in one batch.
TWO = "".join(f"""TREEDUMP engine=stockfish v=1 unit=1 id={name} fen={fen}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
MOVE path=e2e3 ply=1 mn=2 d=1 act=FP-QUIET
RESULT path=- ply=0 d=1 score=10 bound=exact
END nodes=2 best=e2e4 score=10
""" for name, fen in (("k", FEN_K), ("n", FEN_N)))


@pytest.mark.parametrize("tables", [["scope"], ["scope", "cutoffs"]], ids=["own-nodes", "shared-nodes"])
def test_one_node_path_in_two_positions_of_a_batch(tmp_path, tables):
    """Each search's root counts its own FEN's legal moves: e2e4 and e2e3 decided, K has 4 moves left
    (6 - 2), N 7 (9 - 2), none decided later.  Alone, scope tells the nodes apart by their paths; with a
    table that derives the move tries (cutoffs), by the derivation's path codes."""
    path = tmp_path / "two.log"
    path.write_text(TWO)
    source = open_source(str(path))
    assert len(source.searches) == 2
    by_position = build_report(source, tables, by="position")["scope"]
    got = sorted((r["position"], int(r["remaining"]), int(r["unrecorded"]))
                 for r in by_position.to_dict("records") if r["act"] == "FP-QUIET")
    assert got == [("k", 4, 4), ("n", 7, 7)]
    together = {r["act"]: r for r in build_report(open_source(str(path)), tables)["scope"].to_dict("records")}
    assert {k: int(together["FP-QUIET"][k]) for k in ("prunes", "nodes", "remaining", "unrecorded")} == \
        dict(prunes=2, nodes=2, remaining=11, unrecorded=11)

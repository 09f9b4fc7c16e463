"""compare's divergences over several positions: paired by position (not id), totals summed, counted by hand."""
from __future__ import annotations

from treediff.align.summaries import divergences
from treediff.parse.source import open_source

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KINGS = "8/8/8/8/8/8/8/K6k w - - 0 1"

# A: p1 is the start position (2 nodes: e2e4's RESULT and the root's), p2 the kings (2 nodes).
LOG_A = f"""TREEDUMP engine=stockfish v=1 id=p1 fen={START}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=e2e4 ply=1 d=0
RESULT path=- ply=0 d=1
END nodes=2
TREEDUMP engine=stockfish v=1 id=p2 fen={KINGS}
ITER d=1
MOVE path=a1a2 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=a1a2 ply=1 d=0
RESULT path=- ply=0 d=1
END nodes=2
"""
# B: the id p1 names the kings here, and the start position is called q.
# q: e2e4 as A, plus d2d4 (B only, 1 node) -> 3 nodes.  p1 (kings): a1a2 pruned -> 1 node.
LOG_B = f"""TREEDUMP engine=stockfish v=1 id=p1 fen={KINGS}
ITER d=1
MOVE path=a1a2 ply=1 mn=1 d=1 act=FP-QUIET
RESULT path=- ply=0 d=1
END nodes=1
TREEDUMP engine=stockfish v=1 id=q fen={START}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=e2e4 ply=1 d=0
MOVE path=d2d4 ply=1 mn=2 d=1 nd=0 act=FULL
RESULT path=d2d4 ply=1 d=0
RESULT path=- ply=0 d=1
END nodes=3
"""


def test_positions_paired_by_fen_and_totals_summed(tmp_path):
    (tmp_path / "a.log").write_text(LOG_A)
    (tmp_path / "b.log").write_text(LOG_B)
    found = divergences(open_source(str(tmp_path / "a.log")), open_source(str(tmp_path / "b.log")), n=10)
    # Start position (A's id p1, B's q): d2d4 only in B, -1.  Kings (A's p2, B's p1): a1a2 searched by A
    # (1 node), pruned by B, +1.  Equal |delta|: positions in label order.
    rows = [(r.position, r.path, r.status, r.nodes_a, r.nodes_b, r.delta) for r in found.rows.itertuples()]
    assert rows == [("p1", "d2d4", "only-B", 0, 1, -1), ("p2", "a1a2", "differs", 1, 0, 1)]
    total = found.total.iloc[0].to_dict()
    # Nodes: A 2 + 2, B 3 + 1; residual: the root and e2e4 (start: 2 and 2), the root (kings: 1 and 1).
    assert total == {"positions": 2, "nodes_a": 4, "nodes_b": 4, "delta": 0, "shared_residual": 0,
                     "shared_residual_a": 3, "shared_residual_b": 3, "frontier_rows": 2}
    assert int(found.rows["delta"].sum()) + total["shared_residual"] == total["delta"]
    plies = {r.ply: r.delta for r in found.by_ply.itertuples()}
    assert plies == {1: 0, "(shared)": 0}
    kinds = {(r.kind_a, r.kind_b): (r.rows, r.delta) for r in found.by_kind.itertuples()}
    assert kinds == {("(absent)", "SEARCH"): (1, -1), ("SEARCH", "PRUNE"): (1, 1), ("(shared)", "(shared)"): (3, 0)}
    assert not found.notes


def test_rest_row_spans_positions(tmp_path):
    (tmp_path / "a.log").write_text(LOG_A)
    (tmp_path / "b.log").write_text(LOG_B)
    found = divergences(open_source(str(tmp_path / "a.log")), open_source(str(tmp_path / "b.log")), n=1)
    assert list(found.rows["path"]) == ["d2d4", "(rest)"]
    rest = found.rows.iloc[-1]
    assert (rest["nodes_a"], rest["nodes_b"], rest["delta"]) == (1, 0, 1)
    assert rest["sentence"] == "1 other frontier row; delta +1 node (A 1, B 0)"


def test_paired_positions_gives_each_positions_searches_rows(tmp_path):
    """The pairing as searches row indices (ascending, one array per side), labelled as documented."""
    from treediff.align.summaries import paired_positions

    # A: p1 start, p2 kings, p3 start again (a second search of the start position).  B: p1 kings, q start.
    third = LOG_A.split("TREEDUMP")[1].replace("id=p1", "id=p3")
    (tmp_path / "a.log").write_text(LOG_A + "TREEDUMP" + third)
    (tmp_path / "b.log").write_text(LOG_B)
    pairs = paired_positions(open_source(str(tmp_path / "a.log")), open_source(str(tmp_path / "b.log")))
    got = [(label, rows_a.tolist(), rows_b.tolist()) for label, rows_a, rows_b in pairs]
    # Start: A's rows 0 and 2 (p1, p3), B's row 1 (q), labelled by A's first id; kings: A's row 1, B's row 0.
    assert got == [("p1", [0, 2], [1]), ("p2", [1], [0])]
    assert all(rows.dtype.kind == "i" for _, ra, rb in pairs for rows in (ra, rb))

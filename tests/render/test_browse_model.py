"""The ``treediff browse`` view model on the hand fixture pair fixtures/hand/browse_{a,b}.log (no textual).

Hand count (iteration 4, one RESULT record = one node; line numbers are the files' own):

    path                 status   A: act  nodes  B: act  nodes
    (root)               same             8              6
    e2e4                 same     FULL    6      FULL    3
    e2e4/e7e5            same     FULL    5      FULL    2
    e2e4/e7e5/g1f3       differs  FULL    4      LMR     1      frontier, delta +3
      .../b8c6, g8f6, d7d6 only-A FULL    1 each
    d2d4                 differs  FP-QUIET 0     FULL    2      frontier, delta -2
    d2d4/d7d5            only-B                  FULL    1
    c2c4                 only-A   FULL    1                     frontier, delta +1

Frontier deltas add up: 3 - 2 + 1 = 2 = 8 - 6 (root, e2e4 and e2e4/e7e5 own one node each on both sides).
"""
from __future__ import annotations

import numpy as np
import pytest

from support.align_helpers import FIXTURES
from treediff.cli.browse import build_model
from treediff.model.errors import InputError
from treediff.render.browse_model import LogLines

A = str(FIXTURES / "browse_a.log")
B = str(FIXTURES / "browse_b.log")

PATHS = ["", "e2e4", "e2e4/e7e5", "e2e4/e7e5/g1f3", "e2e4/e7e5/g1f3/b8c6", "e2e4/e7e5/g1f3/g8f6",
         "e2e4/e7e5/g1f3/d7d6", "d2d4", "d2d4/d7d5", "c2c4"]


def _row(model, path: str) -> int:
    return PATHS.index(path)


@pytest.fixture(scope="module")
def model():
    m, _ = build_model(A, B, notation="uci")
    assert list(m.rows["path"]) == PATHS
    return m


def test_children_index_in_tree_order(model):
    assert [PATHS[r] for r in model.children(0)] == ["e2e4", "d2d4", "c2c4"]
    assert [PATHS[r] for r in model.children(_row(model, "e2e4/e7e5/g1f3"))] == [
        "e2e4/e7e5/g1f3/b8c6", "e2e4/e7e5/g1f3/g8f6", "e2e4/e7e5/g1f3/d7d6"]
    assert not model.has_children(_row(model, "c2c4"))
    assert model.ancestors(_row(model, "e2e4/e7e5/g1f3/d7d6")) == [0, 1, 2, 3]
    assert model.ancestors(0) == []


def test_divergences_in_cost_order(model):
    assert [PATHS[r] for r in model.divergences] == ["e2e4/e7e5/g1f3", "d2d4", "c2c4"]
    g1f3 = _row(model, "e2e4/e7e5/g1f3")
    assert (model.nodes_a[g1f3], model.nodes_b[g1f3]) == (4, 1)
    # From nowhere: the costliest; from a divergence: the next one; past the last: nothing.
    assert model.step_divergence(None, None) == 0
    assert model.step_divergence(g1f3, None) == 1
    assert model.step_divergence(_row(model, "c2c4"), None) is None
    assert model.step_divergence(_row(model, "d2d4"), None, forward=False) == 0
    # The cursor on a row that is not a divergence: continue from the last one visited.
    assert model.step_divergence(_row(model, "e2e4"), 1) == 2
    assert model.step_divergence(0, None, forward=False) == 2


def test_labels_show_both_sides_and_the_cost(model):
    g1f3 = _row(model, "e2e4/e7e5/g1f3")
    (label,) = model.labels_of([g1f3])
    assert label.startswith("| g1f3")
    assert "A: FULL 2→1 n=4" in label and "B: LMR 2→0 r1 n=1" in label
    assert label.endswith("Δ+3  #1")
    (only_b,) = model.labels_of([_row(model, "d2d4/d7d5")])
    assert only_b.startswith("> d7d5") and "A: —" in only_b and "B: FULL 3→2 n=1" in only_b


def test_find_reads_uci_and_san(model):
    assert model.find("e2e4/e7e5/g1f3") == _row(model, "e2e4/e7e5/g1f3")
    assert model.find("e4/e5/Nf3") == _row(model, "e2e4/e7e5/g1f3")
    assert model.find("-") == 0
    with pytest.raises(InputError, match="neither side has this path"):
        model.find("h2h4")
    with pytest.raises(InputError, match="not a legal move"):
        model.find("e4/Nf3")


def test_details_carry_the_log_lines(model):
    detail = model.detail(_row(model, "e2e4/e7e5/g1f3"))
    # A: the MOVE on line 7 and the RESULT on line 14; B: the LMR MOVE on line 6, its RESULT on line 7.
    assert [n for n, _ in detail.a.lines] == [7, 14]
    assert [n for n, _ in detail.b.lines] == [6, 7]
    assert detail.a.line == 7 and detail.b.line == 6
    assert detail.b.lines[0][1] == "MOVE path=e2e4/e7e5/g1f3 ply=3 mn=1 d=2 nd=0 act=LMR red=1"
    assert detail.a.lines[1][1] == "RESULT path=e2e4/e7e5/g1f3 ply=3 d=2 score=10"
    assert detail.rank == 0 and detail.delta == 3
    text = "\n".join(model.detail_lines(_row(model, "d2d4/d7d5")))
    assert "A: never reached d2d4/d7d5" in text
    assert "browse_b.log:11: MOVE path=d2d4/d7d5" in text and "browse_b.log:12: RESULT path=d2d4/d7d5" in text


def test_under_limits_tree_and_divergences():
    m, title = build_model(A, B, under="d2d4", notation="uci")
    assert PATHS[m.root] == "d2d4"
    assert [PATHS[r] for r in m.divergences] == ["d2d4"]
    assert "under d2d4" in title
    with pytest.raises(InputError, match="outside the browsed subtree"):
        m.find("c2c4")
    with pytest.raises(InputError, match="neither side has this path"):
        build_model(A, B, under="h2h4")


def test_parquet_inputs_say_raw_lines_are_not_available(tmp_path):
    from treediff.parse.core import parse_to_parquet

    pa_, pb = tmp_path / "a.parquet", tmp_path / "b.parquet"
    parse_to_parquet([A], pa_)
    parse_to_parquet([B], pb)
    m, _ = build_model(str(pa_), str(pb), notation="uci")
    assert list(m.rows["path"]) == PATHS
    detail = m.detail(PATHS.index("c2c4"))
    assert [n for n, _ in detail.a.lines] == [18, 19]  # the line numbers are in the Parquet records
    assert "not a log" in detail.a.lines_note
    assert "raw lines not available" in "\n".join(m.detail_lines(PATHS.index("c2c4")))


def test_log_lines_plain_and_gzip(tmp_path):
    import gzip

    text = "first\nsecond\r\nthird"
    plain = tmp_path / "x.log"
    plain.write_text(text, newline="")
    packed = tmp_path / "x.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        lines = LogLines(path)
        assert lines.get([3, 1, 2, 4]) == {1: "first", 2: "second", 3: "third"}, path
    assert LogLines(plain).get([]) == {}


def test_children_index_matches_parent_column_on_a_larger_tree():
    """The CSR children index against the rows' own ``parent`` column, on the bundled tactical pair."""
    from support.align_helpers import FIXTURES as HAND

    traces = HAND.parent / "traces"
    m, _ = build_model(str(traces / "typhoon_tactical-f6f7.log"), str(traces / "stockfish_tactical-f6f7.log"))
    parent = m.rows["parent"].to_numpy()
    for row in range(0, len(m), max(1, len(m) // 200)):
        assert list(m.children(row)) == list(np.flatnonzero(parent == row))
    assert sum(len(m.children(r)) for r in range(len(m))) == len(m) - 1


def test_next_notation_cycles_own_uci_san():
    m, _ = build_model(A, B, notation="uci")
    g1f3 = _row(m, "e2e4/e7e5/g1f3")
    assert m.labels_of([g1f3])[0].startswith("| g1f3")
    assert m.next_notation() == "san"
    assert m.labels_of([g1f3])[0].startswith("| Nf3")   # 1. e4 e5 2. Nf3
    assert m.detail(g1f3).b.name == "e4/e5/Nf3"
    assert m.next_notation() == "own"                     # stockfish's own notation is UCI
    assert m.labels_of([g1f3])[0].startswith("| g1f3")
    assert m.next_notation() == "uci"


def test_a_dataset_holding_both_engines(tmp_path):
    """A batch dataset as both inputs, one engine taken from each (--engine-a/-b), one position (--position)."""
    from support.scale_helpers import TRACES, dataset_from_logs

    dataset = dataset_from_logs([TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"], tmp_path / "ds")
    m, title = build_model(str(dataset), str(dataset), position="kiwipete", engine_a="typhoon",
                           engine_b="stockfish", notation="uci")
    direct, _ = build_model(str(TRACES / "typhoon_batch3.log"), str(TRACES / "stockfish_batch3.log"),
                            position="kiwipete", notation="uci")
    assert list(m.rows["path"]) == list(direct.rows["path"])
    assert list(m.divergences) == list(direct.divergences)
    assert "A: typhoon" in title and "B: stockfish" in title
    row = int(m.divergences[0])
    assert [n for n, _ in m.detail(row).a.lines] == [n for n, _ in direct.detail(row).a.lines]
    assert "not a log" in m.detail(row).a.lines_note
    with pytest.raises(InputError, match="holds no engine 'crafty'"):
        build_model(str(dataset), str(dataset), engine_a="crafty")


def test_divergence_order_against_a_plain_walk():
    """On the bundled crafty / stockfish tactical pair: the frontier rows found by walking each row's ancestors
    (topmost non-same row on the way to the root), ordered by |nodes_a - nodes_b| then tree order."""
    traces = FIXTURES.parent / "traces"
    m, _ = build_model(str(traces / "crafty_tactical-f6f7.log"), str(traces / "stockfish_tactical-f6f7.log"))
    parent = m.rows["parent"].tolist()
    status = m.rows["status"].astype(str).tolist()
    cost = (m.rows["nodes_a"] - m.rows["nodes_b"]).abs().tolist()
    frontier = []
    for row in range(len(parent)):
        if status[row] == "same":
            continue
        up = parent[row]
        while up >= 0 and status[up] == "same":
            up = parent[up]
        if up < 0:
            frontier.append(row)
    expected = sorted(frontier, key=lambda r: (-cost[r], r))
    assert len(expected) > 10
    assert list(m.divergences) == expected

"""``treediff diff`` pairs searches by position (board, side, castling, en passant), never by id alone.

Each log below is written by hand; the node counts the tests expect are the
RESULT records counted in the text (one iteration each).
"""
from __future__ import annotations

import json

from click.testing import CliRunner

from treediff.cli import main

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWI = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# After 1.e4: the en-passant square e3 is dead (no black pawn can take), so python-chess drops it.
AFTER_E4_EP = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
AFTER_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 7 31"


def _search(pid: str, fen: str, first: str, nodes_under_first: int) -> str:
    """One iteration: ``first`` searched with ``nodes_under_first`` leaf RESULTs below it, then the root RESULT.

    RESULT records: ``nodes_under_first`` leaves + ``first`` + the root.
    """
    lines = [f"TREEDUMP engine=stockfish v=1 id={pid} fen={fen}", "ITER d=2",
             f"MOVE path={first} ply=1 mn=1 d=2 nd=1 act=FULL"]
    replies = {"e2e4": ["e7e5", "d7d5", "g8f6"], "d2d4": ["d7d5", "g8f6", "e7e6"], "e7e5": ["g1f3", "d2d4", "b1c3"],
               "e1g1": ["e8g8", "a6b5", "b4c3"]}[first]
    for reply in replies[:nodes_under_first]:
        lines += [f"MOVE path={first}/{reply} ply=2 mn=1 d=1 nd=0 act=FULL",
                  f"RESULT path={first}/{reply} ply=2 d=0 score=0"]
    lines += [f"RESULT path={first} ply=1 d=1 score=0", "RESULT path=- ply=0 d=2 score=0",
              f"END nodes={nodes_under_first + 2}"]
    return "\n".join(lines) + "\n"


def _run(tmp_path, a_text: str, b_text: str, *args: str):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(a_text)
    b.write_text(b_text)
    return CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json", *args], env={"COLUMNS": "100"})


def test_same_id_different_positions_is_refused_with_both_fens(tmp_path):
    result = _run(tmp_path, _search("p", START, "e2e4", 1), _search("p", KIWI, "e1g1", 1))
    assert result.exit_code == 2
    assert "different positions" in result.output and START in result.output and KIWI in result.output
    assert "Traceback" not in result.output


def test_one_position_under_two_ids_is_paired(tmp_path):
    # A: start (as "s", 2 replies under e2e4) and kiwipete (as "k"); B: the start position under the id "k".
    a = _search("s", START, "e2e4", 2) + _search("k", KIWI, "e1g1", 1)
    b = _search("k", START, "e2e4", 3)
    result = _run(tmp_path, a, b)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # A: 2 leaves + e2e4 + root = 4 RESULTs; B: 3 + 1 + 1 = 5.
    assert doc["divergence_total"]["nodes_a"] == 4 and doc["divergence_total"]["nodes_b"] == 5
    assert doc["divergence_total"]["delta"] == -1


def test_position_option_follows_the_id_and_refuses_a_clash(tmp_path):
    a = _search("s", START, "e2e4", 2) + _search("k", KIWI, "e1g1", 1)
    b = _search("k", START, "e2e4", 3) + _search("s", KIWI, "e1g1", 2)
    # Both positions are shared (under swapped ids): the user must choose.
    result = _run(tmp_path, a, b)
    assert result.exit_code == 2 and "share 2 positions" in result.output
    # --position s: A's "s" is the start position; B's "s" is kiwipete: refused, both FENs named.
    result = _run(tmp_path, a, b, "--position", "s")
    assert result.exit_code == 2
    assert "names different positions" in result.output and START in result.output and KIWI in result.output


def test_position_option_pairs_by_fen_when_the_other_side_uses_another_id(tmp_path):
    a = _search("s", START, "e2e4", 2) + _search("k", KIWI, "e1g1", 1)
    b = _search("opening-1", START, "e2e4", 3) + _search("kiwi", KIWI, "e1g1", 3)
    result = _run(tmp_path, a, b, "--position", "k")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # kiwipete: A 1 + 1 + 1 = 3 RESULTs, B 3 + 1 + 1 = 5.
    assert (doc["divergence_total"]["nodes_a"], doc["divergence_total"]["nodes_b"]) == (3, 5)


def test_move_counters_and_a_dead_en_passant_square_do_not_split_a_position(tmp_path):
    result = _run(tmp_path, _search("x", AFTER_E4_EP, "e7e5", 1), _search("y", AFTER_E4, "e7e5", 2))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["divergence_total"]["nodes_a"], doc["divergence_total"]["nodes_b"]) == (3, 4)


def test_several_searches_of_one_position_on_a_side_are_refused(tmp_path):
    a = _search("s", START, "e2e4", 2) + _search("again", START, "d2d4", 1)
    result = _run(tmp_path, a, _search("b", START, "e2e4", 1))
    assert result.exit_code == 2 and "2 searches of position" in result.output
    # The id chooses among them.
    result = _run(tmp_path, a, _search("b", START, "e2e4", 1), "--position", "again")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["divergence_total"]["nodes_a"], doc["divergence_total"]["nodes_b"]) == (3, 3)

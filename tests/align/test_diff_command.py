"""``treediff diff`` end to end: hand-written logs through the real parser, every output format."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from support.align_helpers import FIXTURES
from treediff.cli import main

A = str(FIXTURES / "align_basic_a.log")
B = str(FIXTURES / "align_basic_b.log")

# Hand-counted (see test_align_hand.EXPECTED_BASIC): the diff -y marker of each row.
MARKS = [" ", "|", ">", " ", " ", " ", "|", "|", "|", "<", "|", "<", "<", "<", ">", ">", " "]


def run(*args: str, columns: str = "100"):
    # A fixed width: the view fits the terminal (COLUMNS), and the test's own terminal must not matter.
    result = CliRunner().invoke(main, ["diff", *args], env={"COLUMNS": columns})
    return result


def _body(output: str) -> list[str]:
    """Row lines: after the two header lines and the column heading, up to the summaries."""
    lines = output.splitlines()[3:]
    return lines[: lines.index("")] if "" in lines else lines


def test_text_side_by_side_without_folding():
    result = run(A, B, "--context", "100")
    assert result.exit_code == 0, result.output
    lines = _body(result.stdout)
    assert len(lines) == 17
    heading = result.stdout.splitlines()[2]
    marker_col = heading.index("B move") - 2
    assert [line.ljust(marker_col + 1)[marker_col] for line in lines] == MARKS
    assert "17 rows (same 5, differs 5, only-A 4, only-B 3); nodes A 9, B 8" in result.stdout
    d2d4 = next(line for line in lines if "LMR→LMR-RESEARCH" in line)
    # A: acts, depth 3 → 1 → re-searched at 2, reduction 1, 3 nodes; B: one LMR, 1 node.
    assert d2d4.split() == ["d2d4", "LMR→LMR-RESEARCH", "3→1→2", "1", "3", "|", "d2d4", "LMR", "3→1", "1", "1"]
    only_b = next(line for line in lines if line.strip().startswith("> "))
    assert only_b.split() == [">", "e7e5", "FULL", "1→0", "0"]  # A's side is a gap


def test_folding_keeps_context_rows():
    # Changed rows: 2-3, 7-16 (1-based).  Context 0 folds row 1, rows 4-6 and row 17.
    result = run(A, B, "--context", "0")
    lines = _body(result.stdout)
    folds = [line for line in lines if line.startswith("...")]
    assert folds == ["... 1 identical row ...", "... 3 identical rows ...", "... 1 identical row ..."]
    assert len(lines) == 12 + 3
    result = run(A, B, "--context", "1")
    folds = [line for line in _body(result.stdout) if line.startswith("...")]
    assert folds == ["... 1 identical row ..."]  # only e2e4/e7e5 (row 5) is 2 rows from any change


def test_only_diff_under_and_max_ply():
    lines = _body(run(A, B, "--only-diff").stdout)
    assert len(lines) == 12 and not any(line.startswith("...") for line in lines)
    lines = _body(run(A, B, "--under", "g1f3", "--context", "9").stdout)
    assert [line.split()[0] for line in lines] == ["g1f3", "g8f6", "b1c3", "d7d5"]
    lines = _body(run(A, B, "--under", "Nf3/Nf6", "--context", "9").stdout)  # SAN, read in the start position
    assert [line.split()[0] for line in lines] == ["g8f6", "b1c3"]
    lines = _body(run(A, B, "--max-ply", "1", "--context", "9").stdout)
    assert len(lines) == 7  # root + 0000, e2e4, d2d4, g1f3, c2c4, b1c3


def test_json_and_csv():
    result = run(A, B, "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["a"]["iter"] == 3 and doc["b"]["engine"] == "stockfish"
    assert [r["status"] for r in doc["rows"]][:3] == ["same", "differs", "only-B"]
    d2d4 = next(r for r in doc["rows"] if r["path"] == "d2d4")
    assert (d2d4["seq_a"], d2d4["nodes_a"], d2d4["final_depth_a"], d2d4["new_depth_b"]) == ("LMR→LMR-RESEARCH", 3, 2.0, 1.0)
    assert doc["rows"][6]["new_depth_a"] is None  # e2e4/a7a6 was pruned by A
    result = run(A, B, "--format", "csv", "--iter", "1")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("path,ply,status,seq_a,kind_a")
    assert [line.split(",")[:3] for line in lines[1:]] == [["", "0", "same"], ["e2e4", "1", "same"], ["d2d4", "1", "only-B"]]
    # After the aligned columns: each side's path in its notation (empty in a gap) and the source lines.
    assert ",nodes_b,path_a,path_b,line_a,line_b" in lines[0]
    # Iteration 1: A's root RESULT is line 7, e2e4's MOVE line 6; B's 6 and 4, d2d4's 5 (B only).
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["path_a"], r["path_b"], r["line_a"], r["line_b"]) for r in table] == [
        ("", "", "7", "6"), ("e2e4", "e2e4", "6", "4"), ("", "d2d4", "", "5")]


def test_meld_files_line_up(tmp_path):
    result = run(A, B, "--meld", str(tmp_path / "m"))
    assert result.exit_code == 0, result.output
    a = (tmp_path / "m" / "a.txt").read_text().split("\n")[:-1]
    b = (tmp_path / "m" / "b.txt").read_text().split("\n")[:-1]
    assert len(a) == len(b) == 17
    gaps_a = [i for i, line in enumerate(a) if not line.strip()]
    gaps_b = [i for i, line in enumerate(b) if not line.strip()]
    assert gaps_a == [i for i, m in enumerate(MARKS) if m == ">"]
    assert gaps_b == [i for i, m in enumerate(MARKS) if m == "<"]
    # The source line of the row's decision ends the line: d2d4's LMR is line 16 of A and 18 of B.
    assert a[7].strip().startswith("d2d4  LMR→LMR-RESEARCH") and a[7].endswith("[d2d4]  line 16")
    assert b[7].strip().startswith("d2d4  LMR") and b[7].endswith("[d2d4]  line 18")
    if shutil.which("diff"):
        side = subprocess.run(
            ["diff", "-y", "-W", "200", str(tmp_path / "m" / "a.txt"), str(tmp_path / "m" / "b.txt")],
            capture_output=True, text=True, timeout=30, check=False,
        )
        assert len(side.stdout.splitlines()) == 17  # row for row: nothing paired across rows


@pytest.mark.parametrize("other", ["align_promo_stockfish.log", "align_promo_crafty.log"])
def test_notations_meet_end_to_end(other):
    """typhoon e7e8Q/(null), stockfish e7e8q/0000 and crafty e8=Q/null parse to the same paths."""
    result = run(str(FIXTURES / "align_promo_typhoon.log"), str(FIXTURES / other), "--format", "json")
    assert result.exit_code == 0, result.output
    rows = {r["path"]: r for r in json.loads(result.stdout)["rows"]}
    assert list(rows) == ["", "0000", "e7e8q", "e7e8q/a2b2", "e7e8q/a2a1", "e7e8n", "e1d2"]
    assert [rows[p]["status"] for p in ("0000", "e7e8q", "e7e8q/a2b2", "e7e8q/a2a1")] == ["same"] * 4
    assert (rows["e7e8q"]["nodes_a"], rows["e7e8q"]["nodes_b"]) == (1, 1)
    assert rows["e7e8n"]["status"] == "differs" and rows["e7e8n"]["new_depth_a"] == 0.75


def test_errors_are_one_line(tmp_path):
    multi = str(FIXTURES / "align_multi.log")
    result = run(multi, multi)
    assert result.exit_code == 2
    assert "share 2 positions; choose one with --position: kiwi, start" in result.output
    result = run(multi, A, "--position", "kiwi")
    assert result.exit_code == 2 and "B has no records for position kiwi" in result.output
    result = run(A, B, "--iter", "7")
    assert result.exit_code == 2 and "no iteration 7" in result.output
    result = run(A, B, "--under", "h2h4")
    assert result.exit_code == 2 and "--under h2h4: neither side has this path" in result.output
    empty = tmp_path / "empty.log"
    empty.write_text("TREEDUMP engine=stockfish v=1 id=start fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nEND nodes=0\n")
    result = run(str(empty), B)
    assert result.exit_code == 2 and "without MOVE/RESULT records" in result.output
    assert "Traceback" not in result.output
    two = tmp_path / "two.log"
    two.write_text((FIXTURES / "align_basic_a.log").read_text() + empty.read_text().replace("id=start", "id=later"))
    result = run(str(two), B, "--position", "later")
    assert result.exit_code == 2 and "A searched position later but recorded no MOVE/RESULT" in result.output


def test_summaries_in_json_and_text():
    doc = json.loads(run(A, B, "--format", "json").stdout)
    # Hand-counted in test_align_hand.test_kind_confusion_hand_counted.
    assert doc["kind_confusion"]["SEARCH"] == {"SEARCH": 4, "REDUCE": 0, "PRUNE": 1, "NULL_PROBE": 0}
    assert doc["kind_confusion"]["PRUNE"]["SEARCH"] == 1
    # Frontier rows, hand-counted in test_attribution.test_nested_divergences_count_once.
    assert [(t["path"], t["delta"]) for t in doc["divergences"]] == [
        ("g1f3", 3), ("d2d4", 2), ("c2c4", -2), ("0000", -1), ("e2e4/a7a6", -1)]
    assert doc["divergences"][0]["sentence"].startswith("A searched `g1f3` at full depth (3→2 plies); B pruned it")
    assert {"path", "status", "nodes_a", "nodes_b", "delta", "sentence"} <= set(doc["divergences"][0])
    total = doc["divergence_total"]
    assert (total["nodes_a"], total["nodes_b"], total["delta"], total["shared_residual"]) == (9, 8, 1, 0)
    assert sum(t["delta"] for t in doc["divergences"]) + total["shared_residual"] == total["delta"]
    # --under limits the summaries to the subtree: g1f3 is its own frontier row and holds all of it.
    doc = json.loads(run(A, B, "--format", "json", "--under", "g1f3").stdout)
    assert [(t["path"], t["delta"]) for t in doc["divergences"]] == [("g1f3", 3)]
    assert doc["divergence_total"]["delta"] == 3 and doc["divergence_total"]["scope"] == "g1f3"
    assert doc["kind_confusion"] == {"SEARCH": {"PRUNE": 1}}
    text = run(A, B).output
    assert "   1. [+3] A searched `g1f3` at full depth (3→2 plies); B pruned it (FP-QUIET); delta +3 nodes" in text
    assert "  total: delta +1 (A 9, B 8) = frontier rows +1 + shared residual 0" in text
    # --top 2: the other three frontier rows in one (rest) line.
    text = run(A, B, "--top", "2").output
    assert "      [-4] (rest) 3 other frontier rows; delta -4 nodes (A 0, B 4)" in text


def test_meld_with_json_keeps_stdout_clean(tmp_path):
    result = CliRunner().invoke(main, ["diff", A, B, "--meld", str(tmp_path / "m"), "--format", "json"])
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)["rows"]) == 17
    assert "wrote" in result.stderr and (tmp_path / "m" / "a.txt").exists()

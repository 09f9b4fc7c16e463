"""``treediff diff`` views: --notation, source lines, --drill, --min-cost, --width, --format markdown.

Expectations are read off the hand fixtures (fixtures/hand/align_*.log) by hand:
line numbers are the fixture's own line numbers, SAN is what the moves are
called in the fixture's FEN (8/4P3/8/8/8/8/k7/4K3 w: white Ke1, pawn e7; black Ka2).
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from support.align_helpers import FIXTURES
from treediff.cli import main
from treediff.render.diffview import fit, wrap

A = str(FIXTURES / "align_basic_a.log")
B = str(FIXTURES / "align_basic_b.log")
CRAFTY = str(FIXTURES / "align_promo_crafty.log")
STOCKFISH = str(FIXTURES / "align_promo_stockfish.log")
TYPHOON = str(FIXTURES / "align_promo_typhoon.log")


def run(*args: str, columns: str = "100"):
    result = CliRunner().invoke(main, ["diff", *args], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    return result.stdout


def rows_of(*args: str) -> dict[str, dict]:
    return {r["path"]: r for r in json.loads(run(*args, "--format", "json"))["rows"]}


def test_notation_san_on_crafty():
    rows = rows_of(CRAFTY, STOCKFISH, "--notation", "san")
    # The key stays UCI; each side's path is written in SAN (null move "--", as PGN writes it).
    assert [(p, r["path_a"], r["path_b"]) for p, r in rows.items()] == [
        ("", "", ""), ("0000", "--", "--"), ("e7e8q", "e8=Q", "e8=Q"), ("e7e8q/a2b2", "e8=Q/Kb2", "e8=Q/Kb2"),
        ("e7e8q/a2a1", "e8=Q/Ka1", "e8=Q/Ka1"), ("e7e8n", "e8=N", "e8=N"), ("e1d2", "Kd2", "Kd2")]
    lines = run(CRAFTY, STOCKFISH, "--notation", "san", "--context", "9", "--width", "140").splitlines()
    body = lines[3:10]
    assert [line.split()[0] for line in body] == ["(root)", "--", "e8=Q", "Kb2", "Ka1", "e8=N", "Kd2"]
    e8n = body[5].split()
    assert e8n[e8n.index("|") + 1] == "e8=N"  # B's side in SAN too


def test_notation_own_is_each_dialects():
    # Crafty writes SAN and "null"; Stockfish UCI and 0000; typhoon upper-case promotions and (null).
    rows = rows_of(CRAFTY, STOCKFISH)
    assert (rows["0000"]["path_a"], rows["0000"]["path_b"]) == ("null", "0000")
    assert (rows["e7e8q/a2b2"]["path_a"], rows["e7e8q/a2b2"]["path_b"]) == ("e8=Q/Kb2", "e7e8q/a2b2")
    rows = rows_of(TYPHOON, CRAFTY)
    assert (rows["0000"]["path_a"], rows["0000"]["path_b"]) == ("(null)", "null")
    assert (rows["e7e8n"]["path_a"], rows["e7e8n"]["path_b"]) == ("e7e8N", "e8=N")
    rows = rows_of(CRAFTY, TYPHOON, "--notation", "uci")
    assert (rows["e7e8q"]["path_a"], rows["e7e8q"]["path_b"], rows["0000"]["path_a"]) == ("e7e8q", "e7e8q", "0000")
    text = run(CRAFTY, STOCKFISH, "--context", "9")
    assert "Moves: A in SAN, B in UCI (--notation)." in " ".join(text.split())
    # Sentences write paths in A's notation.
    doc = json.loads(run(CRAFTY, STOCKFISH, "--format", "json"))
    # e7e8n (A LMR 2→0, B FP-QUIET) and e1d2 (A LMP, B FP-QUIET) differ, no node below either.
    assert [d["sentence"] for d in doc["divergences"]] == [
        "A reduced `e8=N` by 1 ply (LMR, 2→0 plies); B pruned it (FP-QUIET); delta 0 nodes (A 0, B 0)",
        "A pruned `Kd2` (LMP); B pruned it (FP-QUIET); delta 0 nodes (A 0, B 0)"]


def test_source_lines_in_rows_and_meld(tmp_path):
    # Crafty fixture: line 4 null, 5 e8=Q, 6 Kb2, 7 Ka1, 8 RESULT e8=Q, 9 e8=N, 10 Kd2, 11 the root RESULT.
    rows = rows_of(CRAFTY, STOCKFISH)
    assert [(r["line_a"], r["line_b"]) for r in rows.values()] == [(11, 11), (4, 4), (5, 5), (6, 6), (7, 7),
                                                                 (9, 9), (10, 10)]
    run(CRAFTY, STOCKFISH, "--meld", str(tmp_path / "m"))
    a = (tmp_path / "m" / "a.txt").read_text().splitlines()
    b = (tmp_path / "m" / "b.txt").read_text().splitlines()
    assert a[5].strip() == "e8=N  LMR  d 2→0  red 1  nodes 0  [e8=N]  line 9"
    assert b[5].strip() == "e7e8n  FP-QUIET  d 2→-  nodes 0  [e7e8n]  line 9"


def test_drill_on_the_command_line():
    doc = json.loads(run(A, B, "--drill", "d2d4", "--format", "json"))
    # Hand-counted in test_attribution.test_drill_attributes_inside_the_row.
    assert [(d["path"], d["delta"]) for d in doc["divergences"]] == [("d2d4/d7d5", 1)]
    total = doc["divergence_total"]
    assert (total["nodes_a"], total["nodes_b"], total["delta"], total["shared_residual"]) == (3, 1, 2, 1)
    assert total["scope"] == "d2d4" and total["drill"] is True
    assert [r["path"] for r in doc["rows"]] == ["d2d4", "d2d4/d7d5", "d2d4/d7d5/c2c4"]  # the subtree, as --under
    text = " ".join(run(A, B, "--drill", "d2d4").split())
    assert "divergences in `d2d4`'s subtree, `d2d4` itself left out" in text
    assert "at the row itself: A reduced `d2d4` by 1 ply (LMR, 3→1 plies), then LMR-RESEARCH at 2 plies;" in text
    result = CliRunner().invoke(main, ["diff", A, B, "--drill", "d2d4", "--under", "d2d4"])
    assert result.exit_code == 2 and "use one of --under and --drill" in result.output
    result = CliRunner().invoke(main, ["diff", A, B, "--drill", "h2h4"])
    assert result.exit_code == 2 and "--drill h2h4: neither side has this path" in result.output


def test_min_cost():
    doc = json.loads(run(A, B, "--min-cost", "2", "--format", "json"))
    # Rows whose subtrees differ by >= 2 nodes: d2d4 (3 vs 1), g1f3 (3 vs 0), c2c4 (0 vs 2); the root
    # (9 vs 8) and every other row differ by less.
    assert [r["path"] for r in doc["rows"]] == ["d2d4", "g1f3", "c2c4"]
    # Frontier rows with |delta| >= 2; 0000 and e2e4/a7a6 (-1 each) are the (rest).
    assert [(d["path"], d["delta"]) for d in doc["divergences"]] == [("g1f3", 3), ("d2d4", 2), ("c2c4", -2),
                                                                      ("(rest)", -2)]
    lines = run(A, B, "--min-cost", "3").splitlines()
    assert [line.split()[0] for line in lines[3: lines.index("")]] == ["g1f3"]  # full paths, nothing folded


@pytest.mark.parametrize("width", [140, 100, 90, 80, 64])
def test_view_fits_the_width(width):
    """align_basic's natural widths: move 10 ("      g1f3"), act 16 (LMR→LMR-RESEARCH), depth 5, red 3,
    nodes 5, line 4: a side 43 + 5 gaps of 2 = 53, the view 2 x 53 + 3 = 109 columns."""
    out = run(A, B, "--context", "9", "--width", str(width))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    legend = " ".join(out[out.index("legend:"):].split("\n\n")[0].split())
    heading = next(line for line in lines if line.startswith("A move")).split()  # (header lines may wrap)
    shown = {140: ["depth", "red", "nodes", "line"], 100: ["depth", "red", "nodes"], 90: ["depth", "nodes"],
             80: ["nodes"], 64: ["nodes"]}[width]
    assert heading == ["A", "move", "act", *shown, "B", "move", "act", *shown]
    dropped = {140: "", 100: "line", 90: "line, red", 80: "line, red, depth", 64: "line, red, depth"}[width]
    if dropped:
        assert f"Not shown at width {width}: {dropped} (--width N)." in legend
    else:
        assert "Not shown" not in legend
    # 64: the side is 10 + 16 + 5 + 2 gaps = 35, the view 73; the act cells are cut by 5 to 11 (63 columns).
    assert ("Cut to fit (…): act." in legend) == (width == 64)
    if width == 64:
        d2d4 = next(line for line in lines if line.startswith("  d2d4"))
        assert d2d4.split()[:2] == ["d2d4", "LMR→LMR-RE…"] and max(len(line) for line in lines[:25]) <= 63
    # The COLUMNS of a pipe count when --width is not given.
    assert max(len(line) for line in run(A, B, columns=str(width)).splitlines()) <= width


def test_fit_drops_optional_columns_in_order():
    natural = {"tree": 14, "acts": 16, "depth": 5, "red": 3, "nodes": 5, "line": 4}
    # Halves: 47 + 5 gaps * 2 = 57 -> 117 in all.
    assert fit(natural, 117).dropped == () and fit(natural, 117).total == 117
    assert fit(natural, 116).dropped == ("line",) and fit(natural, 116).total == 105
    assert fit(natural, 104).dropped == ("line", "red") and fit(natural, 104).total == 95
    assert fit(natural, 94).dropped == ("line", "red", "depth") and fit(natural, 94).total == 81  # 2 x 39 + 3
    cut = fit(natural, 75)  # 6 over: 3 off each side's act cell
    assert cut.cut == ("acts",) and cut.widths["acts"] == 13 and cut.total == 75
    assert fit(natural, None).dropped == () and fit(natural, 90, empty=["line"]).cells[-1] == "nodes"


def test_sentences_wrap_at_word_boundaries():
    text = ("A reduced `d2d4` by 1 ply (LMR, 3→1 plies), then LMR-RESEARCH at 2 plies; "
            "B reduced it by 1 ply (LMR, 3→1 plies); delta +2 nodes (A 3, B 1)")
    lines = wrap(text, 40, " " * 8, "   2. ")
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(" ".join(lines).split()) == "2. " + text
    # Phrases kept whole: the node counts and the depth spans.
    assert any("(A 3, B 1)" in line for line in lines) and any("delta +2 nodes" in line for line in lines)
    assert not any(line.rstrip().endswith("(A") for line in lines)


def test_markdown():
    out = run(A, B, "--format", "markdown", "--top", "2", "--context", "9")
    lines = out.splitlines()
    assert lines[0] == "### position start   A: stockfish iteration 3   vs   B: stockfish iteration 3"
    header = next(line for line in lines if line.startswith("| A path"))
    assert header == ("| A path | A act | A depth | A red | A nodes | A line | status | B path | B act | B depth "
                      "| B red | B nodes | B line |")
    d2d4 = next(line for line in lines if line.startswith("| d2d4 |"))
    assert d2d4 == "| d2d4 | LMR→LMR-RESEARCH | 3→1→2 | 1 | 3 | 16 | differs | d2d4 | LMR | 3→1 | 1 | 1 | 18 |"
    only_b = next(line for line in lines if "| c2c4 |" in line)
    assert only_b.startswith("|  |  |  |  |  |  | only-B | c2c4 | FULL |")
    assert "1. **+3** A searched `g1f3` at full depth (3→2 plies); B pruned it (FP-QUIET); delta +3 nodes (A 3, B 0)" in lines
    assert "- **(rest)** 3 other frontier rows; delta -4 nodes (A 0, B 4)" in lines
    assert "| (shared) | (shared) | 5 | 3 | 3 | 0 |" in lines
    # Width does not apply to markdown.
    assert out == run(A, B, "--format", "markdown", "--top", "2", "--context", "9", "--width", "40")

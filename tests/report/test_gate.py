"""``compare --fail-if EXPR``: the regression gate over compare's summary figures.

Figures of the hand-written report pair (counted in tests/report/test_cli.py::test_compare_same_positions):
stockfish vs crafty, positions p1 (10 vs 10 nodes) and p2 (4 vs 3): ratio 14/13, geomean sqrt(4/3),
two positions, EBF of (all) undefined (depths 3 and 2 mixed).
"""
from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from support.align_helpers import FIXTURES
from treediff.cli import main

SF = str(FIXTURES / "report_stockfish.log")
CRAFTY = str(FIXTURES / "report_crafty.log")


def gate(expr: str, *extra: str, inputs=(SF, CRAFTY)):
    fmt = [] if "-o" in extra else ["--format", "json"]
    return CliRunner().invoke(main, ["compare", *inputs, *fmt, "--fail-if", expr, *extra])


@pytest.mark.parametrize("expr, code", [
    ("ratio > 1.07", 1),                     # 14/13 = 1.0769
    ("ratio > 1.08", 0),
    (f"geomean_ratio >= {math.sqrt(4 / 3) - 1e-9}", 1),
    (f"geomean_ratio > {math.sqrt(4 / 3) + 1e-9}", 0),
    ("positions == 2 and nodes_a == 14 and nodes_b == 13 and not (nodes_a < nodes_b)", 1),
])
def test_gate_decides_on_the_figures(expr, code):
    result = gate(expr)
    assert result.exit_code == code, result.output
    assert ("holds" if code else "does not hold") in result.stderr
    assert result.stdout.lstrip().startswith("{")  # the comparison is still printed


def test_message_names_the_figures_read():
    result = gate("ratio > 1.05")
    assert result.exit_code == 1
    assert "compare: --fail-if holds: ratio > 1.05: ratio = 1.077" in result.stderr


def test_undefined_figure_is_an_error_not_a_pass():
    result = gate("ebf_a > 100")  # (all) EBF mixes depths 3 and 2: undefined
    assert result.exit_code == 2 and "ebf_a undefined" in result.output
    result = gate("delta > 0", "--top", "0")
    assert result.exit_code == 2 and "delta undefined" in result.output


def test_divergence_total_is_a_figure():
    # The aligned iterations' delta equals the JSON's divergence_total (read from the same run).
    import json

    ok = CliRunner().invoke(main, ["compare", SF, CRAFTY, "--format", "json"])
    total = next(t for t in json.loads(ok.stdout)["tables"] if t["name"] == "divergence_total")["rows"][0]
    assert gate(f"delta == {total['delta']}").exit_code == 1
    assert gate(f"delta != {total['delta']}").exit_code == 0


@pytest.mark.parametrize("expr, words", [
    ("__import__('os')", "not allowed"),
    ("ratio.real > 1", "position"),
    ("open('x')", "not allowed"),
    ("speed > 1", "speed"),
    ("ratio >", "position"),
])
def test_bad_expressions_are_refused_before_reading(expr, words):
    # The inputs do not exist: the expression is refused first, with a clear message.
    result = gate(expr, inputs=("/nonexistent/a.log", "/nonexistent/b.log"))
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output
    assert "/nonexistent" not in result.output


def test_gate_with_an_output_file(tmp_path):
    out = tmp_path / "cmp.md"
    result = gate("ratio > 1", "-o", str(out))
    assert result.exit_code == 1, result.output
    assert "| position" in out.read_text()  # the markdown comparison was written before the gate failed


def test_one_position_has_its_row_as_the_summary(tmp_path):
    # One position: compare prints no (all) row; the position's own row gives the figures.
    # typhoon_tactical-f6f7 vs stockfish_tactical-f6f7 are one position; their node counts at the common
    # depth are the sums of RESULT records of iterations 1..N, read here from the JSON nodes row itself.
    import json

    a = str(FIXTURES.parent / "traces" / "typhoon_tactical-f6f7.log")
    b = str(FIXTURES.parent / "traces" / "stockfish_tactical-f6f7.log")
    ok = CliRunner().invoke(main, ["compare", a, b, "--format", "json", "--top", "0"])
    rows = next(t for t in json.loads(ok.stdout)["tables"] if t["name"] == "nodes")["rows"]
    assert [r["position"] for r in rows] == ["tactical-f6f7"]
    ratio = rows[0]["nodes_a"] / rows[0]["nodes_b"]
    assert gate(f"ratio > {ratio - 1e-6} and positions == 1 and geomean_ratio < {ratio + 1e-6}", "--top", "0",
                inputs=(a, b)).exit_code == 1
    assert gate(f"ratio > {ratio + 1e-6}", "--top", "0", inputs=(a, b)).exit_code == 0

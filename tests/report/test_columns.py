"""The "columns:" legend under every table (table and markdown formats), from treediff.report.columns."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.model.taxonomy import Kind
from treediff.report.columns import describe, legend, legend_line

#: Columns whose name says what they are: they need no legend entry (every other column must have one).
SELF_EXPLANATORY = {"engine", "searches", "act", "kind", "count", "iter", "ply", "iteration", "position", "path",
                    "search", "why", "phase", "side", "positions", "kind_a", "kind_b", *(k.value for k in Kind)}


def run(*args) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture
def logs():
    return [FIXTURES / "hand" / f"report_{name}.log" for name in ("typhoon", "stockfish", "crafty")]


def test_every_column_of_report_and_compare_is_described_or_self_explanatory(logs):
    tactical = [FIXTURES / "traces" / f"{e}_tactical-f6f7.log" for e in ("typhoon", "stockfish")]
    docs = [json.loads(run("report", *logs, "--format", "json")), json.loads(run("compare", *tactical, "--format",
                                                                                   "json"))]
    missing = set()
    for doc in docs:
        for table in doc["tables"]:
            compared = "nodes_a" in table["columns"]
            for column in table["columns"]:
                side_block = re.fullmatch(r"\S+ (act|count)", column)  # compare's "<label> act"
                if describe(table["name"], column, compared) is None and column not in SELF_EXPLANATORY \
                        and not side_block:
                    missing.add(f"{table['name']}.{column}")
    assert not missing, sorted(missing)


def test_the_issue_columns_have_a_legend_in_table_and_markdown(logs):
    stockfish, crafty = logs[1], logs[2]
    plain = run("compare", stockfish, crafty, "--width", "120")
    nodes = plain.split("== MOVE decisions per act")[0].splitlines()
    start = [i for i, line in enumerate(nodes) if line.startswith("columns: ")]
    assert len(start) == 1  # one legend under the table, wrapped (continuations indented)
    block = [nodes[start[0]]] + [line for line in nodes[start[0] + 1:] if line.startswith("  ")]
    text = " ".join(line.strip() for line in block)
    assert "skip_pct_a, skip_pct_b: the side's PRUNE decisions as % of its MOVE decisions" in text
    assert "ratio: nodes_a / nodes_b" in text and all(len(line) <= 120 for line in block)
    markdown = run("compare", stockfish, crafty, "--format", "markdown")
    assert "`skip_pct_a`, `skip_pct_b`: the side's PRUNE decisions" in markdown
    report = run("report", stockfish, "--table", "lmr,ebf", "--width", "100")
    assert "admission_pct_real: 100 * lmr / real_moves" in " ".join(report.split())
    assert "ebf_fanout: (n(D_min-1) / n(0))" in " ".join(report.split())
    assert all(len(line) <= 100 for line in report.splitlines())  # the legend wraps within --width
    md = run("report", stockfish, "--table", "ebf", "--format", "markdown")
    assert re.search(r"^columns: .*`ebf_fanout`: ", md, re.M)
    # not in the machine formats
    assert "columns:" not in run("report", stockfish, "--table", "ebf", "--format", "csv")
    assert "columns:" not in run("report", stockfish, "--table", "ebf", "--format", "json")


def test_legend_merges_sides_and_same_definitions():
    entries = legend("nodes", ["position", "nodes_a", "nodes_b", "ratio", "ebf_a", "ebf_b"])
    assert [names for names, _ in entries] == [["nodes_a", "nodes_b"], ["ratio"], ["ebf_a", "ebf_b"]]
    assert "nodes_a / nodes_b" in entries[1][1]  # compare's ratio, not the report's
    report = legend("nodes", ["engine", "nodes", "mean_nodes", "ratio"])
    assert "reference group" in report[-1][1]
    lmr = legend("lmr", ["mean_red", "median_red", "p90_red"])
    assert lmr == [(["mean_red", "median_red", "p90_red"], lmr[0][1])]
    block = legend("acts", ["kind", "typhoon act", "typhoon pct_of_moves", "stockfish pct_of_moves"])
    assert [names for names, _ in block] == [["pct_of_moves"]]
    assert legend_line("acts", ["engine", "act", "count"]) is None
    # a section-specific meaning wins: scope's nodes are node visits, ebf_ply's are RESULT records per ply
    assert "visits" in describe("scope", "nodes")[1] and "ply" in describe("ebf_ply", "nodes")[1]


def test_rich_tables_carry_the_legend(logs):
    from rich.console import Console

    from treediff.render.text import render_rich
    from treediff.report.core import build_report
    from treediff.parse.source import open_source

    report = build_report(open_source(logs[1]), ("lmr",), ("engine",))
    console = Console(record=True, width=100, color_system=None)
    render_rich(report.sections, console)
    text = " ".join(console.export_text().split())
    assert "columns: moves: the group's MOVE records (decisions);" in text
    assert "admission_pct_real: 100 * lmr / real_moves" in text

"""The table format fits a width (--width, COLUMNS, else 100); markdown, CSV and JSON never change with it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from support.tracebuild import concat, read_fixture
from treediff.cli import main
from treediff.render.formatting import DEFAULT_WIDTH, fit_width
from treediff.render.text import render_plain, render_rich
from treediff.report.core import report_frames

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "hand"
LOGS = [FIX / f"report_{e}.log" for e in ("typhoon", "stockfish", "crafty")]


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def longest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("width", [60, 100, 140])
def test_report_and_compare_fit_the_width(width, tmp_path):
    traces = FIX.parent / "traces"
    commands = [
        ["compare", traces / "typhoon_start.log", traces / "stockfish_start.log"],  # with divergence sentences
        ["report", *LOGS],
        ["report", *LOGS, "--by", "phase,position"],
        ["compare", LOGS[1], LOGS[2], "--top", "0"],
        ["compare", LOGS[1], LOGS[2], LOGS[1], "--top", "0"],
    ]
    for command in commands:
        by_option = run(*command, "--width", width)
        assert by_option.exit_code == 0, by_option.output
        assert longest(by_option.stdout) <= width, (command, width)
        by_env = run(*command, env={"COLUMNS": str(width)})
        assert by_env.stdout == by_option.stdout
    # The numbers are all still there: every act of the report appears at every width.
    text = run("report", *LOGS, "--width", width).stdout
    for act in ("NULLBAILOUT", "LMR-RESEARCH", "HIST-PRUNE", "PROBCUT"):
        assert act in text


def test_default_width_is_100_when_piped(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert fit_width(None) in (DEFAULT_WIDTH, fit_width(None))  # a terminal's own width when there is one
    assert fit_width(72) == 72
    res = run("compare", LOGS[1], LOGS[2], "--top", "0", env={"COLUMNS": ""})
    assert res.exit_code == 0 and longest(res.stdout) <= 100


@pytest.mark.parametrize("fmt", ["markdown", "csv", "json"])
def test_other_formats_ignore_the_width(fmt):
    narrow = run("compare", LOGS[1], LOGS[2], "--top", "0", "--format", fmt, "--width", "40")
    wide = run("compare", LOGS[1], LOGS[2], "--top", "0", "--format", fmt, "--width", "300")
    assert narrow.exit_code == 0 and narrow.stdout == wide.stdout


def test_wide_few_row_tables_are_transposed_one_engine_per_column():
    rep = report_frames(*concat(*(read_fixture(p) for p in LOGS)), tables=["lmr"])
    text = render_plain(rep.sections, 60)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("column"))
    assert re.split(r"\s{2,}", header.strip()) == ["column", "typhoon", "stockfish", "crafty"]
    row = next(line for line in lines if line.startswith("admission_pct_real"))
    # LMR / real moves: typhoon 4/26, stockfish 6/41, crafty 3/31 (32 MOVE records, one NMP).
    assert re.split(r"\s{2,}", row.strip()) == ["admission_pct_real", "15.38", "14.63", "9.68"]
    assert longest(text) <= 60


def test_many_row_tables_split_into_column_groups_repeating_the_keys():
    rep = report_frames(*concat(*(read_fixture(p) for p in LOGS)), tables=["ebf"], by="position")
    text = render_plain([s for s in rep.sections if s.name == "ebf_ply"] + [rep.sections[0]], 50)
    assert longest(text) <= 50
    ebf_block = text.split("== Effective branching factor ==")[1]
    headers = [line for line in ebf_block.splitlines() if line.startswith("engine")]
    assert len(headers) >= 2 and all(h.split()[:2] == ["engine", "position"] for h in headers)


@pytest.mark.parametrize("width", [60, 100])
def test_rich_tables_fit_the_console(width):
    rep = report_frames(*concat(*(read_fixture(p) for p in LOGS)))
    console = Console(record=True, width=width, color_system=None)
    render_rich(rep.sections, console)
    text = console.export_text()
    assert longest(text) <= width and "…" not in text
    assert "NULLBAILOUT" in text and "admission_pct_real" in text

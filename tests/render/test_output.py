"""Rich output, atomic writes, the compare sections and the divergence hook."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console


from support.tracebuild import read_fixture

from treediff.render.output import render, write_text_atomic
from treediff.render.text import render_rich
from treediff.report.compare import Side, compare
from treediff.store.source import FrameSource
from treediff.report.core import report_frames

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def test_rich_tables_show_titles_and_numbers():
    rep = report_frames(*read_fixture(FIX / "report_typhoon.log"), tables=["acts", "lmr"])
    console = Console(record=True, width=200, color_system=None)
    render_rich(rep.sections, console)
    text = console.export_text()
    assert "MOVE decisions per act" in text
    assert "35.71" in text and "NULLBAILOUT" in text  # LMP 10/28; the rarest act
    assert "15.38" in text  # LMR 4 / 26 real moves


def test_write_text_atomic_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "r.txt"
    target.write_text("old")
    import treediff.render.output as out

    def boom(*_):
        raise OSError("disk full")

    monkeypatch.setattr(out.os, "replace", boom)
    with pytest.raises(OSError):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def _sides():
    sf, cr = read_fixture(FIX / "report_stockfish.log"), read_fixture(FIX / "report_crafty.log")
    return Side("stockfish", FrameSource(*sf)), Side("crafty", FrameSource(*cr))


def test_divergence_hook_is_rendered_when_filled():
    comparison = compare(*_sides())
    names = [s.name for s in comparison.sections()]
    assert names == ["nodes", "acts", "kinds", "lmr", "ebf", "skips"]
    comparison.divergences = pd.DataFrame({"path": ["d2d4"], "nodes_a": [6], "nodes_b": [2]})
    comparison.divergence_kinds = pd.DataFrame({"kind_a": ["PRUNE"], "REDUCE": [3]})
    names = [s.name for s in comparison.sections()]
    assert names[-2:] == ["divergences", "divergence_kinds"]
    assert "| d2d4 | 6 | 2 |" in render(comparison.sections(), "markdown")


def test_compare_plain_text_one_screen():
    text = render(compare(*_sides()).sections(), "table")
    assert "A = stockfish, B = crafty" in text
    assert "(all)" in text and "1.077" in text  # 14 / 13
    assert len(text.splitlines()) < 60


def test_rich_never_cuts_cells_on_a_narrow_terminal():
    rep = report_frames(*read_fixture(FIX / "report_stockfish.log"), tables=["lmr", "ebf"])
    console = Console(record=True, width=60, color_system=None)
    render_rich(rep.sections, console)
    text = console.export_text()
    assert "…" not in text
    assert "admission_pct_real" in text and "14.63" in text  # 6 / 41 real moves
    assert "2.449" in text  # sqrt(6), p1's iterations 3 and 1

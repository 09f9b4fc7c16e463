"""report --plot and compare --plot: the figures' data (matplotlib artists), checked against hand counts.

Hand counts (fixtures/hand/report_*.log, tests/report/test_tables.py's docstring has the full tally):

* typhoon (p1, opening): 28 MOVE records: FULL 11, LMP 10, LMR 4, NMP 1, EXT 1, NULLBAILOUT 1.
* stockfish (p1 opening 32 MOVE, p2 endgame 10 MOVE: 42): FULL 16, FP-QUIET 10, LMR 6, SEE-QUIET 3,
  HIST-PRUNE 3, LMR-RESEARCH 2, NMP 1, PROBCUT 1.  LMR: 6 in p1, 0 in p2.
* crafty (p1 25 MOVE, p2 7 MOVE: 32): FULL 14, FP-QUIET 7, LMP 5, LMR 3 (2 in p1, 1 in p2), LMR-RESEARCH 2,
  NMP 1.  Nodes: stockfish p1 10, p2 4; crafty p1 10, p2 3 (ratio 1 and 4/3).
"""
from __future__ import annotations

import math

import pandas as pd
import pytest
from click.testing import CliRunner

from support.tracebuild import read_fixture
from treediff.cli import main
from treediff.render import plots
from treediff.report.core import build_report
from treediff.report.plotdata import engine_ebf_cumulative
from treediff.store.source import FrameSource

pytest.importorskip("matplotlib")


@pytest.fixture
def captured(monkeypatch):
    """The figures the CLI saves, by file name (captured just before they are closed)."""
    figures: dict = {}
    real = plots._save

    def keep(fig, path):
        figures[path.name] = fig
        return real(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def hand(fixtures_dir, name):
    return str(fixtures_dir / "hand" / f"report_{name}.log")


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def bar_widths(ax) -> list[float]:
    return [round(p.get_width(), 9) for p in ax.patches]


def panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]


def test_report_acts_share_order_scale_and_kind_colours(fixtures_dir, tmp_path, captured):
    run("report", hand(fixtures_dir, "typhoon"), hand(fixtures_dir, "stockfish"), "--table", "nodes",
        "--plot", tmp_path / "p")
    fig = captured["acts.png"]
    typhoon, stockfish = panels(fig)
    assert (typhoon.get_title(), stockfish.get_title()) == ("typhoon", "stockfish")
    # one act order for both panels (sharey), kinds in Kind order: SEARCH, REDUCE, RESEARCH, EXTEND, PRUNE, ...
    rows = [t.get_text() for t in typhoon.get_yticklabels()]
    assert rows == ["FULL", "LMR", "LMR-RESEARCH", "EXT", "LMP", "FP-QUIET", "HIST-PRUNE", "SEE-QUIET", "NMP",
                    "NULLBAILOUT", "PROBCUT"]
    # the other panel shares that y axis (its labels are the first panel's: not repeated)
    assert typhoon.get_shared_y_axes().joined(typhoon, stockfish) and typhoon.get_ylim() == stockfish.get_ylim()
    # one x-scale: the largest share (stockfish FULL 16/42 = 38.1 %, typhoon FULL 11/28 = 39.3 %) fits both
    assert typhoon.get_xlim() == stockfish.get_xlim()
    assert typhoon.get_xlim()[1] >= 100 * 11 / 28
    pct = dict(zip(rows, bar_widths(typhoon)))
    assert pct["FULL"] == pytest.approx(100 * 11 / 28) and pct["LMP"] == pytest.approx(100 * 10 / 28)
    assert pct["FP-QUIET"] == 0 and pct["PROBCUT"] == 0  # not typhoon acts: an empty row, same place
    sf = dict(zip(rows, bar_widths(stockfish)))
    assert sf["FP-QUIET"] == pytest.approx(100 * 10 / 42) and sf["LMP"] == 0
    # colour by kind: every PRUNE act red, the REDUCE act orange, in both panels
    from matplotlib.colors import to_hex

    colours = dict(zip(rows, (to_hex(p.get_facecolor()) for p in stockfish.patches)))
    assert {colours[a] for a in ("LMP", "FP-QUIET", "HIST-PRUNE", "SEE-QUIET")} == {plots.KIND_COLOURS["PRUNE"]}
    assert colours["LMR"] == plots.KIND_COLOURS["REDUCE"] and colours["NMP"] == plots.KIND_COLOURS["NULL_PROBE"]
    assert len(set(plots.KIND_COLOURS.values())) == len(plots.KIND_COLOURS)  # one colour per kind


def _line_colours(ax) -> dict[str, str]:
    from matplotlib.colors import to_hex

    return {line.get_label(): to_hex(line.get_color()) for line in ax.get_lines()}


def _bar_colours(ax) -> dict[str, str]:
    from matplotlib.colors import to_hex

    handles, labels = ax.get_legend_handles_labels()
    return {label: to_hex(h.patches[0].get_facecolor()) for h, label in zip(handles, labels)}


def test_engine_colours_follow_input_order_in_every_plot(fixtures_dir, tmp_path, captured):
    first, second = plots.ENGINE_PALETTE[:2]
    run("report", hand(fixtures_dir, "stockfish"), hand(fixtures_dir, "crafty"), "--table", "nodes",
        "--plot", tmp_path / "a")
    assert _line_colours(captured["ebf_iter.png"].axes[0]) == {"stockfish": first, "crafty": second}
    assert _bar_colours(captured["lmr_phase.png"].axes[0]) == {"stockfish": first, "crafty": second}
    run("report", hand(fixtures_dir, "crafty"), hand(fixtures_dir, "stockfish"), "--table", "nodes",
        "--plot", tmp_path / "b")
    assert _line_colours(captured["ebf_iter.png"].axes[0]) == {"crafty": first, "stockfish": second}
    assert _bar_colours(captured["lmr_phase.png"].axes[0]) == {"crafty": first, "stockfish": second}
    assert plots.engine_colours(["x", "y", "x"]) == plots.engine_colours(["x", "y"])


def test_lmr_by_phase_bars_are_the_hand_counts(fixtures_dir, tmp_path, captured):
    run("report", hand(fixtures_dir, "stockfish"), hand(fixtures_dir, "crafty"), "--table", "nodes",
        "--plot", tmp_path / "p")
    ax = captured["lmr_phase.png"].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["opening", "endgame"]
    heights = [p.get_height() for p in ax.patches]  # stockfish's bars, then crafty's
    assert heights == pytest.approx([100 * 6 / 32, 0.0, 100 * 2 / 25, 100 * 1 / 7])


def test_ebf_plot_honours_by_phase(fixtures_dir, tmp_path, captured):
    run("report", hand(fixtures_dir, "stockfish"), "--table", "nodes", "--by", "phase", "--plot", tmp_path / "p")
    ax = captured["ebf_iter.png"].axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    # p1 (opening) has iterations 1-3: ebf_iter at d=3 = sqrt(6 / 1) (RESULT records of iterations 3 and 1);
    # p2 (endgame) has iterations 1-2 only: no d, d-2 pair, so no line.
    assert list(lines) == ["stockfish · opening"]
    assert list(lines["stockfish · opening"].get_ydata()) == pytest.approx([math.sqrt(6 / 1)])
    acts = panels(captured["acts.png"])
    assert [a.get_title() for a in acts] == ["stockfish · opening", "stockfish · endgame"]


def test_engine_sourced_ebf_is_cumulative_labelled_and_never_below_one(fixtures_dir):
    records, searches = read_fixture(fixtures_dir / "hand" / "report_typhoon.log")
    eng = searches.copy()
    eng["search"] = 1
    eng["engine"] = pd.array(["ethereal"], dtype="string")
    eng["node_source"] = "engine"
    eng["result_nodes"] = 0
    eng["max_iter"] = 0
    eng["end_nodes"] = 1000
    # cumulative info nodes 100, 300, 350, 1000: iteration 3 cost 50, iteration 1 cost 100
    both = pd.concat([searches.assign(iter_nodes=None),
                      eng.assign(iter_nodes="[[1, 100], [2, 300], [3, 350], [4, 1000]]")], ignore_index=True)
    source = FrameSource(records, both)
    rep = build_report(source, ("acts", "ebf"), ("engine",))
    differenced = rep["ebf_iter"][rep["ebf_iter"]["engine"].astype(str) == "ethereal"]
    assert differenced.set_index("iter")["ebf_iter"][3] == pytest.approx(math.sqrt(50 / 100))  # < 1: the trap
    cumulative = engine_ebf_cumulative(both, ("engine",))
    assert cumulative["iter"].tolist() == [3, 4]
    assert cumulative["ebf_cumulative"].tolist() == pytest.approx([math.sqrt(350 / 100), math.sqrt(1000 / 300)])
    fig = plots.ebf_figure(rep["ebf_iter"], rep["ebf"], cumulative, ("engine",),
                           plots.engine_colours(["typhoon", "ethereal"]))
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert set(lines) == {"typhoon", "ethereal (engine nodes, cumulative)"}
    eth = lines["ethereal (engine nodes, cumulative)"]
    assert list(eth.get_xdata()) == [3, 4] and min(eth.get_ydata()) >= 1
    assert eth.get_linestyle() == "--"
    # typhoon (traced): sqrt(N(3)/N(1)) = sqrt(7 / 1) RESULT records
    assert list(lines["typhoon"].get_ydata()) == pytest.approx([math.sqrt(7)])


def test_cumulative_skips_a_restarted_counter(fixtures_dir):
    _, searches = read_fixture(fixtures_dir / "hand" / "report_typhoon.log")
    s = searches.assign(node_source="engine", iter_nodes="[[1, 100], [2, 300], [3, 50], [4, 900]]")
    out = engine_ebf_cumulative(s, ("engine",))
    # d=3: C(3) = 50 < C(1) = 100 (a restarted counter) is no pair; d=4: sqrt(900 / 300)
    assert out["iter"].tolist() == [4] and out["ebf_cumulative"].tolist() == pytest.approx([math.sqrt(3)])


def test_compare_plots(fixtures_dir, tmp_path, captured):
    result = run("compare", hand(fixtures_dir, "stockfish"), hand(fixtures_dir, "crafty"), "--plot", tmp_path / "c",
                 "--format", "json")
    for name in ("node_ratio.png", "acts.png", "lmr_phase.png"):
        assert (tmp_path / "c" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert name in result.stderr
    ratio = captured["node_ratio.png"].axes[0]
    assert [t.get_text() for t in ratio.get_xticklabels()] == ["p1", "p2"]
    # bars from 1 to the ratio (up: A's tree bigger); a 4/3 spread keeps a linear scale
    assert [p.get_y() for p in ratio.patches] == pytest.approx([1.0, 1.0])
    assert [p.get_y() + p.get_height() for p in ratio.patches] == pytest.approx([10 / 10, 4 / 3])
    assert ratio.get_yscale() == "linear"
    assert ratio.get_legend().get_texts()[0].get_text() == "stockfish / crafty"
    sf, cr = panels(captured["acts.png"])
    assert (sf.get_title(), cr.get_title()) == ("stockfish", "crafty")
    assert sf.get_xlim() == cr.get_xlim()
    assert sf.get_shared_y_axes().joined(sf, cr)
    kinds = [t.get_text() for t in sf.get_yticklabels()]
    # rows of the kind-aligned table: SEARCH (30), PRUNE (16 + 12) x3 rows, REDUCE (9), RESEARCH (4), ...
    assert kinds[:4] == ["SEARCH", "PRUNE", "PRUNE", "PRUNE"]
    names = [[t.get_text().strip() for t in ax.texts] for ax in (sf, cr)]
    assert names[0][:4] == ["FULL", "FP-QUIET", "HIST-PRUNE", "SEE-QUIET"]
    assert names[1][:3] == ["FULL", "FP-QUIET", "LMP"]  # crafty has two PRUNE acts: the third row is empty
    assert bar_widths(sf)[:2] == pytest.approx([100 * 16 / 42, 100 * 10 / 42])
    assert bar_widths(cr)[:4] == pytest.approx([100 * 14 / 32, 100 * 7 / 32, 100 * 5 / 32, 0.0])
    lmr = captured["lmr_phase.png"].axes[0]
    assert [p.get_height() for p in lmr.patches] == pytest.approx([100 * 6 / 32, 0.0, 100 * 2 / 25, 100 * 1 / 7])
    assert _bar_colours(lmr) == {"stockfish": plots.ENGINE_PALETTE[0], "crafty": plots.ENGINE_PALETTE[1]}


def test_plot_svg(fixtures_dir, tmp_path):
    rep = build_report(FrameSource(*read_fixture(fixtures_dir / "hand" / "report_typhoon.log")), ("acts", "ebf", "lmr"),
                       ("engine",))
    files = plots.write_plots(rep["acts"], rep["ebf_iter"], rep["lmr"].assign(phase="opening"), tmp_path,
                              ebf=rep["ebf"], image_format="svg")
    assert [f.name for f in files] == ["acts.svg", "ebf_iter.svg", "lmr_phase.svg"]
    assert all(f.read_text().lstrip().startswith("<?xml") for f in files)


def test_analytics_charts_use_the_engine_palette_in_input_order(fixtures_dir, tmp_path, monkeypatch):
    from matplotlib.colors import to_hex

    from treediff.render import analytics_plots

    figures: dict = {}
    real = analytics_plots._save

    def keep(fig, path):
        figures[path.name] = fig
        return real(fig, path)

    monkeypatch.setattr(analytics_plots, "_save", keep)
    for first, second in (("stockfish", "crafty"), ("crafty", "stockfish")):
        run("report", hand(fixtures_dir, first), hand(fixtures_dir, second), "--table", "nodes",
            "--plot", tmp_path / first)
        ax = figures["cutoff_mn.png"].axes[0]
        handles, labels = ax.get_legend_handles_labels()
        shown = {label: to_hex(h.patches[0].get_facecolor()) for h, label in zip(handles, labels)}
        assert shown == {first: plots.ENGINE_PALETTE[0], second: plots.ENGINE_PALETTE[1]}


def test_png_and_html_charts_give_an_engine_one_colour():
    from treediff.render.html import ENGINE_COLOURS

    assert plots.ENGINE_PALETTE == ENGINE_COLOURS

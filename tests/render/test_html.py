"""The one-file HTML page (treediff.render.html): structure, escaping, self-containment, embedded rows.

The browser behaviour (expanding, links, notation, filter) is tested in test_html_browser.py.
Expected rows of the hand fixture align_basic (A = align_basic_a.log, B = align_basic_b.log,
iteration 3) are counted by hand from the two logs:

  ply 1: 0000 (differs: NMP 3->0 vs 3->1), e2e4 (same), d2d4 (differs: LMR then LMR-RESEARCH vs LMR),
         g1f3 (differs: FULL vs FP-QUIET), b1c3 (same: SEE-QUIET), c2c4 (only B);
  below: 0000/e7e5 (only B), e2e4/e7e5 and e2e4/e7e5/g1f3 (same), e2e4/a7a6 (differs: FP-QUIET vs FULL),
         d2d4/d7d5 (differs), d2d4/d7d5/c2c4 (only A), g1f3/g8f6, g1f3/g8f6/b1c3, g1f3/d7d5 (only A),
         c2c4/e7e5 (only B).
  Nodes (RESULT records of iteration 3): A 9, B 8; frontier deltas: g1f3 +3 (A 3, B 0), d2d4 +2
  (A 3, B 1), c2c4 -2 (A 0, B 2), 0000 -1 (A 0, B 1), e2e4/a7a6 -1 (A 0, B 1).
"""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from support.html_helpers import (A, B, HOSTILE_ID, ROOT, TACTICAL_A, TACTICAL_B, diff_page, embedded, full_paths,
                                  hostile_logs)
from treediff.cli import main
from treediff.render.html import frame_html, script_json

EXPECTED_STATUS = {
    "": "same", "0000": "differs", "0000/e7e5": "only-B", "e2e4": "same", "e2e4/e7e5": "same",
    "e2e4/e7e5/g1f3": "same", "e2e4/a7a6": "differs", "d2d4": "differs", "d2d4/d7d5": "differs",
    "d2d4/d7d5/c2c4": "only-A", "g1f3": "differs", "g1f3/g8f6": "only-A", "g1f3/g8f6/b1c3": "only-A",
    "g1f3/d7d5": "only-A", "b1c3": "same", "c2c4": "only-B", "c2c4/e7e5": "only-B",
}
#: Rows with nothing divergent at or below them (the only-divergent filter hides exactly these).
NOT_DIVERGENT = {"e2e4/e7e5", "e2e4/e7e5/g1f3", "b1c3"}

def test_embedded_rows_match_the_hand_count():
    data = embedded(diff_page(A, B))["t0"]
    paths = full_paths(data)
    assert sorted(paths) == sorted(EXPECTED_STATUS)
    statuses = {p: data["statuses"][s] for p, s in zip(paths, data["status"])}
    assert statuses == EXPECTED_STATUS
    div = {p for p, d in zip(paths, data["div"]) if not d}
    assert div == NOT_DIVERGENT
    at = {p: i for i, p in enumerate(paths)}
    assert data["a_nodes"][at[""]] == 9 and data["b_nodes"][at[""]] == 8
    assert data["a_nodes"][at["g1f3"]] == 3 and data["b_nodes"][at["g1f3"]] == 0
    assert data["a_acts"][at["d2d4"]] == "LMR→LMR-RESEARCH" and data["b_acts"][at["d2d4"]] == "LMR"
    # a side without the path has nothing in its cells
    assert data["a_acts"][at["c2c4"]] is None and data["a_nodes"][at["c2c4"]] is None
    assert data["b_nodes"][at["g1f3/g8f6"]] is None
    # source lines: A decides e2e4/a7a6 on line 13 of align_basic_a.log, B on line 13 of align_basic_b.log
    lines_a = A.read_text().splitlines()
    assert lines_a[data["a_line"][at["e2e4/a7a6"]] - 1].startswith("MOVE path=e2e4/a7a6 ")
    lines_b = B.read_text().splitlines()
    assert lines_b[data["b_line"][at["e2e4/a7a6"]] - 1].startswith("MOVE path=e2e4/a7a6 ")


def test_divergence_links_point_at_their_rows():
    page = diff_page(A, B)
    data = embedded(page)["t0"]
    paths = full_paths(data)
    links = re.findall(r'<li><a class="divlink" href="#t0-r(\d+)">\[([^\]]+)\] ([^<]*)</a></li>', page)
    assert len(links) == 5  # the five frontier rows
    shown = {}
    for row, delta, sentence in links:
        path = paths[int(row)]
        assert f"`{path}`" in sentence  # the sentence names the row the link opens
        shown[path] = delta
    assert shown == {"g1f3": "+3", "d2d4": "+2", "c2c4": "-2", "0000": "-1", "e2e4/a7a6": "-1"}


def test_page_is_self_contained():
    page = diff_page(TACTICAL_A, TACTICAL_B)
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"\ssrc\s*=", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert page.count("<script") == page.count("</script>") == 2  # the rows, the page's code


def test_hostile_strings_are_escaped(tmp_path):
    a, b = hostile_logs(tmp_path)
    page = diff_page(a, b)
    # nothing the log wrote can open or close an element: every <script> is one of the page's two
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and "alert(2)>" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # shown as text in the headings
    data = embedded(page)["t0"]
    assert data["position"] == HOSTILE_ID  # and read back exactly by JSON.parse


def test_script_json_escapes_what_could_end_the_script():
    text = script_json({"s": "</script><!--&\u2028\u2029"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"s": "</script><!--&\u2028\u2029"}


def test_frame_html_escapes_cells_and_formats_numbers():
    frame = pd.DataFrame({"engine": ["<b>x</b>"], "count": [1234567], "pct_of_moves": [12.3456]})
    out = frame_html(frame)
    assert "&lt;b&gt;x&lt;/b&gt;" in out and "<b>" not in out
    assert ">1,234,567<" in out and ">12.35<" in out


def _cli(args, **kwargs):
    return CliRunner().invoke(main, args, catch_exceptions=False, **kwargs)


def test_report_and_compare_write_a_page(tmp_path):
    report = tmp_path / "report.html"
    result = _cli(["report", str(TACTICAL_A), str(TACTICAL_B), "--format", "html", "-o", str(report)])
    assert result.exit_code == 0, result.output
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and 'id="sec-acts"' in page
    assert "<section class=\"tree\"" not in page  # one input, no alignment
    # the acts table's counts are typhoon_py's own counters (fixtures/traces/*.counters.json)
    counters = json.loads(TACTICAL_A.with_suffix(".counters.json").read_text())
    acts = page.split('id="sec-acts"')[1].split("</section>")[0]
    for act, count in counters["acts"].items():
        assert re.search(rf'<td class="txt">typhoon</td><td class="txt">{act}</td><td class="txt">[A-Z_]+</td>'
                         rf'<td class="num">{count:,}</td>', acts), act
    compare = tmp_path / "compare.html"
    result = _cli(["compare", str(TACTICAL_A), str(TACTICAL_B), "--format", "html", "-o", str(compare)])
    assert result.exit_code == 0, result.output
    page = compare.read_text(encoding="utf-8")
    trees = embedded(page)
    assert list(trees) == ["t0"] and trees["t0"]["position"] == "tactical-f6f7"
    paths = full_paths(trees["t0"])
    links = re.findall(r'href="#t0-r(\d+)"', page)
    assert links
    # every linked row is one of the divergences compare lists, by path
    listed = re.findall(r"<li><a class=\"divlink\" href=\"#t0-r(\d+)\">tactical-f6f7: \[[^\]]+\] ([^<]*)</a>", page)
    assert listed and all(f"`{paths[int(r)]}`" in s for r, s in listed)


def test_html_to_stdout_when_piped_and_refused_on_a_terminal(monkeypatch):
    result = _cli(["report", str(A), "--format", "html"])
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")
    import treediff.cli.html_output as html_output

    monkeypatch.setattr(html_output, "_stdout_is_terminal", lambda: True)
    result = CliRunner().invoke(main, ["report", str(A), "--format", "html"])
    assert result.exit_code == 2 and "give -o FILE.html" in result.output


@pytest.mark.parametrize("verb", ["report", "compare"])
def test_html_output_is_atomic_and_not_over_an_input(tmp_path, verb):
    target = tmp_path / "copy.log"
    target.write_bytes(A.read_bytes())
    args = [verb, str(target)] + ([str(B)] if verb == "compare" else []) + ["--format", "html", "-o", str(target)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert target.read_bytes() == A.read_bytes()


def test_compare_page_links_each_divergence_to_its_positions_tree(tmp_path):
    a = ROOT / "fixtures" / "traces" / "typhoon_batch3.log"
    b = ROOT / "fixtures" / "traces" / "stockfish_batch3.log"
    out = tmp_path / "compare.html"
    result = _cli(["compare", str(a), str(b), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    trees = embedded(page)
    listed = re.findall(r'<li><a class="divlink" href="#t(\d+)-r(\d+)">([^:<]+): \[[^\]]+\] ([^<]*)</a>', page)
    assert listed
    positions = set()
    for tree, row, position, sentence in listed:
        data = trees[f"t{tree}"]
        assert data["position"] == position  # the link opens the tree of the divergence's position
        assert f"`{full_paths(data)[int(row)]}`" in sentence
        positions.add(position)
    # one tree per position the listed divergences name (batch3: three positions, the top 10 touch several)
    assert positions == {str(t["position"]) for t in trees.values()}
    assert len(positions) >= 2 and positions <= {"kiwipete", "rook-endgame", "start"}


def test_rows_without_their_parent_are_top_rows_with_full_paths():
    from treediff.align import LOAD_COLUMNS, align
    from treediff.align.view import select_rows
    from treediff.parse.source import open_source
    from treediff.render.html import tree_data

    columns = tuple(dict.fromkeys((*LOAD_COLUMNS, "line")))
    alignment = align(open_source(str(A)).records(columns), open_source(str(B)).records(columns))
    rows = select_rows(alignment.rows, only_diff=True)
    data = tree_data(alignment, rows)
    shown = dict(zip(full_paths(data), data["parent"]))
    assert set(shown) == {p for p, s in EXPECTED_STATUS.items() if s != "same"}
    # e2e4 (same) is not shown: e2e4/a7a6 is a top row named by its full path; g1f3/g8f6 keeps its parent
    assert shown["e2e4/a7a6"] == -1 and data["uci"][full_paths(data).index("e2e4/a7a6")] == "e2e4/a7a6"
    assert shown["g1f3/g8f6"] == full_paths(data).index("g1f3")


def test_act_panels_share_one_scale():
    from treediff.render.html import hbar_panels

    acts = pd.DataFrame({"engine": ["one", "one", "two"], "act": ["LMP", "FULL", "FULL"],
                         "pct_of_moves": [80.0, 20.0, 40.0]})
    svg = hbar_panels(acts, "engine", "act", "pct_of_moves", "acts", "%", ["one", "two"])
    widths = {t: float(w) for w, t in re.findall(r'<rect [^>]*width="([\d.]+)"[^>]*><title>([^<]*)</title>', svg)}
    one_full, two_full, one_lmp = (widths[k] for k in ("one FULL: 20.00 %", "two FULL: 40.00 %", "one LMP: 80.00 %"))
    assert two_full == pytest.approx(2 * one_full, abs=0.1) and one_lmp == pytest.approx(4 * one_full, abs=0.1)
    # one act order for both panels: LMP (the largest anywhere) first, then FULL, in each panel
    labels = re.findall(r'class="label">([A-Z]+)</text>', svg)
    assert labels == ["LMP", "FULL", "LMP", "FULL"]
    # engine colours by input order, whatever the frame's order
    assert 'fill="#0072b2"><title>one' in svg and 'fill="#e69f00"><title>two' in svg


def test_html_extension_chooses_the_page(tmp_path):
    out = tmp_path / "page.html"
    result = _cli(["compare", str(A), str(B), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(full_paths(embedded(out.read_text(encoding="utf-8"))["t0"])) == sorted(EXPECTED_STATUS)


def test_diff_writes_the_page_of_its_selection(tmp_path):
    out = tmp_path / "diff.html"
    result = _cli(["diff", str(A), str(B), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert embedded(page) == embedded(diff_page(A, B))  # the command's page is the library's
    result = _cli(["diff", str(A), str(B), "--under", "e2e4", "-o", str(tmp_path / "under.html")])
    assert result.exit_code == 0, result.output
    data = embedded((tmp_path / "under.html").read_text(encoding="utf-8"))["t0"]
    assert sorted(full_paths(data)) == ["e2e4", "e2e4/a7a6", "e2e4/e7e5", "e2e4/e7e5/g1f3"]
    assert data["parent"][full_paths(data).index("e2e4")] == -1
    result = _cli(["diff", str(A), str(B), "--only-diff", "-o", str(tmp_path / "only.html")])
    assert result.exit_code == 0, result.output
    data = embedded((tmp_path / "only.html").read_text(encoding="utf-8"))["t0"]
    assert set(full_paths(data)) == {p for p, s in EXPECTED_STATUS.items() if s != "same"}


def test_visits_all_rows_carry_their_label(tmp_path):
    # visits_verify.log: e2e4 is visited twice (the verification search at d=5, then its real move loop at
    # d=11: two RESULTs at ply 1); with --visits all the verification visit is its own row after e2e4's.
    log = ROOT / "fixtures" / "hand" / "visits_verify.log"
    out = tmp_path / "visits.html"
    result = _cli(["diff", str(log), str(log), "--visits", "all", "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = embedded(out.read_text(encoding="utf-8"))["t0"]
    paths = full_paths(data)
    at = paths.index("e2e4")
    assert paths[at + 1] == "e2e4" and data["visit"][at] is None and data["visit"][at + 1] == "verify"


def test_report_charts_show_the_engines_own_act_shares(tmp_path):
    out = tmp_path / "report.html"
    result = _cli(["report", str(TACTICAL_A), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    charts = out.read_text(encoding="utf-8").split('id="sec-charts"')[1]
    counters = json.loads(TACTICAL_A.with_suffix(".counters.json").read_text())
    total = sum(counters["acts"].values())  # typhoon_py counts every MOVE decision by act
    for act, count in counters["acts"].items():
        assert f"<title>typhoon {act}: {100 * count / total:,.2f} % of MOVE decisions</title>" in charts

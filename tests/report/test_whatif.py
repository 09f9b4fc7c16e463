"""treediff whatif on the hand-counted cutoff trace (tests/support/analytics_traces.py; tries in test_fh.py).

Rule ``mn >= 2``:
  --as prune: eligible first kinds SEARCH, REDUCE, EXTEND: 9 SEARCH + 1 REDUCE = 10 tries, 3 failed high
    (e2e4/d7d5, c2c4/e7e5, g1f3/d7d5).  Admitted (mn >= 2): d2d4, c2c4, g1f3, b1c3, e2e4/d7d5, c2c4/e7e5 = 6
    of 12 tries (50 %), 2 failed high (e2e4/d7d5, c2c4/e7e5).  Subtree nodes (RESULT records at or below each
    try's path, counted on the trace): d2d4 2, c2c4 4, g1f3 4, b1c3 1, e2e4/d7d5 1, c2c4/e7e5 2 -> 14.
    Silent misses, largest first: c2c4/e7e5 (2 nodes, line 16), e2e4/d7d5 (1 node, line 6).
  --as reduce: eligible SEARCH, EXTEND: 9 tries, 2 failed high; admitted d2d4, c2c4, g1f3, b1c3, e2e4/d7d5:
    5 tries, 1 failed high, 12 subtree nodes.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from support.analytics_traces import CUTOFF_CASES, source_of, write
from treediff.cli import main
from treediff.model.errors import InputError
from treediff.report.expr import ExprError
from treediff.report.whatif import parse_rule, whatif


def test_whatif_prune_hand_counted(tmp_path):
    table, misses = whatif(source_of(tmp_path, CUTOFF_CASES), "mn >= 2")
    row = table.frame.iloc[0]
    assert (row["all_tries"], row["tries"], row["fail_highs"]) == (12, 6, 2)
    assert row["share_pct"] == pytest.approx(50.0)
    assert row["fh_pct"] == pytest.approx(100 / 3)
    assert (row["baseline_tries"], row["baseline_fail_highs"]) == (10, 3)
    assert row["subtree_nodes"] == 14
    m = misses.frame
    assert list(m["path"]) == ["c2c4/e7e5", "e2e4/d7d5"]
    assert list(m["subtree_nodes"]) == [2, 1]
    assert list(m["line"]) == [16, 6]
    assert list(m["kind"]) == ["REDUCE", "SEARCH"]


def test_whatif_reduce_hand_counted(tmp_path):
    table, misses = whatif(source_of(tmp_path, CUTOFF_CASES), "mn >= 2", as_="reduce", top=1)
    row = table.frame.iloc[0]
    assert (row["tries"], row["fail_highs"], row["baseline_tries"], row["baseline_fail_highs"]) == (5, 1, 9, 2)
    assert row["subtree_nodes"] == 12
    assert list(misses.frame["path"]) == ["e2e4/d7d5"]


def test_whatif_string_and_boolean_rule(tmp_path):
    table, _ = whatif(source_of(tmp_path, CUTOFF_CASES), 'kind == "SEARCH" and (mn == 1 or not depth >= 4)')
    # SEARCH tries with mn 1 or depth < 4: e2e4 (mn 1), e2e4/e7e5, e2e4/d7d5, c2c4/g8f6, g1f3/d7d5 (depth 3, 3,
    # 3, 1): 5 tries; failed high: e2e4/d7d5, g1f3/d7d5.
    row = table.frame.iloc[0]
    assert (row["tries"], row["fail_highs"]) == (5, 2)


@pytest.mark.parametrize("rule, message", [
    ('__import__("os")', "function calls are not allowed at position 11"),
    ("kind.__class__", "unexpected character '.' at position 5"),
    ("mn.real > 1", "unexpected character '.' at position 3"),
    ("open(1)", "function calls are not allowed at position 5"),
    ("colour == 1", "unknown name 'colour'"),
    ("mn >= 3 and", "expected a value but found the end at position 12"),
    ("kind > 3", "cannot compare kind with 3"),
    ("1 < mn < 3", "chained comparisons"),
    ("mn >= 3; import os", "unexpected character ';' at position 8"),
    ("(mn >= 3", "expected ')'"),
    ("", "empty expression"),
])
def test_rules_refused_with_position(rule, message):
    with pytest.raises(ExprError, match="^--rule: ") as info:
        parse_rule(rule)
    assert message in str(info.value)
    assert isinstance(info.value, InputError)


def test_cli_whatif_json_and_bad_rule(tmp_path):
    log = write(tmp_path, CUTOFF_CASES)
    runner = CliRunner()
    ok = runner.invoke(main, ["whatif", str(log), "--rule", "mn >= 2", "--top", "1", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    text = json.dumps(data)
    assert "silent_misses" in text and "c2c4/e7e5" in text and "e2e4/d7d5" not in text
    bad = runner.invoke(main, ["whatif", str(log), "--rule", '__import__("os").system("true")'])
    assert bad.exit_code == 2
    assert "--rule: unexpected character '.' at position 17" in bad.output and "Traceback" not in bad.output


def test_whatif_reports_the_shadow_figures(tmp_path):
    from support.analytics_traces import SHADOW_CASES

    sections = whatif(source_of(tmp_path, SHADOW_CASES), "mn >= 2")
    shadow = {s.name: s for s in sections}["shadow"].frame.set_index("act")
    assert shadow["shadow_tries"].to_dict() == {"LMP": 4, "LMR": 1}
    assert shadow["shadow_fail_highs"].to_dict() == {"LMP": 2, "LMR": 0}


def test_constant_rules(tmp_path):
    source = source_of(tmp_path, CUTOFF_CASES)
    everything = whatif(source, "true")[0].frame.iloc[0]
    assert (everything["tries"], everything["baseline_tries"]) == (10, 10)
    nothing = whatif(source, "false or mn > 100")[0].frame.iloc[0]
    assert nothing["tries"] == 0 and nothing["subtree_nodes"] == 0


def test_cli_whatif_output_file_and_refusals(tmp_path):
    log = write(tmp_path, CUTOFF_CASES)
    runner = CliRunner()
    out = tmp_path / "w.json"
    ok = runner.invoke(main, ["whatif", str(log), "--rule", "mn >= 2", "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    names = [t["name"] for t in json.loads(out.read_text())["tables"]]  # JSON from the extension
    assert names == ["whatif", "silent_misses"]
    ok = runner.invoke(main, ["whatif", str(log), "--rule", "mn >= 2", "--format", "csv", "-o", str(tmp_path / "d/")])
    assert ok.exit_code == 0, ok.output
    assert "c2c4/e7e5" in (tmp_path / "d" / "silent_misses.csv").read_text()
    same = runner.invoke(main, ["whatif", str(log), "--rule", "mn >= 2", "-o", str(log)])
    assert same.exit_code == 2 and log.read_text() == CUTOFF_CASES  # never written over an input
    missing = runner.invoke(main, ["whatif", str(tmp_path / "nope.log"), "--rule", "mn >= 2"])
    assert missing.exit_code == 2 and "Traceback" not in missing.output

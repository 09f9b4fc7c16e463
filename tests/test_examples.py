"""examples/*.py and the code blocks of docs/API.md, run as a user runs them (subprocesses from the repo root).

Numbers are checked against what does not come from treediff: typhoon_py's own counters
(fixtures/traces/*.counters.json, written by the engine while it searched) and the hand count of the
browse fixture pair (tests/render/test_browse_model.py's docstring).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "fixtures" / "traces"
HAND = ROOT / "fixtures" / "hand"
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _run(script: Path | str, *args: str, code: str | None = None) -> str:
    argv = [sys.executable, "-c", code] if code is not None else [sys.executable, str(script), *args]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{script}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


def _counters(name: str) -> dict:
    return json.loads((TRACES / f"{name}.counters.json").read_text())


def test_every_example_is_tested():
    assert {p.name for p in EXAMPLES} == {"open_source.py", "report_table.py", "align_trees.py",
                                          "attribute_divergences.py"}


def test_open_source_counts_match_the_engines_counters():
    out = [json.loads(line) for line in _run(ROOT / "examples/open_source.py").splitlines()]
    counters = _counters("typhoon_tactical-f6f7")
    (search,), totals = out[:-1], out[-1]
    assert search["engine"] == "typhoon" and search["position"] == "tactical-f6f7"
    assert search["iterations"] == counters["iterations"]
    assert search["result_nodes"] == counters["nodes"]
    assert totals["RESULT"] == counters["nodes"]
    assert totals["MOVE"] == sum(counters["acts"].values())
    assert totals["records"] == totals["MOVE"] + totals["RESULT"]


def test_report_table_matches_the_engines_counters():
    names = ["typhoon_tactical-f6f7", "stockfish_tactical-f6f7", "crafty_tactical-f6f7"]
    out = json.loads(_run(ROOT / "examples/report_table.py", *(str(TRACES / f"{n}.log") for n in names)))
    for name in names:
        engine = name.split("_")[0]
        counters = _counters(name)
        assert out[engine]["nodes"] == counters["nodes"], engine
        assert out[engine]["acts"] == counters["acts"], engine


def test_align_trees_on_the_hand_pair():
    out = json.loads(_run(ROOT / "examples/align_trees.py", str(HAND / "browse_a.log"), str(HAND / "browse_b.log")))
    assert (out["iter_a"], out["iter_b"], out["rows"]) == (4, 4, 10)
    assert out["status"] == {"same": 3, "differs": 2, "only-A": 4, "only-B": 1}
    assert (out["nodes_a"], out["nodes_b"]) == (8, 6)
    # Shared paths with a decision: e2e4 and e2e4/e7e5 (FULL/FULL), g1f3 (FULL/LMR), d2d4 (FP-QUIET/FULL).
    assert out["kinds"] == {"SEARCH / SEARCH": 2, "SEARCH / REDUCE": 1, "PRUNE / SEARCH": 1}


def test_align_trees_default_pair_agrees_with_diff_csv():
    out = json.loads(_run(ROOT / "examples/align_trees.py"))
    csv_text = _run("diff", code=(
        "from treediff.cli import main; import sys; "
        f"sys.argv = ['treediff', 'diff', {str(TRACES / 'typhoon_tactical-f6f7.log')!r}, "
        f"{str(TRACES / 'stockfish_tactical-f6f7.log')!r}, '--format', 'csv']; main()"))
    import csv
    import io

    table = list(csv.DictReader(io.StringIO(csv_text)))
    assert out["rows"] == len(table)
    statuses: dict[str, int] = {}
    for row in table:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    assert out["status"] == statuses
    # The root row's subtree counts are the aligned iteration's RESULT records: at most all of the search's.
    assert 0 < out["nodes_a"] <= _counters("typhoon_tactical-f6f7")["nodes"]
    assert 0 < out["nodes_b"] <= _counters("stockfish_tactical-f6f7")["nodes"]


def test_attribute_divergences_on_the_hand_pair():
    out = json.loads(_run(ROOT / "examples/attribute_divergences.py",
                          str(HAND / "browse_a.log"), str(HAND / "browse_b.log")))
    total = out["total"]
    assert (total["nodes_a"], total["nodes_b"], total["delta"]) == (8, 6, 2)
    assert (total["shared_residual"], total["frontier_rows"]) == (0, 3)
    assert [(r["path"], r["delta"]) for r in out["top"]] == [("e2e4/e7e5/g1f3", 3), ("d2d4", -2), ("c2c4", 1)]
    assert out["adds_up"] is True
    assert [(k["kind_a"], k["kind_b"], k["delta"]) for k in out["by_kind"]] == [
        ("SEARCH", "REDUCE", 3), ("PRUNE", "SEARCH", -2), ("SEARCH", "(absent)", 1), ("(shared)", "(shared)", 0)]


def test_attribute_divergences_default_pair_adds_up():
    out = json.loads(_run(ROOT / "examples/attribute_divergences.py"))
    total = out["total"]
    assert out["adds_up"] is True
    assert total["delta"] == total["nodes_a"] - total["nodes_b"]
    assert sum(k["delta"] for k in out["by_kind"]) == total["delta"]
    assert len(out["top"]) == 6 and out["top"][-1]["path"] == "(rest)"  # 5 shown and the rest
    assert abs(out["top"][0]["delta"]) >= abs(out["top"][4]["delta"])


def _api_blocks() -> list[str]:
    text = (ROOT / "docs" / "API.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_api_doc_has_code():
    assert len(_api_blocks()) >= 5


@pytest.mark.parametrize("index", range(len(_api_blocks())))
def test_api_doc_block_runs(index):
    _run(f"docs/API.md block {index + 1}", code=_api_blocks()[index])

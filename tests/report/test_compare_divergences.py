"""`treediff compare` shows the aligner's costliest divergences and kind x kind table."""
import json
from pathlib import Path

from click.testing import CliRunner

from treediff.cli import main

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def _compare(*extra):
    result = CliRunner().invoke(
        main, ["compare", str(HAND / "align_basic_a.log"), str(HAND / "align_basic_b.log"), "--format", "json", *extra]
    )
    assert result.exit_code == 0, result.output
    return {t["name"]: t for t in json.loads(result.output)["tables"]}


def test_compare_lists_costliest_divergence_first():
    tables = _compare("--top", "3")
    rows = tables["divergences"]["rows"]
    assert len(rows) == 3
    # Hand-counted in tests/align/test_align_hand.py: A searched g1f3 (3 RESULT nodes below it), B pruned it.
    first = rows[0]
    assert (first["position"], first["path"], first["status"], first["cost"]) == ("start", "g1f3", "differs", 3)
    assert first["sentence"] == "A searched `g1f3` at full depth (3→2 plies), 3 nodes below it; B pruned it (FP-QUIET)"
    assert [r["cost"] for r in rows] == sorted((r["cost"] for r in rows), reverse=True)
    kinds = {r["A"]: r for r in tables["divergence_kinds"]["rows"]}
    assert kinds["SEARCH"]["PRUNE"] >= 1


def test_compare_top_zero_skips_alignment():
    tables = _compare("--top", "0")
    assert "divergences" not in tables and "divergence_kinds" not in tables

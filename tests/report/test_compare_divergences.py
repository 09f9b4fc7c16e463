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
    return {t["name"]: t for t in json.loads(result.stdout)["tables"]}


def test_compare_lists_costliest_divergence_first():
    tables = _compare("--top", "3")
    rows = tables["divergences"]["rows"]
    assert len(rows) == 4  # three frontier rows and (rest)
    # Hand-counted in tests/align/test_attribution.py: A searched g1f3 (3 RESULT nodes below it), B pruned it.
    first = rows[0]
    assert (first["position"], first["path"], first["status"], first["delta"]) == ("start", "g1f3", "differs", 3)
    assert first["sentence"] == ("A searched `g1f3` at full depth (3→2 plies); B pruned it (FP-QUIET); "
                                 "delta +3 nodes (A 3, B 0)")
    assert [(r["path"], r["delta"]) for r in rows] == [("g1f3", 3), ("d2d4", 2), ("c2c4", -2), ("(rest)", -2)]
    total = tables["divergence_total"]["rows"]
    assert total == [{"positions": 1, "nodes_a": 9, "nodes_b": 8, "delta": 1, "shared_residual": 0,
                      "shared_residual_a": 3, "shared_residual_b": 3, "frontier_rows": 5}]
    assert sum(r["delta"] for r in rows) + total[0]["shared_residual"] == total[0]["delta"]
    by_kind = {(r["kind_a"], r["kind_b"]): r["delta"] for r in tables["divergence_by_kind"]["rows"]}
    assert by_kind == {("SEARCH", "PRUNE"): 3, ("REDUCE", "REDUCE"): 2, ("(absent)", "SEARCH"): -2,
                       ("PRUNE", "SEARCH"): -1, ("NULL_PROBE", "NULL_PROBE"): -1, ("(shared)", "(shared)"): 0}
    by_ply = [(r["ply"], r["delta"]) for r in tables["divergence_by_ply"]["rows"]]
    assert by_ply == [(1, 2), (2, -1), ("(shared)", 0)]
    kinds = {r["A"]: r for r in tables["divergence_kinds"]["rows"]}
    assert kinds["SEARCH"]["PRUNE"] >= 1


def test_compare_top_zero_skips_alignment():
    tables = _compare("--top", "0")
    assert not {"divergences", "divergence_total", "divergence_by_kind", "divergence_by_ply",
                "divergence_kinds"} & set(tables)

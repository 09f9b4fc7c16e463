"""The parser against hand-written fixtures whose numbers were counted by hand (see the .log files)."""
from pathlib import Path

import pytest

from treediff.parse.pipeline import parse_logs

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def _records(name):
    result = parse_logs([HAND / name])
    return result, result.records.to_pandas()


def test_stockfish_minimal_counts_and_columns():
    result, rec = _records("minimal_stockfish.log")
    # Hand count: 9 MOVE + 4 RESULT lines between the header and END.
    assert (rec.tag == "MOVE").sum() == 9
    assert (rec.tag == "RESULT").sum() == 4
    search = result.searches.to_pylist()[0]
    assert search["result_nodes"] == 4 and search["end_nodes"] == 4
    assert search["iterations"] == 2 and search["max_iter"] == 2
    assert search["position"] == "start" and search["phase"] == "opening" and search["phase_source"] == "header"
    assert result.warnings == []
    # Line numbers are the source file's (line 1 is a comment, 2 the header, 3 ITER).
    assert rec.line.tolist()[:2] == [4, 5]
    assert rec.seq.tolist() == list(range(13))
    # Records before the second ITER belong to iteration 1, after it to iteration 2.
    assert rec.iter.tolist() == [1, 1] + [2] * 11
    root = rec[rec.tag == "RESULT"].iloc[0]
    assert root.path == "" and root.ply == 0 and root.score == 30
    lmr = rec[rec.act == "LMR"].iloc[0]
    assert (lmr.depth, lmr.new_depth, lmr.reduction, lmr.mn) == (2.0, 0.0, 1.0, 2)
    assert lmr.kind == "REDUCE" and lmr.node_type == "CUT" and lmr.alpha == 25 and lmr.beta == 26
    null = rec[rec.act == "NMP"].iloc[0]
    assert null.move == "0000" and bool(null.null_move) and null.kind == "NULL_PROBE"
    assert set(rec[rec.act.isin(["FP-QUIET", "SEE-QUIET"])].kind) == {"PRUNE"}
    assert rec[rec.act == "LMR-RESEARCH"].kind.tolist() == ["RESEARCH"]


def test_typhoon_units_promotion_and_null():
    result, rec = _records("minimal_typhoon.log")
    assert (rec.tag == "MOVE").sum() == 7 and (rec.tag == "RESULT").sum() == 4
    lmr = rec[rec.act == "LMR"].iloc[0]
    # 128 ticks = 2 plies; nd=48 ticks = 0.75 ply; red=80 ticks = 1.25 plies (unit 64).
    assert (lmr.depth, lmr.new_depth, lmr.reduction) == (2.0, 0.75, 1.25)
    promo = rec[(rec.tag == "MOVE") & (rec.act == "EXT")].iloc[0]
    assert promo.path == "f6f7/g8h7/f7e8q" and promo.move == "f7e8q" and promo.depth == 0.25
    null = rec[rec.act == "NMP"].iloc[0]
    assert null.path == "0000" and bool(null.null_move)
    assert sorted(rec.kind.dropna().unique()) == ["EXTEND", "NULL_PROBE", "PRUNE", "REDUCE", "SEARCH"]
    s = result.searches.to_pylist()[0]
    assert s["unit"] == 64 and s["end_nodes"] == 4 == s["result_nodes"] and s["end_best"] == "f6f7"
    # No phase label: the material rule decides.  M = 28 per side = 56 (not an endgame), but only
    # 2 back-rank pieces (Bc1, Bf1) stand on their initial squares, so not an opening either.
    assert s["phase_source"] == "material" and s["phase"] == "middlegame"


def test_crafty_san_resolved_and_illegal_flagged():
    result, rec = _records("minimal_crafty.log")
    assert (rec.tag == "MOVE").sum() == 10 and (rec.tag == "RESULT").sum() == 5
    paths = rec[rec.tag == "MOVE"].path.tolist()
    assert paths[:5] == ["e2e4", "e2e4/d7d5", "e2e4/d7d5/e4d5", "e2e4/d7d5/e4d5/d8d5", "e2e4/d7d5/b1c3"]
    assert "e2e4/0000" in paths and "g1f3" in paths
    flagged = rec[rec.problem == "unresolved-move"]
    # Qd3 (blocked by the d2 pawn) and O-O (pieces in the way) are illegal at the start: lines 16 and 17.
    assert flagged.line.tolist() == [16, 17]
    assert any("does not resolve" in w and "16" in w for w in result.warnings)
    assert result.searches.to_pylist()[0]["end_best"] == "e2e4"
    g1f3 = rec[rec.path == "g1f3"]
    assert g1f3.tag.tolist() == ["MOVE", "MOVE", "RESULT"]
    assert g1f3.act.tolist()[:2] == ["LMR", "LMR-RESEARCH"]


@pytest.mark.parametrize("name", ["minimal_stockfish.log", "minimal_typhoon.log", "minimal_crafty.log"])
def test_same_tables_from_every_compression(tmp_path, name):
    import gzip

    import zstandard

    raw = (HAND / name).read_bytes()
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "a.log.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    plain = parse_logs([HAND / name]).records
    for path in ("a.log.gz", "a.log.zst"):
        assert parse_logs([tmp_path / path]).records.equals(plain)

"""The committed example traces are real, consistent and reproducible byte for byte."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.typhoon_trace_tools import read_trace
from typhoon_py.fixtures import FIXTURES, PROFILE_NAMES, regenerate

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
EPD = ROOT / "fixtures" / "positions20.epd"
ALL_FILES = [f.file_name(p) for f in FIXTURES for p in PROFILE_NAMES]


def test_every_fixture_exists_is_small_and_matches_its_counters():
    for name in ALL_FILES:
        log = TRACES / name
        assert log.stat().st_size < 400_000, name  # records carry see=/hist=/why= (about 25 bytes a line)
        searches = read_trace(log.read_text(encoding="utf-8"))
        counters = json.loads((TRACES / name.replace(".log", ".counters.json")).read_text())
        if isinstance(counters, dict):
            counters = [counters]
        assert len(counters) == len(searches)
        for s, c in zip(searches, counters):
            assert s.header["engine"] == name.split("_")[0]
            assert len(s.tagged("RESULT")) == int(s.tagged("END")[0]["nodes"]) == c["nodes"]
            assert dict(s.acts()) == c["acts"]
            assert len(s.tagged("ITER")) == c["iterations"]


@pytest.mark.parametrize("name", ["crafty_tactical-f6f7.log", "stockfish_batch3.log"])
def test_regeneration_reproduces_fixture_bytes(tmp_path, name):
    regenerate(tmp_path, EPD, only=[name])
    assert (tmp_path / name).read_bytes() == (TRACES / name).read_bytes()
    counters = name.replace(".log", ".counters.json")
    assert (tmp_path / counters).read_bytes() == (TRACES / counters).read_bytes()


def test_positions_file_has_twenty_labelled_positions():
    from typhoon_py import read_epd

    positions = read_epd(EPD)
    assert len(positions) == 20 and len({p.id for p in positions}) == 20
    phases = [p.phase for p in positions]
    assert (phases.count("opening"), phases.count("middlegame"), phases.count("endgame")) == (7, 7, 6)
    assert all(len(p.board.piece_map()) >= 8 and p.board.is_valid() for p in positions)
    tactical = next(p for p in positions if p.id == "tactical-f6f7")
    assert tactical.board.board_fen() == "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2"


treediff_cli = pytest.importorskip("treediff.cli")


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_treediff_parse_of_the_batch_fixture_equals_the_counters(tmp_path, profile):
    import pyarrow.parquet as pq
    from click.testing import CliRunner
    from collections import Counter

    from typhoon_py import read_epd

    name = f"{profile}_batch3"
    out = tmp_path / "b.parquet"
    res = CliRunner().invoke(treediff_cli.main, ["parse", str(TRACES / f"{name}.log"), "-o", str(out),
                                                 "--positions", str(EPD), "--strict"])
    assert res.exit_code == 0, res.output
    counters = json.loads((TRACES / f"{name}.counters.json").read_text())
    rec = pq.read_table(out, columns=["search", "tag", "act"]).to_pylist()
    searches = pq.read_table(tmp_path / "b.searches.parquet").to_pylist()
    phases = {p.id: p.phase for p in read_epd(EPD)}
    assert len(searches) == len(counters) == 3
    for k, c in enumerate(counters):
        rows = [r for r in rec if r["search"] == k]
        assert dict(Counter(r["act"] for r in rows if r["tag"] == "MOVE")) == c["acts"]
        assert sum(r["tag"] == "RESULT" for r in rows) == c["nodes"]
        s = next(s for s in searches if s["search"] == k)
        assert s["result_nodes"] == s["end_nodes"] == c["nodes"] and s["iterations"] == c["iterations"]
        assert s["phase"] == phases[s["position"]]

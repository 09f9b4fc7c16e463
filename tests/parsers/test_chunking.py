"""Chunk boundaries must not change the result: state (search, ITER, context) carries from chunk to chunk."""
import io
from pathlib import Path

import pyarrow as pa
import pytest

import treediff.parsers.core as core
from treediff.parsers.core import parse_logs

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def _plain(table: pa.Table) -> list[dict]:
    return table.to_pylist()


@pytest.mark.parametrize("name", ["minimal_stockfish.log", "minimal_typhoon.log", "minimal_crafty.log",
                                  "align_multi.log"])
@pytest.mark.parametrize("all_contexts", [False, True])
def test_tiny_chunks_give_the_same_rows(monkeypatch, name, all_contexts):
    whole = parse_logs([HAND / name], all_contexts=all_contexts)
    monkeypatch.setattr(core, "CHUNK_BYTES", 97)  # a few lines per chunk, boundaries mid-line
    chunked = parse_logs([HAND / name], all_contexts=all_contexts)
    assert _plain(chunked.records) == _plain(whole.records)
    assert chunked.searches.to_pylist() == whole.searches.to_pylist()
    assert chunked.warnings == whole.warnings


def test_search_without_fen_across_chunks(monkeypatch, tmp_path):
    # Two searches, the second without fen=: its fen/phase are null in every chunk it spans.
    log = tmp_path / "t.log"
    log.write_text(
        "TREEDUMP engine=stockfish v=1 id=a fen=8/5pk1/6p1/3R4/5P2/6PK/r7/8 w - - 0 50\n"
        "MOVE path=d5d7 ply=1 mn=1 d=1 nd=0 act=FULL\n"
        "RESULT path=- ply=0 d=1 score=3\n"
        "TREEDUMP engine=stockfish v=1 id=b\n"
        + "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\n" * 6
        + "RESULT path=- ply=0 d=1 score=3\n"
    )
    monkeypatch.setattr(core, "CHUNK_BYTES", 64)
    rec = parse_logs([log]).records.to_pylist()
    assert [r["position"] for r in rec] == ["a", "a"] + ["b"] * 7
    assert [r["fen"] is None for r in rec] == [False, False] + [True] * 7
    assert [r["phase"] for r in rec] == ["endgame"] * 2 + [None] * 7
    assert [r["seq"] for r in rec] == [0, 1] + list(range(7))


def test_finished_searches_drop_their_move_resolvers(monkeypatch):
    # Memory stays flat over many SAN searches: only the open search keeps its boards and path cache.
    monkeypatch.setattr(core, "CHUNK_BYTES", 200)
    text = (HAND / "minimal_crafty.log").read_bytes()
    parser = core.TreedumpParser()
    seen = []
    original = parser._release_finished_searches

    def spy(open_search):
        original(open_search)
        seen.append(sum(s._resolver is not None for s in parser.searches))

    monkeypatch.setattr(parser, "_release_finished_searches", spy)
    parser.parse_stream(io.BytesIO(text * 3), "three.log")
    assert len(parser.searches) == 3
    assert max(seen) <= 1 and seen[-1] == 0
    result = parser.finish()
    assert result.records.num_rows == 3 * parse_logs([HAND / "minimal_crafty.log"]).records.num_rows

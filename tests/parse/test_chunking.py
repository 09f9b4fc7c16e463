"""Chunk boundaries must not change the result: state (search, ITER, context) carries from chunk to chunk."""
import io
import re
from pathlib import Path

import pyarrow as pa
import pytest

from treediff.parse import chunks
from treediff.parse.pipeline import TreedumpParser, parse_logs, parse_to_parquet

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def _plain(table: pa.Table) -> list[dict]:
    return table.to_pylist()


@pytest.mark.parametrize("name", ["minimal_stockfish.log", "minimal_typhoon.log", "minimal_crafty.log",
                                  "align_multi.log"])
@pytest.mark.parametrize("all_contexts", [False, True])
def test_tiny_chunks_give_the_same_rows(monkeypatch, name, all_contexts):
    whole = parse_logs([HAND / name], all_contexts=all_contexts)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 97)  # a few lines per chunk, boundaries mid-line
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
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64)
    rec = parse_logs([log]).records.to_pylist()
    assert [r["position"] for r in rec] == ["a", "a"] + ["b"] * 7
    assert [r["fen"] is None for r in rec] == [False, False] + [True] * 7
    assert [r["phase"] for r in rec] == ["endgame"] * 2 + [None] * 7
    assert [r["seq"] for r in rec] == [0, 1] + list(range(7))


def test_finished_searches_drop_their_move_resolvers(monkeypatch):
    # Memory stays flat over many SAN searches: only the open search keeps its boards and path cache.
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 200)
    text = (HAND / "minimal_crafty.log").read_bytes()
    parser = TreedumpParser()
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


TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _with_unknown_acts(src: Path, every: int, act: str) -> tuple[str, dict[int, int]]:
    """The log with every ``every``-th MOVE's act replaced; also the hand count of replaced MOVEs per search."""
    out, per_search, search, moves = [], {}, -1, 0
    for line in src.read_text().splitlines(keepends=True):
        if line.startswith("TREEDUMP"):
            search += 1
        elif line.startswith("MOVE "):
            moves += 1
            if moves % every == 0:
                line = re.sub(r" act=\S+", f" act={act}", line, count=1)
                per_search[search] = per_search.get(search, 0) + 1
        out.append(line)
    return "".join(out), per_search


@pytest.mark.parametrize("chunk_bytes", [None, 3000])
def test_unknown_acts_are_other_and_counted_per_search(monkeypatch, tmp_path, chunk_bytes):
    # Three searches (one dialect per log, so kind comes from the act dictionary), and the same
    # searches of two dialects concatenated (kind looked up per row): counts match the hand count.
    if chunk_bytes:
        monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    sf, sf_counts = _with_unknown_acts(TRACES / "stockfish_batch3.log", 7, "WEIRD")
    ty, ty_counts = _with_unknown_acts(TRACES / "typhoon_batch3.log", 5, "ODD")
    for text, expected in [(sf, {s: ("WEIRD", n) for s, n in sf_counts.items()}),
                           (sf + ty, {**{s: ("WEIRD", n) for s, n in sf_counts.items()},
                                      **{s + 3: ("ODD", n) for s, n in ty_counts.items()}})]:
        log = tmp_path / "acts.log"
        log.write_text(text)
        for result in (parse_logs([log]), parse_to_parquet([log], tmp_path / "o.parquet")):
            for search, (act, n) in expected.items():
                assert any(f"unknown act={act} ({n} records)" in w for w in result.warnings
                           if f": search {search} (" in w), (search, act, n, result.warnings)
        records = parse_logs([log]).records
        kinds = dict(zip(records.column("act").to_pylist(), records.column("kind").to_pylist()))
        assert kinds["WEIRD"] == "OTHER" and kinds["FULL"] == "SEARCH" and kinds["LMR"] == "REDUCE"
        assert kinds.get(None, None) is None  # RESULT rows: no act, no kind


def _chunks_of(stream, chunk_bytes: int, monkeypatch) -> tuple[list[bytes], bytes, int]:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    read: list[int] = []
    reader = chunks.ChunkReader(stream, "x.log", read.append)
    got = [bytes(tail) + bytes(memoryview(block)[:cut]) for tail, block, cut in reader]
    return got, reader.tail, sum(read)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       st.booleans(), st.integers(min_value=1, max_value=50))
def test_reading_in_place_gives_the_same_chunks(lines, last_newline, chunk_bytes):
    """A plain stream (BufferedReader: read into a buffer after the tail) and any other stream (read, then joined by
    the consumer) are cut into the same chunks, leave the same tail and report the same bytes; lines longer than a
    block included."""
    data = b"\n".join(lines) + (b"\n" if last_newline else b"")
    with pytest.MonkeyPatch.context() as mp:
        plain = _chunks_of(io.BufferedReader(io.BytesIO(data)), chunk_bytes, mp)
        other = _chunks_of(io.BytesIO(data), chunk_bytes, mp)
    assert plain == other
    assert b"".join(plain[0]) + plain[1] == data and plain[2] == len(data)

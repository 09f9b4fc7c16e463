"""treediff/parse/index.py: a log's searches found by a byte scan, and one search's lines parsed alone.

The reference is the full parse of the same log (``open_source``): the scan must find exactly the searches it
finds (same numbers, positions, engines, FENs, phases, header lines), and each search read alone must give
that search's searches row (every column) and records (every column) and the warnings about it.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support.benchmark_scripts import load_benchmark
from treediff.model.errors import InputError
from treediff.parse import index as log_index
from treediff.parse.source import IndexedLogSource, open_one_search, open_source
from treediff.parse.state import ParseOptions

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
REAL = next((p for p in (ROOT.parent / "shared" / "real-traces" / "stockfish",
                         Path("/work/shared/real-traces/stockfish")) if p.is_dir()), None)
FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWI = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
BODY = ["ITER d=1", "MOVE path=a2a3 ply=1 mn=1 d=2 nd=1 act=FULL", "RESULT path=a2a3 ply=1 d=1 score=10",
        "RESULT path=- ply=0 d=2 score=10", "END nodes=2"]
BODY_START = [line.replace("a2a3", "e2e4") for line in BODY]

#: Lines the parser reads as headers, and lines it does not, in one log (bytes: a BOM, CR, tabs, bad UTF-8).
ODD_LOG = b"\n".join([
    b"# TREEDUMP engine=stockfish v=1 id=comment fen=" + FEN.encode(),  # a comment
    b"MOVE path=e2e4 ply=1 mn=1 d=2 act=FULL",  # a record before any header (dropped, warned)
    b"",
    b"TREEDUMP engine=stockfish v=1 id=first fen=" + FEN.encode(),
    *[line.encode() for line in BODY_START],
    b"   TREEDUMP engine=stockfish v=1 id=indented fen=" + KIWI.encode(),
    *[line.encode() for line in BODY],
    b"\xef\xbb\xbfTREEDUMP engine=stockfish v=1 id=bom fen=" + KIWI.encode(),  # files concatenated
    *[line.encode() for line in BODY],
    b"TREEDUMP\tengine=stockfish\tv=1 id=tabs phase=endgame fen=" + KIWI.encode() + b"\r",
    *[line.encode() + b"\r" for line in BODY],
    b"TREEDUMPX engine=stockfish v=1 id=not-a-header fen=" + KIWI.encode(),  # an unknown tag
    b"MOVE path=a2a3 ply=1 mn=1 d=2 act=FULL why=TREEDUMP",  # TREEDUMP inside a line
    b"\rTREEDUMP engine=typhoon v=1 unit=64 fen=" + KIWI.encode(),  # no id: fen:... from the FEN
    *[line.encode() for line in BODY],
    b"TREEDUMP engine=stockfish v=1 id=noend oops fen=" + FEN.encode(),  # a malformed token: still a header
    *[line.encode() for line in BODY_START[:-1]],
    b"TREEDUMP engine=stockfish v=1 id=last fen=" + FEN.encode(),
    *[line.encode() for line in BODY_START],
    b"TREEDUMP engine=stockfish v=1 id=unfinished fen=" + FEN.encode(),  # no newline: not a line
])


def _columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Values only (categoricals as objects), so frames read from different row groups compare."""
    out = frame.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype) or str(out[column].dtype) == "string":
            out[column] = out[column].astype(object)
    return out.reset_index(drop=True)


def assert_same_as_full_parse(path: Path, **options) -> IndexedLogSource:
    """Every search of ``path`` read alone equals the full parse's: searches row, records, warnings about it."""
    full = open_source(path, **options)
    lazy = open_one_search(path, **options)
    assert isinstance(lazy, IndexedLogSource)
    cols = ["engine", "search", "position", "fen", "phase"]
    pd.testing.assert_frame_equal(lazy.searches, full.searches[cols])
    assert [s.header_line for s in lazy.index.spans] == full.searches["first_line"].tolist()
    for row in range(len(full.searches)):
        keep = np.zeros(len(full.searches), dtype=bool)
        keep[row] = True
        alone, whole = lazy.select(keep).parsed(), full.select(keep)
        assert type(alone).__name__ == "CombinedSource"
        # (Values: a column with nulls in some search, e.g. end_nodes, is float in the full parse's frame.)
        pd.testing.assert_frame_equal(alone.searches, whole.searches, check_dtype=False)
        pd.testing.assert_frame_equal(_columns(alone.records()), _columns(whole.records()))
        number = int(full.searches["search"].iloc[row])
        own = f"{path}: search {number} ("  # (the prefix of the warnings about this search)
        assert [w for w in alone.warnings if w.startswith(own)] == [w for w in full.warnings if w.startswith(own)]
        if len(alone._parts[0][1]) == 1:  # read alone: no warning about another search
            assert all(w.startswith(own) for w in alone.warnings if ": search " in w)
    return lazy


def test_odd_header_lines(tmp_path):
    path = tmp_path / "odd.log"
    path.write_bytes(ODD_LOG)
    lazy = assert_same_as_full_parse(path)
    positions = lazy.searches["position"].tolist()
    assert positions[:4] == ["first", "indented", "bom", "tabs"] and positions[4].startswith("fen:")
    assert positions[5:] == ["noend", "last"]  # "unfinished" has no newline; TREEDUMPX is no header
    # The first search is read with the lines before it: the record before any header is warned, as in full.
    first = lazy.select(np.arange(7) == 0).parsed()
    assert any("before any TREEDUMP header" in w and "(line 2)" in w for w in first.warnings)
    last = lazy.select(np.arange(7) == 6).parsed()
    assert any("truncated (no newline at end of file; dropped) (line 47)" in w for w in last.warnings)


@pytest.mark.parametrize("method", ["d-bytes", "lines"])
@pytest.mark.parametrize("block", [200, log_index.SCAN_BYTES])
def test_scan_methods_and_blocks_agree(tmp_path, monkeypatch, method, block):
    """Both ways of finding headers in a block, and blocks far smaller than the log, give the same index."""
    path = tmp_path / "odd.log"
    path.write_bytes(ODD_LOG + b"\n" + (TRACES / "stockfish_batch3.log").read_bytes())
    expected = log_index.index_log(path, ParseOptions())
    monkeypatch.setattr(log_index, "SCAN_BYTES", block)
    if method == "lines":
        monkeypatch.setattr(log_index, "MAX_D_BYTES", -1)
    got = log_index.index_log(path, ParseOptions())
    assert got is not None and expected is not None
    assert got.spans == expected.spans and got.rows == expected.rows and len(got.spans) == 11
    assert got.end_lines == (expected.end_lines if method == "d-bytes" else None)
    assert expected.end_lines == [1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1]  # (noend and unfinished have none)


@pytest.mark.parametrize("name", ["typhoon_batch3.log", "stockfish_batch3.log", "crafty_batch3.log"])
def test_batch3_fixtures(name):
    assert_same_as_full_parse(TRACES / name)


@pytest.mark.skipif(REAL is None, reason="shared/real-traces/stockfish is not there")
def test_real_traces_concatenated(tmp_path):
    """Real Stockfish traces (a header ctx=, several contexts) one after the other."""
    path = tmp_path / "real.log"
    path.write_bytes(b"".join(f.read_bytes() for f in sorted(REAL.glob("*.log"))))
    assert_same_as_full_parse(path)


def test_generated_log_with_epd_and_forced_dialect(tmp_path):
    path = tmp_path / "gen.log"
    load_benchmark("gen_logs").generate("typhoon", 20_000, str(path), seed=5, depth=4)
    assert_same_as_full_parse(path)
    epd = tmp_path / "p.epd"
    gen = load_benchmark("gen_logs")
    epd.write_text("".join(f"{' '.join(fen.split()[:4])} id \"e{k}\"; c0 \"phase=endgame\";\n"
                           for k, fen in enumerate(gen.FENS)))
    text = path.read_text().replace(" id=gen", " name=gen").replace("engine=typhoon ", "")
    (tmp_path / "noid.log").write_text(text)
    lazy = assert_same_as_full_parse(tmp_path / "noid.log", positions=str(epd), engine="typhoon")
    assert set(lazy.searches["position"]) == {"e0", "e1", "e2", "e3"} and set(lazy.searches["phase"]) == {"endgame"}


def _two_searches(tmp_path: Path, name: str = "two.log") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([f"TREEDUMP engine=stockfish v=1 id=a fen={KIWI}", *BODY,
                               f"TREEDUMP engine=stockfish v=1 id=b fen={KIWI}", *BODY]) + "\n")
    return path


def test_where_the_log_is_parsed_whole(tmp_path, monkeypatch):
    two = _two_searches(tmp_path)
    assert isinstance(open_one_search(two), IndexedLogSource)
    gz = tmp_path / "two.log.gz"
    gz.write_bytes(gzip.compress(two.read_bytes()))
    one = tmp_path / "one.log"
    one.write_text("\n".join([f"TREEDUMP engine=stockfish v=1 id=a fen={KIWI}", *BODY]) + "\n")
    bad_utf8 = tmp_path / "bad.log"
    bad_utf8.write_bytes(two.read_bytes().replace(b"id=b", b"id=\xff"))
    no_engine = tmp_path / "noengine.log"
    no_engine.write_text(two.read_text().replace("engine=stockfish v=1 id=b", "v=1 id=b"))
    for path in (gz, one, bad_utf8, no_engine):
        assert log_index.index_log(path, ParseOptions()) is None, path
    for path in (gz, one, bad_utf8):
        assert not isinstance(open_one_search(path), IndexedLogSource), path
    with pytest.raises(InputError, match=f"{no_engine}:7: TREEDUMP header has no engine= key"):
        open_one_search(no_engine)  # the full parse's error
    assert log_index.index_log(two, ParseOptions(engine="martian")) is None
    assert log_index.index_log(two, ParseOptions(all_contexts=True)) is None
    monkeypatch.setattr(log_index, "SCAN_BYTES", 40)  # a line longer than the scan's block
    assert log_index.index_log(two, ParseOptions()) is None
    monkeypatch.undo()
    monkeypatch.setenv(log_index.FULL_PARSE_ENV, "1")
    assert not isinstance(open_one_search(two), IndexedLogSource)


def test_a_search_read_alone_that_could_differ_is_parsed_whole(tmp_path):
    """No END before another search (a later search could name it), two END lines (it names an earlier one),
    an id from the search number (no id=, no fen=): the whole log is parsed, then the search selected."""
    path = tmp_path / "x.log"
    path.write_text("\n".join([f"TREEDUMP engine=stockfish v=1 id=a fen={KIWI}", *BODY[:-1],
                               f"TREEDUMP engine=stockfish v=1 id=b fen={KIWI}", *BODY, "END nodes=2",
                               "TREEDUMP engine=stockfish v=1", *BODY, f"TREEDUMP engine=stockfish v=1 id=d fen={KIWI}",
                               *BODY]) + "\n")
    lazy = open_one_search(path)
    assert isinstance(lazy, IndexedLogSource) and lazy.searches["position"].tolist() == ["a", "b", "search-2", "d"]
    full = open_source(path)
    for row, alone in enumerate([False, False, False, True]):
        keep = np.arange(4) == row
        parsed = lazy.select(keep).parsed()
        (_, ids, offset), = parsed._parts  # read alone: search 0 of its own parse, numbered on by the offset
        assert (len(ids) == 1 and offset == row) == alone
        pd.testing.assert_frame_equal(_columns(parsed.records()), _columns(full.select(keep).records()))
        pd.testing.assert_frame_equal(parsed.searches, full.select(keep).searches, check_dtype=False)


def _spy_alone(lazy: IndexedLogSource, row: int) -> bool:
    """Whether search ``row`` of ``lazy`` is read alone (its own parse, numbered on), not by a full parse."""
    (_, ids, offset), = lazy.select(np.arange(len(lazy.searches)) == row).parsed()._parts
    return len(ids) == 1 and offset == row


def test_searches_without_end(tmp_path):
    """A search without END is read alone when the scan's END counts prove no later search names it."""
    no_end = BODY[:-1]
    # An engine that never writes END: every search is read alone, as the full parse reads it.
    path = tmp_path / "noend.log"
    path.write_text("\n".join(line for k in range(4) for line in
                              [f"TREEDUMP engine=stockfish v=1 id=s{k} fen={KIWI}", *no_end]) + "\n")
    lazy = assert_same_as_full_parse(path)
    assert lazy.index.end_lines == [0, 0, 0, 0] and all(_spy_alone(lazy, k) for k in range(4))
    # s0 without END; s1 with one; s2 without: nothing after s0 can name it (a later search would name s2 first).
    # s2: s3 has no END either.  s3 without END, s4 with two END lines: s4 names s3 (not proven otherwise).
    lines = [f"TREEDUMP engine=stockfish v=1 id=s0 fen={KIWI}", *no_end,
             f"TREEDUMP engine=stockfish v=1 id=s1 fen={KIWI}", *BODY,
             f"TREEDUMP engine=stockfish v=1 id=s2 fen={KIWI}", *no_end,
             f"TREEDUMP engine=stockfish v=1 id=s3 fen={KIWI}", *no_end,
             f"TREEDUMP engine=stockfish v=1 id=s4 fen={KIWI}", *BODY, "END nodes=2"]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n")
    lazy = assert_same_as_full_parse(path)
    assert lazy.index.end_lines == [0, 1, 0, 0, 2]
    assert [_spy_alone(lazy, k) for k in range(5)] == [True, True, True, False, False]
    # Split into lines (END lines not counted): only the last search without END is read alone.
    monkey = pytest.MonkeyPatch()
    with monkey.context() as m:
        m.setattr(log_index, "MAX_D_BYTES", -1)
        lazy = open_one_search(path)
        assert lazy.index.end_lines is None
        assert [_spy_alone(lazy, k) for k in range(5)] == [False, True, False, False, False]

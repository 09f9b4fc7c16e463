"""The single-context ``iter`` column in numpy (``SearchStates._iterations_single_context``) against the general
polars steps it stands in for (forward fill by search, the ITER carried from earlier chunks, then 0)."""
from __future__ import annotations

from pathlib import Path

import pytest

from treediff.parse import chunks
from treediff.parse.pipeline import parse_logs
from treediff.parse.state import SearchStates

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = [FIXTURES / "hand" / n for n in ("minimal_stockfish.log", "minimal_typhoon.log", "align_multi.log",
                                        "visits_aspiration.log", "report_stockfish.log", "report_typhoon.log")]
TRACES = [FIXTURES / "traces" / n for n in ("stockfish_batch3.log", "typhoon_start.log")]

# A search whose first records come before its first ITER, an ITER carried over many chunks, a context
# named by an ITER line only (the general steps then), and a second search whose records start a chunk.
HAND_LOG = """TREEDUMP engine=stockfish v=1 unit=1 id=a fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
MOVE path=e2e4 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=e2e4 ply=1 score=3
RESULT path=- ply=0 score=3
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 act=FULL a=-1 b=1 nt=PV
MOVE path=e2e4/e7e5 ply=2 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=e2e4/e7e5 ply=2 score=3
RESULT path=e2e4 ply=1 score=3
MOVE path=d2d4 ply=1 mn=2 d=2 act=FULL a=-1 b=1 nt=PV
RESULT path=d2d4 ply=1 score=1
RESULT path=- ply=0 score=3
END
TREEDUMP engine=stockfish v=1 unit=1 id=b fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
MOVE path=g1f3 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=g1f3 ply=1 score=0
ITER d=1
MOVE path=g1f3 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=g1f3 ply=1 score=0
ITER d=3 thread=2
MOVE path=g1f3 ply=1 mn=1 d=3 act=FULL a=-1 b=1 nt=PV
RESULT path=- ply=0 score=0
END
"""


def _parse(log: Path, general: bool, monkeypatch, chunk_bytes: int | None):
    with monkeypatch.context() as m:
        if chunk_bytes is not None:
            m.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
        if general:
            m.setattr(SearchStates, "_iterations_single_context", lambda *a, **k: None)
        return parse_logs([log])


CASES = [(log, size) for log in [*LOGS, "hand"] for size in (None, 61, 97, 400)]
CASES += [(log, size) for log in TRACES for size in (None, 4096)]


@pytest.mark.parametrize(("log", "chunk_bytes"), CASES, ids=lambda x: x if isinstance(x, (str, int)) or x is None else x.name)
def test_single_context_iterations_match_the_general_steps(monkeypatch, tmp_path, log, chunk_bytes):
    if log == "hand":
        log = tmp_path / "hand.log"
        log.write_text(HAND_LOG)
    fast = _parse(log, False, monkeypatch, chunk_bytes)
    general = _parse(log, True, monkeypatch, chunk_bytes)
    assert fast.records.equals(general.records)
    assert fast.warnings == general.warnings
    assert fast.searches.equals(general.searches)


def test_hand_log_iterations(monkeypatch, tmp_path):
    """Counted by hand: 0 before the first ITER, the depth in force after, per search."""
    log = tmp_path / "hand.log"
    log.write_text(HAND_LOG)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 97)
    records = parse_logs([log]).records
    iters = list(zip(records.column("search").to_pylist(), records.column("iter").to_pylist()))
    assert iters[:12] == [(0, 0), (0, 1), (0, 1), (0, 1), (0, 2), (0, 2), (0, 2), (0, 2), (0, 2), (0, 2), (0, 2),
                          (1, 0)]


ORPHANS_LOG = """MOVE path=e2e4 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=e2e4 ply=1 score=3
# comment
MOVE path=d2d4 ply=1 mn=2 d=1 act=FULL a=-1 b=1 nt=PV
TREEDUMP engine=stockfish v=1 unit=1 id=a fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
RESULT path=e2e4 ply=1 score=3
RESULT path=- ply=0 score=3
END
TREEDUMP engine=stockfish v=1 unit=1 id=b fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
MOVE path=g1f3 ply=1 mn=1 d=1 act=FULL a=-1 b=1 nt=PV
"""


@pytest.mark.parametrize("chunk_bytes", [None, 61, 97, 200, 300])
def test_records_before_any_header(monkeypatch, tmp_path, chunk_bytes):
    """Counted by hand: lines 1, 2 and 4 come before any header (dropped, warned with their lines); the rest
    belong to searches 0 and 1, wherever the chunks are cut."""
    log = tmp_path / "orphans.log"
    log.write_text(ORPHANS_LOG)
    if chunk_bytes is not None:
        monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    result = parse_logs([log])
    assert any("3 lines with a record before any TREEDUMP header (dropped) (line 1, 2, 4)" in w for w in result.warnings)
    records = result.records
    assert records.column("line").to_pylist() == [7, 8, 9, 12]
    assert records.column("search").to_pylist() == [0, 0, 0, 1]
    assert records.column("seq").to_pylist() == [0, 1, 2, 0]

"""compare's divergences build values and sentences only for rows that can still be shown (``_Shortlist``): the
top rows, their order, ties and the ``(rest)`` row are those of building every position's own top rows.

The reference is the same call with a shortlist that admits every row (what divergences did before), over
typhoon against Stockfish and Crafty on three positions (reference-engine traces) and over a real Stockfish
15.1 search against itself with two root moves' subtrees cut out (every line under ``f3e5/`` and ``d1e2/``), for
several ``n`` (ties at equal |delta| included: small trees give many rows of |delta| 1)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import treediff.align.summaries as summaries
from treediff.align.summaries import _Shortlist, divergences
from treediff.parse.source import open_source
from treediff.store.budget import MemoryBudget

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
REAL = ROOT / "fixtures" / "real" / "mid_a_d7.log"
PAIRS = [(TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"),
         (TRACES / "typhoon_batch3.log", TRACES / "crafty_batch3.log"),
         (REAL, Path("cut")),
         (TRACES / "typhoon_start.log", TRACES / "stockfish_start.log")]


def _resolved(path: Path, tmp_path: Path) -> Path:
    """``Path("cut")``: the real trace without the lines under two root moves (written into ``tmp_path``)."""
    if path != Path("cut"):
        return path
    lines = REAL.read_text().splitlines(keepends=True)
    kept = [line for line in lines if "path=f3e5/" not in line and "path=d1e2/" not in line]
    assert len(kept) < len(lines)
    (tmp_path / "cut.log").write_text("".join(kept))
    return tmp_path / "cut.log"


class _AdmitAll(_Shortlist):
    def admit(self, cost: int, position: int, k: int) -> bool:
        return True


def _run(a: Path, b: Path, n: int, monkeypatch, admit_all: bool):
    monkeypatch.setattr(summaries, "_Shortlist", _AdmitAll if admit_all else _Shortlist)
    built = []
    real = summaries._row_values

    def counting(rows, at, paths):
        built.append(len(at))
        return real(rows, at, paths)

    monkeypatch.setattr(summaries, "_row_values", counting)
    found = divergences(open_source(a), open_source(b), n=n)
    monkeypatch.undo()
    assert not found.empty
    return found, sum(built)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 200])
@pytest.mark.parametrize(("a", "b"), PAIRS, ids=lambda p: p.stem)
def test_the_shortlist_shows_what_every_row_would(a, b, n, monkeypatch, tmp_path):
    b = _resolved(b, tmp_path)
    got, built = _run(a, b, n, monkeypatch, admit_all=False)
    want, built_all = _run(a, b, n, monkeypatch, admit_all=True)
    for name in ("rows", "total", "by_kind", "by_ply", "kinds"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
    assert got.notes == want.notes
    assert built <= built_all


def test_the_shortlist_leaves_out_rows_that_cannot_be_shown(monkeypatch):
    got, built = _run(*PAIRS[0], 1, monkeypatch, admit_all=False)
    _, built_all = _run(*PAIRS[0], 1, monkeypatch, admit_all=True)
    assert len(got.rows) == 2  # the costliest row, then (rest)
    assert built < built_all == 3  # one row a position without it


def test_shortlist_keeps_the_n_best_keys():
    board = _Shortlist(2)
    assert board.admit(5, 3, 0) and board.admit(5, 1, 0)   # two leaders: (5, pos 1) and (5, pos 3)
    assert not board.admit(5, 4, 0)                         # equal cost, a later position: beaten by both
    assert board.admit(5, 2, 0)                             # an earlier position beats (5, pos 3)
    assert not board.admit(5, 3, 0) and not board.admit(4, 0, 0)
    assert board.admit(6, 9, 9)                             # a larger delta beats them all
    assert not _Shortlist(0).admit(100, 0, 0)


START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KINGS = "8/8/8/8/8/8/8/K6k w - - 0 1"


def _search(pid: str, fen: str, move: str, extra: bool) -> str:
    """One iteration: ``move`` searched (1 node), and with ``extra`` a second root move ``move2`` too."""
    lines = [f"TREEDUMP engine=stockfish v=1 id={pid} fen={fen}", "ITER d=1",
             f"MOVE path={move} ply=1 mn=1 d=1 nd=0 act=FULL", f"RESULT path={move} ply=1 d=0"]
    if extra:
        other = "d2d4" if fen == START else "a1b1"
        lines += [f"MOVE path={other} ply=1 mn=2 d=1 nd=0 act=FULL", f"RESULT path={other} ply=1 d=0"]
    return "\n".join(lines + ["RESULT path=- ply=0 d=1", "END nodes=" + ("3" if extra else "2")]) + "\n"


def test_equal_costs_in_two_positions_show_the_first_in_sorted_order_whatever_came_first(tmp_path):
    """B searched one root move more in each of p1 and p2 (|delta| 1 each); the logs list p2 first and are read a
    search at a time (a tiny --memory-limit), so p2 is aligned first, yet with n=1 the shown row is p1's
    (positions in sorted order break the tie)."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(_search("p2", KINGS, "a1a2", False) + _search("p1", START, "e2e4", False))
    b.write_text(_search("p2", KINGS, "a1a2", True) + _search("p1", START, "e2e4", True))
    found = divergences(open_source(a), open_source(b), n=1, budget=MemoryBudget(9600))
    assert MemoryBudget(9600).batch_records == 1
    assert found.rows["position"].tolist() == ["p1", ""]
    assert found.rows["path"].tolist() == ["d2d4", "(rest)"]
    assert found.rows["delta"].tolist() == [-1, -1]

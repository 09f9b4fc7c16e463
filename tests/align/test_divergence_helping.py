"""compare's divergences with another process aligning some positions (``divergences(..., helping=)``: the
parent once its tables are done; treediff.run.forked.Helper is its real side, tests/run/test_forked.py tests
the pipes).  Here the helper is in-process: it takes the pieces it is offered when it says it is free, aligns
them with its own :class:`PositionAligner` from their packed records, and answers on the next call.

Whatever positions cross, the divergences are those of aligning every position in one loop: the shown rows,
their order and ties, the ``(rest)`` row, the totals and breakdowns (each process's shortlist rules out only
rows its own positions beat, so rows the other would have ruled out are still beaten when all are folded)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from treediff.align.summaries import HELP_SHARE, PositionAligner, divergences
from treediff.parse.source import open_source
from treediff.store.budget import BYTES_PER_RECORD, MemoryBudget

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
REAL = ROOT / "fixtures" / "real" / "mid_a_d7.log"


class _InProcessHelper:
    """Takes every ``every``-th piece offered while free (at most ``in_flight`` unanswered), answers later."""

    def __init__(self, n: int, iteration: int | None = None, every: int = 2, in_flight: int = 2):
        self.aligner = PositionAligner(n, iteration)
        self.every, self.in_flight = every, in_flight
        self.waiting: list = []
        self.asked = 0
        self.taken: list[int] = []

    def answers(self) -> list:
        done = [self.aligner(piece) for piece in self.waiting[:1]]  # one answer a call: pieces stay in flight
        self.waiting = self.waiting[1:]
        return done

    def free(self) -> bool:
        return len(self.waiting) < self.in_flight

    def offer(self, piece) -> bool:
        self.asked += 1
        if self.asked % self.every:
            return False
        index, position, packed_a, packed_b, _ = piece
        assert isinstance(packed_a, bytes) and isinstance(packed_b, bytes)  # what crosses a pipe
        self.taken.append(index)
        self.waiting.append(piece)
        return True

    def finish(self) -> list:
        done = [self.aligner(piece) for piece in self.waiting]
        self.waiting = []
        return done


def _cut(tmp_path: Path) -> Path:
    """The real trace without the lines under two root moves (its divergences against itself are those)."""
    lines = REAL.read_text().splitlines(keepends=True)
    (tmp_path / "cut.log").write_text("".join(line for line in lines
                                              if "path=f3e5/" not in line and "path=d1e2/" not in line))
    return tmp_path / "cut.log"


def _same(found, alone) -> None:
    for name in ("rows", "total", "by_kind", "by_ply", "kinds"):
        pd.testing.assert_frame_equal(getattr(found, name), getattr(alone, name), obj=name)
    assert found.notes == alone.notes


@pytest.mark.parametrize("pair", ["typhoon-stockfish", "typhoon-crafty", "real-cut", "start"])
@pytest.mark.parametrize("n", [1, 3, 10])
@pytest.mark.parametrize("every", [1, 2, 3])
def test_divergences_with_positions_aligned_elsewhere_are_the_divergences_alone(tmp_path, pair, n, every):
    a, b = {"typhoon-stockfish": (TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"),
            "typhoon-crafty": (TRACES / "typhoon_batch3.log", TRACES / "crafty_batch3.log"),
            "real-cut": (REAL, _cut(tmp_path)),
            "start": (TRACES / "typhoon_start.log", TRACES / "stockfish_start.log")}[pair]
    source_a, source_b = open_source(a), open_source(b)
    alone = divergences(source_a, source_b, n=n)
    helper = _InProcessHelper(n, every=every)
    found = divergences(source_a, source_b, n=n, helping=helper)
    assert not alone.empty
    _same(found, alone)
    if every == 1:  # every piece offered while free was taken: at least the first
        assert helper.taken


def test_every_position_aligned_elsewhere_gives_the_same_divergences():
    source_a, source_b = open_source(TRACES / "typhoon_batch3.log"), open_source(TRACES / "crafty_batch3.log")
    alone = divergences(source_a, source_b, n=2)
    helper = _InProcessHelper(2, every=1, in_flight=10**6)
    found = divergences(source_a, source_b, n=2, helping=helper)
    assert sorted(helper.taken) == list(range(int(alone.total["positions"][0])))
    _same(found, alone)


def test_a_position_too_large_for_its_share_of_the_budget_is_not_offered():
    from treediff.align.summaries import paired_positions

    source_a, source_b = open_source(TRACES / "typhoon_batch3.log"), open_source(TRACES / "stockfish_batch3.log")
    counts_a = source_a.searches["records"].to_numpy()
    counts_b = source_b.searches["records"].to_numpy()
    pairs = [int(counts_a[at_a].sum() + counts_b[at_b].sum()) for _, at_a, at_b in paired_positions(source_a, source_b)]
    # Every pair fits the aligner (the whole budget) but none fits the helper's share of it.
    budget = MemoryBudget(max(pairs) * BYTES_PER_RECORD)
    assert len(pairs) == 3 and budget.limit // HELP_SHARE < min(pairs) * BYTES_PER_RECORD
    helper = _InProcessHelper(10, every=1)
    found = divergences(source_a, source_b, n=10, budget=budget, helping=helper)
    assert helper.asked == 0 and not helper.taken
    _same(found, divergences(source_a, source_b, n=10))


def test_a_helper_made_with_other_settings_refuses_the_position():
    """The parent's aligner is made apart from the divergences call (compare passes n and --depth to both): a
    piece carries the call's settings, and an aligner of others raises instead of answering other rows."""
    source_a, source_b = open_source(TRACES / "typhoon_batch3.log"), open_source(TRACES / "stockfish_batch3.log")
    helper = _InProcessHelper(3, every=1)
    helper.aligner = PositionAligner(5)
    with pytest.raises(ValueError, match=r"n, iteration, min_cost = \(3, None, 0\) handed to an aligner of "
                                         r"\(5, None, 0\)"):
        divergences(source_a, source_b, n=3, helping=helper)

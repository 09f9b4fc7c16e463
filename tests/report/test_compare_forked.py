"""`treediff compare` aligns its divergences in a forked child (treediff.run.forked) while it counts the
tables: the output is byte for byte what one process gives, the fork happens exactly when divergences are
aligned, and the two passes share the memory budget."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.threads import settle_threads
from treediff.cli import main
from treediff.store.budget import DEFAULT_MEMORY_LIMIT, MemoryBudget

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
TRACES = ROOT / "traces"


@pytest.fixture(autouse=True)
def only_the_main_thread():
    """These tests fork: another test's thread still ending would make the fork refused."""
    left = settle_threads()
    assert left == [], f"threads of an earlier test still run: {left}"

PAIRS = [
    (TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log", []),
    (TRACES / "typhoon_start.log", TRACES / "crafty_start.log", []),
    (TRACES / "stockfish_tactical-f6f7.log", TRACES / "typhoon_tactical-f6f7.log", ["--top", "3"]),
    # A real Stockfish 15.1 trace against itself: aspiration re-searches, verification visits.
    (ROOT / "real" / "mid_a_d7.log", ROOT / "real" / "mid_a_d7.log", []),
]


@pytest.fixture(autouse=True)
def small_inputs_fork(monkeypatch):
    """The fixtures are far below the records from which compare forks: these tests lower that bound."""
    import treediff.store.budget as budget_module

    monkeypatch.setattr(budget_module, "FORK_MIN_RECORDS", 0)


@pytest.fixture
def forks(monkeypatch):
    """The number of os.fork calls this process makes (the child's own count is its own)."""
    count = [0]
    real_fork = os.fork

    def counting_fork():
        count[0] += 1
        return real_fork()

    monkeypatch.setattr(os, "fork", counting_fork)
    return count


def _compare(monkeypatch, fork: bool, *args) -> str:
    if fork:
        monkeypatch.delenv("TREEDIFF_FORK", raising=False)
    else:
        monkeypatch.setenv("TREEDIFF_FORK", "0")
    result = CliRunner().invoke(main, ["compare", *map(str, args), "--format", "json"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("a, b, extra", PAIRS, ids=lambda v: v.name if isinstance(v, Path) else None)
def test_forked_compare_is_the_one_process_compare(monkeypatch, forks, a, b, extra):
    alone = _compare(monkeypatch, False, a, b, *extra)
    assert forks[0] == 0
    together = _compare(monkeypatch, True, a, b, *extra)
    assert forks[0] == 1
    assert together == alone
    assert '"divergences"' in together


@pytest.mark.parametrize("extra", [["--top", "0"], [TRACES / "crafty_batch3.log"]], ids=["top0", "three-inputs"])
def test_no_fork_when_no_divergences_are_aligned(monkeypatch, forks, extra):
    _compare(monkeypatch, True, TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log", *extra)
    assert forks[0] == 0


@pytest.mark.parametrize("fork, aligner_limit", [(True, DEFAULT_MEMORY_LIMIT // 2), (False, DEFAULT_MEMORY_LIMIT)])
def test_the_divergences_get_half_the_budget_when_they_run_beside_the_tables(monkeypatch, tmp_path, fork,
                                                                           aligner_limit):
    """The divergences' budget is halved when they run in the child; the tables read batches of the whole
    limit's size either way (halved, their per-batch cost made compare 4-8% slower: docs/PERFORMANCE.md)."""
    import treediff.align.summaries as summaries_module
    import treediff.report.compare as compare_module

    targets = []
    real = compare_module.compare_sources

    def spy(*args, **kwargs):
        targets.append(kwargs["target"])
        return real(*args, **kwargs)

    seen = tmp_path / "aligner-budget"
    real_divergences = summaries_module.divergences

    def divergences_spy(*args, **kwargs):  # (in the child when forked: it writes what it was given to a file)
        seen.write_text(str(kwargs["budget"].limit))
        return real_divergences(*args, **kwargs)

    monkeypatch.setattr(compare_module, "compare_sources", spy)
    monkeypatch.setattr(summaries_module, "divergences", divergences_spy)
    _compare(monkeypatch, fork, TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log")
    assert targets == [MemoryBudget(DEFAULT_MEMORY_LIMIT).batch_records]
    assert int(seen.read_text()) == aligner_limit


def test_a_budget_shared_by_two_is_half_of_it():
    assert MemoryBudget(2000).share(2).limit == 1000
    assert MemoryBudget(2001).share(2).limit == 1000
    assert MemoryBudget(1).share(2).limit == 1
    assert MemoryBudget(2000).share(2).batch_records == MemoryBudget(1000).batch_records


def _parsed(tmp_path: Path, log: Path) -> Path:
    out = tmp_path / (log.stem + ".parquet")
    result = CliRunner().invoke(main, ["parse", str(log), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("a, b, parquet, iteration", [
    (TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log", False, None),
    (TRACES / "typhoon_start.log", TRACES / "crafty_start.log", False, None),  # SAN: paths replayed
    (TRACES / "typhoon_start.log", TRACES / "stockfish_start.log", False, 3),
    (ROOT / "real" / "mid_a_d7.log", ROOT / "real" / "mid_a_d7.log", False, None),
    (TRACES / "typhoon_batch3.log", TRACES / "crafty_batch3.log", True, None),
], ids=["uci", "san", "depth", "real", "parquet"])
@pytest.mark.parametrize("helped", [False, True], ids=["alone", "helped"])
def test_the_divergences_make_no_polars_call(tmp_path, a, b, parquet, iteration, helped):
    """polars' thread pool does not survive a fork: the child's work must not call into it (treediff.run.forked
    would find such a child stuck and redo the work here, but only after a wait)."""
    import sys
    import threading

    from treediff.align.summaries import divergences, largest_pair
    from treediff.parse.source import open_each
    from treediff.report.compare import select_engine

    if parquet:
        a, b = _parsed(tmp_path, a), _parsed(tmp_path, b)
    source_a, source_b = open_each([a, b])
    calls = []

    def profile(frame, event, arg):
        if event == "call" and str(frame.f_globals.get("__name__", "")).startswith("polars"):
            calls.append(frame.f_code.co_name)
        elif event == "c_call" and str(getattr(arg, "__module__", "") or "").startswith("polars"):
            calls.append(getattr(arg, "__name__", "?"))

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        largest_pair(source_a, source_b)
        found = divergences(select_engine(source_a, None, "A"), select_engine(source_b, None, "B"), n=5,
                            iteration=iteration, paths=(str(a), str(b)),
                            helping=_TakesEvery(5, iteration) if helped else None)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert not found.empty
    assert calls == []


class _TakesEvery:
    """A helper (the parent's side of compare's helping, in-process) that takes every position offered: the
    child's side of it, the records packed for the pipe, must make no polars call either."""

    def __init__(self, n, iteration):
        from treediff.align.summaries import PositionAligner

        self.aligner, self.pieces = PositionAligner(n, iteration), []

    def free(self):
        return True

    def offer(self, piece):
        self.pieces.append(piece)
        return True

    def answers(self):
        return []

    def finish(self):
        return [self.aligner(piece) for piece in self.pieces]


def _largest_pair_by_counting(a: Path, b: Path) -> int:
    """The most records one position holds in A and B together, counted from the records themselves."""
    from treediff.parse.source import open_each

    sides = []
    for source in open_each([a, b]):
        records = source.records(["search"])
        fens = source.searches.set_index("search")["fen"]
        sides.append(records["search"].map(fens).value_counts())
    both = sides[0].add(sides[1], fill_value=0)
    return int(both[both.index.isin(sides[0].index) & both.index.isin(sides[1].index)].max())


def test_largest_pair_is_the_records_counted():
    from treediff.align.summaries import largest_pair
    from treediff.parse.source import open_each

    a, b = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"
    source_a, source_b = open_each([a, b])
    assert largest_pair(source_a, source_b) == _largest_pair_by_counting(a, b)


@pytest.mark.parametrize("times, forked", [(1.5, False), (2.5, True)])
def test_no_fork_when_a_position_pair_needs_more_than_half_the_budget(monkeypatch, forks, times, forked):
    """A pair that fits the whole --memory-limit but not half of it is aligned as before, in this process with
    the whole budget (never refused for a limit the user did not give)."""
    from treediff.store.budget import BYTES_PER_RECORD

    a, b = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"
    limit = int(_largest_pair_by_counting(a, b) * BYTES_PER_RECORD * times)
    together = _compare(monkeypatch, True, a, b, "--memory-limit", limit)
    assert forks[0] == int(forked)
    assert together == _compare(monkeypatch, False, a, b, "--memory-limit", limit)


def test_no_fork_for_inputs_larger_than_two_processes_were_measured_to_hold(monkeypatch, forks):
    """Two processes hold two interpreters and the aligner's per-position results, which the budgets do not
    count: beyond ``fork_records`` compare aligns in one process (same output)."""
    import treediff.store.budget as budget_module

    a, b = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"
    from treediff.parse.source import open_each

    total = sum(int(side.searches["records"].sum()) for side in open_each([a, b]))
    # fork_records at the default limit (2 GiB) = 2 * per GiB: just under, then just at, the inputs' records
    monkeypatch.setattr(budget_module, "FORK_RECORDS_PER_GIB", (total - 1) / 2)
    under = _compare(monkeypatch, True, a, b)
    assert forks[0] == 0
    monkeypatch.setattr(budget_module, "FORK_RECORDS_PER_GIB", total / 2)
    at = _compare(monkeypatch, True, a, b)
    assert forks[0] == 1
    assert under == at == _compare(monkeypatch, False, a, b)


def test_fork_records_scale_with_the_limit():
    from treediff.store.budget import FORK_RECORDS_PER_GIB

    assert MemoryBudget(2 * 1024**3).fork_records == 2 * FORK_RECORDS_PER_GIB
    assert MemoryBudget(512 * 1024**2).fork_records == FORK_RECORDS_PER_GIB // 2


def test_small_inputs_are_compared_in_one_process(monkeypatch, forks):
    """Below ``FORK_MIN_RECORDS`` (both inputs together) the fork costs more than it saves: no fork."""
    import treediff.store.budget as budget_module
    from treediff.parse.source import open_each

    a, b = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"
    total = sum(int(side.searches["records"].sum()) for side in open_each([a, b]))
    monkeypatch.setattr(budget_module, "FORK_MIN_RECORDS", total + 1)
    one = _compare(monkeypatch, True, a, b)
    assert forks[0] == 0
    monkeypatch.setattr(budget_module, "FORK_MIN_RECORDS", total)
    assert _compare(monkeypatch, True, a, b) == one
    assert forks[0] == 1


def test_this_process_aligns_positions_the_child_hands_it_once_its_tables_are_done(monkeypatch):
    """Once its tables are done, compare's process aligns positions the child offers it (run.forked's
    helping): the same output as one process, with positions aligned on both sides of the fork."""
    from treediff.align import summaries as summaries_module

    parent = os.getpid()
    here: list[int] = []
    real_align = summaries_module.PositionAligner.align
    real_call = summaries_module.PositionAligner.__call__

    def align(self, index, position, sides):
        if os.getpid() != parent and index == 0:
            time.sleep(1.0)  # the child's first position takes long: this process is ready by its end
        return real_align(self, index, position, sides)

    def call(self, piece):
        here.append(piece[0])
        return real_call(self, piece)

    monkeypatch.setattr(summaries_module.PositionAligner, "align", align)
    monkeypatch.setattr(summaries_module.PositionAligner, "__call__", call)
    a, b = TRACES / "typhoon_batch3.log", TRACES / "crafty_batch3.log"
    alone = _compare(monkeypatch, False, a, b, "--top", "4")
    assert here == []
    together = _compare(monkeypatch, True, a, b, "--top", "4")
    assert here, "this process aligned no position"
    assert 0 not in here  # (the child's own)
    assert together == alone

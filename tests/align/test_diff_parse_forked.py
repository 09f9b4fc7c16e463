"""``treediff diff A.log B.log`` of small logs parses those it reads whole (a search each) in a child forked at
its start, while it imports the aligner (cli/sides.py: ``OpeningSides``; cli/opening.py: ``ForkedParse``,
``whole_only``); a log of several searches is handed back and read search by search here, as before.

Each test runs the real command in a fresh interpreter that counts its forks; the answer must be the one the
command gives without forking (``TREEDIFF_FORK=0``), byte for byte, with the same warnings, errors and exit
status, and no scratch directory left behind.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.forking import garbled_log, run_counting_forks, stop_while_stuck
from support.runner_helpers import pid_alive
from treediff.store.budget import FORK_MIN_LOG_BYTES

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"


def _diff(args, fork: bool, tmp_path: Path) -> tuple[int, str, str, int]:
    return run_counting_forks("diff", args, fork, tmp_path, min_log_bytes=FORK_MIN_LOG_BYTES)


@pytest.mark.parametrize("case", ["one-search-each", "real-stockfish", "several-searches", "mixed", "warnings",
                                  "under"])
def test_small_logs_parsed_in_a_child_give_the_diff_of_one_process(case, tmp_path):
    args = {"one-search-each": [TRACES / "stockfish_start.log", TRACES / "typhoon_start.log"],
            "real-stockfish": [ROOT / "fixtures" / "real" / "mid_a_d7.log", ROOT / "fixtures" / "real" / "mid_a_d7.log"],
            "several-searches": [TRACES / "stockfish_batch3.log", TRACES / "crafty_batch3.log", "--position",
                                 "kiwipete"],
            "mixed": [TRACES / "crafty_start.log", TRACES / "stockfish_batch3.log", "--position", "start"],
            "warnings": [garbled_log(tmp_path, "a.log", TRACES / "typhoon_start.log"), TRACES / "stockfish_start.log"],
            "under": [TRACES / "stockfish_start.log", TRACES / "crafty_start.log", "--under", "e2e4"]}[case]
    assert sum(Path(a).stat().st_size for a in args[:2]) < FORK_MIN_LOG_BYTES
    status, together, warned, forks = _diff(args, True, tmp_path)
    assert status == 0, warned
    assert forks == 1  # the parse's child (a log of several searches is only indexed there, then here)
    alone = _diff(args, False, tmp_path)
    assert alone[3] == 0
    assert (status, together, warned) == alone[:3]
    assert together.startswith("{")
    if case == "warnings":
        assert "a.log" in warned, warned


@pytest.mark.parametrize("bad", [0, 1], ids=["first-bad", "second-bad"])
def test_a_bad_small_log_fails_as_it_does_in_one_process(tmp_path, bad):
    """The error of the log that cannot be parsed, after the warnings of A when A comes first and is garbled."""
    broken = tmp_path / "empty.log"
    broken.write_text("not a trace at all\n")
    good = garbled_log(tmp_path, "warned.log", TRACES / "typhoon_start.log")
    args = [broken, good] if bad == 0 else [good, broken]
    status, _, err, forks = _diff(args, True, tmp_path)
    assert forks == 1
    assert status == 2 and "empty.log" in err, err
    assert ("warned.log" in err) == (bad == 1), err
    alone = _diff(args, False, tmp_path)
    assert (status, err) == (alone[0], alone[2])


def test_diff_stopped_while_its_child_parses_reaps_it_and_leaves_no_scratch(tmp_path):
    status, err, child, scratch = stop_while_stuck(
        tmp_path, "treediff.parse.source.parse_whole_logs_into",
        ["diff", str(TRACES / "stockfish_start.log"), str(TRACES / "typhoon_start.log")], signal.SIGTERM,
        min_log_bytes=FORK_MIN_LOG_BYTES)
    assert status == 128 + signal.SIGTERM, err
    assert not pid_alive(child), "the parsing child outlived diff"
    assert list(scratch.iterdir()) == [], "scratch left behind"

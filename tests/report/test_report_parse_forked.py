"""``treediff report LOG`` parses its logs in a forked child (cli/report.py: ``_open``), so that polars never
starts its threads in the process that then folds the tables in two processes (report/core.py: ``fold_many``).

Each test runs the real command in a fresh interpreter that counts its forks; the answer must be the one
the command gives without forking (``TREEDIFF_FORK=0``), byte for byte, with the same warnings, errors and
exit status, and no scratch directory left behind.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.forking import garbled_log, parquet_of, run_counting_forks, stop_while_stuck
from support.runner_helpers import pid_alive

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"


def _report(args, fork: bool, tmp_path: Path, min_log_bytes: int = 0) -> tuple[int, str, str, int]:
    return run_counting_forks("report", args, fork, tmp_path, min_log_bytes)


def _garbled(tmp_path: Path) -> Path:
    return garbled_log(tmp_path, "garbled.log", TRACES / "stockfish_batch3.log")


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    return parquet_of(TRACES / "typhoon_batch3.log", tmp_path_factory.mktemp("parsed"))


@pytest.mark.parametrize("case", ["all", "by-ply", "two-logs-and-parquet", "under", "warnings"])
def test_a_log_parsed_in_a_child_gives_the_report_of_one_process(case, tmp_path, parquet_file):
    log = TRACES / "stockfish_batch3.log"
    args = {"all": [log, "--table", "all"],
            "by-ply": [log, "--table", "acts,lmr,ebf", "--by", "engine,iter,ply"],
            "two-logs-and-parquet": [log, parquet_file, TRACES / "crafty_batch3.log", "--table", "all"],
            "under": [log, "--table", "acts,nodes", "--under", "e2e4"],
            "warnings": [_garbled(tmp_path), "--table", "all"]}[case]
    status, together, warned, forks = _report(args, True, tmp_path)
    assert status == 0, warned
    # The parse, then the fold's later half; under e2e4 only one search is left, which is not split.
    assert forks == (1 if case == "under" else 2)
    alone = _report(args, False, tmp_path)
    assert alone[3] == 0
    assert (status, together, warned) == alone[:3]
    if case == "warnings":
        assert "garbage" in warned


def test_small_logs_are_parsed_in_a_child_too(tmp_path):
    """A log of any size is parsed in the child forked at the command's start: below FORK_MIN_LOG_BYTES (which
    compare still reads) too, where the two processes' imports overlap (docs/PERFORMANCE.md, fourteenth
    session).  polars then never starts its threads here, so the fold (FORK_MIN_RECORDS is 0 here) forks too;
    the answer is the one process's, byte for byte."""
    from treediff.store.budget import FORK_MIN_LOG_BYTES

    log = TRACES / "stockfish_batch3.log"
    assert log.stat().st_size < FORK_MIN_LOG_BYTES
    args = [log, "--table", "all"]
    status, together, err, forks = _report(args, True, tmp_path, min_log_bytes=FORK_MIN_LOG_BYTES)
    assert (status, forks) == (0, 2), err
    assert (status, together, err) == _report(args, False, tmp_path)[:3]


def test_a_bad_log_fails_as_it_does_in_one_process(tmp_path):
    broken = tmp_path / "empty.log"
    broken.write_text("not a trace at all\n")
    for args in ([broken, "--table", "acts"], [TRACES / "typhoon_batch3.log", broken, "--table", "acts"]):
        status, _, err, forks = _report(args, True, tmp_path)
        assert forks == 1  # (the parse's child; no fold)
        assert status == 2 and "empty.log" in err, err
        alone = _report(args, False, tmp_path)
        assert (status, err) == (alone[0], alone[2])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_report_stopped_while_its_child_parses_reaps_it_and_leaves_no_scratch(tmp_path, signum):
    # (one scratch directory when the signal comes: the parse's spill directory, made by the parent)
    status, err, child, scratch = stop_while_stuck(tmp_path, "treediff.parse.source.parse_logs_into",
                                                   ["report", str(TRACES / "typhoon_batch3.log")], signum,
                                                   scratch_made=1)
    assert status == 128 + signum, err
    assert not pid_alive(child), "the parsing child outlived report"
    assert list(scratch.iterdir()) == [], "scratch left behind"

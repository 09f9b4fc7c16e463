"""``treediff report LOG`` parses its logs in a forked child (cli/report.py: ``_open``), so that polars never
starts its threads in the process that then folds the tables in two processes (report/core.py: ``fold_many``).

Each test runs the real command in a fresh interpreter that counts its forks; the answer must be the one
the command gives without forking (``TREEDIFF_FORK=0``), byte for byte, with the same warnings, errors and
exit status, and no scratch directory left behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.forking import COUNT_FORKS, forks_counted, stop_while_stuck
from support.runner_helpers import pid_alive
from treediff.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"


def _report(args, fork: bool, tmp_path: Path, min_log_bytes: int = 0) -> tuple[int, str, str, int]:
    """(exit status, JSON output or "", stderr without the fork count, forks) of ``treediff report ARGS
    --format json`` in a fresh interpreter, its TMPDIR a new empty directory that must be empty at the end."""
    scratch = Path(tempfile.mkdtemp(prefix="tmp-", dir=tmp_path))
    out = scratch.parent / f"{scratch.name}.json"
    env = dict(os.environ, TREEDIFF_FORK="1" if fork else "0", OPENBLAS_NUM_THREADS="1", TMPDIR=str(scratch),
               TEST_FORK_MIN_RECORDS="0", TEST_FORK_MIN_LOG_BYTES=str(min_log_bytes))
    proc = subprocess.run([sys.executable, "-c", COUNT_FORKS, "report", *map(str, args), "--format", "json",
                           "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    forks, err = forks_counted(proc.stderr)
    assert list(scratch.iterdir()) == [], "scratch left behind"
    return proc.returncode, out.read_text() if out.exists() else "", err, forks


def _garbled(tmp_path: Path) -> Path:
    """A fixture trace with two lines of garbage bytes after its header: the parse warns about them."""
    lines = (TRACES / "stockfish_batch3.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "garbled.log"
    log.write_bytes(b"".join(lines[:1] + [b"\xff\xfe garbage\n", b"\x81\x82\n"] + lines[1:]))
    return log


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("parsed") / "typhoon.parquet"
    result = CliRunner().invoke(main, ["parse", str(TRACES / "typhoon_batch3.log"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


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


def test_small_logs_are_parsed_here(tmp_path):
    """Below FORK_MIN_LOG_BYTES (the default) a log is parsed in this process: the parse's fork would cost
    more than it saves (the fold, below FORK_MIN_RECORDS, would not fork either).  The parse starts polars'
    threads here, so the fold, though FORK_MIN_RECORDS is 0 here, does not fork: no fork at all, as before."""
    from treediff.store.budget import FORK_MIN_LOG_BYTES

    log = TRACES / "stockfish_batch3.log"
    assert log.stat().st_size < FORK_MIN_LOG_BYTES
    status, _, err, forks = _report([log, "--table", "acts"], True, tmp_path, min_log_bytes=FORK_MIN_LOG_BYTES)
    assert (status, forks) == (0, 0), err


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

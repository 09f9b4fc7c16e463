"""``treediff compare A.log B ...`` parses its first log in a forked child while it parses the other inputs
itself (cli/report.py: ``_open_each``, ``ForkedParse``): two parses on threads of one process share its GIL,
in two processes they do not.

Each test runs the real command in a fresh interpreter that counts its forks; the answer must be the one the
command gives without forking (``TREEDIFF_FORK=0``), byte for byte, with the same warnings (in input order),
errors and exit status, and no scratch directory left behind.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.forking import garbled_log, parquet_of, run_counting_forks, stop_while_stuck
from support.runner_helpers import pid_alive

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"


def _compare(args, fork: bool, tmp_path: Path, min_log_bytes: int = 0) -> tuple[int, str, str, int]:
    return run_counting_forks("compare", args, fork, tmp_path, min_log_bytes)


def _garbled(tmp_path: Path, name: str, source: str) -> Path:
    return garbled_log(tmp_path, name, TRACES / source)


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    return parquet_of(TRACES / "stockfish_batch3.log", tmp_path_factory.mktemp("parsed"))


@pytest.mark.parametrize("case", ["two-logs", "log-and-parquet", "three-inputs", "top3", "warnings-both"])
def test_the_first_log_parsed_in_a_child_gives_the_compare_of_one_process(case, tmp_path, parquet_file):
    a, b, c = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log", TRACES / "crafty_batch3.log"
    args = {"two-logs": [a, b],
            "log-and-parquet": [a, parquet_file],
            "three-inputs": [a, b, c],
            "top3": [a, c, "--top", "3"],
            "warnings-both": [_garbled(tmp_path, "a.log", "typhoon_batch3.log"),
                              _garbled(tmp_path, "b.log", "stockfish_batch3.log")]}[case]
    status, together, warned, forks = _compare(args, True, tmp_path)
    assert status == 0, warned
    # The first log's parse, then the divergences' aligning (none with three inputs).
    assert forks == (1 if case == "three-inputs" else 2)
    alone = _compare(args, False, tmp_path)
    assert alone[3] == 0
    assert (status, together, warned) == alone[:3]
    if case == "warnings-both":  # each input's warnings, in input order
        assert warned.index("a.log") < warned.index("b.log"), warned


def test_a_parquet_first_input_is_read_here(tmp_path, parquet_file):
    status, _, err, forks = _compare([parquet_file, TRACES / "typhoon_batch3.log"], True, tmp_path)
    assert (status, forks) == (0, 1), err  # (only the divergences' child)


def test_small_logs_are_all_parsed_in_one_child(tmp_path):
    """Below FORK_MIN_LOG_BYTES, when every input is a log, one child forked at once parses them all while
    compare imports its tables (cli/opening.py: ``Opening``): polars never starts here, so the divergences'
    child forks too (FORK_MIN_RECORDS is 0 here).  The answer is the one process's, byte for byte."""
    from treediff.store.budget import FORK_MIN_LOG_BYTES

    a, b = TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log"
    assert a.stat().st_size + b.stat().st_size < FORK_MIN_LOG_BYTES
    for args in ([a, b], [a, b, TRACES / "crafty_batch3.log"], [_garbled(tmp_path, "a.log", "typhoon_batch3.log"),
                                                               _garbled(tmp_path, "b.log", "stockfish_batch3.log")]):
        status, together, err, forks = _compare(args, True, tmp_path, min_log_bytes=FORK_MIN_LOG_BYTES)
        # the parse's child, then the divergences' (none with three inputs: they are not aligned)
        assert (status, forks) == (0, 1 if len(args) == 3 else 2), err
        assert (status, together, err) == _compare(args, False, tmp_path)[:3]


@pytest.mark.parametrize("bad", [0, 1], ids=["first-bad", "second-bad"])
def test_a_bad_small_log_fails_as_it_does_in_one_process(tmp_path, bad):
    """The error of the log that cannot be parsed, after the warnings of the logs before it (here a garbled
    first log's), as opening them one by one gives them."""
    from treediff.store.budget import FORK_MIN_LOG_BYTES

    broken = tmp_path / "empty.log"
    broken.write_text("not a trace at all\n")
    good = _garbled(tmp_path, "warned.log", "typhoon_batch3.log")
    args = [broken, good] if bad == 0 else [good, broken]
    status, _, err, forks = _compare(args, True, tmp_path, min_log_bytes=FORK_MIN_LOG_BYTES)
    assert forks == 1  # (the logs' parse; nothing aligned)
    assert status == 2 and "empty.log" in err, err
    assert ("warned.log" in err) == (bad == 1), err  # (the first log's warnings only when it comes first)
    alone = _compare(args, False, tmp_path)
    assert (status, err) == (alone[0], alone[2])


@pytest.mark.parametrize("bad", [0, 1], ids=["first-bad", "second-bad"])
def test_a_bad_log_fails_as_it_does_in_one_process(tmp_path, bad):
    broken = tmp_path / "empty.log"
    broken.write_text("not a trace at all\n")
    args = [broken, TRACES / "typhoon_batch3.log"] if bad == 0 else [TRACES / "typhoon_batch3.log", broken]
    status, _, err, forks = _compare(args, True, tmp_path)
    assert forks == 1  # (the first log's parse; nothing aligned)
    assert status == 2 and "empty.log" in err, err
    alone = _compare(args, False, tmp_path)
    assert (status, err) == (alone[0], alone[2])


def test_both_logs_bad_fail_with_the_first_ones_error(tmp_path):
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    first.write_text("not a trace at all\n")
    second.write_text("nor this\n")
    status, _, err, _ = _compare([first, second], True, tmp_path)
    alone = _compare([first, second], False, tmp_path)
    assert status == 2 and "first.log" in err and "second.log" not in err, err
    assert (status, err) == (alone[0], alone[2])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_compare_stopped_while_its_child_parses_reaps_it_and_leaves_no_scratch(tmp_path, signum):
    status, err, child, scratch = stop_while_stuck(
        tmp_path, "treediff.parse.source.parse_logs_into",
        ["compare", str(TRACES / "typhoon_batch3.log"), str(TRACES / "stockfish_batch3.log")], signum,
        child_only=True)  # (this process parses the second log through the same function)
    assert status == 128 + signum, err
    assert not pid_alive(child), "the parsing child outlived compare"
    assert list(scratch.iterdir()) == [], "scratch left behind"


#: Runs ``treediff compare ARGS`` and writes, on stderr: ``AT-FORK <modules>`` for the first fork (which of
#: compare's later modules this process held then) and ``CHILD-IMPORTED <n> <modules>`` for each parse in a
#: child (the modules the parse imported there: each is imported a second time, beside this process's parse).
_IMPORTS_AT_FORK = """
import os, sys
import treediff.store.budget as budget
budget.FORK_MIN_RECORDS = 0
budget.FORK_MIN_LOG_BYTES = 0
LATER = ("treediff.align.summaries", "treediff.report.compare", "treediff.render.text")
parent, real_fork, seen = os.getpid(), os.fork, []
def fork():
    if not seen:
        seen.append(1)
        sys.stderr.write("AT-FORK " + " ".join(m for m in LATER if m in sys.modules) + "\\n")
    return real_fork()
os.fork = fork
import treediff.parse.source as source
real_parse = source.parse_logs_into
def parse_logs_into(*args, **kwargs):
    before = set(sys.modules)
    try:
        return real_parse(*args, **kwargs)
    finally:
        if os.getpid() != parent:
            new = sorted(set(sys.modules) - before)
            sys.stderr.write(f"CHILD-IMPORTED {len(new)} {' '.join(new[:20])}\\n")
source.parse_logs_into = parse_logs_into
from treediff.cli import main
main(sys.argv[1:])
"""


def test_the_child_inherits_the_parsers_modules_and_compare_imports_the_rest_while_it_parses(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, TREEDIFF_FORK="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _IMPORTS_AT_FORK, "compare", str(TRACES / "typhoon_batch3.log"),
                           str(TRACES / "stockfish_batch3.log"), "--format", "json", "-o", str(tmp_path / "o.json")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    # The aligner, the tables and the renderer were not imported yet when the parse's child was forked
    # (compare imports them while the child parses) ...
    assert [line for line in lines if line.startswith("AT-FORK")] == ["AT-FORK "]
    # ... and the child's parse imported nothing: polars, pandas and the parser came with the fork.
    assert [line for line in lines if line.startswith("CHILD-IMPORTED")] == ["CHILD-IMPORTED 0 "]

"""report's fold split in two: the later half of the searches folded elsewhere (a forked child in the CLI), the
partials joined in search order.  Every table must come out exactly as one fold gives it.

In-process tests run the split with a job that computes its half here (this test process has long started
polars' thread pool, so a real fork of the tables would not be allowed: treediff.run.forked); the CLI tests
run `treediff report` in fresh interpreters, where the fork happens, and count it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from support.forking import COUNT_FORKS, forks_counted
from treediff.cli import main
from treediff.parse.source import open_source
from treediff.report.core import _Folding, _halves, build_report

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
LOGS = [TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log", TRACES / "crafty_batch3.log",
        ROOT / "fixtures" / "real" / "mid_a_d7.log"]


@pytest.fixture(autouse=True)
def small_inputs_split(monkeypatch):
    """The fixtures are far below the records from which a fold is split: these tests lower that bound."""
    import treediff.store.budget as budget_module

    monkeypatch.setattr(budget_module, "FORK_MIN_RECORDS", 0)


class _HereJob:
    """A background job that says it forked and computes its work here, when asked."""

    forked = True
    made = 0

    def __init__(self, work):
        self.work = work
        _HereJob.made += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def result(self, progress=None):
        return self.work(progress)


def _assert_same_report(one, two) -> None:
    assert one.names == two.names
    for name in one.names:
        pd.testing.assert_frame_equal(one[name], two[name], check_exact=True)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("by", [None, "engine,iter,ply", "engine,position"])
@pytest.mark.parametrize("target", [1, 10**9])
def test_a_split_fold_is_the_whole_fold(log, by, target):
    source = open_source(log)
    whole = build_report(source, "all", by, target)
    _HereJob.made = 0
    split = build_report(source, "all", by, target, background=_HereJob)
    assert _HereJob.made == (1 if len(source.searches) > 1 else 0)
    _assert_same_report(split, whole)


def test_the_halves_hold_about_half_of_the_records_each():
    source = open_source(TRACES / "typhoon_batch3.log")
    first, second = _halves(source)
    counts = source.searches["records"].to_numpy()
    ids = source.searches["search"].to_numpy()
    n_first = len(first.searches)
    assert n_first + len(second.searches) == len(ids)
    assert list(first.searches["search"]) == list(ids[:n_first])  # consecutive rows, the earlier ones first
    assert list(second.searches["search"]) == list(ids[n_first:])
    # The cut is where the running count passes half: the first half holds at least half, one search less not.
    assert counts[:n_first].sum() * 2 >= counts.sum() > counts[:n_first - 1].sum() * 2 or n_first == 1


def test_one_search_is_not_split():
    source = open_source(TRACES / "typhoon_start.log")
    assert len(source.searches) == 1
    assert _halves(source) is None
    _HereJob.made = 0
    build_report(source, "acts", None, background=_HereJob)
    assert _HereJob.made == 0


def test_foldings_join_in_order():
    a = _Folding([[["a1"], ["a2"]]], [[pd.DataFrame({"x": [1]})]], pd.DataFrame({"x": []}))
    b = _Folding([[["b1"], ["b2"]]], [[pd.DataFrame({"x": [2]})]], None)
    joined = a.then(b)
    assert joined.partials == [[["a1", "b1"], ["a2", "b2"]]]
    assert [f["x"].tolist() for f in joined.cells[0]] == [[1], [2]]
    assert joined.last_empty is a.last_empty  # the later run read no batch: the earlier's columns


def _report(args, fork: bool, tmp_path: Path, split_min: int = 0) -> tuple[str, int]:
    """(JSON output, forks) of `treediff report ARGS --format json` in a fresh interpreter (``split_min``: the
    records from which the fold is split)."""
    out = tmp_path / f"report-{'fork' if fork else 'one'}.json"
    env = dict(os.environ, TREEDIFF_FORK="1" if fork else "0", OPENBLAS_NUM_THREADS="1",
               TEST_FORK_MIN_RECORDS=str(split_min))
    proc = subprocess.run([sys.executable, "-c", COUNT_FORKS, "report", *map(str, args), "--format", "json",
                           "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return out.read_text(), forks_counted(proc.stderr)[0]


@pytest.fixture(scope="module")
def parquet_pair(tmp_path_factory):
    where = tmp_path_factory.mktemp("split")
    out = where / "batch3.parquet"
    result = CliRunner().invoke(main, ["parse", str(TRACES / "stockfish_batch3.log"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("extra", [["--table", "all"], ["--table", "all", "--by", "engine,iter,ply"],
                                   ["--table", "acts,lmr", "--memory-limit", "1MB"]],
                         ids=["all", "by-ply", "small-batches"])
def test_report_of_a_parquet_file_forks_and_gives_the_same_json(parquet_pair, tmp_path, extra):
    together, forks = _report([parquet_pair, *extra], True, tmp_path)
    assert forks == 1
    alone, none = _report([parquet_pair, *extra], False, tmp_path)
    assert none == 0
    assert json.loads(together) == json.loads(alone)
    assert together == alone


def test_report_of_a_small_log_forks_only_its_parse(tmp_path):
    """A small log is parsed in a child forked at the command's start (cli/opening.py: ``Opening``); its
    records, below FORK_MIN_RECORDS, are folded in one process: one fork, and the answer of no fork at all.
    (Larger logs: tests/report/test_report_parse_forked.py.)  500,000: the default bound (this module's
    fixture sets it to 0 here)."""
    args = [TRACES / "stockfish_batch3.log", "--table", "acts,fh,scope"]
    together, forks = _report(args, True, tmp_path, split_min=500_000)
    assert forks == 1
    alone, none = _report(args, False, tmp_path, split_min=500_000)
    assert none == 0
    assert together == alone


@pytest.mark.parametrize("by", [None, "engine,iter,ply"])
def test_a_split_fold_of_several_inputs_is_the_whole_fold(by):
    """Several inputs in one source (their searches numbered in order): the halves cut across them."""
    from treediff.parse.source import open_sources

    source = open_sources([TRACES / "typhoon_batch3.log", TRACES / "stockfish_batch3.log",
                           TRACES / "crafty_batch3.log"])
    whole = build_report(source, "all", by, 50)
    _HereJob.made = 0
    split = build_report(source, "all", by, 50, background=_HereJob)
    assert _HereJob.made == 1
    _assert_same_report(split, whole)


def test_report_below_the_split_bound_does_not_fork(parquet_pair, tmp_path):
    """Below FORK_MIN_RECORDS the fold is not split (the fixture's 1,008 records are below the default)."""
    small, forks = _report([parquet_pair, "--table", "acts"], True, tmp_path, split_min=500_000)
    assert forks == 0
    assert small == _report([parquet_pair, "--table", "acts"], False, tmp_path)[0]


def test_one_split_needs_the_records():
    import treediff.store.budget as budget_module

    source = open_source(TRACES / "typhoon_batch3.log")
    total = int(source.searches["records"].sum())
    budget_module.FORK_MIN_RECORDS = total + 1
    assert _halves(source) is None
    budget_module.FORK_MIN_RECORDS = total
    assert _halves(source) is not None

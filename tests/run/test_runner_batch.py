"""Batches into a dataset: layout, numbers, failures, resume, interruption, the loader."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pytest

from support.runner_helpers import START, TACTIC, fake_spec, pid_alive
from treediff.model.errors import InputError
from treediff.run.batch import LocalExecutor, SerialExecutor, plan_batch, run_batch
from treediff.model.positions import Position
from treediff.run.search import Limits
from treediff.run.task import run_task

ENDGAME = "8/5pk1/6p1/8/3R4/6P1/5PK1/2r5 w - - 0 40"
POSITIONS = [Position("start", START, "opening", 1), Position("tactic", TACTIC, "middlegame", 2),
             Position("rook-end", ENDGAME, None, 3)]
LIMITS = Limits(timeout=10, quit_grace=1)


def _engines():
    return [fake_spec(name="sf"), fake_spec(preset="uci", name="plain"), fake_spec("--mode", "crash", name="bad")]


def _searches(dataset: Path) -> pd.DataFrame:
    table = pads.dataset(dataset / "searches", format="parquet", partitioning="hive").to_table()
    return table.to_pandas().sort_values("search").reset_index(drop=True)


@pytest.fixture(scope="module")
def batch_dataset(tmp_path_factory):
    dataset = tmp_path_factory.mktemp("batch") / "ds"
    plan = plan_batch(POSITIONS, _engines(), 3, dataset, LIMITS)
    assert len(plan.tasks) == 9 and plan.already_done == 0
    summary = run_batch(plan, LocalExecutor(2))
    return dataset, summary


def test_summary(batch_dataset):
    _, summary = batch_dataset
    assert (summary.ok, summary.failed, summary.interrupted) == (6, 3, False)
    assert summary.per_engine["bad"].by_failure == {"crash": 3}
    assert summary.per_engine["sf"].nodes == 3 * 12  # 4 RESULT nodes per iteration, 3 iterations


def test_dataset_layout(batch_dataset):
    dataset, _ = batch_dataset
    manifest = json.loads((dataset / "batch.json").read_text())
    assert manifest["depth"] == 3 and [e["name"] for e in manifest["engines"]] == ["sf", "plain", "bad"]
    for name in ("sf", "plain"):
        assert sorted(p.name for p in (dataset / "searches" / f"engine={name}").iterdir()) == \
            ["000000.parquet", "000001.parquet", "000002.parquet"]
    assert sorted(p.name for p in (dataset / "records" / "engine=sf").iterdir()) == \
        ["000000.parquet", "000001.parquet", "000002.parquet"]
    assert not (dataset / "records" / "engine=plain").exists()  # no trace, no records
    assert len(list((dataset / "logs" / "engine=bad").iterdir())) == 3
    assert not list(dataset.rglob("*.tmp"))


def test_searches_rows(batch_dataset):
    dataset, _ = batch_dataset
    s = _searches(dataset)
    # search = position index * 3 engines + engine index
    assert list(s["search"]) == [0, 1, 3, 4, 6, 7]
    assert list(s["engine"]) == ["sf", "plain"] * 3
    assert list(s["position"]) == ["start", "start", "tactic", "tactic", "rook-end", "rook-end"]
    assert list(s["phase"][:4]) == ["opening", "opening", "middlegame", "middlegame"]
    assert list(s["phase_source"]) == ["epd"] * 4 + ["material"] * 2
    assert list(s["phase"][4:]) == ["endgame"] * 2
    sf, plain = s[s.engine == "sf"], s[s.engine == "plain"]
    assert (sf["node_source"] == "result").all() and (sf["result_nodes"] == 12).all()
    assert (sf["dialect"] == "stockfish").all() and (sf["max_iter"] == 3).all()
    assert (plain["node_source"] == "engine").all() and plain["dialect"].isna().all()
    assert (plain["end_nodes"] == 120).all() and (plain["max_iter"] == 3).all()
    assert [json.loads(v) for v in plain["iter_nodes"]] == [[[1, 40], [2, 80], [3, 120]]] * 3
    assert (s["requested_depth"] == 3).all()


def test_records_rows(batch_dataset):
    dataset, _ = batch_dataset
    table = pads.dataset(dataset / "records", format="parquet", partitioning="hive").to_table()
    rec = table.to_pandas()
    assert set(rec["engine"]) == {"sf"} and len(rec) == 3 * 21  # 9 MOVE + 12 RESULT per search
    assert set(rec["search"]) == {0, 3, 6}
    assert rec.groupby("search")["position"].first().to_dict() == {0: "start", 3: "tactic", 6: "rook-end"}
    assert set(rec.loc[rec.search == 3, "fen"]) == {TACTIC}


def test_failures_rows(batch_dataset):
    dataset, _ = batch_dataset
    f = pads.dataset(dataset / "failures", format="parquet", partitioning="hive").to_table().to_pandas()
    assert sorted(f["search"]) == [2, 5, 8] and set(f["failure"]) == {"crash"} and set(f["engine"]) == {"bad"}
    assert (f["returncode"] == 3).all()
    assert all((dataset / p).exists() for p in f["log"])


def test_loader_reads_dataset(batch_dataset):
    from treediff.parse.source import open_source

    dataset, _ = batch_dataset
    source = open_source(dataset)
    records = source.records()
    assert len(source.searches) == 6 and len(records) == 3 * 21
    assert set(records["engine"].astype(str)) == {"sf"}


def test_resume_skips_done(batch_dataset, tmp_path):
    dataset, _ = batch_dataset
    plan = plan_batch(POSITIONS, _engines(), 3, dataset, LIMITS, resume=True)
    assert plan.tasks == [] and plan.already_done == 9
    retry = plan_batch(POSITIONS, _engines(), 3, dataset, LIMITS, resume=True, retry_failed=True)
    assert [(t.engine.name, t.key) for t in retry.tasks] == [("bad", "000000"), ("bad", "000001"), ("bad", "000002")]


def test_dataset_guards(batch_dataset):
    dataset, _ = batch_dataset
    with pytest.raises(InputError, match="--resume"):
        plan_batch(POSITIONS, _engines(), 3, dataset, LIMITS)
    with pytest.raises(InputError, match="different depth"):
        plan_batch(POSITIONS, _engines(), 4, dataset, LIMITS, resume=True)
    with pytest.raises(InputError, match="positions"):
        plan_batch(POSITIONS[:2], _engines(), 3, dataset, LIMITS, resume=True)
    with pytest.raises(InputError, match="same engines"):
        plan_batch(POSITIONS, _engines()[:2], 3, dataset, LIMITS, resume=True)
    with pytest.raises(InputError, match="twice"):
        plan_batch(POSITIONS, [fake_spec(name="a"), fake_spec(name="a")], 3, dataset.parent / "other", LIMITS)


def test_interrupt_keeps_completed_and_resume_finishes(tmp_path, no_leftovers):
    dataset = tmp_path / "ds"
    engines = [fake_spec(name="sf")]
    plan = plan_batch(POSITIONS, engines, 2, dataset, LIMITS)
    calls = []

    def interrupted_after_two(task):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(task.key)
        return run_task(task)

    summary = run_batch(plan, SerialExecutor(), task_fn=interrupted_after_two)
    assert summary.interrupted and summary.ok == 2 and summary.not_run == 1
    assert sorted(p.stem for p in (dataset / "searches" / "engine=sf").iterdir()) == ["000000", "000001"]
    resumed = plan_batch(POSITIONS, engines, 2, dataset, LIMITS, resume=True)
    assert [t.key for t in resumed.tasks] == ["000002"] and resumed.already_done == 2
    assert run_batch(resumed, SerialExecutor()).ok == 1
    assert list(_searches(dataset)["search"]) == [0, 1, 2]


def test_orphan_records_are_redone(tmp_path):
    dataset = tmp_path / "ds"
    engines = [fake_spec(name="sf")]
    run_batch(plan_batch(POSITIONS[:1], engines, 1, dataset, LIMITS), SerialExecutor())
    # A crash between the two writes of a task leaves its records without its searches row.
    (dataset / "searches" / "engine=sf" / "000000.parquet").unlink()
    plan = plan_batch(POSITIONS[:1], engines, 1, dataset, LIMITS, resume=True)
    assert [t.key for t in plan.tasks] == ["000000"]
    assert not (dataset / "records" / "engine=sf" / "000000.parquet").exists()


def test_ctrl_c_kills_running_engines(tmp_path, no_leftovers, press_ctrl_c):
    """Ctrl-C mid-batch: completed results stay, running engines die, nothing partial is written."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    engines = [fake_spec(name="ok"), fake_spec("--mode", "hang", "--pid-dir", str(pid_dir), name="hang")]
    plan = plan_batch(POSITIONS, engines, 2, tmp_path / "ds", Limits(timeout=60))
    executor = LocalExecutor(2)

    press_ctrl_c(pid_dir, count=2, within=20)
    t0 = time.monotonic()
    summary = run_batch(plan, executor)
    assert summary.interrupted and time.monotonic() - t0 < 20
    hang_pids = [int(p.name) for p in pid_dir.iterdir()]
    assert len(hang_pids) >= 2
    time.sleep(0.2)
    assert not any(pid_alive(pid) for pid in hang_pids)
    done = sorted(p.stem for p in (tmp_path / "ds" / "searches" / "engine=ok").iterdir())
    assert done and done == sorted(r.key for r in summary.results if r.engine == "ok")
    assert not (tmp_path / "ds" / "searches" / "engine=hang").exists()
    assert not list((tmp_path / "ds").rglob("*.tmp"))


def test_keep_traces(tmp_path):
    from treediff.store.files import open_log

    dataset = tmp_path / "ds"
    plan = plan_batch(POSITIONS[:1], [fake_spec(name="sf")], 3, dataset, LIMITS, keep_traces=True, keep_logs="none")
    assert run_batch(plan, SerialExecutor()).ok == 1
    trace = dataset / "traces" / "engine=sf" / "000000.log.zst"
    with open_log(trace) as fh:
        lines = fh.read().decode().splitlines()
    assert lines[0].startswith("TREEDUMP engine=stockfish") and len(lines) == 1 + 3 * 8 + 1
    assert _searches(dataset)["source"][0] == "traces/engine=sf/000000.log.zst"
    assert not (dataset / "logs").exists()


def _die_on_tactic(task):
    if task.position.id == "tactic":
        os._exit(9)  # the worker process dies as if killed
    return run_task(task)


class _PoolBrokenAtSubmit:
    """A process pool whose worker died after the first tasks' results were in: it refuses the next task at
    ``submit`` (as ProcessPoolExecutor does once it knows it is broken), not in a future's result."""

    def __init__(self, accepted: int):
        self.accepted = accepted
        self._processes: dict = {}

    def submit(self, fn, *args):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        if self.accepted == 0:
            raise BrokenProcessPool("A child process terminated abruptly, the process pool is not usable anymore")
        self.accepted -= 1
        future: Future = Future()
        future.set_result(("done", args[-1].key))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("accepted", [0, 2])
def test_a_pool_broken_when_a_task_is_submitted_is_the_same_clear_error(tmp_path, accepted):
    """The race CI once hit: the worker died between a result and the next submit (BrokenProcessPool raised by
    ``submit`` reached the user as a traceback); also a pool broken before its first task."""
    from treediff.run.batch import WorkerLost

    plan = plan_batch(POSITIONS, [fake_spec(name="sf")], 1, tmp_path / "ds", LIMITS)
    executor = LocalExecutor.__new__(LocalExecutor)  # (no real pool: the stub above stands in for it)
    executor.jobs, executor._pool = 1, _PoolBrokenAtSubmit(accepted)
    got = []
    with pytest.raises(WorkerLost, match="--resume"):
        for result in executor.map_unordered(run_task, plan.tasks):
            got.append(result)
    # The tasks done before the pool refused the third are still given (and counted by run_batch).
    assert sorted(got) == [("done", task.key) for task in plan.tasks[:accepted]]
    assert executor._pool is None  # aborted: nothing left running


def test_dead_worker_is_a_clear_error_and_resume_recovers(tmp_path, no_leftovers):
    from treediff.model.errors import TreediffError

    dataset = tmp_path / "ds"
    engines = [fake_spec(name="sf")]
    plan = plan_batch(POSITIONS, engines, 1, dataset, LIMITS)
    with pytest.raises(TreediffError, match="--resume"):
        run_batch(plan, LocalExecutor(1), task_fn=_die_on_tactic)
    resumed = plan_batch(POSITIONS, engines, 1, dataset, LIMITS, resume=True)
    assert "tactic" in {t.position.id for t in resumed.tasks}
    run_batch(resumed, SerialExecutor())
    assert sorted(_searches(dataset)["position"]) == ["rook-end", "start", "tactic"]

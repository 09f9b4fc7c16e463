"""`treediff batch --executor dask`: the same dataset as the local executor, and no result lost to a dead worker."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pytest
from click.testing import CliRunner

from treediff.cli import main
from treediff.model.errors import TreediffError
from treediff.run.batch import SerialExecutor, plan_batch, run_batch
from treediff.run.engines import presets
from treediff.model.positions import read_positions
from treediff.run.search import Limits
from treediff.run.task import run_task

distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install -e '.[dask]')")

ROOT = Path(__file__).resolve().parents[2]
EPD = ROOT / "fixtures" / "positions20.epd"
#: Searches whose numbers differ between two runs of the same batch (wall-clock time, transcript paths).
VOLATILE = ["seconds"]


def _small_epd(tmp_path: Path, n: int) -> Path:
    lines = [line for line in EPD.read_text().splitlines() if line.strip()][:n]
    path = tmp_path / f"first{n}.epd"
    path.write_text("\n".join(lines) + "\n")
    return path


def _table(dataset: Path, name: str) -> pd.DataFrame:
    table = pads.dataset(dataset / name, format="parquet", partitioning="hive").to_table()
    frame = table.to_pandas()
    for col in frame.columns:
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            frame[col] = frame[col].astype("object")
    keys = [c for c in ("search", "seq") if c in frame.columns]
    return frame.sort_values(keys).reset_index(drop=True)


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_dask_batch_gives_the_local_dataset(tmp_path):
    epd = _small_epd(tmp_path, 5)
    local, dask_ds = tmp_path / "local", tmp_path / "dask"
    common = ["batch", str(epd), "--engine", "typhoon_py", "--engine", "typhoon_py:stockfish", "--depth", "3", "-j", "2"]
    assert _invoke(*common, "-o", str(local)).exit_code == 0
    result = _invoke(*common, "-o", str(dask_ds), "--executor", "dask")
    assert result.exit_code == 0, result.output
    assert "10 done, 0 failed" in result.output
    rec_l, rec_d = _table(local, "records"), _table(dask_ds, "records")
    assert len(rec_l) > 1000
    pd.testing.assert_frame_equal(rec_l, rec_d)
    s_l, s_d = _table(local, "searches"), _table(dask_ds, "searches")
    pd.testing.assert_frame_equal(s_l.drop(columns=VOLATILE), s_d.drop(columns=VOLATILE))
    # The same report numbers, from the rows as every user reads them.
    rep_l = _invoke("report", str(local), "--table", "all", "--by", "phase", "--format", "csv")
    rep_d = _invoke("report", str(dask_ds), "--table", "all", "--by", "phase", "--format", "csv")
    assert rep_l.exit_code == 0 and rep_l.output == rep_d.output


# -- a worker killed mid-batch -------------------------------------------------------------------------------

def _die_once_on(position_id: str, marker_dir: str):
    """A task function that kills its worker process the first time it meets ``position_id``."""

    def task_fn(task):
        marker = Path(marker_dir) / f"died-{task.position.id}"
        if task.position.id == position_id and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(9)  # the worker dies as if killed (OOM killer, kill -9)
        return run_task(task)

    return task_fn


def _die_always_on(position_id: str):
    def task_fn(task):
        if task.position.id == position_id:
            os._exit(9)
        return run_task(task)

    return task_fn


def _plan(tmp_path: Path, dataset: Path, resume: bool = False):
    positions, _ = read_positions(_small_epd(tmp_path, 4))
    return plan_batch(positions, [presets()["typhoon_py"]], 2, dataset, Limits(timeout=20), resume=resume)


def test_killed_worker_loses_nothing_and_the_batch_finishes(tmp_path):
    from treediff.run.dask_executor import DaskExecutor

    dataset = tmp_path / "ds"
    plan = _plan(tmp_path, dataset)
    victim = plan.tasks[1].position.id
    summary = run_batch(plan, DaskExecutor(2), task_fn=_die_once_on(victim, str(tmp_path)))
    assert (tmp_path / f"died-{victim}").exists()          # the worker really died once
    assert summary.ok == 4 and summary.failed == 0 and not summary.interrupted
    assert sorted(p.stem for p in (dataset / "searches" / "engine=typhoon_py").glob("*.parquet")) == \
        ["000000", "000001", "000002", "000003"]


def test_worker_killed_every_time_is_a_clear_error_and_resume_completes(tmp_path):
    from treediff.run.dask_executor import DaskExecutor

    dataset = tmp_path / "ds"
    plan = _plan(tmp_path, dataset)
    victim = plan.tasks[0].position.id
    import dask

    # Dask reruns a task whose worker died; a task that kills every worker it runs on is given up at once.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with pytest.raises(TreediffError, match="--resume"):
            run_batch(plan, DaskExecutor(1), task_fn=_die_always_on(victim))
    resumed = _plan(tmp_path, dataset, resume=True)
    assert victim in {t.position.id for t in resumed.tasks}
    summary = run_batch(resumed, SerialExecutor())
    assert summary.failed == 0
    assert len(list((dataset / "searches" / "engine=typhoon_py").glob("*.parquet"))) == 4
    assert not list(dataset.rglob(".*.tmp"))                # no half-written file anywhere


def test_dask_without_dask_installed_is_a_clear_error(tmp_path, monkeypatch):
    import treediff.run.dask_executor as de

    monkeypatch.setattr(de, "dask_available", lambda: False)
    result = CliRunner().invoke(main, ["batch", str(_small_epd(tmp_path, 1)), "--engine", "typhoon_py", "--depth", "1",
                                       "-o", str(tmp_path / "ds"), "--executor", "dask"])
    assert result.exit_code == 2 and "pip install" in result.output
    assert not (tmp_path / "ds").exists()


def test_local_executor_does_not_import_dask(tmp_path):
    import subprocess

    code = ("import sys; from treediff.cli import main\n"
            "sys.argv = ['treediff', 'batch', sys.argv[1], '--engine', 'typhoon_py', '--depth', '1', '-o', sys.argv[2],"
            " '-j', '1']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "assert 'distributed' not in sys.modules and 'dask' not in sys.modules, 'dask imported'\n")
    proc = subprocess.run([sys.executable, "-c", code, str(_small_epd(tmp_path, 1)), str(tmp_path / "ds")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


# -- Ctrl-C --------------------------------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_cancels_closes_the_cluster_and_kills_the_engines(tmp_path, press_ctrl_c):
    import time
    from dataclasses import replace

    from treediff.run.dask_executor import DaskExecutor
    from treediff.model.positions import Position

    fake = (sys.executable, str(ROOT / "fixtures" / "engines" / "fake_engine.py"))
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    base = presets()["stockfish-treedump"]
    engines = [replace(base, name="ok", argv=fake),
               replace(base, name="hang", argv=(*fake, "--mode", "hang", "--pid-dir", str(pid_dir)))]
    start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    positions = [Position(f"p{i}", start, "opening", i + 1) for i in range(3)]
    plan = plan_batch(positions, engines, 2, tmp_path / "ds", Limits(timeout=60))
    executor = DaskExecutor(2)

    press_ctrl_c(pid_dir, count=1, within=30, settle=0.3)
    t0 = time.monotonic()
    summary = run_batch(plan, executor)
    assert summary.interrupted and time.monotonic() - t0 < 30
    assert executor.client is None                       # client and local cluster closed
    hang_pids = [int(p.name) for p in pid_dir.iterdir()]
    assert hang_pids
    deadline = time.monotonic() + 5
    while any(_pid_alive(pid) for pid in hang_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_pid_alive(pid) for pid in hang_pids)  # killed with their worker, not left running
    ds = tmp_path / "ds"
    assert not (ds / "searches" / "engine=hang").exists()
    assert not (ds / "failures" / "engine=hang").exists()  # abandoned, not recorded as a crash: --resume reruns it
    assert not list(ds.rglob(".*.tmp"))
    resumed = plan_batch(positions, engines, 2, ds, Limits(timeout=60), resume=True)
    assert {t.engine.name for t in resumed.tasks} >= {"hang"}


def test_local_cluster_workers_are_never_plain_forks():
    """A plain fork of a process running polars/Arrow threads can deadlock: workers are spawned, even if the
    user's Dask config asks for fork."""
    import dask

    from treediff.run.dask_executor import DaskExecutor

    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        executor = DaskExecutor(1)
    try:
        pids = list(executor.client.run(os.getpid).values())
        assert pids and all(pid != os.getpid() for pid in pids)
        for pid in pids:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            assert b"spawn_main" in cmdline or b"forkserver" in cmdline, cmdline
    finally:
        executor.close()


def test_batch_on_a_running_scheduler(tmp_path):
    """--scheduler ADDRESS: the tasks go to an existing cluster, which is left running afterwards."""
    from distributed import Client, LocalCluster

    epd = _small_epd(tmp_path, 3)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        result = _invoke("batch", str(epd), "--engine", "typhoon_py", "--depth", "2", "-o", str(tmp_path / "ds"),
                         "--executor", "dask", "--scheduler", cluster.scheduler_address)
        assert result.exit_code == 0, result.output
        assert "3 done, 0 failed" in result.output
        with Client(cluster.scheduler_address) as client:   # still serving
            assert len(client.nthreads()) == 1
    assert len(list((tmp_path / "ds" / "searches" / "engine=typhoon_py").glob("*.parquet"))) == 3
    bad = _invoke("batch", str(epd), "--engine", "typhoon_py", "--depth", "2", "-o", str(tmp_path / "ds2"),
                  "--scheduler", "tcp://127.0.0.1:1")
    assert bad.exit_code == 2 and "--scheduler only makes sense with --executor dask" in bad.output

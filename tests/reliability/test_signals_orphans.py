"""Signals and orphans (issue 15, deliverable 3): real signals to real `treediff` processes.

SIGTERM and SIGHUP are handled like Ctrl-C in `parse`, `run` and `batch`
(local and Dask): engines reaped, workers stopped, temporary files and
working directories removed, exit 143 / 129.  A batch whose main process is
SIGKILLed stops writing at once (its workers follow it); a SIGKILLed worker
takes its engine with it.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import signal
import subprocess
import sys
import time

import pytest

from reliability.hostile import START, epd, fake, pids_in, session_members, wait_gone, wait_until

SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGHUP, id="SIGHUP")]


def _no_tmp_files(*dirs) -> list:
    return [p for d in dirs for p in d.rglob(".*.tmp")]


@pytest.mark.parametrize("sig", SIGNALS)
def test_run_terminated(cli, tmp_path, work, sig, record):
    pids = tmp_path / "pids"
    pids.mkdir()
    c = cli("run", "--engine", f"uci={fake('--mode', 'hang', '--pid-dir', pids)}", "--fen", START, "--depth", 2,
            "--timeout", 60, "-o", tmp_path / "out.log", "--tmpdir", work)
    assert wait_until(lambda: pids_in(pids), 20), c.output
    t0 = time.monotonic()
    c.signal(sig)
    assert c.wait(20) == 128 + sig, c.output
    record(f"run, {signal.Signals(sig).name}", "exited after signal", time.monotonic() - t0, 5.0)
    assert not wait_gone(pids_in(pids), 2.0), "engine survived"
    assert not list(work.iterdir()), "working directory left"
    assert not _no_tmp_files(tmp_path)


@pytest.mark.parametrize("sig", SIGNALS)
def test_parse_terminated(cli, tmp_path, sig, record):
    """`treediff parse -` reading a pipe that stays open: the signal removes the half-written output."""
    c = cli("parse", "-", "-o", tmp_path / "out.parquet", stdin=subprocess.PIPE)
    assert c.proc.stdin is not None
    c.proc.stdin.write(b"TREEDUMP engine=stockfish v=1 unit=1 fen=" + START.encode() + b"\n"
                       + b"ITER d=1\n" + b"MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\n" * 1000)
    c.proc.stdin.flush()
    assert wait_until(lambda: _no_tmp_files(tmp_path), 20), c.output  # mid-parse: its temporary file exists
    t0 = time.monotonic()
    c.signal(sig)
    assert c.wait(20) == 128 + sig, c.output
    c.proc.stdin.close()
    record(f"parse, {signal.Signals(sig).name}", "exited after signal", time.monotonic() - t0, 5.0)
    assert not _no_tmp_files(tmp_path) and not (tmp_path / "out.parquet").exists()


#: tgkill(2) by architecture: a signal to one thread of another process (Python's pthread_kill is in-process only).
_TGKILL = {"x86_64": 234, "aarch64": 131}


def _signal_thread(pid: int, tid: int, sig: int) -> None:
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_TGKILL[platform.machine()], pid, tid, int(sig)) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill {pid} {tid} {sig}")


def _threads_taking(pid: int, sig: int) -> list[int]:
    """The threads of ``pid`` but its main one whose signal mask lets ``sig`` through (where the kernel may
    deliver a process signal)."""
    out = []
    for name in os.listdir(f"/proc/{pid}/task"):
        tid = int(name)
        if tid == pid:
            continue
        with open(f"/proc/{pid}/task/{name}/status") as fh:
            blocked = next(int(line.split()[1], 16) for line in fh if line.startswith("SigBlk:"))
        if not blocked & (1 << (int(sig) - 1)):
            out.append(tid)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.machine() not in _TGKILL,
                    reason="tgkill and /proc: Linux on x86_64 or aarch64")
@pytest.mark.parametrize("sig", SIGNALS)
def test_parse_terminated_through_another_thread(cli, tmp_path, sig, record):
    """The kernel hands a process signal to any thread that does not block it (the parse's sink threads, a native
    pool's).  Sent to such a thread of `treediff parse -` while the main thread waits on a pipe that stays open,
    the signal still ends the parse (it hung: the main thread's read got no EINTR, so the handler never ran)."""
    c = cli("parse", "-", "-o", tmp_path / "out.parquet", stdin=subprocess.PIPE)
    assert c.proc.stdin is not None
    c.proc.stdin.write(b"TREEDUMP engine=stockfish v=1 unit=1 fen=" + START.encode() + b"\n"
                       + b"ITER d=1\n" + b"MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\n" * 1000)
    c.proc.stdin.flush()
    assert wait_until(lambda: _no_tmp_files(tmp_path), 20), c.output
    others = _threads_taking(c.proc.pid, sig)
    assert others, "no other thread takes the signal: nothing to test"
    t0 = time.monotonic()
    _signal_thread(c.proc.pid, others[0], sig)
    assert c.wait(20) == 128 + sig, c.output
    c.proc.stdin.close()
    record(f"parse, {signal.Signals(sig).name} to another thread", "exited after signal", time.monotonic() - t0,
           5.0)
    assert not _no_tmp_files(tmp_path) and not (tmp_path / "out.parquet").exists()


def _batch(cli, tmp_path, work, *engines, n=4, jobs=2, timeout=60, extra=(), env=None):
    ds = tmp_path / "ds"
    args = ["batch", epd(tmp_path / "p.epd", n), "--depth", 1, "-o", ds, "-j", jobs, "--timeout", timeout,
            "--tmpdir", work, *extra]
    for engine in engines:
        args += ["--engine", engine]
    return cli(*args, env=env), ds


@pytest.mark.parametrize("sig, group", [pytest.param(signal.SIGTERM, False, id="SIGTERM-main"),
                                        pytest.param(signal.SIGHUP, True, id="SIGHUP-group"),
                                        pytest.param(signal.SIGINT, True, id="SIGINT-group")])
def test_batch_terminated(cli, tmp_path, work, sig, group, record):
    """SIGTERM to the main process (kill PID), SIGHUP and SIGINT to the group (closing the terminal, Ctrl-C)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    c, ds = _batch(cli, tmp_path, work, f"ok@stockfish-treedump={fake()}",
                   f"hang@uci={fake('--mode', 'hang', '--pid-dir', pids)}")
    assert wait_until(lambda: len(pids_in(pids)) >= 2, 30), c.output
    t0 = time.monotonic()
    c.signal(sig, group=group)
    assert c.wait(30) == 128 + sig, c.output
    record(f"batch -j 2, {signal.Signals(sig).name} to the {'group' if group else 'main process'}",
           "exited after signal", time.monotonic() - t0, 10.0)
    assert "INTERRUPTED" in c.output and "--resume" in c.output
    assert not wait_gone(pids_in(pids), 2.0), "engines survived"
    assert not wait_gone(session_members(c.pid), 5.0), "workers, fork server or resource tracker survived"
    assert not list(work.iterdir()) and not _no_tmp_files(ds)
    assert not (ds / "searches" / "engine=hang").exists()


def test_batch_ctrl_c_with_setsid_escapees(cli, tmp_path, work, record):
    """Ctrl-C to a batch whose engines leave setsid() children holding their pipes (37.7 s before)."""
    pidfile = tmp_path / "escapees.pid"
    c, ds = _batch(cli, tmp_path, work, f"esc@uci={fake('--mode', 'escape-hang', '--orphan-pid', pidfile)}")
    assert wait_until(lambda: len(pids_in(pidfile)) >= 2, 30), c.output
    time.sleep(0.3)
    t0 = time.monotonic()
    c.signal(signal.SIGINT, group=True)
    assert c.wait(30) == 130, c.output
    record("batch -j 2 with setsid escapees, Ctrl-C", "exited after signal", time.monotonic() - t0, 5.0)
    assert not wait_gone(pids_in(pidfile), 2.0), "escaped children survived"
    assert not wait_gone(session_members(c.pid), 5.0)
    assert not list(work.iterdir())


def test_batch_main_sigkilled_writes_nothing_more(cli, tmp_path, work, record):
    """kill -9 of a batch's main process: its fork server, workers and resource tracker follow at once."""
    pids = tmp_path / "pids"
    pids.mkdir()
    c, ds = _batch(cli, tmp_path, work, f"ok@stockfish-treedump={fake('--pid-dir', pids)}", n=60)
    done = ds / "searches" / "engine=ok"
    assert wait_until(lambda: done.is_dir() and len(list(done.iterdir())) >= 2, 30), c.output
    members = [p for p in session_members(c.pid) if p != c.pid]
    t0 = time.monotonic()
    c.signal(signal.SIGKILL)
    c.wait(10)
    assert not wait_gone(members, 5.0), "the batch's processes outlived it"
    record("batch -j 2, main process SIGKILLed", "rest gone after", time.monotonic() - t0, 5.0)
    rows = len(list(done.iterdir()))
    time.sleep(1.0)
    assert len(list(done.iterdir())) == rows, "rows were written after the batch died"
    assert rows < 60
    assert not wait_gone(pids_in(pids), 2.0) and not list(work.iterdir()) and not _no_tmp_files(ds)


def _engine_parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def test_local_worker_sigkilled(cli, tmp_path, work, record):
    """A worker killed outright (the OOM killer): its engine dies with it; the batch exits 1, not 2."""
    pids = tmp_path / "pids"
    pids.mkdir()
    c, ds = _batch(cli, tmp_path, work, f"hang@uci={fake('--mode', 'hang', '--pid-dir', pids)}")
    assert wait_until(lambda: len(pids_in(pids)) >= 2, 30), c.output
    engine = pids_in(pids)[0]
    worker = _engine_parent(engine)
    t0 = time.monotonic()
    signal_sent = worker != c.pid and worker > 1
    assert signal_sent
    import os

    os.kill(worker, signal.SIGKILL)
    assert not wait_gone([engine], 3.0), "the dead worker's engine survived"
    record("batch, local worker SIGKILLed", "its engine died after", time.monotonic() - t0, 3.0)
    assert c.wait(30) == 1, c.output
    assert "worker process died" in c.output and "--resume" in c.output
    assert not wait_gone(pids_in(pids), 2.0) and not list(work.iterdir()) and not _no_tmp_files(ds)


needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="Dask is not installed")


@needs_dask
def test_dask_worker_sigkilled(cli, tmp_path, work, record):
    """A Dask worker killed outright: its engine dies with it, Dask reruns the task, nothing is left behind."""
    import os

    pids = tmp_path / "pids"
    pids.mkdir()
    c, ds = _batch(cli, tmp_path, work, f"hang@uci={fake('--mode', 'hang', '--pid-dir', pids)}", n=2,
                   timeout=4, extra=("--executor", "dask"))
    assert wait_until(lambda: len(pids_in(pids)) >= 1, 60), c.output
    engine = pids_in(pids)[0]
    t0 = time.monotonic()
    os.kill(_engine_parent(engine), signal.SIGKILL)
    assert not wait_gone([engine], 3.0), "the dead worker's engine survived"
    record("batch --executor dask, worker SIGKILLed", "its engine died after", time.monotonic() - t0, 3.0)
    assert c.wait(120) == 1, c.output  # every search timed out (the hang engine), none lost
    assert "2 failed" in c.output
    assert not wait_gone(pids_in(pids), 2.0) and not list(work.iterdir()) and not _no_tmp_files(ds)
    assert not wait_gone(session_members(c.pid), 5.0)


@needs_dask
@pytest.mark.parametrize("sig, group", [pytest.param(signal.SIGTERM, False, id="SIGTERM-main"),
                                        pytest.param(signal.SIGHUP, True, id="SIGHUP-group")])
def test_dask_batch_terminated(cli, tmp_path, work, sig, group, record):
    pids = tmp_path / "pids"
    pids.mkdir()
    c, ds = _batch(cli, tmp_path, work, f"hang@uci={fake('--mode', 'hang', '--pid-dir', pids)}",
                   extra=("--executor", "dask"))
    assert wait_until(lambda: len(pids_in(pids)) >= 2, 60), c.output
    t0 = time.monotonic()
    c.signal(sig, group=group)
    assert c.wait(60) == 128 + sig, c.output
    record(f"batch --executor dask, {signal.Signals(sig).name} to the {'group' if group else 'main process'}",
           "exited after signal", time.monotonic() - t0, 15.0)
    assert not wait_gone(pids_in(pids), 2.0), "engines survived"
    assert not wait_gone(session_members(c.pid), 10.0), "Dask processes survived"
    assert not list(work.iterdir()) and not _no_tmp_files(ds)


@pytest.mark.parametrize("launcher", ["setpriv", "preexec"])
def test_engine_dies_with_the_process_that_started_it(tmp_path, launcher, record):
    """PR_SET_PDEATHSIG on the engine, set by the setpriv launcher or, without one, in a preexec function."""
    import os
    import sys

    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, TREEDIFF_LAUNCHER="1" if launcher == "setpriv" else "0")
    if launcher == "setpriv":
        import shutil

        setpriv = shutil.which("setpriv")
        if setpriv is None or b"--pdeathsig" not in subprocess.run([setpriv, "--help"], capture_output=True).stdout:
            pytest.skip("no setpriv with --pdeathsig here (the opt-in launcher cannot be used)")
    code = ("import sys, time\nfrom treediff.run.process import EngineProcess\n"
            "eng = EngineProcess(sys.argv[1:], cwd=sys.argv[1 + sys.argv[1:].index('--pid-dir') + 1])\n"
            "print(eng.containment.mechanism, flush=True)\ntime.sleep(120)\n")
    from support.runner_helpers import fake_argv

    holder = subprocess.Popen([sys.executable, "-c", code, *fake_argv("--mode", "hang", "--pid-dir", str(pids))],
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() in ("cgroup", "subreaper")
        assert wait_until(lambda: pids_in(pids), 20)
        engine = pids_in(pids)[0]
        t0 = time.monotonic()
        holder.kill()
        holder.wait(10)
        assert not wait_gone([engine], 3.0), "the engine outlived the process that started it"
        record(f"engine's starter SIGKILLed ({launcher})", "engine died after", time.monotonic() - t0, 3.0)
        from treediff.run.contain import cgroup_base, sweep_stale_cgroups

        sweep_stale_cgroups()  # what the next run does first: the dead process's cgroup goes
        base = cgroup_base()
        assert base is None or not [e for e in os.listdir(base) if e.startswith(f"treediff-{holder.pid}-")]
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        for pid in pids_in(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_run_sigkilled_leaves_nothing_for_long(cli, tmp_path, work, record):
    """kill -9 of `treediff run`: the engine dies with it; the next run removes its working directory."""
    pids = tmp_path / "pids"
    pids.mkdir()
    c = cli("run", "--engine", f"uci={fake('--mode', 'hang', '--pid-dir', pids)}", "--fen", START, "--depth", 2,
            "--timeout", 60, "-o", tmp_path / "out.log", "--tmpdir", work)
    assert wait_until(lambda: pids_in(pids), 20), c.output
    t0 = time.monotonic()
    c.signal(signal.SIGKILL)
    c.wait(10)
    assert not wait_gone(pids_in(pids), 3.0), "the engine outlived treediff run"
    record("run SIGKILLed", "its engine died after", time.monotonic() - t0, 3.0)
    assert list(work.iterdir())  # a SIGKILLed process cleans nothing itself...
    nxt = cli("run", "--engine", f"uci={fake()}", "--fen", START, "--depth", 1, "-o", tmp_path / "b.log",
              "--tmpdir", work)
    assert nxt.wait(60) == 0, nxt.output
    assert not list(work.iterdir())  # ...the next run on the machine does

"""Helpers for the tests of commands that fork (treediff.run.forked): the real command in a fresh interpreter
that counts its forks, and the real command stopped by a signal while its child is stuck."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.runner_helpers import children_of, sigint_at_default, wait_until

ROOT = Path(__file__).resolve().parents[2]

#: ``python -c COUNT_FORKS ARGS...`` runs ``treediff ARGS...`` and writes ``FORKS n`` (the forks of the command's
#: own process) last on stderr.  ``TEST_FORK_MIN_RECORDS`` (default 0) and ``TEST_FORK_MIN_LOG_BYTES`` (default:
#: left as it is) set treediff.store.budget's bounds, which the fixtures are far below.
COUNT_FORKS = textwrap.dedent("""
    import os, sys
    parent = os.getpid()
    real_fork = os.fork
    forks = []
    def counting_fork():
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid
    os.fork = counting_fork
    import treediff.store.budget as budget
    budget.FORK_MIN_RECORDS = int(os.environ.get("TEST_FORK_MIN_RECORDS", "0"))
    if "TEST_FORK_MIN_LOG_BYTES" in os.environ:
        budget.FORK_MIN_LOG_BYTES = int(os.environ["TEST_FORK_MIN_LOG_BYTES"])
    from treediff.cli import main
    try:
        main(sys.argv[1:])
    finally:
        if os.getpid() == parent:
            sys.stderr.write(f"FORKS {len(forks)}\\n")
""")


def forks_counted(stderr: str) -> tuple[int, str]:
    """(forks, the rest of stderr) of a :data:`COUNT_FORKS` run."""
    forks = [int(line.split()[1]) for line in stderr.splitlines() if line.startswith("FORKS ")]
    assert forks, stderr
    rest = "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("FORKS "))
    return forks[-1], rest


#: ``python -c STUCK MODULE NAME MARKER ARGS...`` replaces MODULE.NAME by a function that writes its process
#: id to MARKER and sleeps for a minute, sets the fork bounds to 0 and runs ``treediff ARGS...``.
_STUCK = textwrap.dedent("""
    import importlib, os, sys, time
    module, name, marker = importlib.import_module(sys.argv[1]), sys.argv[2], sys.argv[3]
    real, main_pid = getattr(module, name), os.getpid()

    def stuck(*args, **kwargs):  # the work, as if it took long
        if os.environ.get("TEST_STUCK_IN_CHILD_ONLY") and os.getpid() == main_pid:
            return real(*args, **kwargs)  # (the command's own process runs the same function too)
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(60)

    setattr(module, name, stuck)
    import treediff.store.budget as budget
    budget.FORK_MIN_RECORDS = 0
    budget.FORK_MIN_LOG_BYTES = int(os.environ.get("TEST_FORK_MIN_LOG_BYTES", "0"))
    import treediff.cli
    if os.environ.get("TEST_CLI_ENTRY") == "run":  # the console script's entry (its exit skips the teardown)
        sys.argv = ["treediff", *sys.argv[4:]]
        treediff.cli.run()
    else:
        treediff.cli.main(sys.argv[4:])
""")


def stop_while_stuck(tmp_path: Path, stuck: str, args: list[str], signum: int,
                     scratch_made: int | None = None, child_only: bool = False,
                     entry: str = "main", min_log_bytes: int = 0) -> tuple[int, str, int, Path]:
    """Run ``treediff ARGS`` with ``stuck`` ("module.name": what its forked child runs) hanging, send ``signum``
    once the child is in it, and return (exit status, stderr, the child's pid, the command's TMPDIR).
    ``scratch_made``: the scratch directories the command must hold when the signal is sent.  ``child_only``:
    the command's own process runs ``stuck`` too, as it is (only the child hangs).  ``entry``: ``treediff.cli``'s
    ``main`` or ``run`` (the console script's).  ``min_log_bytes``: ``FORK_MIN_LOG_BYTES`` (0 unless given)."""
    module, name = stuck.rsplit(".", 1)
    marker = tmp_path / "child.pid"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), OPENBLAS_NUM_THREADS="1")
    if child_only:
        env["TEST_STUCK_IN_CHILD_ONLY"] = "1"
    env["TEST_CLI_ENTRY"] = entry
    env["TEST_FORK_MIN_LOG_BYTES"] = str(min_log_bytes)
    env.pop("TREEDIFF_FORK", None)
    # SIGINT at its default in the command (Python then raises KeyboardInterrupt for it): a test run started
    # in the background has SIGINT ignored, which the command would inherit and, by design, keep ignoring.
    proc = subprocess.Popen([sys.executable, "-c", _STUCK, module, name, str(marker), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_at_default)
    try:
        assert wait_until(lambda: marker.exists() and marker.read_text() != "", 60)
        child = int(marker.read_text())
        assert child != proc.pid and any(pid == child for pid, _ in children_of(proc.pid))
        if scratch_made is not None:
            assert len(list(scratch.iterdir())) == scratch_made
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err, child, scratch


def run_counting_forks(command: str, args, fork: bool, tmp_path: Path,
                       min_log_bytes: int = 0) -> tuple[int, str, str, int]:
    """(exit status, JSON output or "", stderr without the fork count, forks) of ``treediff COMMAND ARGS
    --format json`` in a fresh interpreter (:data:`COUNT_FORKS`; ``fork``: ``TREEDIFF_FORK`` 1 or 0; the fork
    bounds 0 and ``min_log_bytes``), its TMPDIR a new empty directory that must be empty at the end."""
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="tmp-", dir=tmp_path))
    out = scratch.parent / f"{scratch.name}.json"
    env = dict(os.environ, TREEDIFF_FORK="1" if fork else "0", OPENBLAS_NUM_THREADS="1", TMPDIR=str(scratch),
               TEST_FORK_MIN_RECORDS="0", TEST_FORK_MIN_LOG_BYTES=str(min_log_bytes))
    proc = subprocess.run([sys.executable, "-c", COUNT_FORKS, command, *map(str, args), "--format", "json",
                           "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    forks, err = forks_counted(proc.stderr)
    assert list(scratch.iterdir()) == [], "scratch left behind"
    return proc.returncode, out.read_text() if out.exists() else "", err, forks


def garbled_log(tmp_path: Path, name: str, trace: Path) -> Path:
    """``trace`` with two lines of garbage bytes after its header, written as ``tmp_path/name``: the parse warns
    about them."""
    lines = trace.read_bytes().splitlines(keepends=True)
    log = tmp_path / name
    log.write_bytes(b"".join(lines[:1] + [b"\xff\xfe garbage\n", b"\x81\x82\n"] + lines[1:]))
    return log


def parquet_of(trace: Path, directory: Path) -> Path:
    """``treediff parse TRACE`` written into ``directory`` (a Parquet input for the commands under test)."""
    from click.testing import CliRunner

    from treediff.cli import main

    out = directory / f"{trace.stem}.parquet"
    result = CliRunner().invoke(main, ["parse", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out

"""The ``treediff`` console script (``treediff.cli.run``) ends the process without the interpreter's teardown
after the commands that write only through files they close (``FAST_EXIT_COMMANDS``): the same outputs, exit
statuses and messages as :func:`treediff.cli.main` exiting the usual way, the ``atexit`` handlers run, and
the usual exit wherever something is unusual."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import treediff.cli as cli
from support.forking import stop_while_stuck
from support.runner_helpers import pid_alive

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "fixtures" / "traces"

#: ``python -c SCRIPT ENTRY ARGS...``: ``treediff ARGS`` through ``treediff.cli.ENTRY`` (run or main).  The
#: interpreter's usual exit says USUAL-EXIT on stderr (threading's exit callbacks run in its shutdown, which
#: ``os._exit`` skips; a finalizer would not do: objects gc.freeze kept may never be finalized), and an atexit
#: handler says AT-EXIT.
_SCRIPT = """
import atexit, os, sys, threading
threading._register_atexit(lambda: os.write(2, b"USUAL-EXIT\\n"))
atexit.register(lambda: sys.stderr.write("AT-EXIT\\n"))
import treediff.cli
entry = getattr(treediff.cli, sys.argv[1])
sys.argv = ["treediff", *sys.argv[2:]]
sys.exit(entry())
"""


def _treediff(entry: str, *args, tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TMPDIR=str(tmp), OPENBLAS_NUM_THREADS="1", TREEDIFF_FORK="0")
    return subprocess.run([sys.executable, "-c", _SCRIPT, entry, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _scratch(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    return directory


@pytest.mark.parametrize("case", ["report-stdout", "report-error", "compare-json", "usage-error", "diff", "info"])
def test_the_fast_exit_gives_what_the_usual_exit_gives(case, tmp_path):
    a, b, c = TRACES / "typhoon_start.log", TRACES / "stockfish_start.log", TRACES / "crafty_start.log"
    args = {
        # ~34 kB of CSV through a pipe (stdout's buffer holds 8 kB): all of it must be flushed before the end
        "report-stdout": ["report", a, b, c, "--table", "all", "--by", "engine,ply", "--format", "csv"],
        "report-error": ["report", tmp_path / "missing.log"],
        "compare-json": ["compare", a, b, "--format", "json"],
        "usage-error": ["compare", a],
        "diff": ["diff", a, b, "--format", "json"],
        "info": ["info", c],
    }[case]
    fast = _treediff("run", *args, tmp=_scratch(tmp_path, "fast"))
    usual = _treediff("main", *args, tmp=_scratch(tmp_path, "usual"))
    assert "USUAL-EXIT" in usual.stderr  # (what tells the two exits apart)
    assert "USUAL-EXIT" not in fast.stderr, "run() tore the interpreter down"
    assert "AT-EXIT" in fast.stderr.splitlines(), "the atexit handlers did not run"
    assert fast.returncode == usual.returncode
    assert fast.returncode == (0 if "error" not in case else 2)
    assert fast.stdout == usual.stdout
    assert fast.stderr.replace("USUAL-EXIT\n", "") == usual.stderr.replace("USUAL-EXIT\n", "")
    if case == "report-stdout":
        assert len(fast.stdout) > 20_000
    # The parse's scratch directories are removed (by the commands and their atexit handlers) either way.
    assert list((tmp_path / "fast").iterdir()) == [] and list((tmp_path / "usual").iterdir()) == []


@pytest.mark.parametrize("command", ["compare", "parse"])
def test_a_written_output_file_is_complete(command, tmp_path):
    a, b = TRACES / "typhoon_start.log", TRACES / "stockfish_start.log"
    outputs = {}
    for entry in ("run", "main"):
        out = tmp_path / f"{entry}.out"
        args = ["compare", a, b, "--format", "json"] if command == "compare" else ["parse", a]
        done = _treediff(entry, *args, "-o", out, tmp=_scratch(tmp_path, entry))
        assert done.returncode == 0, done.stderr
        outputs[entry] = out.read_bytes()
    assert outputs["run"] == outputs["main"] and len(outputs["run"]) > 1000


@pytest.mark.parametrize("args", [["whatif", "--help"], ["--help"], ["--version"]])
def test_other_commands_exit_the_usual_way(args, tmp_path):
    done = _treediff("run", *args, tmp=_scratch(tmp_path, "t"))
    assert done.returncode == 0, done.stderr
    assert "USUAL-EXIT" in done.stderr


class _Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch):
    """os._exit and atexit's handlers recorded instead of run (pytest's own handlers must not run here); the
    threads ``_exit_at_once`` sees are the main thread and those a test starts (other tests of this process
    may have left threads of their own)."""
    calls: list = []
    mine = {threading.main_thread()}
    real_thread_start = threading.Thread.start

    def start(self):
        mine.add(self)
        real_thread_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    monkeypatch.setattr(cli.threading, "enumerate", lambda: [t for t in mine if t.is_alive()])

    def fake_exit(status):
        calls.append(("exit", status))
        raise _Exited

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(cli.atexit, "_run_exitfuncs", lambda: calls.append(("atexit",)))
    return calls


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (2, 2), (130, 130)])
def test_exit_at_once_runs_the_handlers_then_exits_with_the_status(exits, code, status):
    with pytest.raises(_Exited):
        cli._exit_at_once(code)
    assert exits == [("atexit",), ("exit", status)]


def test_exit_at_once_leaves_a_message_status_to_the_usual_exit(exits):
    cli._exit_at_once("treediff: something")
    assert exits == []


def test_exit_at_once_waits_for_a_running_thread_the_usual_way(exits):
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        cli._exit_at_once(0)
        assert exits == []
    finally:
        stop.set()
        thread.join()
    daemon = threading.Thread(target=stop.wait, daemon=True)  # (the usual exit does not wait for a daemon)
    stop.clear()
    daemon.start()
    try:
        with pytest.raises(_Exited):
            cli._exit_at_once(0)
    finally:
        stop.set()
        daemon.join()


def test_exit_at_once_leaves_a_stream_that_cannot_be_flushed_to_the_usual_exit(exits, monkeypatch):
    class ClosedPipe:
        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    cli._exit_at_once(0)
    assert exits == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_command_stopped_by_a_signal_still_reaps_its_child_and_leaves_no_scratch(tmp_path, signum):
    """Through the console script's entry: the signal ends the command with 128 + signum, the fast exit
    follows, and the divergences' child (stuck) is reaped and the parse's scratch removed before it."""
    status, err, child, scratch = stop_while_stuck(
        tmp_path, "treediff.align.summaries.divergences",
        ["compare", str(TRACES / "typhoon_batch3.log"), str(TRACES / "stockfish_batch3.log")], signum, entry="run")
    assert status == 128 + signum, err
    assert not pid_alive(child), "the aligning child outlived compare"
    assert list(scratch.iterdir()) == [], "scratch left behind"


def _report_with_fold_preceded_by(before_fold: str, entry: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """``treediff report`` of a fixture (through ``treediff.cli``'s ``entry``: ``run`` or ``main``), in a fresh
    interpreter, with ``before_fold`` (the body of a function) run just before the report's fold."""
    script = "\n".join([
        "import os, signal, sys, time, weakref",
        "import treediff.report.core as core",
        "real = core.build_report",
        "def build_report(*args, **kwargs):",
        textwrap.indent(textwrap.dedent(before_fold), "    "),
        "    return real(*args, **kwargs)",
        "core.build_report = build_report",
        "import treediff.cli",
        "entry = getattr(treediff.cli, sys.argv[1])",
        'sys.argv = ["treediff", *sys.argv[2:]]',
        "sys.exit(entry())",
    ])
    env = dict(os.environ, TMPDIR=str(tmp_path), OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", script, entry, "report", str(TRACES / "stockfish_start.log"),
                           "--table", "acts"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


#: A SIGTERM handled inside a weakref callback (as the import system's module locks' callbacks run while pandas is
#: imported, where it once came: an exception raised there is printed and dropped), then 5 s of work.
_IN_CALLBACK = """
class Thing:
    pass
def callback(ref):
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000000):  # (its handler runs in here)
        pass
thing = Thing()
ref = weakref.ref(thing, callback)
del thing
time.sleep(5)
sys.stderr.write("RAN-ON\\n")
"""


@pytest.mark.parametrize("entry", ["run", "main"])
def test_a_signal_handled_where_python_drops_its_exception_still_stops_the_command_at_once(entry, tmp_path):
    """Its exception is dropped, so the signal is sent again (run/signals.py: _redelivering): the command stops
    within the 5 s of work (without it, it ran them and the fold, or waited on a stuck child to its end), with
    status 143 and the one line: no "Exception ignored in ..." traceback."""
    started = time.monotonic()
    out = _report_with_fold_preceded_by(_IN_CALLBACK, entry, tmp_path)
    assert out.returncode == 128 + signal.SIGTERM, out.stderr
    assert "RAN-ON" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert out.stderr.strip() == "treediff: terminated by SIGTERM"
    assert time.monotonic() - started < 5
    assert list(tmp_path.iterdir()) == []


#: A SIGTERM to the process whose exception code swallows (an ``except KeyboardInterrupt`` that goes on).
_SWALLOWED = """
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # (the handler raises here)
    sys.stderr.write("NOT-RAISED\\n")
except KeyboardInterrupt:
    sys.stderr.write("DROPPED\\n")
"""


@pytest.mark.parametrize("entry", ["run", "main"])
def test_a_signal_whose_exception_was_dropped_still_ends_the_command(entry, tmp_path):
    """The command runs on after such a signal (its exception is gone) but ends as the signal asked: status
    143 and the one line, whatever it wrote meanwhile; the scratch files removed."""
    out = _report_with_fold_preceded_by(_SWALLOWED, entry, tmp_path)
    assert "DROPPED" in out.stderr, out.stderr
    assert out.returncode == 128 + signal.SIGTERM, out.stderr
    assert "treediff: terminated by SIGTERM" in out.stderr
    assert list(tmp_path.iterdir()) == []

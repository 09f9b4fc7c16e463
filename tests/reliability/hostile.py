"""Helpers of the reliability suite: treediff as a real child process, signals, leftovers, private mounts.

Every ``treediff`` here runs as its own process in its own session, as a user
would start it from a shell; the tests send it real signals and then look at
what is left: its processes (by pid files the fake engines write, by session),
its working directories (``--tmpdir`` points into the test's directory) and
temporary files.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from support.runner_helpers import FAKE, ROOT, START, sigint_at_default, wait_until  # noqa: F401 - (re-exported)

#: ``treediff``, writing its own peak RSS (VmHWM: this process image, not the parent it was forked from, as
#: ``wait4``'s ``ru_maxrss`` would count) into ``$TREEDIFF_TEST_PEAK`` when it exits.
TREEDIFF = (sys.executable, "-c",
            "import atexit, os\n"
            "def _peak():\n"
            "    path = os.environ.get('TREEDIFF_TEST_PEAK')\n"
            "    if path:\n"
            "        with open('/proc/self/status') as fh:\n"
            "            kb = next(line.split()[1] for line in fh if line.startswith('VmHWM'))\n"
            "        with open(path, 'w') as out:\n"
            "            out.write(kb)\n"
            "atexit.register(_peak)\n"
            "from treediff.cli import main\n"
            "main()\n")
TACTIC = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"


def fake(*args: object) -> str:
    """The fake engine's command line (for ``--engine NAME=...`` or ``--cmd``)."""
    return shlex.join([sys.executable, str(FAKE), *map(str, args)])


def epd(path: Path, n: int, fen: str = START) -> Path:
    path.write_text("".join(f'{fen} id "p{i}";\n' for i in range(n)))
    return path


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def ours(pid: int) -> bool:
    """A live process this suite started (fake engines and their children), not a recycled pid."""
    line = cmdline(pid)
    return alive(pid) and (b"fake_engine" in line or b"time.sleep(120)" in line or b"treediff" in line)


def session_members(sid: int) -> list[int]:
    """Live processes of session ``sid`` (a CLI started in its own session: its workers, fork server, tracker)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[3]) == sid:
                out.append(int(entry))
    return out


def pids_in(*sources: Path) -> list[int]:
    """pids from pid files (one a line) and pid directories (one file per pid)."""
    pids: list[int] = []
    for source in sources:
        if source.is_dir():
            pids += [int(p.name) for p in source.iterdir() if p.name.isdigit()]
        elif source.exists():
            pids += [int(x) for x in source.read_text().split() if x.isdigit()]
    return pids


def wait_gone(pids, timeout: float = 3.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds (empty when all died)."""
    pids = list(pids)
    wait_until(lambda: not any(alive(p) for p in pids), timeout)
    return [p for p in pids if alive(p)]


def _as_in_a_terminal(preexec=None):
    """The child's set-up: SIGINT at its default (:func:`sigint_at_default`: a suite started in the background
    has it ignored, and treediff's Ctrl-C tests then timed out, fifteenth session), then ``preexec``."""

    def setup() -> None:
        sigint_at_default()
        if preexec is not None:
            preexec()

    return setup


class Cli:
    """``treediff ARGS`` in its own session; its output collected on a thread; ``wait`` records its time and
    its peak RSS (``maxrss_mb``, the treediff process alone, None if it did not exit normally)."""

    def __init__(self, *args: object, cwd: Path, env: dict[str, str] | None = None, stdin=None,
                 wrap: tuple[str, ...] = (), preexec=None):
        self.args = [str(a) for a in args]
        self._peak = Path(cwd) / f".peak-{time.monotonic_ns()}"
        env = dict(os.environ if env is None else env, TREEDIFF_TEST_PEAK=str(self._peak))
        self.proc = subprocess.Popen([*wrap, *TREEDIFF, *self.args], cwd=str(cwd), env=env,
                                     stdin=subprocess.DEVNULL if stdin is None else stdin,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_as_in_a_terminal(preexec))
        self.t0 = time.monotonic()
        self.seconds: float | None = None
        self.maxrss_mb: float | None = None
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            self._chunks.append(chunk)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def output(self) -> str:
        return b"".join(self._chunks).decode("utf-8", "replace")

    def signal(self, sig: int, group: bool = False) -> None:
        (os.killpg if group else os.kill)(self.proc.pid, sig)

    def wait(self, timeout: float) -> int:
        """Wait (at most ``timeout`` s) for the exit; the exit status, negative for a signal (as Popen)."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
            if pid:
                self.seconds = time.monotonic() - self.t0
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                try:
                    self.maxrss_mb = int(self._peak.read_text()) / 1024
                    self._peak.unlink()
                except (OSError, ValueError):
                    self.maxrss_mb = None
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"treediff {' '.join(self.args[:2])} still running after {timeout:g} s:\n"
                                   f"{self.output[-2000:]}")
            time.sleep(0.01)
        self._reader.join(timeout=5)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL what is left of its session (cleanup, also after a failed test) and reap it."""
        for pid in session_members(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.proc.returncode is None:
            try:
                self.wait(10)
            except (TimeoutError, ChildProcessError):
                pass


def can_unshare_mounts() -> bool:
    """Root with util-linux ``unshare``: a private mount namespace for tmpfs and read-only bind mounts."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


def in_private_mount(setup: str, after: str = "") -> tuple[str, ...]:
    """A wrapper running the command in a private mount namespace: ``setup`` (shell) first, ``after`` last.

    The mounts exist only inside; ``after`` runs there too (e.g. listing the
    tmpfs into a file outside), and the command's exit status is kept.
    """
    script = f'{setup} || exit 97\n"$@"\nrc=$?\n{after}\nexit $rc\n'
    return ("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh")


__all__ = ["Cli", "FAKE", "ROOT", "START", "TACTIC", "alive", "can_unshare_mounts", "epd", "fake", "in_private_mount",
           "ours", "pids_in", "session_members", "wait_gone", "wait_until"]

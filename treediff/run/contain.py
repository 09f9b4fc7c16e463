"""Keeping an engine and everything it starts inside the runner's reach: :class:`Containment`.

An engine runs in its own session (so one ``killpg`` reaches its process
group), but a child that calls ``setsid()`` leaves that group, and a child
whose parent died is adopted by init.  Three mechanisms close those holes
(Linux; elsewhere only the process group is used):

* a **per-run cgroup** (cgroup v2, where this process may create one below
  its own): the engine is moved into it before it executes anything, so every
  descendant, ``setsid`` or not, is in it; ``cgroup.kill`` kills them all at
  once and the cgroup is removed.  Cgroups left by a process that died
  (a worker killed by the OOM killer) are swept by the next run;
* else a **subreaper** (``PR_SET_CHILD_SUBREAPER``), set while engines run:
  an escaped descendant whose parent dies is adopted by this process instead
  of init, so the runner finds it among its own children, kills and reaps it;
* always ``PR_SET_PDEATHSIG`` (SIGKILL) on the engine: if the process that
  started it dies (a batch worker killed by ``kill -9``), the engine dies too.

``TREEDIFF_CGROUP=0`` in the environment disables the cgroup (the subreaper
is used instead); the reliability tests run both ways.
"""
from __future__ import annotations

import ctypes
import errno
import itertools
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_SIGKILL = int(signal.SIGKILL)
_IS_LINUX = sys.platform.startswith("linux")
_COUNTER = itertools.count()
_LOCK = threading.Lock()
#: Engines currently running under the subreaper (the flag is cleared when the last one is done).
_SUBREAPER_USERS = 0
#: pids of engines this process started and still tracks (their own Popen reaps them).
TRACKED: set[int] = set()


def _load_prctl() -> Callable[..., int] | None:
    if not _IS_LINUX:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


#: Resolved once here, in the parent: the child calls it between fork and exec, where nothing may be imported.
_PRCTL = _load_prctl()


def set_parent_death_signal(signum: int) -> bool:
    """Have the kernel send this process ``signum`` when the thread that started it exits (Linux)."""
    if _PRCTL is None:
        return False
    return _PRCTL(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0


def start_time(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (``/proc/PID/stat`` field 22): with the pid, its identity."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def process_state(pid: int) -> str | None:
    """A process's state letter (``R``, ``S``, ``Z`` for a zombie...), None if there is no such process."""
    fields = _stat_fields(pid)
    return fields[0].decode() if fields else None


def cpu_ticks(pid: int) -> int | None:
    """The user + system CPU time a process has used, in clock ticks (``/proc/PID/stat`` fields 14 and 15),
    None if there is no such process (or no /proc)."""
    fields = _stat_fields(pid)
    try:
        return int(fields[11]) + int(fields[12]) if fields else None
    except (IndexError, ValueError):
        return None


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, session, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def children(pid: int | None = None) -> list[int]:
    """The pids of ``pid``'s children (this process by default), zombies included."""
    pid = os.getpid() if pid is None else pid
    found: list[int] = []
    task_dir = f"/proc/{pid}/task"
    try:
        tids = os.listdir(task_dir)
    except OSError:
        tids = []
    have_children_file = False
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/children", "rb") as fh:
                found.extend(int(p) for p in fh.read().split())
            have_children_file = True
        except (OSError, ValueError):
            continue
    if have_children_file:
        return found
    # Kernels without CONFIG_PROC_CHILDREN: scan every process's parent.
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry))
    return found


# -- cgroup v2 ---------------------------------------------------------------------------------------------------

_BASE: Path | None = None
_BASE_KNOWN = False
_SWEPT = False


def _own_cgroup_dir() -> Path | None:
    """This process's cgroup v2 directory, if the unified hierarchy is mounted and it can hold children."""
    if not _IS_LINUX or os.environ.get("TREEDIFF_CGROUP", "1") == "0":
        return None
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
        with open("/proc/self/mountinfo") as fh:
            mounts = fh.read().splitlines()
    except OSError:
        return None
    rel = next((line[3:] for line in lines if line.startswith("0::")), None)
    if rel is None:
        return None
    for line in mounts:
        left, sep, right = line.partition(" - ")
        if sep and right.split()[:1] == ["cgroup2"]:
            fields = left.split()
            root, mountpoint = fields[3], fields[4]
            if root != "/" and rel.startswith(root):
                rel = rel[len(root):] or "/"
            base = Path(mountpoint) / rel.lstrip("/")
            if base.is_dir() and os.access(base, os.W_OK) and (base / "cgroup.procs").exists():
                return base
    return None


def cgroup_base() -> Path | None:
    global _BASE, _BASE_KNOWN
    with _LOCK:
        if not _BASE_KNOWN:
            _BASE, _BASE_KNOWN = _own_cgroup_dir(), True
        return _BASE


def _cgroup_populated(path: Path) -> bool:
    try:
        for line in (path / "cgroup.events").read_text().splitlines():
            if line.startswith("populated "):
                return line.split()[1] != "0"
    except OSError:
        return False
    return bool(_cgroup_pids(path))


def _cgroup_pids(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _cgroup_kill(path: Path) -> None:
    try:
        (path / "cgroup.kill").write_text("1")
        return
    except OSError:
        pass
    # Kernels before 5.14 have no cgroup.kill: kill its members until none is left.
    for pid in _cgroup_pids(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _cgroup_remove(path: Path, wait: float) -> bool:
    """Kill everything in the cgroup, wait (at most ``wait`` seconds) for it to empty, remove it."""
    deadline = time.monotonic() + wait
    while True:
        _cgroup_kill(path)
        if not _cgroup_populated(path) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    try:
        path.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _cgroup_owner_alive(name: str) -> bool:
    # treediff-PID-STARTTIME-N
    parts = name.split("-")
    if len(parts) != 4 or not parts[1].isdigit():
        return True  # not ours to judge
    return start_time(int(parts[1])) == parts[2]


def sweep_stale_cgroups() -> int:
    """Kill and remove the per-run cgroups of processes that died without removing them; their number."""
    base = cgroup_base()
    if base is None:
        return 0
    removed = 0
    try:
        entries = [e for e in os.listdir(base) if e.startswith("treediff-")]
    except OSError:
        return 0
    for name in entries:
        if not _cgroup_owner_alive(name) and _cgroup_remove(base / name, wait=1.0):
            removed += 1
    return removed


# -- the subreaper ----------------------------------------------------------------------------------------------

#: Whether this process was a subreaper before treediff made it one (then it is left one).
_WAS_SUBREAPER: bool | None = None


def _set_subreaper(on: bool) -> bool:
    global _WAS_SUBREAPER
    if _PRCTL is None:
        return False
    if _WAS_SUBREAPER is None:
        flag = ctypes.c_int(0)
        _PRCTL(_PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag), 0, 0, 0)
        _WAS_SUBREAPER = bool(flag.value)
    if not on and _WAS_SUBREAPER:
        return True
    return _PRCTL(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0


#: The launcher script: move itself into the cgroup (``$1``, may be empty), then exec the engine through
#: ``setpriv --pdeathsig KILL`` (``$2``).  Two small execs (about 1 ms) instead of a fork of the runner
#: for a ``preexec_fn`` (about 10 ms for a process with pyarrow and polars loaded).
_LAUNCH = 'p=$1 s=$2; shift 2; [ -z "$p" ] || { echo 0 > "$p"; } 2>/dev/null; exec "$s" --pdeathsig KILL -- "$@"'
_SETPRIV: list[str | None] = []


def _setpriv() -> str | None:
    """util-linux ``setpriv`` if it can set the parent-death signal (and ``/bin/sh`` is there), else None."""
    with _LOCK:
        if not _SETPRIV:
            found = None
            # Opt-in only (TREEDIFF_LAUNCHER=1): by default no shell stands between treediff and an engine,
            # even one that never interprets user text; the preexec function does the same job, ~9 ms slower.
            if _IS_LINUX and os.path.exists("/bin/sh") and os.environ.get("TREEDIFF_LAUNCHER", "0") == "1":
                import shutil
                import subprocess

                path = shutil.which("setpriv")
                if path is not None:
                    try:
                        probe = subprocess.run([path, "--help"], capture_output=True, timeout=5)
                        if b"--pdeathsig" in probe.stdout:
                            found = os.path.abspath(path)
                    except (OSError, subprocess.SubprocessError):
                        pass
            _SETPRIV.append(found)
        return _SETPRIV[0]


class Containment:
    """How one engine is held: a per-run cgroup (where possible), the subreaper, the parent-death signal.

    Create it just before starting the engine, start the engine with
    :meth:`command` (argv and ``preexec_fn`` for :class:`subprocess.Popen`),
    call :meth:`started` with its pid, :meth:`kill_all` when it must go and
    :meth:`release` once it is reaped.

    The subreaper is set while any engine runs (Linux), also with a cgroup:
    it is the safety net if the move into the cgroup fails, and it makes the
    escapees the cgroup kills this process's to reap.
    """

    def __init__(self) -> None:
        global _SWEPT
        self.parent = os.getpid()
        self.cgroup: Path | None = None
        self.subreaper = False
        self._procs_fd: int | None = None
        self._pid: int | None = None
        self._before: set[int] = set()
        self._own_sid = os.getsid(0)
        self._released = False
        #: ``cgroup``, ``subreaper`` or ``process-group``: what holds the engine's descendants.
        self.mechanism = "process-group"
        self._escaped: list[int] | None = None
        base = cgroup_base()
        if base is not None:
            if not _SWEPT:
                _SWEPT = True
                sweep_stale_cgroups()
            name = f"treediff-{self.parent}-{start_time(self.parent)}-{next(_COUNTER)}"
            try:
                (base / name).mkdir()
                self.cgroup = base / name
            except OSError:
                self.cgroup = None
        if _IS_LINUX:
            self._become_subreaper()
            if self.subreaper:
                self._before = set(children())
        self.mechanism = "cgroup" if self.cgroup is not None else "subreaper" if self.subreaper else "process-group"

    def command(self, argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """The argv to start and the ``preexec_fn`` (None when the launcher does the work in the child)."""
        setpriv = _setpriv()
        if setpriv is not None:
            procs = str(self.cgroup / "cgroup.procs") if self.cgroup is not None else ""
            return ["/bin/sh", "-c", _LAUNCH, "treediff-engine", procs, setpriv, *argv], None
        if _PRCTL is None and self.cgroup is None:
            return list(argv), None
        if self.cgroup is not None:
            try:
                self._procs_fd = os.open(self.cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                self._drop_cgroup()
        return list(argv), self.preexec

    def preexec(self) -> None:  # pragma: no cover - runs in the child between fork and exec
        # Only calls resolved in the parent; no imports, no locks.
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
            if os.getppid() != self.parent:
                os._exit(127)  # the runner died before the death signal was armed
        if self._procs_fd is not None:
            try:
                os.write(self._procs_fd, b"0")
            except OSError:
                pass  # the subreaper still holds the engine's descendants

    def started(self, pid: int) -> None:
        self._pid = pid
        with _LOCK:
            TRACKED.add(pid)
        self._before.discard(pid)
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None

    def start_failed(self) -> None:
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        self.release()

    def _become_subreaper(self) -> None:
        global _SUBREAPER_USERS
        with _LOCK:
            ok = True if _SUBREAPER_USERS else _set_subreaper(True)
            if ok:
                _SUBREAPER_USERS += 1
        self.subreaper = ok

    def _drop_cgroup(self) -> None:
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        if self.cgroup is not None:
            try:
                self.cgroup.rmdir()
            except OSError:
                pass
        self.cgroup = None
        self.mechanism = "subreaper" if self.subreaper else "process-group"

    def kill_all(self, pgid: int) -> None:
        """SIGKILL the engine's process group and, through the cgroup, every descendant."""
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroup is not None:
            if self._escaped is None:
                members = _cgroup_pids(self.cgroup)
                self._escaped = [p for p in members if p != self._pid
                                 and (f := _stat_fields(p)) is not None and int(f[2]) != pgid]
                if self._pid is not None and self._pid not in members and process_state(self._pid) not in (None, "Z"):
                    # The engine never got into its cgroup (a controller forbids processes there, or the common
                    # ancestor is not ours to write): the subreaper holds it; no cgroups from now on.
                    global _BASE
                    with _LOCK:
                        _BASE = None
                    self.mechanism = "subreaper" if self.subreaper else "process-group"
            _cgroup_kill(self.cgroup)

    def release(self, wait: float = 2.0) -> list[int]:
        """After the engine itself was reaped: finish off its descendants; the pids killed this way.

        With a cgroup: kill what is left in it and remove it.  Under the
        subreaper: every new child of this process that is not an engine
        (it was adopted: its parent died) is killed and reaped.
        """
        if self._released:
            return []
        self._released = True
        with _LOCK:
            if self._pid is not None:
                TRACKED.discard(self._pid)
        killed: set[int] = set()
        if self.cgroup is not None:
            killed |= set(self._escaped or []) | {p for p in _cgroup_pids(self.cgroup) if p != self._pid}
            _cgroup_remove(self.cgroup, wait)  # a cgroup still populated (stuck in the kernel) is swept later
            self.cgroup = None
        if self.subreaper:
            killed |= set(self._reap_adopted(wait))
            self._leave_subreaper()
        return sorted(killed)

    def _adopted(self) -> list[int]:
        with _LOCK:
            tracked = set(TRACKED)
        out = []
        for pid in children():
            if pid in self._before or pid in tracked:
                continue
            fields = _stat_fields(pid)
            if fields is None:
                continue
            # A descendant of an engine lives in the engine's session or a newer one, never in ours.
            if int(fields[3]) != self._own_sid:
                out.append(pid)
        return out

    def _reap_adopted(self, wait: float) -> list[int]:
        deadline = time.monotonic() + wait
        killed: list[int] = []
        while True:
            adopted = self._adopted()
            if not adopted:
                return killed
            for pid in adopted:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                if pid not in killed:
                    killed.append(pid)
            for pid in adopted:
                while True:
                    try:
                        done, _ = os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        break
                    except OSError as exc:
                        if exc.errno == errno.EINTR:
                            continue
                        break
                    if done or time.monotonic() > deadline:
                        break
                    time.sleep(0.005)
            if time.monotonic() > deadline:
                return killed

    def _leave_subreaper(self) -> None:
        global _SUBREAPER_USERS
        with _LOCK:
            _SUBREAPER_USERS -= 1
            if _SUBREAPER_USERS == 0:
                _set_subreaper(False)
        self.subreaper = False

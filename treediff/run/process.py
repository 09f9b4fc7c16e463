"""One engine process: started in its own session, read without blocking, always reaped.

The engine runs in a new session (its own process group), inside a per-run
cgroup or under a subreaper, with a parent-death signal (see
:mod:`treediff.run.contain`), so a timeout or a trip-wire kills the engine
*and everything it started*, ``setsid`` escapees included.  Its stdin stays
open until the runner closes it after the search has answered: a closing pipe
is what made Stockfish search 0 nodes.

Every read and write is abandonable: the engine's output is read by a thread
polling a non-blocking pipe (it stops when told to, whoever else holds the
pipe), commands are written to a non-blocking pipe against the deadline, and
memory is bounded in bytes: a line keeps at most :data:`MAX_LINE_BYTES`, the
transcript at most :data:`TRANSCRIPT_BYTES`, the lines read but not yet
consumed at most :data:`QUEUE_BYTES` (then the engine waits on its pipe).
"""
from __future__ import annotations

import collections
import math
import os
import select
import signal
import subprocess
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Callable

from treediff.run.contain import Containment
from treediff.run.signals import deferred

#: Longest line kept from the engine's output; the rest of a longer line is counted, not kept.
MAX_LINE_BYTES = 64 * 1024
#: Transcript lines kept in memory (and in the log); the rest are counted.
TRANSCRIPT_LINES = 100_000
#: Transcript bytes kept in memory (and in the log); the rest are counted.
TRANSCRIPT_BYTES = 16 * 1024 * 1024
#: Bytes of output lines read but not yet consumed by the runner; past it the reader waits (the engine blocks).
QUEUE_BYTES = 16 * 1024 * 1024
#: The byte trip-wire's default: this many bytes per allowed line (TREEDUMP lines average 60-75 bytes).
BYTES_PER_TRACE_LINE = 256
#: Seconds the reader thread waits for output before looking at its stop flag again.
_POLL_SECONDS = 0.05
#: Seconds given to a SIGKILLed engine to be reaped (longer only for a process stuck in the kernel).
_REAP_SECONDS = 5.0

#: Process groups of the engines running in this process, for :func:`abandon_all`.
_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()
#: Set by :func:`abandon_all`: this process is shutting down and must not record any further result.
_ABANDONED = threading.Event()
#: The engines running in this process, so :func:`abandon_all` can reach their cgroups too.
_LIVE: set["EngineProcess"] = set()


def abandon_all() -> None:
    """Kill every engine this process started and mark the process as abandoning its work.

    For executors whose tasks run on threads that cannot be interrupted (a
    Dask worker being closed, a batch worker whose parent died): the running
    tasks see their engine die and, because :func:`abandoned` is then true,
    write nothing (see :func:`treediff.run.task.run_task`), so ``--resume``
    reruns them.
    """
    _ABANDONED.set()
    with _LIVE_LOCK:
        engines = list(_LIVE)
        groups = list(_LIVE_GROUPS)
    for engine in engines:
        engine.containment.kill_all(engine.pgid)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def abandoned() -> bool:
    """True once :func:`abandon_all` ran in this process."""
    return _ABANDONED.is_set()


def unsafe_character(text: str) -> str | None:
    """A description of the first character of ``text`` that must never reach an engine, else None.

    Refused: control characters (C0, DEL, C1: NUL, CR, LF, VT, ESC, NEL...),
    format characters (bidi overrides, zero-width, BOM), the line and
    paragraph separators U+2028/U+2029, surrogates (undecodable bytes) and
    private-use or unassigned code points.  Each of these either splits or
    ends a command line for some reader, or hides what is sent.
    """
    for i, ch in enumerate(text):
        code = ord(ch)
        if 0x20 <= code < 0x7F:
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            name = unicodedata.name(ch, "") or {"Cc": "control character", "Cs": "undecodable byte"}.get(category, "")
            return f"character U+{code:04X}{' ' + name if name else ''} at position {i + 1}"
    return None


class EngineExited(Exception):
    """The engine closed its output (exited or crashed) before answering."""


class WaitTimeout(Exception):
    """The wall-clock deadline passed."""


class Tripped(Exception):
    """A trip-wire fired (trace or output too large); ``args[0]`` says which."""


class UnsafeCommand(ValueError):
    """A command holds a character that must not reach an engine (see :func:`unsafe_character`)."""


@dataclass
class Transcript:
    """What was sent (``> ``) and received (``< ``), with seconds since start; bounded in lines and bytes."""

    lines: list[str] = field(default_factory=list)
    dropped: int = 0
    limit: int = 2_000_000
    byte_limit: int = TRANSCRIPT_BYTES
    size: int = 0
    dropped_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, direction: str, t: float, text: str, nbytes: int | None = None) -> None:
        n = (len(text) if nbytes is None else nbytes) + 13
        with self._lock:
            if len(self.lines) < self.limit and self.size + n <= self.byte_limit:
                self.lines.append(f"{t:9.3f} {direction} {text}")
                self.size += n
            else:
                self.dropped += 1
                self.dropped_bytes += n

    def text(self) -> str:
        with self._lock:
            tail = (f"# ... {self.dropped} more lines ({self.dropped_bytes:,} bytes) not kept\n"
                    if self.dropped else "")
            return "\n".join(self.lines) + "\n" + tail


class EngineProcess:
    """A running engine.  Use as a context manager: leaving it always kills everything it started and reaps.

    ``max_output_lines`` and ``max_output_bytes`` are the output trip-wire
    (checked by :meth:`wait_for`); :attr:`deadline` (a :func:`time.monotonic`
    time) bounds :meth:`send` when the engine does not read its input.
    """

    def __init__(self, argv: list[str] | tuple[str, ...], cwd: str, env: dict[str, str] | None = None,
                 max_output_lines: int = 2_000_000, max_output_bytes: int | None = None):
        self.t0 = time.monotonic()
        self.transcript = Transcript(limit=min(max_output_lines, TRANSCRIPT_LINES))
        self.max_output_lines = max_output_lines
        self.max_output_bytes = max_output_bytes if max_output_bytes is not None \
            else max_output_lines * BYTES_PER_TRACE_LINE
        self.output_lines = 0
        self.output_bytes = 0
        self.flooded = False
        self.flood_reason = ""
        #: Sends give up (:class:`WaitTimeout`) past this :func:`time.monotonic` time.
        self.deadline = math.inf
        #: Called at least every ``check_every`` seconds while waiting; may raise :class:`Tripped`.
        self.check: Callable[[], None] | None = None
        self.check_every = 0.05
        #: pids of descendants killed after the engine itself (escaped its process group).
        self.escaped: list[int] = []
        self._lines: collections.deque[tuple[str, int]] = collections.deque()
        self._queued = 0
        self._queueing = True
        self._eof = False
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._closed = False
        self.containment = Containment()
        command, preexec = self.containment.command(list(argv))
        try:
            self.proc = subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True, bufsize=0, preexec_fn=preexec,
            )
        except BaseException:
            self.containment.start_failed()
            raise
        self.containment.started(self.proc.pid)
        self.pgid = self.proc.pid  # leader of its own new session and group
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in_fd = self.proc.stdin.fileno()
        self._out_fd = self.proc.stdout.fileno()
        os.set_blocking(self._in_fd, False)
        os.set_blocking(self._out_fd, False)
        with _LIVE_LOCK:
            _LIVE_GROUPS.add(self.pgid)
            _LIVE.add(self)
        self._reader = threading.Thread(target=self._read, name=f"engine-{self.proc.pid}", daemon=True)
        self._reader.start()

    # -- reading -------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _read(self) -> None:
        fd = self._out_fd
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        pending = bytearray()
        cut = 0
        try:
            while not self._stop.is_set():
                if not poller.poll(_POLL_SECONDS * 1000):
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                self.output_bytes += len(chunk)
                start, n = 0, len(chunk)
                while True:
                    nl = chunk.find(b"\n", start)
                    end = n if nl < 0 else nl
                    room = MAX_LINE_BYTES - len(pending)
                    if end - start <= room:
                        pending += chunk[start:end]
                    else:
                        pending += chunk[start:start + max(room, 0)]
                        cut += end - start - max(room, 0)
                    if nl < 0:
                        break
                    self._line(pending, cut)
                    pending, cut = bytearray(), 0
                    start = nl + 1
                if self.output_bytes > self.max_output_bytes:
                    self._flood(f"output trip-wire: more than {self.max_output_bytes:,} output bytes")
        finally:
            if pending or cut:
                self._line(pending, cut)
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _flood(self, reason: str) -> None:
        if not self.flooded:
            self.flood_reason = reason
            self.flooded = True
            with self._cond:
                self._lines.clear()
                self._queued = 0
                self._cond.notify_all()

    def _line(self, raw: bytearray, cut: int) -> None:
        self.output_lines += 1
        if self.output_lines > self.max_output_lines:
            self._flood(f"output trip-wire: more than {self.max_output_lines:,} output lines")
        if self.flooded:
            return  # keep draining so the engine never blocks on a full pipe; keep nothing
        text = raw.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        shown = f"{text} [... {cut:,} more bytes of this line not kept]" if cut else text
        self.transcript.add("<", self.elapsed(), shown, len(raw))
        size = len(raw) + 64
        with self._cond:
            while self._queueing and self._queued > QUEUE_BYTES and not self._stop.is_set() and not self.flooded:
                self._cond.wait(0.1)
            if self._queueing and not self.flooded:
                self._lines.append((text, size))
                self._queued += size
                self._cond.notify_all()

    def stop_queueing(self) -> None:
        """The runner reads no more lines (the engine answered): the reader only records the transcript."""
        with self._cond:
            self._queueing = False
            self._lines.clear()
            self._queued = 0
            self._cond.notify_all()

    # -- writing -------------------------------------------------------------
    def send(self, line: str) -> None:
        """Send one command line; a dead engine raises :class:`EngineExited`, a full pipe past the deadline
        :class:`WaitTimeout`, a character no engine may see :class:`UnsafeCommand`."""
        bad = unsafe_character(line)
        if bad is not None:
            raise UnsafeCommand(f"refused to send a command holding a {bad}: {line[:80]!r}")
        data = line.encode() + b"\n"
        self.transcript.add(">", self.elapsed(), line, len(data))
        fd = self._in_fd
        what = line.split()[0] if line.split() else repr(line)
        while data:
            try:
                written = os.write(fd, data)
                data = data[written:]
            except BlockingIOError:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    raise WaitTimeout() from None
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
                poller.poll(min(remaining, self.check_every) * 1000)
            except (BrokenPipeError, OSError, ValueError):
                raise EngineExited(f"engine closed its input while sending {what}") from None

    def wait_for(self, match: Callable[[str], bool], deadline: float,
                 on_line: Callable[[str], None] | None = None) -> str:
        """Read lines until ``match(line)``; return that line.

        ``on_line`` sees every line; :attr:`check` (the trace trip-wire) runs
        at least every :attr:`check_every` seconds and may raise
        :class:`Tripped`.  ``deadline`` is a :func:`time.monotonic` time.
        """
        check, check_every = self.check, self.check_every
        last_check = time.monotonic()
        while True:
            now = time.monotonic()
            if check is not None and now - last_check >= check_every:
                check()
                last_check = now
            if self.flooded:
                raise Tripped(self.flood_reason)
            remaining = deadline - now
            if remaining <= 0:
                raise WaitTimeout()
            with self._cond:
                if not self._lines:
                    if self._eof:
                        raise EngineExited("engine exited before answering")
                    self._cond.wait(min(remaining, check_every))
                    if not self._lines:
                        continue
                line, size = self._lines.popleft()
                self._queued -= size
                self._cond.notify_all()
            if on_line is not None:
                on_line(line)
            if match(line):
                return line

    # -- shutdown ----------------------------------------------------------
    def close_stdin(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass

    def wait_exit(self, timeout: float) -> int | None:
        """Wait for the engine to exit by itself; None if it did not within ``timeout`` seconds."""
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the engine and everything it started (process group, cgroup, adopted escapees) and reap them."""
        self.containment.kill_all(self.pgid)
        try:
            self.proc.wait(timeout=_REAP_SECONDS)
        except subprocess.TimeoutExpired:
            pass  # stuck in the kernel; its cgroup is swept later
        self.escaped = self.containment.release()
        with _LIVE_LOCK:
            _LIVE_GROUPS.discard(self.pgid)
            _LIVE.discard(self)

    def drain(self) -> list[str]:
        """Lines read but not consumed (after the engine exited)."""
        self._reader.join(timeout=2.0)
        with self._cond:
            out = [line for line, _ in self._lines if line]
            self._lines.clear()
            self._queued = 0
        return out

    def __enter__(self) -> "EngineProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill and reap; stop the reader (it never waits on the pipe: an escaped child may hold it open)."""
        if self._closed:
            return
        with deferred():  # a SIGTERM now is raised once everything is reaped
            self._close()

    def _close(self) -> None:
        self._closed = True
        self.close_stdin()
        self.kill()
        # Everything that held the pipe is dead: the reader reaches its end at once and keeps the last lines.
        self._reader.join(timeout=0.5)
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self._reader.join(timeout=2.0)
        if not self._reader.is_alive() and self.proc.stdout is not None:
            # Closed only once the reader is gone: its descriptor number must not be reused under it.
            try:
                self.proc.stdout.close()
            except OSError:
                pass

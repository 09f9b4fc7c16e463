"""One engine process: started in its own session, read line by line, always reaped.

The engine runs in a new session (its own process group), so a timeout or a
trip-wire kills the engine *and everything it started* with one ``killpg``.
Its stdin stays open until the runner closes it after the search has
answered: a closing pipe is what made Stockfish search 0 nodes.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

#: Longest line kept from the engine's output; longer lines are split.
MAX_LINE_BYTES = 64 * 1024
#: Transcript lines kept in memory (and in the log); the rest are counted.
TRANSCRIPT_LINES = 100_000

#: Process groups of the engines running in this process, for :func:`abandon_all`.
_LIVE_GROUPS: set[int] = set()
_LIVE_LOCK = threading.Lock()
#: Set by :func:`abandon_all`: this process is shutting down and must not record any further result.
_ABANDONED = threading.Event()


def abandon_all() -> None:
    """Kill every engine group this process started and mark the process as abandoning its work.

    For executors whose tasks run on threads that cannot be interrupted (a
    Dask worker being closed): the running tasks see their engine die and,
    because :func:`abandoned` is then true, write nothing (see
    :func:`treediff.run.task.run_task`), so ``--resume`` reruns them.
    """
    _ABANDONED.set()
    with _LIVE_LOCK:
        groups = list(_LIVE_GROUPS)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def abandoned() -> bool:
    """True once :func:`abandon_all` ran in this process."""
    return _ABANDONED.is_set()


class EngineExited(Exception):
    """The engine closed its output (exited or crashed) before answering."""


class WaitTimeout(Exception):
    """The wall-clock deadline passed."""


class Tripped(Exception):
    """A trip-wire fired (trace or output too large); ``args[0]`` says which."""


@dataclass
class Transcript:
    """What was sent (``> ``) and received (``< ``), with seconds since start."""

    lines: list[str] = field(default_factory=list)
    dropped: int = 0
    limit: int = 2_000_000

    def add(self, direction: str, t: float, text: str) -> None:
        if len(self.lines) < self.limit:
            self.lines.append(f"{t:9.3f} {direction} {text}")
        else:
            self.dropped += 1

    def text(self) -> str:
        tail = f"# ... {self.dropped} more lines not kept\n" if self.dropped else ""
        return "\n".join(self.lines) + "\n" + tail


class EngineProcess:
    """A running engine.  Use as a context manager: leaving it always kills the group and reaps."""

    def __init__(self, argv: list[str] | tuple[str, ...], cwd: str, env: dict[str, str] | None = None,
                 max_output_lines: int = 2_000_000):
        self.t0 = time.monotonic()
        self.transcript = Transcript(limit=min(max_output_lines, TRANSCRIPT_LINES))
        self.max_output_lines = max_output_lines
        self.output_lines = 0
        self.flooded = False
        self._queue: queue.Queue[str | None] = queue.Queue()
        #: Called at least every ``check_every`` seconds while waiting; may raise :class:`Tripped`.
        self.check: Callable[[], None] | None = None
        self.check_every = 0.05
        self.proc = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
        )
        self.pgid = self.proc.pid  # leader of its own new session and group
        with _LIVE_LOCK:
            _LIVE_GROUPS.add(self.pgid)
        self._reader = threading.Thread(target=self._read, name=f"engine-{self.proc.pid}", daemon=True)
        self._reader.start()

    # -- I/O ---------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                raw = stdout.readline(MAX_LINE_BYTES)
                if not raw:
                    break
                self.output_lines += 1
                if self.output_lines > self.max_output_lines:
                    self.flooded = True
                    self._queue.put("")  # wake the waiter; it checks .flooded
                    continue  # keep draining so the engine never blocks on a full pipe
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.transcript.add("<", self.elapsed(), text)
                self._queue.put(text)
        except (OSError, ValueError):
            pass
        finally:
            self._queue.put(None)

    def send(self, line: str) -> None:
        """Send one command line; a dead engine raises :class:`EngineExited`."""
        if "\n" in line or "\r" in line:
            raise ValueError("a command must be a single line")
        self.transcript.add(">", self.elapsed(), line)
        stdin = self.proc.stdin
        try:
            assert stdin is not None
            stdin.write(line.encode() + b"\n")
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EngineExited(f"engine closed its input while sending {line.split()[0] if line else line!r}") from None

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
                raise Tripped(f"output trip-wire: more than {self.max_output_lines} output lines")
            remaining = deadline - now
            if remaining <= 0:
                raise WaitTimeout()
            try:
                line = self._queue.get(timeout=min(remaining, check_every))
            except queue.Empty:
                continue
            if line is None:
                raise EngineExited("engine exited before answering")
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
        """Kill the whole process group (engine and anything it started) and reap the engine."""
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        with _LIVE_LOCK:
            _LIVE_GROUPS.discard(self.pgid)

    def drain(self) -> list[str]:
        """Lines still queued (after the engine exited)."""
        self._reader.join(timeout=2.0)
        out: list[str] = []
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return out
            if line:
                out.append(line)

    def __enter__(self) -> "EngineProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        # Whether the engine exited cleanly or not, nothing of its group may survive it.
        self.close_stdin()
        self.kill()
        self._reader.join(timeout=2.0)
        if self.proc.stdout is not None:
            try:
                self.proc.stdout.close()
            except OSError:
                pass

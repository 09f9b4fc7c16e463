"""A helper process that resolves SAN paths, so SAN logs use a second core.

Only on the python-chess path (:mod:`treediff.parse.moves`): with the compiled ``_cmoves.SanResolver``
(about 50 times faster, treediff/parse/paths.py) the parser starts no worker.

Resolving SAN against python-chess boards is pure Python and holds the GIL,
so threads cannot share it.  :class:`SanWorker` starts ``python -m
treediff.parse.san_worker`` (an argv list, no shell) and talks to it over
its stdin/stdout: each request is one pickled ``(search, fen, paths)``, each answer
the pickled list of UCI paths (None where a move does not resolve), both
preceded by their length.  A fresh interpreter rather than ``multiprocessing``:
forking a process that runs polars threads is unsafe, and spawn/forkserver
would re-import the caller's ``__main__``.
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

_HEADER = struct.Struct("<Q")  # payload length in bytes
_STOP_TIMEOUT_S = 5.0


class SanWorkerError(RuntimeError):
    """The worker process died or answered garbage."""


def _send(stream: BinaryIO, obj) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _receive(stream: BinaryIO):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError
    return pickle.loads(payload)


class SanWorker:
    """One worker process; at most one request in flight (:meth:`submit`, then :meth:`result`)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The worker imports treediff from where this process did, installed or not.
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "treediff.parse.san_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # A dying worker is handled by the caller (it resolves in-process), not shown as a traceback.
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def submit(self, search: int, fen: str | None, paths: list[str]) -> None:
        """Send paths of search number ``search``; the answer is read by :meth:`result`.

        The worker keeps the positions of the last search it saw, so the next
        request for the same search starts from them.
        """
        try:
            _send(self._proc.stdin, (search, fen, paths))  # type: ignore[arg-type]
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise SanWorkerError(f"SAN worker unavailable ({exc})") from None

    def result(self) -> list[str | None]:
        """The UCI paths for the last :meth:`submit`, in order."""
        try:
            answer = _receive(self._proc.stdout)  # type: ignore[arg-type]
        except (EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
            raise SanWorkerError(f"SAN worker died (exit {self._proc.poll()}; {exc!r})") from None
        if not isinstance(answer, list):
            raise SanWorkerError("SAN worker answered garbage")
        return answer

    def kill(self) -> None:
        """Kill the worker now (a thread blocked reading its answer then gets end-of-file)."""
        if self._proc.poll() is None:
            self._proc.kill()

    def close(self) -> None:
        """Stop the worker and reap it (killed if it does not stop within a few seconds)."""
        proc = self._proc
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    """Worker loop: answer requests until stdin closes."""
    # Ctrl-C reaches the whole process group; the parent decides, and closes our stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from treediff.parse.moves import PathResolver

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    current: tuple[int, PathResolver] | None = None
    while True:
        try:
            search, fen, paths = _receive(stdin)
        except EOFError:
            return
        if current is None or current[0] != search:
            current = (search, PathResolver(fen))
        try:
            _send(stdout, current[1].resolve_many(paths))
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main()

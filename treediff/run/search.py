"""One search by one engine, driven safely: :func:`run_search`.

Protocol scripts:

* UCI: ``uci`` → ``uciok``; ``setoption`` (Threads 1, Hash, the preset's, only
  those the engine offers); ``isready`` → ``readyok``; ``ucinewgame``;
  ``position fen``; ``isready`` → ``readyok``; ``go depth N``; wait for
  ``bestmove``; ``quit``.
* xboard: the preset's ``pre`` commands (Crafty: ``ponder off``); ``xboard``;
  ``protover 2`` → ``feature ... done=1`` (2 s grace, as the protocol
  allows); the preset's ``init`` (typhoon: ``easy``); ``post``, ``force``,
  ``setboard``, ``sd N``, ``go``; wait for ``move``; ``quit``.

Stdin is held open until the engine has answered.  The engine's own
per-iteration node counts are read from ``info depth D ... nodes N`` (UCI) or
thinking lines ``ply score time nodes pv`` (xboard).
"""
from __future__ import annotations

import enum
import os
import re
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import chess

from treediff.run.environment import user_environment
from treediff.run.engines import EngineSpec, Protocol, spec_problem
from treediff.run.process import BYTES_PER_TRACE_LINE, EngineExited, EngineProcess, Tripped, UnsafeCommand, WaitTimeout

_UCI_INFO_DEPTH = re.compile(r"\bdepth\s+(\d+)")
_UCI_INFO_NODES = re.compile(r"\bnodes\s+(\d+)")
_UCI_INFO_SCORE = re.compile(r"\bscore\s+(cp|mate)\s+(-?\d+)")
_UCI_OPTION = re.compile(r"^option\s+name\s+(.+?)\s+type\s")
_XB_THINKING = re.compile(r"^\s*(\d+)[.&]?\s+(-?\d+)\s+(\d+)\s+(\d+)(?:\s|$)")
_XB_MOVE = re.compile(r"^move\s+(\S+)")
_XB_ERROR = re.compile(r"^(Error|Illegal|tellusererror)\b", re.IGNORECASE)
#: Seconds an xboard engine has to finish its ``feature`` list (the protocol's own grace period).
PROTOVER_GRACE = 2.0
#: Answers that mean "no move" (UCI's null move and what engines print with no legal move): a warning, not a failure.
NULL_MOVES = ("", "(none)", "0000")
#: Trace bytes read per trip-wire check, so the waiting thread gets back to its deadline.
_TRACE_READ_BUDGET = 16 * 1024 * 1024


class Failure(str, enum.Enum):
    """Why a run produced no usable result."""

    TIMEOUT = "timeout"                #: the wall-clock limit passed
    TRIPWIRE = "tripwire"              #: the trace (or output) grew past its limit
    CRASH = "crash"                    #: the engine exited before answering
    EXIT_CODE = "exit-code"            #: the engine answered but exited with a non-zero status
    PROTOCOL = "protocol-error"        #: the engine rejected a command or answered nonsense
    NO_TRACE = "no-trace"              #: a TREEDUMP engine wrote no trace file
    ZERO_NODES = "zero-nodes"          #: the search counted no nodes
    UNPARSEABLE = "unparseable-trace"  #: the trace could not be parsed
    START = "start-failed"             #: the program could not be started
    ILLEGAL_BESTMOVE = "illegal-bestmove"  #: the answer is not a legal move in the position
    INTERNAL = "internal-error"        #: a bug in the runner (reported, never hidden)


@dataclass(frozen=True)
class Limits:
    """Safety limits of one run.

    ``timeout`` and ``quit_grace`` are seconds of wall-clock time;
    ``max_trace_lines`` and ``max_trace_bytes`` are the trip-wire on the trace
    file (and on the engine's own output), in lines and in bytes (default:
    :data:`~treediff.run.process.BYTES_PER_TRACE_LINE` per line); ``linger``
    holds the engine this many seconds after it has answered, before ``quit``
    (tests use it to give a pondering engine time).
    """

    timeout: float = 30.0
    max_trace_lines: int = 2_000_000
    quit_grace: float = 2.0
    linger: float = 0.0
    check_every: float = 0.05
    max_trace_bytes: int | None = None

    @property
    def trace_bytes(self) -> int:
        """The byte trip-wire in effect."""
        return self.max_trace_bytes if self.max_trace_bytes is not None else self.max_trace_lines * BYTES_PER_TRACE_LINE


@dataclass
class Timings:
    """Seconds since the engine was started."""

    ready: float = 0.0     #: handshake done (uciok/readyok, xboard features)
    go: float = 0.0        #: the search command sent
    answered: float = 0.0  #: bestmove / move received
    exited: float = 0.0    #: the process was reaped


@dataclass
class SearchOutcome:
    """What one run produced (not yet parsed)."""

    ok: bool
    failure: Failure | None = None
    detail: str = ""
    bestmove: str | None = None
    iter_nodes: list[tuple[int, int]] = field(default_factory=list)
    engine_score: int | None = None
    trace_path: Path | None = None
    trace_lines: int = 0
    transcript: str = ""
    returncode: int | None = None
    timings: Timings = field(default_factory=Timings)
    warnings: list[str] = field(default_factory=list)

    @property
    def engine_nodes(self) -> int | None:
        return self.iter_nodes[-1][1] if self.iter_nodes else None

    @property
    def engine_depth(self) -> int | None:
        return max(d for d, _ in self.iter_nodes) if self.iter_nodes else None


class BadTrace(Exception):
    """The trace file is not a regular file inside the working directory (a symlink, FIFO, device...)."""


def open_trace(workdir: Path, rel: str) -> int | None:
    """Open ``workdir/rel`` for reading without following any symlink and without blocking; None if absent.

    Every component is opened relative to the one before with ``O_NOFOLLOW``,
    so a symlinked file or directory cannot lead outside the working
    directory; a FIFO or device opens without blocking and is refused here,
    as is a file with another hard link.  Raises :class:`BadTrace`.
    """
    parts = rel.split("/")
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        dirfd = os.open(workdir, flags | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return None
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=dirfd)
            except FileNotFoundError:
                return None
            except OSError:
                raise BadTrace(f"trace {rel}: {part} is not a directory inside the working directory "
                               "(a symbolic link?); not read") from None
            os.close(dirfd)
            dirfd = nxt
        try:
            fd = os.open(parts[-1], flags | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0), dir_fd=dirfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BadTrace(f"trace {rel} is a symbolic link or cannot be opened ({exc.strerror}); not read") from None
    finally:
        os.close(dirfd)
    st = os.fstat(fd)
    kind = None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a directory" if stat.S_ISDIR(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "not a regular file")
    elif st.st_nlink > 1:
        kind = "a hard link to another file"
    if kind is not None:
        os.close(fd)
        raise BadTrace(f"trace {rel} is {kind}, not a regular file the engine wrote; not read")
    os.set_blocking(fd, True)
    return fd


class _TraceWatch:
    """Counts the trace file's lines and bytes as it grows; trips past either limit.

    Each :meth:`check` reads at most :data:`_TRACE_READ_BUDGET` bytes, so the
    thread calling it gets back to its deadline; the file is opened by
    :func:`open_trace` (never a FIFO, device or symlink).
    """

    def __init__(self, workdir: Path, rel: str | None, limit: int, byte_limit: int | None = None):
        self.workdir, self.rel = workdir, rel
        self.path = workdir / rel if rel else None
        self.limit = limit
        self.byte_limit = byte_limit if byte_limit is not None else limit * BYTES_PER_TRACE_LINE
        self.lines = 0
        self.offset = 0
        self.problem: str | None = None
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None

    def check(self) -> None:
        if self.rel is None or self.problem is not None:
            return
        if self._fd is None:
            try:
                self._fd = open_trace(self.workdir, self.rel)
            except BadTrace as exc:
                self.problem = str(exc)
                raise
            if self._fd is None:
                return
            st = os.fstat(self._fd)
            self._ident = (st.st_dev, st.st_ino)
        budget = _TRACE_READ_BUDGET
        while budget > 0:
            chunk = os.read(self._fd, min(1 << 22, budget))
            if not chunk:
                break
            budget -= len(chunk)
            self.offset += len(chunk)
            self.lines += chunk.count(b"\n")
            if self.lines > self.limit:
                raise Tripped(f"trace trip-wire: more than {self.limit:,} trace lines")
            if self.offset > self.byte_limit:
                raise Tripped(f"trace trip-wire: more than {self.byte_limit:,} trace bytes")

    def verify(self) -> Path | None:
        """After the engine is gone: the trace path if it is still the regular file that was watched."""
        if self.rel is None or self.problem is not None:
            return None
        try:
            fd = open_trace(self.workdir, self.rel)
        except BadTrace as exc:
            self.problem = str(exc)
            return None
        if fd is None:
            return None
        st = os.fstat(fd)
        os.close(fd)
        if self._ident is not None and self._ident != (st.st_dev, st.st_ino):
            self.problem = f"trace {self.rel} was replaced by another file while the engine ran; not read"
            return None
        return self.path

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _IterNodes:
    """Collects (depth, nodes) per iteration from the engine's own output; the last line per depth wins."""

    def __init__(self, protocol: Protocol):
        self.protocol = protocol
        self.by_depth: dict[int, int] = {}
        self.order: list[int] = []
        self.score: int | None = None

    def feed(self, line: str) -> None:
        if self.protocol is Protocol.UCI:
            if not line.startswith("info ") or " string " in line[:12]:
                return
            depth, nodes = _UCI_INFO_DEPTH.search(line), _UCI_INFO_NODES.search(line)
            if not (depth and nodes):
                return
            d, n = int(depth.group(1)), int(nodes.group(1))
            score = _UCI_INFO_SCORE.search(line)
            if score:
                self.score = int(score.group(2)) if score.group(1) == "cp" else None
        else:
            m = _XB_THINKING.match(line)
            if not m:
                return
            d, n = int(m.group(1)), int(m.group(4))
            self.score = int(m.group(2))
        if d not in self.by_depth:
            self.order.append(d)
        self.by_depth[d] = n

    def pairs(self) -> list[tuple[int, int]]:
        return [(d, self.by_depth[d]) for d in self.order]


def _engine_env(spec: EngineSpec) -> dict[str, str]:
    env = user_environment()  # (not the OpenBLAS thread count the command line set for itself)
    # An inherited TREEDUMP path would make every engine write to one shared file.
    env.pop("TREEDUMP", None)
    env.update(dict(spec.env))
    return env


def illegal_move(move: str, fen: str) -> str | None:
    """Why ``move`` (UCI) is not a legal move in ``fen``, or None if it is one (or a null-move answer)."""
    if move in NULL_MOVES:
        return None
    shown = ascii(move[:40]) + ("..." if len(move) > 40 else "")
    board = chess.Board(fen)
    try:
        board.parse_uci(move)
    except ValueError:
        return f"engine answered bestmove {shown}, not a legal move in the position"
    return None


def _to_uci(move: str, fen: str) -> str:
    """The engine's move in UCI (xboard engines may answer in SAN); unchanged when unreadable."""
    board = chess.Board(fen)
    for parse in (board.parse_uci, board.parse_san):
        try:
            return parse(move).uci()
        except ValueError:
            continue
    return move


def _uci_session(eng: EngineProcess, spec: EngineSpec, fen: str, depth: int, deadline: float,
                 iters: _IterNodes, watch: _TraceWatch, out: SearchOutcome, limits: Limits) -> str:
    offered: set[str] = set()

    def note_option(line: str) -> None:
        m = _UCI_OPTION.match(line)
        if m:
            offered.add(m.group(1).lower())

    eng.send("uci")
    eng.wait_for(lambda s: s.strip() == "uciok", deadline, on_line=note_option)
    for name, value in spec.uci_options:
        # An engine without a Threads option searches with one thread anyway.
        if name.lower() in offered:
            eng.send(f"setoption name {name} value {value}")
    for command in spec.init:
        eng.send(command)
    eng.send("isready")
    eng.wait_for(lambda s: s.strip() == "readyok", deadline)
    out.timings.ready = eng.elapsed()
    eng.send("ucinewgame")
    eng.send(f"position fen {fen}")
    eng.send("isready")
    eng.wait_for(lambda s: s.strip() == "readyok", deadline)
    eng.send(f"go depth {depth}")
    out.timings.go = eng.elapsed()
    line = eng.wait_for(lambda s: s.startswith("bestmove"), deadline, on_line=iters.feed)
    parts = line.split()
    return parts[1] if len(parts) > 1 else ""


def _xboard_session(eng: EngineProcess, spec: EngineSpec, fen: str, depth: int, deadline: float,
                    iters: _IterNodes, watch: _TraceWatch, out: SearchOutcome, limits: Limits) -> str:
    errors: list[str] = []

    def on_line(line: str) -> None:
        if _XB_ERROR.match(line):
            errors.append(line)
        iters.feed(line)

    for command in spec.pre:
        eng.send(command)
    eng.send("xboard")
    if spec.protover:
        eng.send("protover 2")
        try:
            eng.wait_for(lambda s: s.startswith("feature") and re.search(r"\bdone=1\b", s) is not None,
                         min(deadline, time.monotonic() + PROTOVER_GRACE), on_line=on_line)
        except WaitTimeout:
            if time.monotonic() >= deadline:
                raise
            out.warnings.append("no `feature done=1` within 2 s of protover 2; continuing as the protocol allows "
                                "(set protover = false for this engine to skip the wait)")
    for command in spec.init:
        eng.send(command)
    out.timings.ready = eng.elapsed()
    for command in spec.xboard_commands(fen, depth):
        eng.send(command)
    out.timings.go = eng.elapsed()
    line = eng.wait_for(lambda s: _XB_MOVE.match(s) is not None or bool(errors), deadline, on_line=on_line)
    if errors:
        raise _ProtocolError(f"engine answered {errors[0]!r}")
    move = _XB_MOVE.match(line)
    assert move is not None  # wait_for returns a line its predicate accepted, and errors is empty
    return _to_uci(move.group(1), fen)


class _ProtocolError(Exception):
    pass


def _program_missing(program: str, env: dict[str, str]) -> str | None:
    """Why ``program`` cannot be executed (checked before starting: the launcher would only exit 127), or None."""
    import shutil

    if os.sep in program:
        if not os.path.isfile(program):
            return "no such file"
        if not os.access(program, os.X_OK):
            return "not executable"
        return None
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        return "not found on PATH"
    return None


def _launch_error(eng: EngineProcess, code: int | None) -> str | None:
    """The launcher's own message when it could not execute the engine (exit 126/127), else None."""
    if code not in (126, 127):
        return None
    for line in eng.transcript.lines[:5]:
        text = line.split(" < ", 1)[-1]
        if text.startswith("setpriv: "):
            return text[len("setpriv: "):]
    return None


def run_search(spec: EngineSpec, fen: str, depth: int, workdir: str | Path, limits: Limits = Limits()) -> SearchOutcome:
    """Run one fixed-depth search of ``fen`` (already validated) by ``spec`` in ``workdir``.

    ``workdir`` must be a fresh, empty directory: the engine starts there and
    writes its trace there.  Never raises for engine misbehaviour: the
    outcome says what went wrong.  The engine and everything it started are
    killed and reaped before this returns, at the latest about
    ``limits.timeout`` seconds after the engine started (plus up to
    ``quit_grace`` when it answered in time).
    """
    workdir = Path(workdir)
    out = SearchOutcome(ok=False)
    watch = _TraceWatch(workdir, spec.trace_file, limits.max_trace_lines, limits.trace_bytes)
    iters = _IterNodes(spec.protocol)
    problem = spec_problem(spec)
    if problem is not None:
        out.failure, out.detail = Failure.START, f"not started: {problem}"
        return out
    argv = list(spec.argv)
    if os.sep in argv[0] and not os.path.isabs(argv[0]):
        # The engine starts in its working directory: a relative program path means the caller's directory.
        argv[0] = os.path.abspath(argv[0])
    env = _engine_env(spec)
    missing = _program_missing(argv[0], env)
    if missing is not None:
        out.failure, out.detail = Failure.START, f"cannot start {argv[0]}: {missing}"
        return out
    try:
        eng = EngineProcess(argv, cwd=str(workdir), env=env,
                            max_output_lines=limits.max_trace_lines, max_output_bytes=limits.trace_bytes)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        out.failure, out.detail = Failure.START, f"cannot start {argv[0]}: {reason}"
        return out
    deadline = eng.t0 + limits.timeout
    eng.deadline = deadline
    # The trip-wire is watched during every wait, the handshake included.
    eng.check, eng.check_every = watch.check, limits.check_every
    illegal: str | None = None
    try:
        session = _uci_session if spec.protocol is Protocol.UCI else _xboard_session
        out.bestmove = session(eng, spec, fen, depth, deadline, iters, watch, out, limits)
        out.timings.answered = eng.elapsed()
        illegal = illegal_move(out.bestmove, fen)
        if limits.linger > 0:
            time.sleep(limits.linger)
        eng.stop_queueing()
        # quit and the grace period are bounded by their own clock, not the search deadline (which may be near).
        eng.deadline = time.monotonic() + limits.quit_grace
        try:
            eng.send("quit")
        except (EngineExited, WaitTimeout):
            pass  # it answered and left on its own (or stopped reading): judged by its exit status below
        eng.close_stdin()
        # Keep watching the trace while the engine shuts down: it may still be writing.
        grace_end = time.monotonic() + limits.quit_grace
        code = None
        while code is None and time.monotonic() < grace_end:
            code = eng.wait_exit(min(limits.check_every, grace_end - time.monotonic()))
            watch.check()
        if code is None:
            out.warnings.append(f"engine did not exit within {limits.quit_grace:g} s of quit; killed")
        if illegal is not None:
            out.failure, out.detail = Failure.ILLEGAL_BESTMOVE, illegal
        elif code is not None and code != 0:
            out.failure, out.detail = Failure.EXIT_CODE, f"engine exited with status {code} after answering"
        out.returncode = code
        out.ok = out.failure is None
    except WaitTimeout:
        out.failure, out.detail = Failure.TIMEOUT, f"no answer within {limits.timeout:g} s; engine killed"
    except Tripped as exc:
        out.failure, out.detail = Failure.TRIPWIRE, f"{exc}; engine killed"
    except BadTrace as exc:
        out.failure, out.detail = Failure.UNPARSEABLE, f"{exc}; engine killed"
    except EngineExited as exc:
        code = eng.wait_exit(1.0)
        out.returncode = code
        out.failure = Failure.CRASH
        launch_error = _launch_error(eng, code)
        if launch_error is not None:
            out.failure, out.detail = Failure.START, f"cannot start {argv[0]}: {launch_error}"
        else:
            out.detail = f"{exc} (exit status {code})" if code is not None else \
                f"{exc}: it closed its output but still ran; killed"
    except _ProtocolError as exc:
        out.failure, out.detail = Failure.PROTOCOL, str(exc)
    except UnsafeCommand as exc:
        out.failure, out.detail = Failure.PROTOCOL, str(exc)
    finally:
        eng.close()
        out.timings.exited = eng.elapsed()
        try:
            watch.check()
        except (Tripped, BadTrace) as exc:
            if out.failure is None:
                reason = Failure.TRIPWIRE if isinstance(exc, Tripped) else Failure.UNPARSEABLE
                out.ok, out.failure, out.detail = False, reason, str(exc)
        watch.close()
        out.trace_lines = watch.lines
        out.transcript = eng.transcript.text()
    if eng.escaped:
        out.warnings.append(f"{len(eng.escaped)} process(es) the engine started outside its process group "
                            f"were killed ({eng.containment.mechanism})")
    out.iter_nodes = iters.pairs()
    out.engine_score = iters.score
    out.trace_path = watch.verify()
    if out.ok and watch.problem is not None:
        out.ok, out.failure, out.detail = False, Failure.UNPARSEABLE, watch.problem
    if out.ok and spec.trace_file is not None and out.trace_path is None:
        out.ok, out.failure, out.detail = False, Failure.NO_TRACE, f"no trace file {spec.trace_file} in the working directory"
    if out.ok and out.bestmove in NULL_MOVES:
        out.warnings.append(f"engine answered no move ({out.bestmove or 'empty'})")
    if out.ok and out.engine_depth is not None and out.engine_depth < depth:
        out.warnings.append(f"engine reported depth {out.engine_depth} < requested {depth}")
    return out

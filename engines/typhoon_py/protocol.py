"""UCI and xboard front ends, answered like real engines.

Searches run in a worker thread so ``stop``/``isready``/``?``/``quit`` are
answered while the engine thinks.  Every search appends to one trace file
(opened on the first search, flushed after each ``END``).

xboard pondering (on by default, as in typhoon): after the engine moves it
searches the position after its expected reply in a second context whose
lines carry ``ctx=ponder`` -- into the *same* trace, after the main search's
``END`` and before the next header, which is exactly how a batch run without
``easy``/``ponder off`` gets contaminated.  The ponder search stops at the
next command; at end of input it runs to its depth limit (the real engine
ran until it was killed), then the process exits.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, TextIO

import chess

from typhoon_py.engine import TRACE_OFF, make_config, open_trace, run_search
from typhoon_py.profiles import PROFILES
from typhoon_py.search import MATE_BOUND, MATE, SearchConfig, SearchOutcome, Searcher

DEFAULT_DEPTH = 5
MAX_DEPTH = 64
NAME = "typhoon_py"
#: The time manager's assumptions: moves left when ``movestogo`` is not given, and the
#: milliseconds kept back per move for the process and the pipes.
DEFAULT_MOVES_TO_GO = 30
MOVE_OVERHEAD_MS = 30
#: Environment variable for the tests' fault injection: ``search`` makes the search thread
#: raise after its first iteration (how the crash handling is tested over real pipes).
FAULT_ENV = "TYPHOON_PY_FAULT"


class SearchCrashed(RuntimeError):
    """The search thread died with an exception (raised by ``run`` when not exiting at once)."""


@dataclass(frozen=True)
class TimeBudget:
    """How long one UCI search may think, in seconds: ``soft`` is checked between iterations
    (no new iteration once half of it is used, since the next one takes several times
    longer), ``hard`` stops the search wherever it is.  ``None``: no time limit."""

    soft: Optional[float]
    hard: Optional[float]


def time_budget(limits: dict[str, int], white: bool) -> TimeBudget:
    """The simple time manager (all inputs in milliseconds, as UCI sends them).

    ``movetime``: exactly that (soft = hard).  Else, with the side to move's clock ``t``
    (``wtime``/``btime``) and increment ``inc`` (``winc``/``binc``), after keeping back
    ``MOVE_OVERHEAD_MS``: soft = t / movestogo + 3/4 inc (``movestogo`` defaults to
    ``DEFAULT_MOVES_TO_GO``), hard = 3 x soft; both capped at 80% of what is left, at
    least 5 ms.  Without a clock: no time limit."""
    if "movetime" in limits:
        sec = max(0.005, limits["movetime"] / 1000.0)
        return TimeBudget(sec, sec)
    t = limits.get("wtime" if white else "btime")
    if t is None:
        return TimeBudget(None, None)
    inc = limits.get("winc" if white else "binc", 0)
    left = max(0, t - MOVE_OVERHEAD_MS)
    mtg = max(1, limits.get("movestogo") or DEFAULT_MOVES_TO_GO)
    cap = 0.8 * left
    soft = min(left / mtg + 0.75 * inc, cap)
    hard = min(3 * soft, cap)
    return TimeBudget(max(0.005, soft / 1000.0), max(0.005, hard / 1000.0))


class _Session:
    """State shared by both protocols: configuration, board, trace file, worker thread."""

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO,
                 exit_on_crash: bool = False) -> None:
        self.config = config
        #: A crashed search thread ends the process at once (exit status 3) instead of
        #: raising :class:`SearchCrashed` in ``run`` (for in-process use).
        self.exit_on_crash = exit_on_crash
        self.crash: Optional[BaseException] = None
        self.trace_path = trace_path
        self.trace: Optional[TextIO] = None
        self.out = out
        self.out_lock = threading.Lock()
        self.board = chess.Board()
        self.worker: Optional[threading.Thread] = None
        self.stop_event = threading.Event()
        self.search_count = 0

    def send(self, text: str) -> None:
        with self.out_lock:
            self.out.write(text + "\n")
            self.out.flush()

    def trace_file(self) -> Optional[TextIO]:
        """The open trace; when it cannot be created, say so once on stderr and trace nothing."""
        if self.trace is None and self.trace_path is not None:
            try:
                self.trace = open_trace(self.trace_path)
            except OSError as exc:
                sys.stderr.write(f"typhoon_py: cannot write the trace file {self.trace_path}: {exc.strerror}\n")
                self.trace_path = None
        return self.trace

    def set_trace_path(self, value: str) -> None:
        if value.strip() == "-":
            raise ValueError("TreeDump - (standard output) does not work in protocol mode: standard output"
                             " carries the protocol; give a file")
        self.close_trace()
        self.trace_path = None if value.strip().lower() in TRACE_OFF else Path(value.strip())

    def close_trace(self) -> None:
        if self.trace is not None:
            self.trace.flush()
            self.trace.close()
            self.trace = None

    def start(self, target: Callable[[], None]) -> None:
        self.wait()
        self.stop_event = threading.Event()
        self.worker = threading.Thread(target=self._guarded, args=(target,), name="typhoon_py-search",
                                       daemon=True)
        self.worker.start()

    def start_armed(self, target: Callable[[], None]) -> None:
        """``start`` keeping the stop event the caller has already armed (a UCI clock)."""
        self.worker = threading.Thread(target=self._guarded, args=(target,), name="typhoon_py-search",
                                       daemon=True)
        self.worker.start()

    def _guarded(self, target: Callable[[], None]) -> None:
        """The worker's body: a crash is reported on standard error (one line) and ends the
        process at once with status 3 (``exit_on_crash``), else is kept for ``check``."""
        try:
            target()
        except BaseException as exc:  # the thread's last word: report whatever killed it
            self.crash = exc
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb else ""
            sys.stderr.write(f"typhoon_py: the search thread crashed: {type(exc).__name__}: {exc}{where}\n")
            sys.stderr.flush()
            if self.exit_on_crash:
                try:
                    self.close_trace()
                    self.out.flush()
                finally:
                    os._exit(3)

    def check(self) -> None:
        """Raise :class:`SearchCrashed` when the last search thread crashed."""
        if self.crash is not None:
            exc, self.crash = self.crash, None
            raise SearchCrashed(f"the search thread crashed: {type(exc).__name__}: {exc}") from exc

    def wait(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None
        self.check()

    def stop(self) -> None:
        self.stop_event.set()
        self.wait()

    def searching(self) -> bool:
        return self.worker is not None and self.worker.is_alive()


def _score_text(score: int) -> str:
    if score > MATE_BOUND:
        return f"mate {(MATE - score + 1) // 2}"
    if score < -MATE_BOUND:
        return f"mate -{(MATE + score + 1) // 2}"
    return f"cp {score}"


# ---------------------------------------------------------------------- UCI
class UciEngine:
    """``uci``, ``isready``, ``ucinewgame``, ``setoption``, ``position``, ``go``, ``stop``, ``quit``."""

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO = sys.stdout,
                 exit_on_crash: bool = False) -> None:
        self.s = _Session(config, trace_path, out, exit_on_crash)
        self.options = {"profile": config.profile.name, "lmrpolicy": config.lmr_policy.value,
                        "prunescope": config.prune_scope.value}
        self.infinite = False  # the running search only ends on `stop`
        #: ``go ponder`` until ``ponderhit``/``stop``: no time limit, and the ``bestmove``
        #: waits for one of them even when the search ends first.
        self.pondering = threading.Event()
        self.ponder_done = threading.Condition()
        self.pending_budget: Optional[TimeBudget] = None
        self.timer: Optional[threading.Timer] = None
        #: When the running search may start no new iteration (``time.monotonic()``), or ``None``.
        self.deadline: Optional[float] = None

    def run(self, lines) -> None:
        try:
            for line in lines:
                if not self.handle(line):
                    return
            # End of input: finish the running search and answer it; an infinite or
            # pondering search is stopped, since nobody is left to send `stop`/`ponderhit`.
            if self.infinite or self.pondering.is_set():
                self._stop()
            self.s.wait()
        finally:
            self.s.close_trace()

    def _settle(self) -> None:
        """Before a command that needs the engine idle: wait for the search (stop it if
        infinite or pondering)."""
        if (self.infinite or self.pondering.is_set()) and self.s.searching():
            self._stop()
        self.s.wait()

    def _stop(self) -> None:
        """``stop``: end the search (and pondering) and wait for its ``bestmove``."""
        self._end_ponder()
        self.s.stop()

    def _end_ponder(self) -> None:
        with self.ponder_done:
            self.pondering.clear()
            self.ponder_done.notify_all()

    def _ponderhit(self) -> None:
        """The expected move was played: the pondering search goes on as a normal one, its
        clock (the ``go ponder`` command's limits) starting now."""
        if not self.pondering.is_set():
            return
        budget = self.pending_budget
        self._end_ponder()
        if budget is not None:
            self._arm(budget, time.monotonic())

    def _arm(self, budget: TimeBudget, started: float) -> None:
        """Start the clock of the running search: the hard limit by a timer, the soft one
        checked after each iteration (``self.deadline``)."""
        s = self.s
        self.deadline = None if budget.soft is None else started + budget.soft / 2
        if budget.hard is not None:
            self.timer = threading.Timer(budget.hard, s.stop_event.set)
            self.timer.daemon = True
            self.timer.start()

    def handle(self, line: str) -> bool:
        """Handle one command; ``False`` means quit."""
        words = line.split()
        if not words:
            return True
        cmd, args = words[0], words[1:]
        s = self.s
        if cmd == "uci":
            s.send(f"id name {NAME} ({s.config.profile.name})")
            s.send("id author treediff")
            default = str(s.trace_path) if s.trace_path is not None else "none"
            s.send(f"option name TreeDump type string default {default}")
            s.send("option name Profile type combo default "
                   f"{s.config.profile.name} " + " ".join(f"var {p}" for p in PROFILES))
            s.send(f"option name LMRPolicy type combo default {s.config.lmr_policy.value}"
                   " var profile var see-history")
            s.send(f"option name PruneScope type combo default {s.config.prune_scope.value}"
                   " var move var node")
            s.send(f"option name Shadow type check default {'true' if s.config.shadow else 'false'}")
            s.send("uciok")
        elif cmd == "isready":
            s.send("readyok")
        elif cmd == "quit":
            self._stop()
            return False
        elif cmd == "stop":
            self._stop()
        elif cmd == "ponderhit":
            self._ponderhit()
        elif cmd == "ucinewgame":
            self._settle()
            s.board = chess.Board()
        elif cmd == "setoption":
            self._settle()
            self._setoption(args)
        elif cmd == "position":
            self._settle()
            self._position(args)
        elif cmd == "go":
            self._go(args)
        elif cmd == "debug":
            pass
        else:
            s.send(f"info string unknown command: {line.strip()}")
        return True

    def _setoption(self, args: list[str]) -> None:
        text = " ".join(args)
        if not text.startswith("name "):
            return
        rest = text[len("name "):]
        name, _, value = rest.partition(" value ")
        key = name.strip().lower()
        value = value.strip()
        try:
            if key == "treedump":
                self.s.set_trace_path(value)
                return
            if key == "shadow":  # the --shadow side searches (docs/ENGINE.md)
                self.s.config = replace(self.s.config, shadow=value.lower() == "true")
                return
            if key in self.options:
                self.options[key] = value
                self.s.config = replace(make_config(self.options["profile"], self.options["lmrpolicy"],
                                                    self.options["prunescope"], self.s.config.trace_silent),
                                        shadow=self.s.config.shadow)
        except ValueError as exc:
            self.s.send(f"info string {exc}")

    def _position(self, args: list[str]) -> None:
        try:
            if args and args[0] == "startpos":
                board = chess.Board()
                rest = args[1:]
            elif args and args[0] == "fen":
                if "moves" in args:
                    k = args.index("moves")
                    fen, rest = " ".join(args[1:k]), args[k:]
                else:
                    fen, rest = " ".join(args[1:]), []
                board = chess.Board(fen)
            else:
                raise ValueError("expected startpos or fen")
            if rest and rest[0] == "moves":
                for u in rest[1:]:
                    board.push_uci(u)
        except ValueError as exc:
            self.s.send(f"info string bad position: {exc}")
            return
        self.s.board = board

    def _go(self, args: list[str]) -> None:
        """``go [ponder] [depth N] [nodes N] [movetime MS] [wtime MS] [btime MS] [winc MS]
        [binc MS] [movestogo N] [infinite]``: search in the worker thread.  Without any
        limit: depth ``DEFAULT_DEPTH``; with a clock or ``movetime``: to ``MAX_DEPTH`` plies
        (or ``depth``), stopped by the time manager (:func:`time_budget`)."""
        s = self.s
        self._settle()
        limits: dict[str, int] = {}
        ponder = infinite = False
        i = 0
        try:
            while i < len(args):
                w = args[i]
                if w in ("depth", "nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo"):
                    if i + 1 >= len(args):
                        raise ValueError(f"{w} needs a number")
                    limits[w] = int(args[i + 1])
                    i += 1
                elif w == "infinite":
                    infinite = True
                elif w == "ponder":
                    ponder = True
                i += 1
        except ValueError as exc:
            s.send(f"info string bad go command: {exc}")
            return
        timed = any(k in limits for k in ("movetime", "wtime", "btime"))
        if "depth" in limits:
            depth = max(1, min(MAX_DEPTH, limits["depth"]))
        elif infinite or ponder or timed or "nodes" in limits:
            depth = MAX_DEPTH
        else:
            depth = DEFAULT_DEPTH
        node_limit = max(1, limits["nodes"]) if "nodes" in limits else None
        budget = time_budget(limits, s.board.turn == chess.WHITE)
        self.infinite = infinite
        self.deadline = None
        self.pending_budget = budget
        if ponder:
            self.pondering.set()
        board = s.board.copy()
        config = s.config
        trace = s.trace_file()
        s.search_count += 1
        fault = os.environ.get(FAULT_ENV) == "search"
        s.stop_event = threading.Event()  # armed before the worker starts: a timer may set it
        stop = s.stop_event
        if not ponder:
            self._arm(budget, time.monotonic())

        def work() -> None:
            def info(d: int, score: int, searcher: Searcher) -> None:
                pv = searcher.principal_variation(searcher.root_best, d)
                s.send(f"info depth {d} score {_score_text(score)} nodes {searcher.nodes + searcher.qnodes}"
                       f" pv {' '.join(m.uci() for m in pv)}")
                if fault:
                    raise RuntimeError(f"injected fault ({FAULT_ENV}=search)")
                # No new iteration once half the soft budget is used (not while pondering).
                if self.deadline is not None and not self.pondering.is_set() \
                        and time.monotonic() >= self.deadline:
                    stop.set()

            try:
                outcome = run_search(board, depth, config, trace, stop=stop, node_limit=node_limit,
                                     on_iteration=info)
            finally:
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
            # UCI: while pondering, the bestmove waits for `ponderhit` or `stop`.
            with self.ponder_done:
                while self.pondering.is_set():
                    self.ponder_done.wait()
            best = outcome.best_move
            if best is None:
                s.send("bestmove 0000")
            elif len(outcome.pv) > 1:
                s.send(f"bestmove {best.uci()} ponder {outcome.pv[1].uci()}")
            else:
                s.send(f"bestmove {best.uci()}")

        s.start_armed(work)


# ---------------------------------------------------------------------- xboard
class XboardEngine:
    """``xboard``, ``protover``, ``new``, ``force``, ``setboard``, ``sd``, ``go``, ``easy``/``hard``,
    ``ponder on|off``, ``post``/``nopost``, ``ping``, ``?``, moves, ``quit``."""

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO = sys.stdout,
                 exit_on_crash: bool = False) -> None:
        self.s = _Session(config, trace_path, out, exit_on_crash)
        self.force = False
        self.engine_color: Optional[bool] = chess.BLACK
        self.depth = DEFAULT_DEPTH
        self.ponder = True
        self.post = False
        self.pending = False          # a command arrived while the worker was busy
        self.lock = threading.Lock()
        self.ponder_stop = threading.Event()

    def run(self, lines) -> None:
        try:
            for line in lines:
                if not self._dispatch(line):
                    return
            # End of input: the main search finishes, the ponder search (if any) runs to its limit.
            self.s.wait()
        finally:
            self.s.close_trace()

    def _dispatch(self, line: str) -> bool:
        words = line.split()
        if not words:
            return True
        cmd = words[0]
        s = self.s
        if cmd == "quit":
            s.stop_event.set()
            self.ponder_stop.set()
            s.wait()
            return False
        if cmd == "?":
            s.stop_event.set()
            return True
        if cmd in ("easy", "hard", "post", "nopost") or (cmd == "ponder" and len(words) > 1):
            self._setting(cmd, words[1:])
            return True
        # Any other command: a command arrived, so pondering ends; wait for the worker.
        with self.lock:
            self.pending = True
        self.ponder_stop.set()
        s.wait()
        with self.lock:
            self.pending = False
        self.handle(words)
        return True

    def _setting(self, cmd: str, args: list[str]) -> None:
        if cmd == "easy":
            self.ponder = False
        elif cmd == "hard":
            self.ponder = True
        elif cmd == "ponder":
            self.ponder = args[0].lower() in ("on", "1", "true")
        elif cmd == "post":
            self.post = True
        elif cmd == "nopost":
            self.post = False

    def handle(self, words: list[str]) -> None:
        cmd, args = words[0], words[1:]
        s = self.s
        if cmd == "xboard":
            return
        if cmd == "protover":
            s.send(f'feature myname="{NAME} ({s.config.profile.name})" setboard=1 usermove=0 ping=1 '
                   "san=0 sigint=0 sigterm=0 analyze=0 colors=0 reuse=1 done=1")
        elif cmd == "new":
            s.board = chess.Board()
            self.force = False
            self.engine_color = chess.BLACK
            self.depth = DEFAULT_DEPTH
        elif cmd == "force":
            self.force = True
        elif cmd == "setboard":
            try:
                s.board = chess.Board(" ".join(args))
            except ValueError as exc:
                s.send(f"tellusererror Illegal position: {exc}")
        elif cmd == "sd" and args:
            try:
                self.depth = max(1, min(MAX_DEPTH, int(args[0])))
            except ValueError:
                s.send(f"Error (bad depth): sd {args[0]}")
        elif cmd == "go":
            self.force = False
            self.engine_color = s.board.turn
            self._think()
        elif cmd == "ping":
            s.send(f"pong {args[0] if args else ''}".rstrip())
        elif cmd == "usermove" and args:
            self._user_move(args[0])
        elif cmd in ("level", "st", "time", "otim", "result", "random", "computer", "accepted",
                     "rejected", "name", "rating", "white", "black", "draw", "remove", "undo", "option"):
            if cmd == "undo" and s.board.move_stack:
                s.board.pop()
            elif cmd == "remove":
                for _ in range(2):
                    if s.board.move_stack:
                        s.board.pop()
        else:
            self._user_move(cmd)

    def _user_move(self, text: str) -> None:
        s = self.s
        try:
            move = chess.Move.from_uci(text.lower() if len(text) == 5 else text)
            if move not in s.board.legal_moves:
                raise ValueError
        except ValueError:
            try:
                move = s.board.parse_san(text)
            except ValueError:
                s.send(f"Illegal move: {text}" if len(text) in (4, 5) else f"Error (unknown command): {text}")
                return
        s.board.push(move)
        if not self.force and s.board.turn == self.engine_color:
            self._think()

    def _think(self) -> None:
        s = self.s
        board = s.board.copy()
        config = s.config
        depth = self.depth
        trace = s.trace_file()
        self.ponder_stop = threading.Event()
        ponder_stop = self.ponder_stop

        fault = os.environ.get(FAULT_ENV) == "search"

        def work() -> None:
            def info(d: int, score: int, searcher: Searcher) -> None:
                if fault:
                    raise RuntimeError(f"injected fault ({FAULT_ENV}=search)")
                if self.post:
                    pv = searcher.principal_variation(searcher.root_best, d)
                    s.send(f"{d} {score} 0 {searcher.nodes + searcher.qnodes} "
                           + " ".join(m.uci() for m in pv))

            outcome = run_search(board, depth, config, trace, ctx="main", stop=s.stop_event,
                                 on_iteration=info)
            best = outcome.best_move
            if best is None:
                s.send("resign" if board.is_check() else "1/2-1/2 {Stalemate}")
                return
            s.board.push(best)
            s.send(f"move {best.uci()}")
            with self.lock:
                start_ponder = (self.ponder and not self.pending and not ponder_stop.is_set()
                                and len(outcome.pv) > 1)
            if start_ponder:
                self._ponder(board, best, outcome.pv[1], depth, config, trace, ponder_stop)

        s.start(work)

    @staticmethod
    def _ponder(board: chess.Board, best: chess.Move, reply: chess.Move, depth: int,
                config: SearchConfig, trace: Optional[TextIO], stop: threading.Event) -> SearchOutcome:
        """Search the position after our move and the expected reply, as context ``ponder``."""
        ponder_board = board.copy()
        ponder_board.push(best)
        ponder_board.push(reply)
        return run_search(ponder_board, depth, config, trace, ctx="ponder", stop=stop, header=False)


def detect_and_run(config: SearchConfig, trace_path: Optional[Path], lines, out: TextIO = sys.stdout,
                   exit_on_crash: bool = False) -> None:
    """Read the first command and speak UCI (``uci``) or xboard (anything else)."""
    it = iter(lines)
    for first in it:
        if not first.strip():
            continue
        engine: UciEngine | XboardEngine = UciEngine(config, trace_path, out, exit_on_crash) \
            if first.split()[0] == "uci" else XboardEngine(config, trace_path, out, exit_on_crash)

        def chained():
            yield first
            yield from it

        engine.run(chained())
        return

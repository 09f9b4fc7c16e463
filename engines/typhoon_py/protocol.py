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

import sys
import threading
from pathlib import Path
from typing import Callable, Optional, TextIO

import chess

from dataclasses import replace

from typhoon_py.engine import TRACE_OFF, make_config, open_trace, run_search
from typhoon_py.profiles import PROFILES
from typhoon_py.search import MATE_BOUND, MATE, SearchConfig, SearchOutcome, Searcher

DEFAULT_DEPTH = 5
MAX_DEPTH = 64
NAME = "typhoon_py"


class _Session:
    """State shared by both protocols: configuration, board, trace file, worker thread."""

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO) -> None:
        self.config = config
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
        self.worker = threading.Thread(target=target, name="typhoon_py-search", daemon=True)
        self.worker.start()

    def wait(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None

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

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO = sys.stdout) -> None:
        self.s = _Session(config, trace_path, out)
        self.options = {"profile": config.profile.name, "lmrpolicy": config.lmr_policy.value,
                        "prunescope": config.prune_scope.value}
        self.infinite = False  # the running search only ends on `stop`

    def run(self, lines) -> None:
        try:
            for line in lines:
                if not self.handle(line):
                    return
            # End of input: finish the running search and answer it; only an infinite
            # search is stopped, since nobody is left to send `stop`.
            if self.infinite:
                self.s.stop()
            self.s.wait()
        finally:
            self.s.close_trace()

    def _settle(self) -> None:
        """Before a command that needs the engine idle: wait for the search (stop it if infinite)."""
        if self.infinite and self.s.searching():
            self.s.stop()
        self.s.wait()

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
            s.stop()
            return False
        elif cmd == "stop":
            s.stop()
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
                                                    self.options["prunescope"]), shadow=self.s.config.shadow)
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
        s = self.s
        self._settle()
        depth, node_limit, movetime = DEFAULT_DEPTH, None, None
        self.infinite = "infinite" in args
        i = 0
        while i < len(args):
            w = args[i]
            nxt = args[i + 1] if i + 1 < len(args) else None
            if w == "depth" and nxt:
                depth, i = max(1, min(MAX_DEPTH, int(nxt))), i + 1
            elif w == "nodes" and nxt:
                node_limit, depth, i = max(1, int(nxt)), MAX_DEPTH, i + 1
            elif w == "movetime" and nxt:
                movetime, depth, i = int(nxt), MAX_DEPTH, i + 1
            elif w == "infinite":
                depth = MAX_DEPTH
            i += 1
        board = s.board.copy()
        config = s.config
        trace = s.trace_file()
        s.search_count += 1

        def work() -> None:
            stop = s.stop_event
            timer = threading.Timer(movetime / 1000.0, stop.set) if movetime else None
            if timer:
                timer.start()

            def info(d: int, score: int, searcher: Searcher) -> None:
                pv = searcher.principal_variation(searcher.root_best, d)
                s.send(f"info depth {d} score {_score_text(score)} nodes {searcher.nodes + searcher.qnodes}"
                       f" pv {' '.join(m.uci() for m in pv)}")

            try:
                outcome = run_search(board, depth, config, trace, stop=stop, node_limit=node_limit,
                                     on_iteration=info)
            finally:
                if timer:
                    timer.cancel()
            best = outcome.best_move
            if best is None:
                s.send("bestmove 0000")
            elif len(outcome.pv) > 1:
                s.send(f"bestmove {best.uci()} ponder {outcome.pv[1].uci()}")
            else:
                s.send(f"bestmove {best.uci()}")

        s.start(work)


# ---------------------------------------------------------------------- xboard
class XboardEngine:
    """``xboard``, ``protover``, ``new``, ``force``, ``setboard``, ``sd``, ``go``, ``easy``/``hard``,
    ``ponder on|off``, ``post``/``nopost``, ``ping``, ``?``, moves, ``quit``."""

    def __init__(self, config: SearchConfig, trace_path: Optional[Path], out: TextIO = sys.stdout) -> None:
        self.s = _Session(config, trace_path, out)
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

        def work() -> None:
            def info(d: int, score: int, searcher: Searcher) -> None:
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


def detect_and_run(config: SearchConfig, trace_path: Optional[Path], lines, out: TextIO = sys.stdout) -> None:
    """Read the first command and speak UCI (``uci``) or xboard (anything else)."""
    it = iter(lines)
    for first in it:
        if not first.strip():
            continue
        engine = UciEngine(config, trace_path, out) if first.split()[0] == "uci" \
            else XboardEngine(config, trace_path, out)

        def chained():
            yield first
            yield from it

        engine.run(chained())
        return

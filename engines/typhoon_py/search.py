"""The generic search: iterative deepening, PVS alpha-beta, TT, quiescence.

Everything an emulated engine does differently -- null-move R, ProbCut,
forward pruning, reductions, re-searches -- is asked of the profile's
mechanisms object (``typhoon_py.mechanisms``); this module has no rule of
its own for any one profile.  Common to all: move ordering, the TT,
repetition and 50-move draws, the check extension, the null-move probe's
conditions, ``--prune-scope`` and quiescence.

Depths are ticks of 1/64 ply internally (``ONE_PLY = 64``); scores are
centipawns from the side to move's view; mate scores are ``MATE - ply``.

Every move decision at a non-quiescence node is counted in ``acts`` and,
when a trace is attached, written as a ``MOVE`` line in decision order;
every finished non-quiescence node is counted in ``nodes`` and written as a
``RESULT`` line.  With no trace attached the only extra cost is one
``is None`` test per decision.
"""
from __future__ import annotations

import threading
from operator import itemgetter
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

import chess

from typhoon_py.evaluation import (
    MATERIAL,
    PHASE_TOTAL,
    PHASE_WEIGHT,
    SEE_VALUE,
    TABLE_EG,
    TABLE_MG,
    full_evaluation,
)
from typhoon_py.mechanisms import Mechanisms, Node, make_mechanisms
from typhoon_py.profiles import ONE_PLY, LmrPolicy, Profile, PruneScope
from typhoon_py.scores import (
    HISTORY_MAX,
    INF,
    MATE,
    MATE_BOUND,
    MAX_PLY,
    ORDER_CAPTURE,
    ORDER_COUNTER,
    ORDER_KILLER,
    ORDER_TT,
)

__all__ = ["INF", "MATE", "MATE_BOUND", "MAX_PLY", "SearchAborted", "SearchConfig", "SearchOutcome",
           "Searcher"]

EXACT, LOWER, UPPER = 0, 1, 2
_BOUND_TEXT = ("exact", "lower", "upper")

PAWN, ROOK, QUEEN, KING = chess.PAWN, chess.ROOK, chess.QUEEN, chess.KING
_BB_SQUARES = chess.BB_SQUARES
_NULL = chess.Move.null()

#: Decisions that ``--prune-scope node`` turns from ``continue`` into ``break``.
_SCOPE_ACTS = frozenset({"LMP", "FP-QUIET", "FP-CAP"})
_FIRST = itemgetter(0)


class _NodeSan:
    """SAN (without ``+``/``#``) for the moves of one node, disambiguated against the node's
    legal move list once instead of regenerating moves per call as ``Board.san`` does.
    The rules are python-chess's; the tests check every traced move against ``Board.san``."""

    __slots__ = ("board", "moves", "groups")

    def __init__(self, board: chess.Board, moves: list) -> None:
        self.board = board
        self.moves = moves
        groups: dict[int, int] = {}
        pta = board.piece_type_at
        for m in moves:
            key = pta(m.from_square) * 64 + m.to_square
            groups[key] = groups.get(key, 0) + 1
        self.groups = groups

    def __call__(self, move: chess.Move) -> str:
        b = self.board
        frm, to = move.from_square, move.to_square
        pt = b.piece_type_at(frm)
        capture = b.piece_type_at(to) is not None
        if pt == PAWN:
            if frm & 7 != to & 7:
                text = _FILES[frm & 7] + "x" + _SQUARE_NAMES[to]
            else:
                text = _SQUARE_NAMES[to]
            if move.promotion:
                text += "=" + _PIECE_LETTERS[move.promotion]
            return text
        if pt == KING and (to - frm == 2 or frm - to == 2):
            return "O-O" if to > frm else "O-O-O"
        text = _PIECE_LETTERS[pt]
        if self.groups.get(pt * 64 + to, 0) > 1:
            same_rank = same_file = False
            for o in self.moves:
                of = o.from_square
                if o.to_square == to and of != frm and b.piece_type_at(of) == pt:
                    if of >> 3 == frm >> 3:
                        same_rank = True
                    if of & 7 == frm & 7:
                        same_file = True
            if same_rank or not same_file:
                text += _FILES[frm & 7]
            if same_file:
                text += _RANKS[frm >> 3]
        if capture:
            text += "x"
        return text + _SQUARE_NAMES[to]


_FILES = "abcdefgh"
_RANKS = "12345678"
_SQUARE_NAMES = chess.SQUARE_NAMES
_PIECE_LETTERS = ("", "P", "N", "B", "R", "Q", "K")


def _san_without_suffix(board: chess.Board, move: chess.Move) -> str:
    """SAN of ``move`` without its check suffix (python-chess's own routine when present)."""
    alg = getattr(board, "_algebraic_without_suffix", None)
    if alg is not None:
        return alg(move)
    return board.san(move).rstrip("+#")


class SearchAborted(Exception):
    """Raised inside the tree when a stop was requested; unwinds without RESULT lines."""


@dataclass
class SearchOutcome:
    """What one search produced.  ``nodes`` excludes quiescence nodes (``qnodes``)."""

    best_move: Optional[chess.Move]
    score: int
    depth: int
    nodes: int
    qnodes: int
    iterations: int
    acts: dict[str, int]
    silent: dict[str, int]
    pv: list[chess.Move] = field(default_factory=list)
    aborted: bool = False

    def counters(self) -> dict:
        """The ``--counters`` JSON object for this search (see docs/ENGINE.md)."""
        return {
            "acts": {k: v for k, v in sorted(self.acts.items()) if v},
            "nodes": self.nodes,
            "qnodes": self.qnodes,
            "iterations": self.iterations,
            "silent": {k: v for k, v in sorted(self.silent.items()) if v},
        }


@dataclass
class SearchConfig:
    """The profile (mechanisms and dialect) and the options that apply to any profile."""

    profile: Profile
    lmr_policy: LmrPolicy = LmrPolicy.PROFILE
    prune_scope: PruneScope = PruneScope.MOVE


class Searcher:
    """One search of one position.  Tables start empty, so the result depends only on
    the position (and its game history), the depth and the configuration."""

    #: The profile's mechanisms; set for the duration of ``run``.
    mech: Mechanisms

    def __init__(
        self,
        board: chess.Board,
        config: SearchConfig,
        trace: Optional[TextIO] = None,
        ctx: Optional[str] = None,
        stop: Optional[threading.Event] = None,
        node_limit: Optional[int] = None,
    ) -> None:
        self.board = board
        self.config = config
        prof = config.profile
        self.prof = prof
        self.san = prof.san
        self.node_scope = config.prune_scope == PruneScope.NODE
        self.div = prof.divisor
        self.out = trace.write if trace is not None else None
        #: SAN paths get their ``+``/``#`` once the move is on the board.
        self.san_suffix = self.san and trace is not None
        self.ctx_sfx = f" ctx={ctx}" if ctx else ""
        self.ctx = ctx
        self.stop = stop
        self.node_limit = node_limit
        self.acts: dict[str, int] = {}
        self.silent: dict[str, int] = {}
        self.nodes = 0
        self.qnodes = 0
        self.tt: dict = {}
        self.history = [0] * (2 * 64 * 64)
        self.killers: list[list[Optional[chess.Move]]] = [[None, None] for _ in range(MAX_PLY + 2)]
        self.countermoves: dict[int, chess.Move] = {}
        self.pfx = [""] * (MAX_PLY + 2)
        self.root_best: Optional[chess.Move] = None
        self.root_depth = 1
        self.iterations = 0
        mg, eg, ph, mat = full_evaluation(board)
        self.mg, self.eg, self.ph, self.mat = mg, eg, ph, mat
        self.estack: list = []
        self.keys: list = self._history_keys()

    # ------------------------------------------------------------------ board
    def _history_keys(self) -> list:
        """Transposition keys of the game's earlier positions (for repetition draws)."""
        b = self.board
        keys = []
        undo = []
        while b.move_stack and len(undo) < 100:
            undo.append(b.pop())
            keys.append(b._transposition_key())
        for m in reversed(undo):
            b.push(m)
        keys.reverse()
        return keys

    def make(self, move: chess.Move) -> None:
        """Play ``move``, updating the incremental evaluation terms."""
        b = self.board
        c = b.turn
        frm, to = move.from_square, move.to_square
        pt = b.piece_type_at(frm)
        self.estack.append((self.mg, self.eg, self.ph, self.mat))
        tmg, teg = TABLE_MG[c], TABLE_EG[c]
        mg = self.mg - tmg[pt][frm]
        eg = self.eg - teg[pt][frm]
        ph = self.ph
        mat = self.mat
        cap = b.piece_type_at(to)
        if cap:
            o = not c
            mg -= TABLE_MG[o][cap][to]
            eg -= TABLE_EG[o][cap][to]
            ph -= PHASE_WEIGHT[cap]
            mat -= MATERIAL[o][cap]
        elif pt == PAWN and to == b.ep_square:
            o = not c
            csq = to - 8 if c else to + 8
            mg -= TABLE_MG[o][PAWN][csq]
            eg -= TABLE_EG[o][PAWN][csq]
            mat -= MATERIAL[o][PAWN]
        if move.promotion:
            npt = move.promotion
            ph += PHASE_WEIGHT[npt]
            mat += MATERIAL[c][npt] - MATERIAL[c][PAWN]
        else:
            npt = pt
        mg += tmg[npt][to]
        eg += teg[npt][to]
        if pt == KING and (to - frm == 2 or frm - to == 2):
            if to > frm:
                rf, rt = frm + 3, frm + 1
            else:
                rf, rt = frm - 4, frm - 1
            mg += tmg[ROOK][rt] - tmg[ROOK][rf]
            eg += teg[ROOK][rt] - teg[ROOK][rf]
        self.mg, self.eg, self.ph, self.mat = mg, eg, ph, mat
        b.push(move)

    def unmake(self) -> None:
        """Take back the last move (or null move) and its evaluation terms."""
        self.board.pop()
        self.mg, self.eg, self.ph, self.mat = self.estack.pop()

    def _eval(self) -> int:
        """The static evaluation from the side to move's view: ``evaluation.blend`` of the
        incremental terms, inlined (it is the search's most frequent call)."""
        ph = self.ph
        if ph > PHASE_TOTAL:
            ph = PHASE_TOTAL
        e = (self.mg * ph + self.eg * (PHASE_TOTAL - ph)) // PHASE_TOTAL
        return e if self.board.turn else -e

    def see(self, move: chess.Move) -> int:
        """Static exchange evaluation of ``move`` in centipawns, mover's view (0 for a safe quiet)."""
        b = self.board
        frm, to = move.from_square, move.to_square
        victim = b.piece_type_at(to)
        if victim:
            gain0 = SEE_VALUE[victim]
        elif b.piece_type_at(frm) == PAWN and to == b.ep_square:
            gain0 = SEE_VALUE[PAWN]
        else:
            gain0 = 0
        piece = move.promotion or b.piece_type_at(frm)
        if move.promotion:
            gain0 += SEE_VALUE[move.promotion] - SEE_VALUE[PAWN]
        occ = b.occupied ^ _BB_SQUARES[frm]
        gains = [gain0]
        on_square = SEE_VALUE[piece]
        side = not b.turn
        piece_sets = (b.pawns, b.knights, b.bishops, b.rooks, b.queens, b.kings)
        occ_co = b.occupied_co
        while True:
            attackers = b.attackers_mask(side, to, occ) & occ
            if not attackers:
                break
            for i, bb in enumerate(piece_sets):
                mine = attackers & bb & occ_co[side]
                if mine:
                    break
            gains.append(on_square - gains[-1])
            on_square = SEE_VALUE[i + 1]
            occ ^= mine & -mine
            side = not side
        for i in range(len(gains) - 1, 0, -1):
            mine, theirs = gains[i - 1], -gains[i]  # -max(-mine, gains[i])
            gains[i - 1] = mine if mine < theirs else theirs
        return gains[0]

    def see_after(self, move: chess.Move) -> int:
        """SEE of ``move`` computed while it is already on the board (taken back and replayed)."""
        b = self.board
        b.pop()
        try:
            return self.see(move)
        finally:
            b.push(move)

    # ------------------------------------------------------------------ trace
    def move_text(self, move: chess.Move) -> str:
        """``move`` in the dialect's notation; for SAN without the ``+``/``#`` suffix,
        which the move loop appends once the move is on the board (cheaper than ``san()``)."""
        if self.san:
            return _san_without_suffix(self.board, move)
        return self.prof.move_text(self.board, move)

    def decide(self, act: str, path: str, ply: int, mn: int, d: int, nd: Optional[int],
               red: int, a: int, bt: int, nt: str) -> None:
        """Count one move decision and, when tracing, write its MOVE line."""
        acts = self.acts
        acts[act] = acts.get(act, 0) + 1
        out = self.out
        if out is not None:
            div = self.div
            nd_txt = "" if nd is None else f" nd={(nd if nd > 0 else 0) // div}"
            red_txt = f" red={red // div}" if red else ""
            out(f"MOVE path={path} ply={ply} mn={mn} d={d // div}{nd_txt} act={act}{red_txt}"
                f" a={a} b={bt} nt={nt}{self.ctx_sfx}\n")

    # ------------------------------------------------------------------ driver
    def run(self, depth: int, position_id: Optional[str] = None, phase: Optional[str] = None,
            on_iteration: Optional[Callable[[int, int, "Searcher"], None]] = None,
            header: bool = True) -> SearchOutcome:
        """Iterative deepening to ``depth`` plies.  Writes the header, ITER and END lines."""
        out = self.out
        b = self.board
        if out is not None and header:
            self._write_header(out, position_id, phase)
        self.mech = make_mechanisms(self.config, self)
        try:
            best, score, done_depth, aborted = self._deepen(depth, on_iteration)
        finally:
            # The mechanisms refer back to the searcher: dropping them lets reference
            # counting free the search's tables now instead of the cycle collector later.
            del self.mech
        pv = self.principal_variation(best, max(done_depth, 1))
        if out is not None:
            best_txt = f" best={self.prof.move_text(b, best)}" if best is not None else ""
            out(f"END nodes={self.nodes}{best_txt} score={score}{self.ctx_sfx}\n")
        return SearchOutcome(best, score, done_depth, self.nodes, self.qnodes, self.iterations,
                             dict(self.acts), dict(self.silent), pv, aborted)

    def _deepen(self, depth: int, on_iteration) -> tuple[Optional[chess.Move], int, int, bool]:
        """Iterations 1..``depth``: the best move, its score, the last finished depth, and
        whether a stop cut the search short."""
        out = self.out
        legal = list(self.board.generate_legal_moves())
        best = legal[0] if legal else None
        score = 0
        done_depth = 0
        for d in range(1, depth + 1):
            self.iterations += 1
            if out is not None:
                out(f"ITER d={d}{self.ctx_sfx}\n")
            self.root_depth = d
            try:
                s = self.search(-INF, INF, d * ONE_PLY, 0, True, False, False)
            except SearchAborted:
                return best, score, done_depth, True
            done_depth = d
            score = s
            if self.root_best is not None:
                best = self.root_best
            if on_iteration is not None:
                on_iteration(d, s, self)
            if not legal:
                break
        return best, score, done_depth, False

    def _write_header(self, out: Callable[[str], object], position_id: Optional[str],
                      phase: Optional[str]) -> None:
        parts = [f"TREEDUMP engine={self.prof.name} v=1 unit={self.prof.unit}"]
        if position_id:
            parts.append(f"id={position_id}")
        if phase:
            parts.append(f"phase={phase}")
        parts.append("producer=typhoon_py")
        if self.ctx:
            parts.append(f"ctx={self.ctx}")
        parts.append(f"fen={self.board.fen()}")
        out(" ".join(parts) + "\n")

    def principal_variation(self, first: Optional[chess.Move], max_len: int) -> list[chess.Move]:
        """The PV from the transposition table, starting with ``first``; board left unchanged."""
        if first is None:
            return []
        b = self.board
        pv = [first]
        b.push(first)
        seen = {b._transposition_key()}
        while len(pv) < max_len + 4:
            entry = self.tt.get(b._transposition_key())
            if entry is None or entry[3] is None or not b.is_legal(entry[3]):
                break
            pv.append(entry[3])
            b.push(entry[3])
            k = b._transposition_key()
            if k in seen:
                break
            seen.add(k)
        for _ in pv:
            b.pop()
        return pv

    # ------------------------------------------------------------------ tree
    def search(self, alpha: int, beta: int, depth: int, ply: int, pv: bool, cut: bool,
               reduced: bool) -> int:
        """A non-quiescence node (``depth`` > 0 ticks): search, count, write its RESULT."""
        stop = self.stop
        if stop is not None and stop.is_set():
            raise SearchAborted
        if self.node_limit is not None and self.nodes + self.qnodes >= self.node_limit and self.iterations > 1:
            raise SearchAborted
        s = self._node(alpha, beta, depth, ply, pv, cut, reduced)
        self.nodes += 1
        out = self.out
        if out is not None:
            bound = 1 if s >= beta else (2 if s <= alpha else 0)
            out(f"RESULT path={self.pfx[ply] if ply else '-'} ply={ply} d={depth // self.div}"
                f" score={s} bound={_BOUND_TEXT[bound]}{self.ctx_sfx}\n")
        return s

    def child(self, alpha: int, beta: int, nd: int, ply: int, pv: bool, cut: bool,
              reduced: bool) -> int:
        """The score of the position on the board, a child of the node at ``ply``, from that
        node's side: a search at ``nd`` ticks, or quiescence when ``nd`` <= 0."""
        if nd > 0:
            return -self.search(-beta, -alpha, nd, ply + 1, pv, cut, reduced)
        return -self.qsearch(-beta, -alpha, ply + 1, 0)

    def _node(self, alpha: int, beta: int, depth: int, ply: int, pv: bool, cut: bool,
              reduced: bool) -> int:
        """Draws, TT cutoffs, the null move, the profile's ProbCut, then the move loop."""
        b = self.board
        key = b._transposition_key()
        if ply:
            if self._is_draw(key):
                return 0
            if ply >= MAX_PLY:
                return self._eval()
        entry = self.tt.get(key)
        tt_move = None
        if entry is not None:
            tt_move = entry[3]
            if not pv and entry[0] >= depth:
                s = _tt_cutoff(entry, ply, alpha, beta)
                if s is not None:
                    return s
        in_check = b.is_check()
        node = Node(alpha, beta, depth, ply, pv, cut, reduced, in_check,
                    -INF if in_check else self._eval(), self.pfx[ply] + "/" if ply else "",
                    0 if b.turn else 4096, -INF)
        keys = self.keys
        keys.append(key)
        try:
            if not pv and not in_check and ply and depth >= 2 * ONE_PLY:
                s = self._null_move(node)
                if s is not None:
                    return s
            moves = list(b.generate_legal_moves())
            if not moves:
                return -MATE + ply if in_check else 0
            s = self.mech.probcut(node, moves)
            if s is not None:
                return s
            return self._move_loop(node, moves, tt_move, key)
        finally:
            keys.pop()

    def _is_draw(self, key) -> bool:
        """The 50-move rule, or ``key`` repeating a position of the game or the path."""
        b = self.board
        if b.halfmove_clock >= 100:
            return True
        keys = self.keys
        n = len(keys)
        lo = n - b.halfmove_clock
        i = n - 4
        while i >= lo and i >= 0:
            if keys[i] == key:
                return True
            i -= 2
        return False

    def _null_move(self, node: Node) -> Optional[int]:
        """The null-move probe at a non-PV node, not the root or in check, at depth >= 2
        plies (the caller checks these), when static eval >= beta, not after a null move,
        with non-pawn material.  The profile gives R and decides what a fail-low does;
        ``None``: go on with the node."""
        b = self.board
        beta = node.beta
        if (node.ev < beta or beta <= -MATE_BOUND or not b.move_stack or not b.move_stack[-1]
                or not b.occupied_co[b.turn] & ~(b.pawns | b.kings)):
            return None
        mech = self.mech
        r = mech.null_reduction(node)
        ply = node.ply
        nd = node.depth - ONE_PLY - r
        path = node.sep + self.prof.null_move
        self.decide("NMP", path, ply + 1, 0, node.depth, nd, r, node.alpha, beta, node.nt)
        self.pfx[ply + 1] = path
        self.estack.append((self.mg, self.eg, self.ph, self.mat))
        b.push(_NULL)
        try:
            s = self.child(beta - 1, beta, nd, ply, False, not node.cut, False)
        finally:
            self.unmake()
        if s >= beta:
            return beta if s >= MATE_BOUND else s
        return mech.after_null_fail_low(node, s, path)

    def _order(self, moves: list, tt_move, ply: int) -> tuple[list, list]:
        """Moves in search order and their ordering scores (see ``typhoon_py.scores``): TT,
        good captures by MVV-LVA and promotions, killers, countermove, history, bad captures."""
        b = self.board
        k0, k1 = self.killers[ply]
        prev = b.move_stack[-1] if b.move_stack else None
        cm = self.countermoves.get(prev.from_square * 64 + prev.to_square) if prev else None
        hist = self.history
        hbase = 0 if b.turn else 4096
        ep = b.ep_square
        pawns = b.pawns
        # Compare integer from/to keys: Move.__eq__ is slow in the hot loop.
        ttk, k0k, k1k, cmk = _key(tt_move), _key(k0), _key(k1), _key(cm)
        pta = b.piece_type_at
        see = self.see
        scores = []
        for m in moves:
            frm = m.from_square
            to = m.to_square
            mk = frm * 64 + to
            if mk == ttk and m == tt_move:
                s = ORDER_TT
            else:
                victim = pta(to)
                if victim or (to == ep and _BB_SQUARES[frm] & pawns):
                    attacker = pta(frm)
                    v = SEE_VALUE[victim] if victim else 100
                    if v < SEE_VALUE[attacker] and see(m) < 0:
                        s = -ORDER_CAPTURE + v - attacker
                    else:
                        s = ORDER_CAPTURE + v * 16 - attacker
                elif m.promotion:
                    s = ORDER_CAPTURE + (m.promotion == QUEEN) * 8000
                elif mk == k0k:
                    s = ORDER_KILLER
                elif mk == k1k:
                    s = ORDER_KILLER - 1
                elif mk == cmk:
                    s = ORDER_COUNTER
                else:
                    s = hist[hbase + mk]
            scores.append(s)
        idx = sorted(range(len(moves)), key=scores.__getitem__, reverse=True)
        return [moves[i] for i in idx], [scores[i] for i in idx]

    def _move_loop(self, node: Node, moves: list, tt_move, key) -> int:
        """The node's moves in order: the profile may prune each one; the others are searched.
        A cutoff by a quiet move rewards it; the result goes into the TT."""
        b = self.board
        ply, beta = node.ply, node.beta
        alpha = orig_alpha = node.alpha
        ordered, scores = self._order(moves, tt_move, ply)
        best = -INF
        best_move = None
        tracing = self.out is not None
        decide = self.decide
        search_move = self._search_move
        prune = self.mech.prune
        may_prune = node.may_prune
        node_scope = self.node_scope
        quiets_tried: list = []
        text = _NodeSan(b, moves) if self.san_suffix else self.move_text
        sep = node.sep
        ep = b.ep_square
        occupied = b.occupied
        pawns = b.pawns
        mn = 0
        for m in ordered:
            sc = scores[mn]
            mn += 1
            to = m.to_square
            # a capture: the target square is occupied, or a pawn takes en passant
            is_cap = bool(occupied & _BB_SQUARES[to]) or (
                to == ep and bool(pawns & _BB_SQUARES[m.from_square]))
            quiet = not is_cap and not m.promotion
            path = sep + text(m) if tracing else ""
            if may_prune and mn > 1:
                act = prune(node, m, mn, sc, is_cap, quiet)
                if act is not None:
                    if not act:  # SKIP: no MOVE line
                        continue
                    decide(act, path, ply + 1, mn, node.depth, None, 0, alpha, beta, node.nt)
                    if node_scope and act in _SCOPE_ACTS:
                        break  # --prune-scope node: abandon the node's remaining moves
                    if quiet:
                        quiets_tried.append(m)
                    continue
            s = search_move(node, m, mn, sc, is_cap, quiet, path, best_move is None)
            if s > best:
                best = node.best = s
                best_move = m
                if ply == 0:
                    self.root_best = m
            if s > alpha:
                alpha = node.alpha = s
                if s >= beta:
                    self._cutoff(node, m, quiet, quiets_tried)
                    break
            if quiet:
                quiets_tried.append(m)
        if best_move is None:
            return alpha
        self._store(key, node.depth, ply, best, orig_alpha, beta, best_move)
        return best

    def _search_move(self, node: Node, m: chess.Move, mn: int, sc: int, is_cap: bool, quiet: bool,
                     path: str, first: bool) -> int:
        """Make ``m``; extend it (a check, while ply < 2 x the iteration depth) or ask the
        profile for its reduction; write the decision; search it; unmake it."""
        b = self.board
        ply = node.ply
        mech = self.mech
        self.make(m)
        try:
            gives_check = b.is_check()
            if gives_check and self.san_suffix:
                path += "+" if any(b.generate_legal_moves()) else "#"
            self.pfx[ply + 1] = path
            nd = node.depth - ONE_PLY
            red = 0
            if gives_check and ply < 2 * self.root_depth:
                nd += ONE_PLY
                act = "EXT"
            else:
                red = mech.reduce(node, m, mn, sc, is_cap, quiet)
                act = "LMR" if red else "FULL"
            self.decide(act, path, ply + 1, mn, node.depth, nd - red, red, node.alpha, node.beta, node.nt)
            if node.pv and first:
                return self.child(node.alpha, node.beta, nd, ply, True, False, False)
            return mech.search_move(node, path, mn, nd, red)
        finally:
            self.unmake()

    def _cutoff(self, node: Node, m: chess.Move, quiet: bool, quiets_tried: list) -> None:
        """``m`` failed high.  A quiet move becomes a killer, gets a history bonus (the
        quiets tried before it a malus) and becomes the previous move's countermove."""
        if not quiet:
            return
        bonus = 32 * node.dp * node.dp
        k = self.killers[node.ply]
        if k[0] != m:
            k[1] = k[0]
            k[0] = m
        hist = self.history
        hbase = node.hbase
        idx = hbase + m.from_square * 64 + m.to_square
        h = hist[idx] + bonus
        hist[idx] = h if h < HISTORY_MAX else HISTORY_MAX
        for q in quiets_tried:
            qi = hbase + q.from_square * 64 + q.to_square
            h = hist[qi] - bonus
            hist[qi] = h if h > -HISTORY_MAX else -HISTORY_MAX
        b = self.board
        prev = b.move_stack[-1] if b.move_stack else None
        if prev:
            self.countermoves[prev.from_square * 64 + prev.to_square] = m

    def _store(self, key, depth: int, ply: int, best: int, orig_alpha: int, beta: int,
               best_move: chess.Move) -> None:
        """The node's result into the TT (always replace; mate scores stored ply-relative)."""
        bound = LOWER if best >= beta else (EXACT if best > orig_alpha else UPPER)
        if best > MATE_BOUND:
            best += ply
        elif best < -MATE_BOUND:
            best -= ply
        self.tt[key] = (depth, best, bound, best_move)

    # ------------------------------------------------------------------ quiescence
    def qsearch(self, alpha: int, beta: int, ply: int, qply: int) -> int:
        """Quiescence: stand pat, then captures and promotions (evasions when in check)."""
        self.qnodes += 1
        b = self.board
        if qply < 4 and b.is_check():
            return self._evasions(alpha, beta, ply, qply)
        stand = self._eval()
        if stand >= beta or ply >= MAX_PLY:
            return stand
        if stand > alpha:
            alpha = stand
        best = stand
        for _, m, risky in self._tactical_moves(stand, alpha):
            if risky and self.see(m) < 0:
                continue
            self.make(m)
            try:
                s = -self.qsearch(-beta, -alpha, ply + 1, qply + 1)
            finally:
                self.unmake()
            if s > best:
                best = s
                if s > alpha:
                    alpha = s
                    if s >= beta:
                        break
        return best

    def _evasions(self, alpha: int, beta: int, ply: int, qply: int) -> int:
        """Quiescence in check (its first plies): every legal move; mated when there is none."""
        moves = list(self.board.generate_legal_moves())
        if not moves:
            return -MATE + ply
        best = -INF
        for m in moves:
            self.make(m)
            try:
                s = -self.qsearch(-beta, -alpha, ply + 1, qply + 1)
            finally:
                self.unmake()
            if s > best:
                best = s
                if s > alpha:
                    alpha = s
                    if s >= beta:
                        break
        return best

    def _tactical_moves(self, stand: int, alpha: int) -> list:
        """Quiescence candidates, best first, as ``(order, move, risky)``: captures that can
        reach alpha (delta pruning), all capture-promotions, and quiet queen promotions.
        ``risky``: a capture of a cheaper piece, searched only if its SEE >= 0."""
        b = self.board
        pta = b.piece_type_at
        cands = []
        for m in b.generate_legal_captures():
            vval = SEE_VALUE[pta(m.to_square) or PAWN]
            if not m.promotion and stand + vval + 200 <= alpha:
                continue
            attacker = pta(m.from_square)
            cands.append((vval * 16 - attacker + (8000 if m.promotion else 0), m, vval < SEE_VALUE[attacker]))
        seventh = (chess.BB_RANK_7 if b.turn else chess.BB_RANK_2) & b.pawns & b.occupied_co[b.turn]
        if seventh:
            for m in b.generate_legal_moves(seventh, chess.BB_ALL & ~b.occupied):
                if m.promotion == QUEEN:
                    cands.append((8000, m, False))
        cands.sort(key=_FIRST, reverse=True)
        return cands


def _key(move: Optional[chess.Move]) -> int:
    """``from * 64 + to`` of ``move``, -1 for none."""
    return move.from_square * 64 + move.to_square if move else -1


def _tt_cutoff(entry: tuple, ply: int, alpha: int, beta: int) -> Optional[int]:
    """The stored score when the TT entry's bound settles the window, else ``None``."""
    s = entry[1]
    if s > MATE_BOUND:
        s -= ply
    elif s < -MATE_BOUND:
        s += ply
    bnd = entry[2]
    if bnd == EXACT or (bnd == LOWER and s >= beta) or (bnd == UPPER and s <= alpha):
        return s
    return None

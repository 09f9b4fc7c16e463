"""The search: iterative deepening, PVS alpha-beta, TT, quiescence, and each profile's mechanisms.

Depths are ticks of 1/64 ply internally (``ONE_PLY = 64``); scores are
centipawns from the side to move's view; mate scores are ``MATE - ply``.

Every move decision at a non-quiescence node is counted in ``acts`` and,
when a trace is attached, written as a ``MOVE`` line in decision order;
every finished non-quiescence node is counted in ``nodes`` and written as a
``RESULT`` line.  With no trace attached the only extra cost is one
``is None`` test per decision.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

import chess

from typhoon_py.evaluation import (
    MATERIAL,
    PHASE_WEIGHT,
    SEE_VALUE,
    TABLE_EG,
    TABLE_MG,
    blend,
    full_evaluation,
)
from typhoon_py.profiles import ONE_PLY, QUARTER_PLY, LmrPolicy, Profile, PruneScope

INF = 32000
MATE = 31000
MATE_BOUND = MATE - 1000
EXACT, LOWER, UPPER = 0, 1, 2
_BOUND_TEXT = ("exact", "lower", "upper")
MAX_PLY = 64

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6
_BB_SQUARES = chess.BB_SQUARES
_NULL = chess.Move.null()

#: Crafty-style LMP move-count limits ``3 + (d + 0.5) ** 1.9`` for d < 16 plies.
_CRAFTY_LMP = [3 + int((d + 0.5) ** 1.9) for d in range(16)]
#: Crafty-style futility margins (centipawns) by remaining depth in plies, d < 7.
_CRAFTY_FP_MARGIN = (0, 100, 150, 200, 250, 300, 400)
#: typhoon-style LMP: leftover moves beyond this place are skipped, by plies.
_TYPHOON_LMP = (0, 4, 6, 9, 13, 18, 24)
#: Decisions that ``--prune-scope node`` turns from ``continue`` into ``break``.
_SCOPE_ACTS = frozenset({"LMP", "FP-QUIET", "FP-CAP"})
#: Stockfish-style history pruning: quiets with history below ``-scale * depth`` (plies).
_HIST_PRUNE_SCALE = 24


def _crafty_lmr(depth_plies: int, move_number: int) -> int:
    """Crafty's LMR table: ``log(1.8 d) log(m) / 2`` plies, leaving at least one ply."""
    r = int(math.log(1.8 * depth_plies) * math.log(move_number) / 2.0)
    return max(0, min(r, depth_plies - 2))


_SF_LOG = [0.0] + [math.log(i) for i in range(1, 256)]


def _stockfish_lmr(depth_plies: int, move_number: int) -> int:
    """Stockfish-like ``log(d) log(m)`` reduction in whole plies (before adjustments)."""
    return int(0.5 + 0.46 * _SF_LOG[min(depth_plies, 255)] * _SF_LOG[min(move_number, 255)])


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
    profile: Profile
    lmr_policy: LmrPolicy = LmrPolicy.PROFILE
    prune_scope: PruneScope = PruneScope.MOVE


class Searcher:
    """One search of one position.  Tables start empty, so the result depends only on
    the position (and its game history), the depth and the configuration."""

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
        self.is_typhoon = prof.name == "typhoon"
        self.is_stockfish = prof.name == "stockfish"
        self.is_crafty = prof.name == "crafty"
        self.see_history = config.lmr_policy == LmrPolicy.SEE_HISTORY
        self.node_scope = config.prune_scope == PruneScope.NODE
        self.div = prof.divisor
        self.out = trace.write if trace is not None else None
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
        self.killers = [[None, None] for _ in range(MAX_PLY + 2)]
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

    def _make(self, move: chess.Move) -> None:
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

    def _unmake(self) -> None:
        self.board.pop()
        self.mg, self.eg, self.ph, self.mat = self.estack.pop()

    def _eval(self) -> int:
        e = blend(self.mg, self.eg, self.ph)
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
            gains[i - 1] = -max(-gains[i - 1], gains[i])
        return gains[0]

    # ------------------------------------------------------------------ trace
    def _text(self, move: chess.Move) -> str:
        """``move`` in the dialect's notation; for SAN without the ``+``/``#`` suffix,
        which the move loop appends once the move is on the board (cheaper than ``san()``)."""
        if self.is_crafty:
            return _san_without_suffix(self.board, move)
        return self.prof.move_text(self.board, move)

    def _decide(self, act: str, path: str, ply: int, mn: int, d: int, nd: Optional[int],
                red: int, a: int, bt: int, nt: str) -> None:
        """Count one move decision and, when tracing, write its MOVE line."""
        acts = self.acts
        acts[act] = acts.get(act, 0) + 1
        out = self.out
        if out is not None:
            div = self.div
            nd_txt = "" if nd is None else f" nd={max(nd, 0) // div}"
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
        sfx = self.ctx_sfx
        if out is not None and header:
            parts = [f"TREEDUMP engine={self.prof.name} v=1 unit={self.prof.unit}"]
            if position_id:
                parts.append(f"id={position_id}")
            if phase:
                parts.append(f"phase={phase}")
            parts.append("producer=typhoon_py")
            if self.ctx:
                parts.append(f"ctx={self.ctx}")
            parts.append(f"fen={b.fen()}")
            out(" ".join(parts) + "\n")
        legal = list(b.generate_legal_moves())
        best = legal[0] if legal else None
        score = 0
        done_depth = 0
        aborted = False
        for d in range(1, depth + 1):
            self.iterations += 1
            if out is not None:
                out(f"ITER d={d}{sfx}\n")
            self.root_depth = d
            try:
                s = self.search(-INF, INF, d * ONE_PLY, 0, True, False, False)
            except SearchAborted:
                aborted = True
                break
            done_depth = d
            score = s
            if self.root_best is not None:
                best = self.root_best
            if on_iteration is not None:
                on_iteration(d, s, self)
            if not legal:
                break
        pv = self.principal_variation(best, max(done_depth, 1))
        if out is not None:
            best_txt = f" best={self.prof.move_text(b, best)}" if best is not None else ""
            out(f"END nodes={self.nodes}{best_txt} score={score}{sfx}\n")
        return SearchOutcome(best, score, done_depth, self.nodes, self.qnodes, self.iterations,
                             dict(self.acts), dict(self.silent), pv, aborted)

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

    def _child(self, alpha: int, beta: int, nd: int, ply: int, pv: bool, cut: bool,
               reduced: bool) -> int:
        if nd > 0:
            return -self.search(-beta, -alpha, nd, ply + 1, pv, cut, reduced)
        return -self.qsearch(-beta, -alpha, ply + 1, 0)

    def _node(self, alpha: int, beta: int, depth: int, ply: int, pv: bool, cut: bool,
              reduced: bool) -> int:
        b = self.board
        root = ply == 0
        key = b._transposition_key()
        keys = self.keys
        if not root:
            if b.halfmove_clock >= 100:
                return 0
            n = len(keys)
            lo = n - b.halfmove_clock
            i = n - 4
            while i >= lo and i >= 0:
                if keys[i] == key:
                    return 0
                i -= 2
            if ply >= MAX_PLY:
                return self._eval()
        entry = self.tt.get(key)
        tt_move = None
        if entry is not None:
            tt_move = entry[3]
            if not pv and entry[0] >= depth:
                s = entry[1]
                if s > MATE_BOUND:
                    s -= ply
                elif s < -MATE_BOUND:
                    s += ply
                bnd = entry[2]
                if bnd == EXACT or (bnd == LOWER and s >= beta) or (bnd == UPPER and s <= alpha):
                    return s
        in_check = b.is_check()
        ev = -INF if in_check else self._eval()
        nt = "PV" if pv else ("CUT" if cut else "ALL")
        pfx = self.pfx[ply]
        sep = pfx + "/" if ply else ""
        tracing = self.out is not None
        keys.append(key)
        try:
            # ---------------------------------------------------------- null move
            if (not pv and not in_check and not root and depth >= 2 * ONE_PLY and ev >= beta
                    and beta > -MATE_BOUND and b.move_stack and b.move_stack[-1]
                    and b.occupied_co[b.turn] & ~(b.pawns | b.kings)):
                dp = depth // ONE_PLY
                if self.is_typhoon:
                    r = 3 * ONE_PLY if dp > 6 else 2 * ONE_PLY
                elif self.is_stockfish:
                    r = (3 + dp // 3 + min(3, (ev - beta) // 200)) * ONE_PLY
                else:
                    r = (3 + dp // 6) * ONE_PLY
                nd = depth - ONE_PLY - r
                path = sep + self.prof.null_move
                self._decide("NMP", path, ply + 1, 0, depth, nd, r, alpha, beta, nt)
                self.pfx[ply + 1] = path
                self.estack.append((self.mg, self.eg, self.ph, self.mat))
                b.push(_NULL)
                try:
                    s = self._child(beta - 1, beta, nd, ply, False, not cut, False)
                finally:
                    self._unmake()
                if s >= beta:
                    return beta if s >= MATE_BOUND else s
                if self.is_typhoon and reduced and s < beta - 150:
                    # Romstad's bailout: the reduced parent move carries a threat;
                    # fail low here so the parent re-searches it at full depth.
                    self._decide("NULLBAILOUT", path, ply + 1, 0, depth, None, 0, alpha, beta, nt)
                    return alpha
            moves = list(b.generate_legal_moves())
            if not moves:
                return -MATE + ply if in_check else 0
            # ---------------------------------------------------------- probcut
            if (self.is_stockfish and not pv and not in_check and not root
                    and depth >= 4 * ONE_PLY and -MATE_BOUND < beta < MATE_BOUND):
                rbeta = beta + 200
                tried = 0
                for m in moves:
                    victim = b.piece_type_at(m.to_square)
                    if not victim or tried >= 3:
                        continue
                    if SEE_VALUE[victim] + ev < rbeta or self.see(m) < rbeta - ev:
                        continue
                    tried += 1
                    nd = depth - 3 * ONE_PLY
                    path = sep + self._text(m) if tracing else ""
                    self._decide("PROBCUT", path, ply + 1, tried, depth, nd, 0, alpha, beta, nt)
                    self.pfx[ply + 1] = path
                    self._make(m)
                    try:
                        s = self._child(rbeta - 1, rbeta, nd, ply, False, not cut, False)
                    finally:
                        self._unmake()
                    if s >= rbeta:
                        return s
            return self._move_loop(alpha, beta, depth, ply, pv, cut, reduced, moves, tt_move,
                                   in_check, ev, nt, sep, key)
        finally:
            keys.pop()

    def _order(self, moves: list, tt_move, ply: int) -> tuple[list, list]:
        """Moves in search order and their ordering scores (TT, good captures by MVV-LVA,
        killers, countermove, history, bad captures last)."""
        b = self.board
        k0, k1 = self.killers[ply]
        prev = b.move_stack[-1] if b.move_stack else None
        cm = self.countermoves.get(prev.from_square * 64 + prev.to_square) if prev else None
        hist = self.history
        hbase = 0 if b.turn else 4096
        ep = b.ep_square
        pawns = b.pawns
        # Compare integer from/to keys: Move.__eq__ is slow in the hot loop.
        ttk = tt_move.from_square * 64 + tt_move.to_square if tt_move else -1
        k0k = k0.from_square * 64 + k0.to_square if k0 else -1
        k1k = k1.from_square * 64 + k1.to_square if k1 else -1
        cmk = cm.from_square * 64 + cm.to_square if cm else -1
        pta = b.piece_type_at
        scores = []
        for m in moves:
            frm = m.from_square
            to = m.to_square
            mk = frm * 64 + to
            if mk == ttk and m == tt_move:
                s = 1 << 30
            else:
                victim = pta(to)
                if victim or (to == ep and _BB_SQUARES[frm] & pawns):
                    attacker = pta(frm)
                    v = SEE_VALUE[victim] if victim else 100
                    if v < SEE_VALUE[attacker] and self.see(m) < 0:
                        s = -(1 << 24) + v - attacker
                    else:
                        s = (1 << 24) + v * 16 - attacker
                elif m.promotion:
                    s = (1 << 24) + (m.promotion == QUEEN) * 8000
                elif mk == k0k:
                    s = 1 << 22
                elif mk == k1k:
                    s = (1 << 22) - 1
                elif mk == cmk:
                    s = (1 << 21)
                else:
                    s = hist[hbase + mk]
            scores.append(s)
        idx = sorted(range(len(moves)), key=scores.__getitem__, reverse=True)
        return [moves[i] for i in idx], [scores[i] for i in idx]

    def _move_loop(self, alpha, beta, depth, ply, pv, cut, reduced, moves, tt_move, in_check,
                   ev, nt, sep, key) -> int:
        b = self.board
        root = ply == 0
        ordered, scores = self._order(moves, tt_move, ply)
        orig_alpha = alpha
        best = -INF
        best_move = None
        dp = depth // ONE_PLY
        tracing = self.out is not None
        decide = self._decide
        is_typhoon, is_stockfish, is_crafty = self.is_typhoon, self.is_stockfish, self.is_crafty
        see_history = self.see_history
        hist = self.history
        hbase = 0 if b.turn else 4096
        quiets_tried: list = []
        skip_quiets = False
        may_prune = not root and not in_check
        extend_ok = ply < 2 * self.root_depth
        child_pv_cut = True  # children after the first are expected to fail high (CUT) at PV nodes
        mn = 0
        text = _NodeSan(b, moves) if tracing and is_crafty else self._text
        for i, m in enumerate(ordered):
            mn += 1
            sc = scores[i]
            to = m.to_square
            victim = b.piece_type_at(to)
            is_cap = bool(victim) or (to == b.ep_square and b.piece_type_at(m.from_square) == PAWN)
            quiet = not is_cap and not m.promotion
            good_cap = is_cap and sc > 0
            path = sep + text(m) if tracing else ""
            # ------------------------------------------------ forward pruning
            if may_prune and mn > 1:
                prune_act = None
                if is_typhoon:
                    # sc < 2**21: not the TT move, a killer or the countermove (see _order)
                    leftover = sc < (1 << 21) and not good_cap and not m.promotion
                    if (leftover and dp < len(_TYPHOON_LMP) and mn > _TYPHOON_LMP[dp] + (2 if pv else 0)
                            and not b.gives_check(m)):
                        prune_act = "LMP"
                elif is_stockfish:
                    if best > -MATE_BOUND:
                        if quiet and skip_quiets:
                            self.silent["skip-quiets"] = self.silent.get("skip-quiets", 0) + 1
                            continue
                        lmr_d = max(0, dp - 1 - _stockfish_lmr(dp, mn))
                        if quiet and not skip_quiets and mn >= (3 + dp * dp) // (1 if pv else 2) + 1:
                            skip_quiets = True
                        if is_cap and not m.promotion:
                            vval = SEE_VALUE[victim] if victim else 100
                            if lmr_d < 7 and ev + 200 + 200 * lmr_d + vval <= alpha and not b.gives_check(m):
                                prune_act = "FP-CAP"
                            elif sc < 0 and self.see(m) < -180 * dp:
                                prune_act = "SEE-CAP"
                        elif quiet:
                            h = hist[hbase + m.from_square * 64 + to]
                            if sc < (1 << 21) and lmr_d < 4 and h < -_HIST_PRUNE_SCALE * dp:
                                prune_act = "HIST-PRUNE"
                            elif lmr_d < 7 and ev + 100 + 150 * lmr_d <= alpha and not b.gives_check(m):
                                prune_act = "FP-QUIET"
                            elif (b.attackers_mask(not b.turn, to) and
                                  self.see(m) < -25 * lmr_d * lmr_d - 1):
                                prune_act = "SEE-QUIET"
                else:  # crafty
                    if quiet:
                        if dp < 7 and (self.mat if b.turn else -self.mat) + _CRAFTY_FP_MARGIN[dp] <= alpha \
                                and not b.gives_check(m):
                            prune_act = "FP-QUIET"
                        elif dp < 16 and mn > _CRAFTY_LMP[dp] and not b.gives_check(m):
                            prune_act = "LMP"
                if prune_act is not None:
                    decide(prune_act, path, ply + 1, mn, depth, None, 0, alpha, beta, nt)
                    if self.node_scope and prune_act in _SCOPE_ACTS:
                        break
                    if quiet:
                        quiets_tried.append(m)
                    continue
            # ------------------------------------------------ search the move
            self._make(m)
            try:
                gives_check = b.is_check()
                if gives_check and tracing and is_crafty:
                    path += "+" if any(b.generate_legal_moves()) else "#"
                self.pfx[ply + 1] = path
                nd = depth - ONE_PLY
                red = 0
                if gives_check and extend_ok:
                    nd += ONE_PLY
                    act = "EXT"
                elif see_history:
                    act = "FULL"
                    if mn > 1 and depth >= 2 * ONE_PLY and not root:
                        if is_cap:
                            bad = sc < 0
                        else:
                            h = hist[hbase + m.from_square * 64 + to]
                            bad = quiet and (h < 0 or (h == 0 and self._see_after(m) < 0))
                        if bad:
                            red = ONE_PLY
                            act = "LMR"
                elif is_typhoon:
                    act = "FULL"
                    if (not in_check and depth >= 3 * ONE_PLY and sc < (1 << 21)
                            and not good_cap and not m.promotion and mn > 2):
                        red = ONE_PLY + QUARTER_PLY * min(3, (mn - 3) // 5)
                        act = "LMR"
                elif is_stockfish:
                    act = "FULL"
                    if depth >= 2 * ONE_PLY and mn > 1 + root:
                        r = _stockfish_lmr(dp, mn) + (0 if pv else 1) - (1 if is_cap or sc >= (1 << 21) else 0)
                        r = min(r, dp - 2) if dp >= 2 else 0
                        if r > 0:
                            red = r * ONE_PLY
                            act = "LMR"
                else:  # crafty
                    act = "FULL"
                    if depth >= 2 * ONE_PLY and mn > 1 and not good_cap and not in_check and not root:
                        r = _crafty_lmr(dp, mn)
                        if r > 0:
                            red = r * ONE_PLY
                            act = "LMR"
                decide(act, path, ply + 1, mn, depth, nd - red, red, alpha, beta, nt)
                first = best_move is None
                if pv and first:
                    s = self._child(alpha, beta, nd, ply, True, False, False)
                elif see_history:
                    s = self._child(alpha, alpha + 1, nd - red, ply, False, True, red > 0)
                    if pv and alpha < s < beta:
                        s = self._child(alpha, beta, nd - red, ply, True, False, red > 0)
                    if red and pv and s >= beta:
                        decide("LMR-RESEARCH", path, ply + 1, mn, depth, nd, 0, alpha, beta, nt)
                        s = self._child(alpha, beta, nd, ply, True, False, False)
                else:
                    child_cut = not cut if not pv else child_pv_cut
                    s = self._child(alpha, alpha + 1, nd - red, ply, False, child_cut, red > 0)
                    if red and s > alpha:
                        if not is_typhoon:
                            decide("LMR-RESEARCH", path, ply + 1, mn, depth, nd, 0, alpha, beta, nt)
                        s = self._child(alpha, alpha + 1, nd, ply, False, not child_cut, False)
                    if pv and alpha < s < beta:
                        s = self._child(alpha, beta, nd, ply, True, False, False)
            finally:
                self._unmake()
            if s > best:
                best = s
                best_move = m
                if root:
                    self.root_best = m
            if s > alpha:
                alpha = s
                if s >= beta:
                    if quiet:
                        bonus = dp * dp
                        k = self.killers[ply]
                        if k[0] != m:
                            k[1] = k[0]
                            k[0] = m
                        idx = hbase + m.from_square * 64 + to
                        hist[idx] = min(hist[idx] + 32 * bonus, 1 << 20)
                        for q in quiets_tried:
                            qi = hbase + q.from_square * 64 + q.to_square
                            hist[qi] = max(hist[qi] - 32 * bonus, -(1 << 20))
                        prev = b.move_stack[-1] if b.move_stack else None
                        if prev:
                            self.countermoves[prev.from_square * 64 + prev.to_square] = m
                    break
            if quiet:
                quiets_tried.append(m)
        if best_move is None:
            return alpha
        bound = LOWER if best >= beta else (EXACT if best > orig_alpha else UPPER)
        tts = best
        if tts > MATE_BOUND:
            tts += ply
        elif tts < -MATE_BOUND:
            tts -= ply
        self.tt[key] = (depth, tts, bound, best_move)
        return best

    def _see_after(self, move: chess.Move) -> int:
        """SEE of ``move`` computed while it is already on the board (taken back and replayed)."""
        b = self.board
        b.pop()
        try:
            return self.see(move)
        finally:
            b.push(move)

    def qsearch(self, alpha: int, beta: int, ply: int, qply: int) -> int:
        """Quiescence: stand pat, then captures and promotions (evasions when in check)."""
        self.qnodes += 1
        b = self.board
        if qply < 4 and b.is_check():
            moves = list(b.generate_legal_moves())
            if not moves:
                return -MATE + ply
            best = -INF
            for m in moves:
                self._make(m)
                try:
                    s = -self.qsearch(-beta, -alpha, ply + 1, qply + 1)
                finally:
                    self._unmake()
                if s > best:
                    best = s
                    if s > alpha:
                        alpha = s
                        if s >= beta:
                            break
            return best
        stand = self._eval()
        if stand >= beta or ply >= MAX_PLY:
            return stand
        if stand > alpha:
            alpha = stand
        cands = []
        for m in b.generate_legal_captures():
            victim = b.piece_type_at(m.to_square) or PAWN
            vval = SEE_VALUE[victim]
            if not m.promotion and stand + vval + 200 <= alpha:
                continue
            attacker = b.piece_type_at(m.from_square)
            cands.append((vval * 16 - attacker + (8000 if m.promotion else 0), m, vval < SEE_VALUE[attacker]))
        seventh = chess.BB_RANK_7 if b.turn else chess.BB_RANK_2
        if b.pawns & seventh & b.occupied_co[b.turn]:
            for m in b.generate_legal_moves(b.pawns & seventh & b.occupied_co[b.turn], chess.BB_ALL & ~b.occupied):
                if m.promotion == QUEEN:
                    cands.append((8000, m, False))
        if not cands:
            return stand
        cands.sort(key=lambda t: t[0], reverse=True)
        best = stand
        for _, m, risky in cands:
            if risky and self.see(m) < 0:
                continue
            self._make(m)
            try:
                s = -self.qsearch(-beta, -alpha, ply + 1, qply + 1)
            finally:
                self._unmake()
            if s > best:
                best = s
                if s > alpha:
                    alpha = s
                    if s >= beta:
                        break
        return best

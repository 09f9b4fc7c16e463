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
    #: With ``--shadow``: per act, ``[tries, fail_highs]`` of the shadow searches, and their nodes
    #: (non-quiescence and quiescence, none of them in ``nodes``/``qnodes``); ``None`` when off.
    shadow: Optional[dict[str, list[int]]] = None
    shadow_nodes: int = 0

    def counters(self) -> dict:
        """The ``--counters`` JSON object for this search (see docs/ENGINE.md)."""
        return {
            "acts": {k: v for k, v in sorted(self.acts.items()) if v},
            "nodes": self.nodes,
            "qnodes": self.qnodes,
            "iterations": self.iterations,
            "silent": {k: v for k, v in sorted(self.silent.items()) if v},
            **({} if self.shadow is None else {
                "shadow": {k: {"tries": t, "fail_highs": f} for k, (t, f) in sorted(self.shadow.items())},
                "shadow_nodes": self.shadow_nodes})}


@dataclass
class SearchConfig:
    """The profile (mechanisms and dialect) and the options that apply to any profile."""

    profile: Profile
    lmr_policy: LmrPolicy = LmrPolicy.PROFILE
    prune_scope: PruneScope = PruneScope.MOVE
    #: ``--trace-silent``: write the decisions the emulated engine makes without a MOVE line
    #: (stockfish's move-count pruning: ``act=SKIP-QUIETS``) as MOVE lines.
    trace_silent: bool = False
    #: ``--shadow``: search every pruned or reduced move again at full depth in a side search
    #: that cannot change the result, and write a ``SHADOW`` line after its decision.
    shadow: bool = False


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
        #: When tracing: per record ply, the path of the move being decided and its `` see=.. hist=..``
        #: keys, so a mechanism's second record of the move (a re-search) carries them too.
        self.mkpath = [""] * (MAX_PLY + 2)
        self.mkeys = [""] * (MAX_PLY + 2)
        self.root_best: Optional[chess.Move] = None
        self.root_depth = 1
        #: The root's window width (cp) in the running iteration (Stockfish's ``rootDelta``).
        self.root_delta = 2 * INF
        #: Static evaluation per ply on the current path (``None`` in check), for ``improving``.
        self.evals: list[Optional[int]] = [None] * (MAX_PLY + 2)
        #: Quiescence TT of the pruned quiescence, apart from the main TT so its depth-0
        #: entries never replace a main entry's move (the main TT is always-replace).
        self.qtt: dict = {}
        self.trace_silent = config.trace_silent
        self.check_bonus = 0
        self.qs_margin = self.qs_limit = 0
        #: The profile's ``QS_PRUNED``: quiescence with TT cutoffs and Stockfish's pruning.
        self.qs_pruned = False
        self.iterations = 0
        self.shadow = config.shadow
        #: Per act: ``[tries, fail_highs]`` of the shadow searches; and their node count.
        self.shadow_counts: dict[str, list[int]] = {}
        self.shadow_nodes = 0
        #: True inside a shadow search: cutoffs update no history, killer or countermove.
        self.in_shadow = False
        #: The shadow searches' TTs: their own entries over the main TTs, which they read but
        #: never write; shared by all the shadow searches of this search, dropped with it.
        self.shadow_tt = _Overlay(self.tt)
        self.shadow_qtt = _Overlay(self.qtt)
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

    def move_keys(self, move: chess.Move) -> str:
        """`` see=<cp> hist=<int>`` of ``move`` for its MOVE records, with the node's position on
        the board (the move not made): SEE in centipawns from the mover's view (0 for a quiet
        move no enemy piece can take), and the history table's value for the move's from-to
        square pair and the side to move (captures never get a bonus there, so theirs is the
        malus or 0)."""
        b = self.board
        frm, to = move.from_square, move.to_square
        h = self.history[(0 if b.turn else 4096) + frm * 64 + to]
        if (move.promotion or to == b.ep_square or b.occupied & _BB_SQUARES[to]
                or b.attackers_mask(not b.turn, to, b.occupied ^ _BB_SQUARES[frm])):
            return f" see={self.see(move)} hist={h}"
        return f" see=0 hist={h}"  # a quiet move onto a square no enemy piece reaches

    def decide(self, act: str, path: str, ply: int, mn: int, d: int, nd: Optional[int],
               red: int, a: int, bt: int, nt: str, keys: Optional[str] = None,
               why: Optional[str] = None) -> None:
        """Count one move decision and, when tracing, write its MOVE line.  ``keys`` is the
        move's `` see=.. hist=..`` text (``move_keys``; "" for a null move); ``None`` takes the
        keys noted for ``path`` at this ply by the move loop, when it is that move."""
        acts = self.acts
        acts[act] = acts.get(act, 0) + 1
        out = self.out
        if out is not None:
            div = self.div
            nd_txt = "" if nd is None else f" nd={(nd if nd > 0 else 0) // div}"
            red_txt = f" red={red // div}" if red else ""
            if keys is None:
                keys = self.mkeys[ply] if self.mkpath[ply] == path else ""
            why_txt = f" why={why}" if why else ""
            out(f"MOVE path={path} ply={ply} mn={mn} d={d // div}{nd_txt} act={act}{red_txt}"
                f" a={a} b={bt} nt={nt}{keys}{why_txt}{self.ctx_sfx}\n")

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
        self.check_bonus = self.mech.CHECK_BONUS
        if self.mech.QS_PRUNED:
            self.qs_margin, self.qs_limit = self.mech.QS_FUTILITY_MARGIN, self.mech.QS_MOVE_LIMIT
            self.qs_pruned = True
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
                             dict(self.acts), dict(self.silent), pv, aborted,
                             dict(self.shadow_counts) if self.shadow else None, self.shadow_nodes)

    def _deepen(self, depth: int, on_iteration) -> tuple[Optional[chess.Move], int, int, bool]:
        """Iterations 1..``depth``: the best move, its score, the last finished depth, and
        whether a stop cut the search short."""
        out = self.out
        legal = list(self.board.generate_legal_moves())
        best = legal[0] if legal else None
        score = 0
        done_depth = 0
        for d in range(1, depth + 1):
            if done_depth and self.stop is not None and self.stop.is_set():
                return best, score, done_depth, True  # stopped between iterations: none is started
            self.iterations += 1
            if out is not None:
                out(f"ITER d={d}{self.ctx_sfx}\n")
            self.root_depth = d
            try:
                s = self._root_search(d, score)
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

    def _root_search(self, d: int, prev: int) -> int:
        """One iteration at the root: the full window, or the profile's aspiration windows
        around ``prev`` (the previous iteration's score, cp), widened on each fail low or fail
        high until the score lands inside; each consecutive fail high searches the root one
        ply shallower (Stockfish's ``failedHighCnt``).  Every re-search is another root visit
        (RESULT) and counts ``silent["aspiration-research"]``."""
        delta = self.mech.aspiration_delta(d, prev) if d > 1 else None
        if delta is None:
            self.root_delta = 2 * INF
            return self.search(-INF, INF, d * ONE_PLY, 0, True, False, False)
        alpha, beta = max(prev - delta, -INF), min(prev + delta, INF)
        failed_high = 0
        silent = self.silent
        while True:
            self.root_delta = beta - alpha
            kept = self.root_best
            s = self.search(alpha, beta, max(1, d - failed_high) * ONE_PLY, 0, True, False, False)
            if s <= alpha:
                # A fail low proves nothing about the other moves: keep the previous best move.
                self.root_best = kept
                beta = (alpha + beta) // 2
                alpha = max(s - delta, -INF)
                failed_high = 0
            elif s >= beta:
                beta = min(s + delta, INF)
                failed_high += 1
            else:
                return s
            silent["aspiration-research"] = silent.get("aspiration-research", 0) + 1
            delta += delta // 4 + 2

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
               reduced: bool, excluded: Optional[chess.Move] = None) -> int:
        """A non-quiescence node (``depth`` > 0 ticks): search, count, write its RESULT.
        With ``excluded``: a verification visit of the node at ``ply`` (already on the path)
        without that move (see ``_node``)."""
        stop = self.stop
        if stop is not None and stop.is_set():
            raise SearchAborted
        if self.node_limit is not None and self.nodes + self.qnodes >= self.node_limit and self.iterations > 1:
            raise SearchAborted
        s = self._node(alpha, beta, depth, ply, pv, cut, reduced, excluded)
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
              reduced: bool, excluded: Optional[chess.Move] = None) -> int:
        """Draws, TT cutoffs, the profile's node cut, the null move, IIR, the profile's
        ProbCut, then the move loop.

        A verification visit (``excluded``, the node already on the path at ``ply``) is
        the same node searched without that move: no TT cutoff or store (its result is not
        the node's), no null move, no ProbCut, no verification of its own."""
        b = self.board
        key = b._transposition_key()
        if ply and excluded is None:
            if self._is_draw(key):
                return 0
            if ply >= MAX_PLY:
                return self._eval()
        entry = self.tt.get(key)
        tt_move = None
        if entry is not None:
            tt_move = entry[3]
            if not pv and entry[0] >= depth and excluded is None:
                s = _tt_cutoff(entry, ply, alpha, beta)
                if s is not None:
                    return s
        in_check = b.is_check()
        ev = -INF if in_check else self._eval()
        node = Node(alpha, beta, depth, ply, pv, cut, reduced, in_check, ev,
                    self.pfx[ply] + "/" if ply else "", 0 if b.turn else 4096, -INF)
        evals = self.evals
        if in_check:
            evals[ply] = None
        else:
            evals[ply] = ev
            prev = evals[ply - 2] if ply >= 2 else None
            if prev is None and ply >= 4:
                prev = evals[ply - 4]
            node.improving = prev is None or ev > prev
        node.npm = bool(b.occupied_co[b.turn] & ~(b.pawns | b.kings))
        node.tt = entry
        node.excluded = excluded
        mech = self.mech
        keys = self.keys
        if excluded is None:  # a verification visit's position is on the path already
            keys.append(key)
        try:
            if ply:
                s = mech.node_cut(node)
                if s is not None:
                    return s
            if not pv and not in_check and ply and depth >= mech.NULL_MIN_DEPTH and excluded is None:
                s = self._null_move(node)
                if s is not None:
                    return s
            red = mech.iir(node, tt_move)
            if red:
                node.depth -= red
                node.dp = node.depth // ONE_PLY
            moves = list(b.generate_legal_moves())
            if excluded is not None:
                moves = [m for m in moves if m != excluded]
                if not moves:
                    return alpha  # the excluded move was the only one: nothing else holds
            elif not moves:
                return -MATE + ply if in_check else 0
            s = mech.probcut(node, moves)
            if s is not None:
                return s
            return self._move_loop(node, moves, tt_move if excluded is None else None, key)
        finally:
            if excluded is None:
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
        """The null-move probe at a non-PV node, not the root or in check, at depth >=
        ``NULL_MIN_DEPTH`` (2 plies unless the profile says otherwise; the caller checks
        these), when static eval >= beta - ``NULL_MARGIN`` (cp), not after a null move,
        with non-pawn material.  The profile gives R and decides what a fail-low does;
        ``None``: go on with the node."""
        b = self.board
        beta = node.beta
        mech = self.mech
        if (node.ev < beta - mech.NULL_MARGIN or beta <= -MATE_BOUND or not b.move_stack
                or not b.move_stack[-1] or not node.npm or not mech.null_ok(node)):
            return None
        r = mech.null_reduction(node)
        ply = node.ply
        nd = node.depth - ONE_PLY - r
        path = node.sep + self.prof.null_move
        self.decide("NMP", path, ply + 1, 0, node.depth, nd, r, node.alpha, beta, node.nt, "")
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
        check_bonus = self.check_bonus
        check_sq = self._check_squares() if check_bonus else ()
        threatened = self._threatened() if check_bonus else 0
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
                    if check_bonus:
                        if _BB_SQUARES[to] & check_sq[pta(frm)]:
                            s += check_bonus
                        if _BB_SQUARES[frm] & threatened and not b.is_attacked_by(not b.turn, to):
                            s += 2 * check_bonus  # a threatened piece escapes to a safe square
            scores.append(s)
        idx = sorted(range(len(moves)), key=scores.__getitem__, reverse=True)
        return [moves[i] for i in idx], [scores[i] for i in idx]

    def _check_squares(self) -> tuple:
        """Per piece type of the side to move, the squares from which it gives a direct check
        (Stockfish's ``check_squares``)."""
        b = self.board
        ksq = b.king(not b.turn)
        if ksq is None:
            return (0,) * 7
        occ = b.occupied
        diag = chess.BB_DIAG_ATTACKS[ksq][chess.BB_DIAG_MASKS[ksq] & occ]
        line = (chess.BB_RANK_ATTACKS[ksq][chess.BB_RANK_MASKS[ksq] & occ]
                | chess.BB_FILE_ATTACKS[ksq][chess.BB_FILE_MASKS[ksq] & occ])
        return (0, chess.BB_PAWN_ATTACKS[not b.turn][ksq], chess.BB_KNIGHT_ATTACKS[ksq], diag, line,
                diag | line, 0)

    def _threatened(self) -> int:
        """The side to move's pieces (not pawns or king) that an enemy piece attacks while
        nothing defends them, or that a cheaper enemy piece attacks (the escape bonus of the
        profiles with a ``CHECK_BONUS``, after Stockfish's threatened-piece ordering)."""
        b = self.board
        us = b.turn
        bb = 0
        for sq in chess.scan_forward(b.occupied_co[us] & ~(b.pawns | b.kings)):
            attackers = b.attackers_mask(not us, sq)
            if not attackers:
                continue
            value = SEE_VALUE[b.piece_type_at(sq)]
            if not b.attackers_mask(us, sq) or any(
                    SEE_VALUE[b.piece_type_at(a)] < value for a in chess.scan_forward(attackers)):
                bb |= _BB_SQUARES[sq]
        return bb

    def _move_loop(self, node: Node, moves: list, tt_move, key) -> int:
        """The node's moves in order: the profile may prune each one; the others are searched.
        A cutoff by a quiet move rewards it; the result goes into the TT."""
        b = self.board
        ply, beta = node.ply, node.beta
        alpha = orig_alpha = node.alpha
        ordered, scores = self._order(moves, tt_move, ply)
        if tt_move is not None and ply and node.tt is not None:
            # The profile's singular-extension verification of the TT move (ordered first).
            ext, cut = self.mech.singular(node, tt_move, node.tt)
            if cut is not None:
                return cut
            node.sing_ext = ext
            node.tt_capture = bool(b.occupied & _BB_SQUARES[tt_move.to_square])
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
        for i, m in enumerate(ordered):
            sc = scores[i]
            mn += 1
            to = m.to_square
            # a capture: the target square is occupied, or a pawn takes en passant
            is_cap = bool(occupied & _BB_SQUARES[to]) or (
                to == ep and bool(pawns & _BB_SQUARES[m.from_square]))
            quiet = not is_cap and not m.promotion
            if tracing:
                path = sep + text(m)
                mk = self.move_keys(m)
            else:
                path = mk = ""
            if may_prune and mn > 1:
                act = prune(node, m, mn, sc, is_cap, quiet)
                if act is not None:
                    if not act:  # SKIP: never considered, so no MOVE line and no place in mn
                        mn -= 1
                        if self.trace_silent:
                            decide("SKIP-QUIETS", path, ply + 1, mn + 1, node.depth, None, 0, alpha, beta,
                                   node.nt, mk)
                            if self.shadow:  # a traced skip is a prune like the others
                                self._shadow(node, m, "SKIP-QUIETS", path, False)
                        continue
                    decide(act, path, ply + 1, mn, node.depth, None, 0, alpha, beta, node.nt, mk)
                    if self.shadow:
                        self._shadow(node, m, act, path, False)
                    if node_scope and act in _SCOPE_ACTS:
                        break  # --prune-scope node: abandon the node's remaining moves
                    if quiet:
                        quiets_tried.append(m)
                    continue
            s = search_move(node, m, mn, sc, is_cap, quiet, path, best_move is None, mk)
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
        if node.excluded is None:
            self._store(key, node.depth, ply, best, orig_alpha, beta, best_move)
        return best

    def _search_move(self, node: Node, m: chess.Move, mn: int, sc: int, is_cap: bool, quiet: bool,
                     path: str, first: bool, mk: str = "") -> int:
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
            ext = mech.extend(node, m, mn, gives_check)
            nd += ext
            if ext > 0:
                act = "EXT"
            else:
                red = mech.reduce(node, m, mn, sc, is_cap, quiet)
                act = "LMR" if red else "FULL"
            why = None
            if self.out is not None:
                self.mkpath[ply + 1] = path
                self.mkeys[ply + 1] = mk
                if not red:
                    why = mech.exemption(node, m, mn, sc, is_cap, quiet, gives_check)
            self.decide(act, path, ply + 1, mn, node.depth, nd - red, red, node.alpha, node.beta, node.nt,
                        mk, why)
            if red and self.shadow:
                return self._search_then_shadow(node, m, act, path, mn, nd, red, first)
            if node.pv and first:
                return self.child(node.alpha, node.beta, nd, ply, True, False, False)
            return mech.search_move(node, path, mn, nd, red)
        finally:
            self.unmake()

    def _search_then_shadow(self, node: Node, m: chess.Move, act: str, path: str, mn: int, nd: int,
                            red: int, first: bool) -> int:
        """``--shadow``, a reduced move (on the board): the main search of it first, then its
        shadow, so the shadow reads what the main search stored in the TT (a full-depth
        re-search leaves the shadow's answer there: it costs one node).  The main search's lines
        are held back and written after the SHADOW line, which stays right after the decision."""
        out = self.out
        held: list[str] = []
        if out is not None:
            self.out = held.append
        try:
            try:
                if node.pv and first:
                    s = self.child(node.alpha, node.beta, nd, node.ply, True, False, False)
                else:
                    s = self.mech.search_move(node, path, mn, nd, red)
            finally:
                self.out = out
            self._shadow(node, m, act, path, True)
        finally:
            # Also when a stop unwinds the search (in the move's search or in its shadow): the
            # lines written so far, as without --shadow.
            if out is not None and held:
                out("".join(held))
        return s

    def _shadow(self, node: Node, m: chess.Move, act: str, path: str, made: bool) -> None:
        """``--shadow``: search ``m`` (pruned, or reduced and already on the board when
        ``made``) at full depth -- the node's depth less one ply, no reduction, no extension
        -- with the zero window at the node's beta (``fh`` needs only score >= beta; beta is
        the node's for its whole move loop), as the node would search a late move: a non-PV
        child of the type the node's later children have (``_side_search``).  Writes
        ``SHADOW path ply d score fh`` (``fh=1``: score >= the node's beta; the score is a
        fail-soft bound: a lower bound of the full-depth score when fh=1, an upper bound
        when fh=0) and counts it.

        A beta above ``MATE - (ply + 1)`` (a mate on the next ply, the best any move can
        score) cannot be reached: fh=0 with that bound as the score, without a search (the
        mate-distance bound a search would return at once; a PV node of a full-window root
        keeps beta = INF, so this spares the deepest shadows of typhoon's and crafty's)."""
        nd = node.depth - ONE_PLY
        beta = node.beta
        reach = MATE - node.ply - 1
        s = reach if beta > reach else self._side_search(node, m, nd, made)
        fh = s >= beta
        c = self.shadow_counts.get(act)
        if c is None:
            c = self.shadow_counts[act] = [0, 0]
        c[0] += 1
        c[1] += fh
        out = self.out
        if out is not None:
            out(f"SHADOW path={path} ply={node.ply + 1} d={(nd if nd > 0 else 0) // self.div}"
                f" score={s} fh={int(fh)}{self.ctx_sfx}\n")

    def _side_search(self, node: Node, m: chess.Move, nd: int, made: bool) -> int:
        """The shadow search of ``m`` at ``nd`` ticks, zero window at the node's beta, in a side
        search that cannot change the main search: no trace lines, no TT writes (it reads the
        main TTs through the shadow overlays), no history, killer or countermove updates, no
        node limit, its acts and silent events into scratch counters, and its nodes taken back
        out of the main counters (into ``shadow_nodes``)."""
        saved_out, saved_limit, saved_tt, saved_qtt = self.out, self.node_limit, self.tt, self.qtt
        nodes, qnodes = self.nodes, self.qnodes
        acts, silent, mech = self.acts, self.silent, self.mech
        self.out = None
        self.node_limit = None
        self.tt = self.shadow_tt
        self.qtt = self.shadow_qtt
        self.acts = {}
        self.silent = mech.silent = {}
        self.in_shadow = True
        self.shadow = False  # no shadows inside a shadow
        try:
            if not made:
                self.make(m)
            try:
                beta = node.beta
                return self.child(beta - 1, beta, nd, node.ply, False, True if node.pv else not node.cut, False)
            finally:
                if not made:
                    self.unmake()
        finally:
            self.out, self.node_limit, self.tt, self.qtt = saved_out, saved_limit, saved_tt, saved_qtt
            self.acts = acts
            self.silent = mech.silent = silent
            self.in_shadow = False
            self.shadow = True
            self.shadow_nodes += self.nodes - nodes + self.qnodes - qnodes
            self.nodes, self.qnodes = nodes, qnodes

    def _cutoff(self, node: Node, m: chess.Move, quiet: bool, quiets_tried: list) -> None:
        """``m`` failed high.  A quiet move becomes a killer, gets a history bonus (the
        quiets tried before it a malus) and becomes the previous move's countermove."""
        if not quiet or self.in_shadow:
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
        """Quiescence: stand pat, then captures and promotions (evasions when in check, in its
        first four plies).  One prologue for both variants: with a profile's ``QS_PRUNED``
        (Stockfish's ``qsearch``) the node first probes the TTs for a cutoff (main or
        quiescence entries), its moves are pruned (``_pruned_captures``) and an evasion or
        move-loop result goes into the quiescence TT (a stand-pat return is not stored)."""
        self.qnodes += 1
        b = self.board
        pruned = self.qs_pruned
        if pruned:
            key = b._transposition_key()
            entry = self.tt.get(key) or self.qtt.get(key)
            if entry is not None:
                s = _tt_cutoff(entry, ply, alpha, beta)
                if s is not None:
                    return s
        if qply < 4 and b.is_check():
            s = self._evasions(alpha, beta, ply, qply)
            if pruned:
                self._qstore(key, ply, s, alpha, beta)
            return s
        stand = self._eval()
        if stand >= beta or ply >= MAX_PLY:
            return stand
        orig_alpha = alpha
        if stand > alpha:
            alpha = stand
        if pruned:
            best = self._pruned_captures(stand, alpha, beta, ply, qply)
            self._qstore(key, ply, best, orig_alpha, beta)
            return best
        best = stand
        for _, m, risky in self._tactical_moves(stand, alpha):
            if risky and self.see(m) < 0:
                continue
            best, alpha = self._q_child(m, best, alpha, beta, ply, qply)
            if alpha >= beta:
                break
        return best

    def _pruned_captures(self, stand: int, alpha: int, beta: int, ply: int, qply: int) -> int:
        """The move loop of the pruned quiescence (profiles with ``QS_PRUNED``), after stand
        pat (``alpha`` already raised to it): captures and promotions where, outside check, a
        capture that gives no check is skipped after the first ``QS_MOVE_LIMIT`` moves (the
        profile's constants) (move-count pruning), when stand pat + margin + victim cannot
        reach alpha (futility), when it loses material (SEE < 0), or when it does not win
        material (SEE < 1) while stand pat + margin is still below alpha."""
        b = self.board
        best = stand
        base = stand + self.qs_margin
        limit = self.qs_limit
        pta = b.piece_type_at
        count = 0
        for _, m, risky in self._tactical_moves(stand, alpha):
            count += 1
            if not m.promotion and not b.gives_check(m):
                if count > limit:
                    continue
                if base + SEE_VALUE[pta(m.to_square) or PAWN] <= alpha:
                    continue
                if base <= alpha and self.see(m) < 1:
                    continue
            if risky and self.see(m) < 0:
                continue
            best, alpha = self._q_child(m, best, alpha, beta, ply, qply)
            if alpha >= beta:
                break
        return best

    def _qstore(self, key, ply: int, best: int, orig_alpha: int, beta: int) -> None:
        """A quiescence result into the quiescence TT (depth 0, no move)."""
        bound = LOWER if best >= beta else (EXACT if best > orig_alpha else UPPER)
        if best > MATE_BOUND:
            best += ply
        elif best < -MATE_BOUND:
            best -= ply
        self.qtt[key] = (0, best, bound, None)

    def _q_child(self, m, best: int, alpha: int, beta: int, ply: int, qply: int) -> tuple[int, int]:
        """One quiescence child: ``m`` searched with the window (alpha, beta); (best, alpha) updated.

        The callers keep best <= alpha < beta, so the child failed high exactly when alpha >= beta after.
        """
        self.make(m)
        try:
            s = -self.qsearch(-beta, -alpha, ply + 1, qply + 1)
        finally:
            self.unmake()
        if s > best:
            best = s
            if s > alpha:
                alpha = s
        return best, alpha

    def _evasions(self, alpha: int, beta: int, ply: int, qply: int) -> int:
        """Quiescence in check (its first plies): every legal move; mated when there is none."""
        moves = list(self.board.generate_legal_moves())
        if not moves:
            return -MATE + ply
        best = -INF
        for m in moves:
            best, alpha = self._q_child(m, best, alpha, beta, ply, qply)
            if alpha >= beta:
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


class _Overlay(dict):
    """The shadow searches' TT: their own entries over the main TT's, which they read but never
    write.  A probe answers the deeper of the two entries (the main one at equal depth): an
    entry of an earlier shadow search must not hide what the main search has learnt since."""

    __slots__ = ("base",)

    def __init__(self, base: dict) -> None:
        super().__init__()
        self.base = base

    def get(self, key, default=None):
        b = self.base.get(key)
        v = dict.get(self, key)
        if v is None:
            return default if b is None else b
        return v if b is None or v[0] > b[0] else b


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

"""Stockfish's mechanisms, modelled on Stockfish 15's ``search()`` (whole plies, ``unit=1``).

Everything here is a rule of the emulated engine; the machinery the rules
need (the aspiration loop at the root, the nested verification visit of a
node, the pruned quiescence) is generic and lives in ``typhoon_py.search``
behind the hooks of :class:`~typhoon_py.mechanisms.base.Mechanisms`.  ``d`` is
the node's depth in plies, ``m`` the move's place among the moves considered
(Stockfish's ``moveCount``), ``improving`` whether the static evaluation rose
since the side to move's previous node (``Node.improving``).

* **Aspiration windows** from depth 4: ``prev +- (16 + prev^2 / 19178)`` cp
  around the previous iteration's score; a fail low lowers alpha (beta moves
  to the window's middle), a fail high raises beta and searches the root one
  ply shallower per consecutive fail high; the window grows by a quarter
  (+2 cp) after each failure.  Each re-search is a new root visit (RESULT).
* **Razoring** (non-PV, d <= 7, eval < alpha - 348 - 258 d^2: quiescence
  decides) and **reverse futility** (non-PV, d < 8, eval - 168 (d - improving)
  >= beta: return eval); both leave only the node's RESULT.
* **NMP** at non-PV nodes with eval >= beta and eval >= beta - 15 d - 15
  improving + 60 (Stockfish: + 201, calibrated), with non-pawn material (the
  search checks that): R = 4 + d/3 + min(5, (eval - beta)/147) plies.
* **IIR**: a node without a TT move loses 2 plies at PV nodes with d >= 3 and
  1 ply at cut nodes with d >= 8 (counted ``silent["iir"]``).
* **ProbCut** (``act=PROBCUT``, kind NODE_CUT): non-PV, d >= 5, beta' = beta +
  179 - 46 improving; up to 2 (4 at cut nodes) captures with SEE >= beta' -
  eval, each tried by quiescence and then searched at d - 4.
* **Singular extensions**: at d >= 4 (6 at PV nodes), the TT move with a lower
  or exact bound of depth >= d - 3 and a non-mate score v is verified: the node
  is visited again without it, at (d - 1)/2 plies with the zero window at
  ``v - 3 d`` (a nested, shallower visit: a second RESULT of the node in the
  iteration, before the outer one).  Below: the TT move is extended by 1 ply
  (2 at non-PV nodes 26 cp below); at or above with ``v - 3 d >= beta``:
  **multi-cut**, the node returns ``v - 3 d`` at once; else, when v >= beta,
  the TT move is searched 1 ply shallower (the negative extension of the 15.1
  trace).  Counted ``silent["verification"]`` and ``silent["multicut"]``.
  The plain check extension remains only where Stockfish 15 keeps it: a check
  at d > 9 with |eval| > 71.
* **Pruning at shallow depth** (not the root, not in check, only with
  non-pawn material of the side to move, once a move scored above a mate):
  ``lmrDepth = max(0, d - 1 - r)``.  Captures and checks: FP-CAP (not a check,
  non-PV, lmrDepth < 7, eval + 424 + 138 lmrDepth + victim <= alpha) and
  SEE-CAP (SEE < -214 d).  Quiet non-checks: HIST-PRUNE (lmrDepth < 5, history
  < -3875 (d - 1)), FP-QUIET (lmrDepth < 13, eval + 106 + 145 lmrDepth + 3
  history / 52 <= alpha), SEE-QUIET (SEE < -24 lmrDepth^2 - 15 lmrDepth).
* **Move-count pruning**: once m >= (3 + d^2) / (2 - improving) / 2 + 1 (half
  Stockfish's threshold, calibrated), the later
  quiet moves that do not give check are never considered (Stockfish's move
  picker skips them): no MOVE line and no ``mn`` (counted
  ``silent["skip-quiets"]``; ``--trace-silent`` writes ``act=SKIP-QUIETS``).
* **LMR** (``act=LMR``): d >= 2, m > 1 (m > 2 at PV nodes of ply <= 1), not a
  capture at a PV node.  ``r = (R[d] R[m] + 1463 - 1024 delta / rootDelta) /
  1024 + (not improving and R[d] R[m] > 1010)`` with ``R[i] = int(20.81 ln
  i)`` (delta: the node's window, rootDelta: the root's); -1 at PV nodes
  (calibrated: Stockfish has -1 - 15/(3 + d), and -2 more at ttPv nodes),
  +2 at cut nodes for a move other than the
  first killer, +1 when the TT move is a capture, -1 after a singular
  extension of the TT move, ``- statScore / 13628`` with ``statScore = 3 h -
  4433`` (h: the history, standing in for Stockfish's main and continuation
  histories); the move keeps >= 1 ply.  A reduced move that beats alpha gets
  ``act=LMR-RESEARCH`` and a zero-window search at full depth.
* **Move ordering**: quiet moves that give a direct check get +16384 on top
  of their history.
* **Quiescence**: TT cutoffs, futility (stand pat + 153 + victim <= alpha),
  move-count pruning (after 2 moves, captures that give no check) and SEE
  pruning (SEE < 0; SEE < 1 when stand pat + 153 <= alpha).

The formulas are simplified re-implementations with this engine's
evaluation, move ordering and tables, not Stockfish's code or trees.
"""
from __future__ import annotations

import math
from typing import Optional

import chess

from typhoon_py.evaluation import SEE_VALUE
from typhoon_py.mechanisms.base import SKIP, Mechanisms, Node
from typhoon_py.profiles import ONE_PLY
from typhoon_py.scores import MATE_BOUND, ORDER_COUNTER, ORDER_KILLER

#: NMP needs eval >= beta - 15 d - 15 improving + this (cp).  Stockfish 15 has 201; with this
#: engine's narrower evaluation that leaves almost no null move (0.3% of decisions against the
#: real 3.1%), so it is calibrated down.
NULL_EVAL_MARGIN = 60
#: LMR at PV nodes is this many plies smaller.  Stockfish 15 has ``1 + 15 / (3 + d)`` (and 2
#: more at ``ttPv`` nodes), which here leaves PV nodes unreduced; the real 15.1 trace reduces
#: the root's late moves by 1-2 plies at depth 6, so this is calibrated to 1.
PV_LMR_BONUS = 1
#: ProbCut: the raised beta's margin (cp, minus ``PROBCUT_IMPROVING`` when improving) and the plies it saves.
PROBCUT_MARGIN = 179
PROBCUT_IMPROVING = 46
PROBCUT_DEPTH = 4
#: Singular extensions: the margin below the TT score per ply of depth (cp) and the double-extension margin.
SINGULAR_MARGIN = 3
DOUBLE_EXT_MARGIN = 26
#: Scores beyond this (cp) are treated as wins: no singular verification of them.
KNOWN_WIN = 10000
#: The quiet-move ordering bonus of a move that gives a direct check (history units).
CHECK_BONUS = 16384
#: Quiescence: the futility margin over stand pat (cp) and how many moves a quiet node considers.
QS_FUTILITY_MARGIN = 153
QS_MOVE_LIMIT = 2

#: Stockfish's reduction table ``R[i] = int(20.81 ln i)`` (one thread).
_REDUCTIONS = [0] + [int(20.81 * math.log(i)) for i in range(1, 256)]


def lmr_base(improving: bool, depth_plies: int, move_number: int, delta: int, root_delta: int) -> int:
    """Stockfish 15's ``reduction()`` in whole plies, before the per-move adjustments."""
    r = _REDUCTIONS[min(depth_plies, 255)] * _REDUCTIONS[min(move_number, 255)]
    # C++ integer division truncates toward zero; every operand here is >= 0 except the sum's.
    num = r + 1463 - delta * 1024 // max(1, root_delta)
    return int(num / 1024) + (1 if not improving and r > 1010 else 0)


def futility_move_count(improving: bool, depth_plies: int) -> int:
    """Move-count pruning's threshold: half of Stockfish's ``(3 + d^2) / (2 - improving)``, plus
    one (calibrated: with Stockfish's own threshold this engine's tree at depth 6 is twice as
    big, its quiet-move ordering being far weaker than Stockfish's histories)."""
    return (3 + depth_plies * depth_plies) // (1 if improving else 2) // 2 + 1


def _trunc_div(a: int, b: int) -> int:
    """C++'s integer division (toward zero) for ``b`` > 0."""
    return -((-a) // b) if a < 0 else a // b


class StockfishMechanisms(Mechanisms):
    __slots__ = ("make", "unmake", "move_text", "pfx", "tracing", "killers")

    CHECK_BONUS = CHECK_BONUS
    QS_PRUNED = True
    QS_FUTILITY_MARGIN = QS_FUTILITY_MARGIN
    QS_MOVE_LIMIT = QS_MOVE_LIMIT

    def __init__(self, searcher) -> None:
        super().__init__(searcher)
        self.make = searcher.make
        self.unmake = searcher.unmake
        self.move_text = searcher.move_text
        self.pfx = searcher.pfx
        self.tracing = searcher.out is not None
        self.killers = searcher.killers

    # ---------------------------------------------------------- the root
    def aspiration_delta(self, depth_plies: int, prev: int) -> Optional[int]:
        if depth_plies < 4 or abs(prev) >= MATE_BOUND:
            return None
        return 16 + prev * prev // 19178

    # ---------------------------------------------------------- before the move loop
    def node_cut(self, node: Node) -> Optional[int]:
        """Razoring and reverse futility (Stockfish's steps 7 and 8)."""
        if node.pv or node.in_check or node.root or node.excluded is not None:
            return None
        dp, ev = node.dp, node.ev
        if dp <= 7 and ev < node.alpha - 348 - 258 * dp * dp:
            s = self.searcher.qsearch(node.alpha - 1, node.alpha, node.ply, 0)
            if s < node.alpha:
                self._count("razor")
                return s
        if (dp < 8 and ev - 168 * (dp - node.improving) >= node.beta
                and ev < KNOWN_WIN and node.beta > -MATE_BOUND):
            self._count("futility-cut")
            return ev
        return None

    def null_ok(self, node: Node) -> bool:
        return (node.excluded is None
                and node.ev >= node.beta - 15 * node.dp - 15 * node.improving + NULL_EVAL_MARGIN)

    def null_reduction(self, node: Node) -> int:
        return (4 + node.dp // 3 + min(5, (node.ev - node.beta) // 147)) * ONE_PLY

    def iir(self, node: Node, tt_move: Optional[chess.Move]) -> int:
        if tt_move is not None or node.excluded is not None:
            return 0
        if node.pv and node.dp >= 3:
            self._count("iir")
            return 2 * ONE_PLY
        if node.cut and node.dp >= 8:
            self._count("iir")
            return ONE_PLY
        return 0

    def probcut(self, node: Node, moves: list) -> Optional[int]:
        beta = node.beta
        if (node.pv or node.in_check or node.root or node.depth < 5 * ONE_PLY or node.excluded is not None
                or not -MATE_BOUND < beta < MATE_BOUND):
            return None
        rbeta = beta + PROBCUT_MARGIN - PROBCUT_IMPROVING * node.improving
        entry = node.tt
        if entry is not None and entry[0] >= node.depth - 3 * ONE_PLY and entry[1] < rbeta:
            return None  # the TT says a shallower search already stayed below beta'
        b = self.board
        ev = node.ev
        ply = node.ply
        nd = node.depth - PROBCUT_DEPTH * ONE_PLY
        limit = 4 if node.cut else 2
        searcher = self.searcher
        tried = 0
        for m in moves:
            victim = b.piece_type_at(m.to_square)
            if not victim:
                continue
            if SEE_VALUE[victim] + ev < rbeta or self.see(m) < rbeta - ev:
                continue
            tried += 1
            path = node.sep + self.move_text(m) if self.tracing else ""
            keys = searcher.move_keys(m) if self.tracing else ""
            self.decide("PROBCUT", path, ply + 1, tried, node.depth, nd, 0, node.alpha, beta, node.nt, keys=keys)
            self.pfx[ply + 1] = path
            self.make(m)
            try:
                # quiescence first: only a capture that holds there is searched (untraced, as qsearch is)
                s = -searcher.qsearch(-rbeta, -rbeta + 1, ply + 1, 0)
                if s >= rbeta:
                    s = self.child(rbeta - 1, rbeta, nd, ply, False, not node.cut, False)
            finally:
                self.unmake()
            if s >= rbeta:
                return s
            if tried >= limit:
                break
        return None

    def singular(self, node: Node, tt_move: chess.Move, entry: tuple) -> tuple[int, Optional[int]]:
        dp = node.dp
        tt_depth, tt_value, tt_bound = entry[0], entry[1], entry[2]
        if (dp < 4 + 2 * node.pv or tt_bound == 2 or tt_depth < node.depth - 3 * ONE_PLY
                or abs(tt_value) >= KNOWN_WIN or node.ply >= 2 * self.searcher.root_depth):
            return 0, None
        sbeta = tt_value - SINGULAR_MARGIN * dp
        sdepth = (dp - 1) // 2 * ONE_PLY
        self._count("verification")
        s = self.searcher.search(sbeta - 1, sbeta, sdepth, node.ply, False, node.cut, node.reduced,
                                 tt_move)
        if s < sbeta:
            return (2 if not node.pv and s < sbeta - DOUBLE_EXT_MARGIN else 1) * ONE_PLY, None
        if sbeta >= node.beta:
            self._count("multicut")
            return 0, sbeta
        if tt_value >= node.beta:
            return -ONE_PLY, None
        return 0, None

    # ---------------------------------------------------------- per move
    def extend(self, node: Node, move: chess.Move, mn: int, gives_check: bool) -> int:
        if node.ply >= 2 * self.searcher.root_depth:
            return 0
        if mn == 1 and node.sing_ext:
            return node.sing_ext
        if gives_check and node.dp > 9 and abs(node.ev) > 71:
            return ONE_PLY
        return 0

    def _reduction(self, node: Node, mn: int) -> int:
        delta = node.beta - node.alpha
        return lmr_base(node.improving, node.dp, mn, delta, self.searcher.root_delta)

    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        if node.best <= -MATE_BOUND or not node.npm:
            return None  # nothing searched yet (or only mated lines), or a pawn ending: search on
        b = self.board
        if quiet and node.skip_quiets:
            if b.gives_check(move):
                return None  # checks are exempt from move-count pruning
            self._count("skip-quiets")
            return SKIP
        dp = node.dp
        if quiet and mn >= futility_move_count(node.improving, dp):
            node.skip_quiets = True  # move-count pruning: this one is still considered
        lmr_depth = max(0, dp - 1 - self._reduction(node, mn))
        check = b.gives_check(move)
        if is_cap or check or move.promotion:
            if is_cap and not check and not node.pv and lmr_depth < 7:
                victim = b.piece_type_at(move.to_square)
                value = SEE_VALUE[victim] if victim else SEE_VALUE[chess.PAWN]  # en passant
                if node.ev + 424 + 138 * lmr_depth + value <= node.alpha:
                    return "FP-CAP"
            if (is_cap or check) and self.see(move) < -214 * dp:
                return "SEE-CAP"
            return None
        h = self.history[node.hbase + move.from_square * 64 + move.to_square]
        if sc < ORDER_COUNTER and lmr_depth < 5 and h < -3875 * (dp - 1):
            return "HIST-PRUNE"
        if lmr_depth < 13 and node.ev + 106 + 145 * lmr_depth + _trunc_div(3 * h, 52) <= node.alpha:
            return "FP-QUIET"
        if b.attackers_mask(not b.turn, move.to_square) and \
                self.see(move) < -24 * lmr_depth * lmr_depth - 15 * lmr_depth:
            return "SEE-QUIET"
        return None

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        dp = node.dp
        if dp < 2 or mn <= 1 + (node.pv and node.ply <= 1) or (node.pv and is_cap):
            return 0
        r = self._reduction(node, mn)
        if node.pv:
            r -= PV_LMR_BONUS
        if node.cut and sc != ORDER_KILLER:
            r += 2
        if node.tt_capture:
            r += 1
        if node.sing_ext > 0:
            r -= 1
        # the history of the move (its side: the node's side to move, the move now on the board)
        h = self.history[node.hbase + move.from_square * 64 + move.to_square] if quiet else 0
        r -= _trunc_div(3 * h - 4433, 13628)
        r = min(r, dp - 2)
        return r * ONE_PLY if r > 0 else 0

    def _count(self, event: str) -> None:
        silent = self.silent
        silent[event] = silent.get(event, 0) + 1

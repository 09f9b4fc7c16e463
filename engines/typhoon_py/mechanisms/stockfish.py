"""Stockfish's mechanisms, modelled on Stockfish 15's ``search()`` (whole plies, ``unit=1``).

Everything here is a rule of the emulated engine; the machinery the rules
need (the aspiration loop at the root, the nested verification visit of a
node, the pruned quiescence) is generic and lives in ``typhoon_py.search``
behind the hooks of :class:`~typhoon_py.mechanisms.base.Mechanisms`.  ``d`` is
the node's depth in plies, ``m`` the move's place among the moves considered
(Stockfish's ``moveCount``), ``improving`` whether the static evaluation rose
since the side to move's previous node (``Node.improving``).

**Units.**  Margins are Stockfish's numbers in its ``Value``, converted to this
engine's centipawns at 361 ``Value`` per pawn (15.1's ``cp = value * 100 /
361``: ``value_cp``); they are written below in ``Value`` (``V``).  SEE
thresholds are in Stockfish's piece values (126 per pawn), converted to this
engine's (100 per pawn: ``see_cp``).  ``h`` is this engine's history of the
move; Stockfish's history sums (main + continuation histories) are stood in by
``H = 3 h - 13628`` (``CONT_HISTORY_STANDIN``: this engine keeps no
continuation histories, and its history is 0 for most late quiet moves where
Stockfish's sums are negative).

* **Aspiration windows** from depth 4: ``prev +- (16 + prev^2 / 19178)`` V
  around the previous iteration's score; a fail low lowers alpha (beta moves
  to the window's middle), a fail high raises beta and searches the root one
  ply shallower per consecutive fail high; the window grows by a quarter
  (+2) after each failure.  Each re-search is a new root visit (RESULT).
* **Razoring** (non-PV, d <= 7, eval < alpha - 348 - 258 d^2 V, no quiet
  check available: quiescence decides) and **reverse futility** (non-PV, d < 8, eval - 168 (d - improving)
  V >= beta: return eval); both leave only the node's RESULT.
* **NMP** at non-PV nodes with eval >= beta and eval >= beta - (15 d + 15
  improving - 201) V, with non-pawn material (the search checks that): R = 4 +
  d/3 + min(5, (eval - beta) / 147 V) plies.
* **IIR** (15.1, as its traces show): a node without a TT move loses 3 plies
  at PV nodes (keeping one) and 2 plies at cut nodes with d >= 9 (counted
  ``silent["iir"]``).  **PV depth drop** (15.1): each time a move raises
  alpha at a PV node of depth 2-5 (not the root, not in check), its later
  moves are searched one ply shallower (``d`` of the later MOVE records is the
  lowered depth; counted ``silent["pv-depth-drop"]``).
* **ProbCut** (``act=PROBCUT``, kind NODE_CUT): non-PV, d >= 5, beta' = beta +
  (179 - 46 improving) V; up to 2 (4 at cut nodes) captures with SEE >= beta' -
  eval, each tried by quiescence and then searched at d - 4.
* **Singular extensions**: at d >= 4 (6 at PV nodes), the TT move with a lower
  or exact bound of depth >= d - 3 and a non-mate score v is verified: the node
  is visited again without it, at (d - 1)/2 plies with the zero window at
  ``v - 3 d`` V (a nested, shallower visit: a second RESULT of the node in the
  iteration, before the outer one).  Below: the TT move is extended by 1 ply
  (2 at non-PV nodes 26 V below); at or above with ``v - 3 d >= beta``:
  **multi-cut**, the node returns ``v - 3 d`` at once; else, when v >= beta,
  the TT move is searched 1 ply shallower (the negative extension of the 15.1
  trace).  Counted ``silent["verification"]`` and ``silent["multicut"]``.
  The plain check extension remains only where Stockfish 15 keeps it: a check
  at d > 9 with |eval| > 71.
* **Pruning at shallow depth** (not the root, not in check, only with
  non-pawn material of the side to move, once a move scored above a mate):
  ``lmrDepth = max(0, d - 1 - r)``.  Captures and checks: FP-CAP (not a check,
  non-PV, lmrDepth < 7, eval + (424 + 138 lmrDepth) V + victim <= alpha) and
  SEE-CAP (SEE < -214 d).  Quiet non-checks: HIST-PRUNE (lmrDepth < 5, h
  < -3875 (d - 1)), FP-QUIET (lmrDepth < 13, eval + (106 + 145 lmrDepth + H /
  52) V <= alpha), SEE-QUIET (SEE < -24 lmrDepth^2 - 15 lmrDepth).
* **Move-count pruning**: once m >= (3 + d^2) / (2 - improving) (Stockfish's
  threshold), the later quiet moves that do not give check are never
  considered (Stockfish's move picker skips them): no MOVE line and no ``mn``
  (counted ``silent["skip-quiets"]``; ``--trace-silent`` writes
  ``act=SKIP-QUIETS``).
* **LMR** (``act=LMR``): d >= 2, m > 1 (m > 2 at PV nodes of ply <= 1), not a
  capture at a PV node.  ``r = (R[d] R[m] + 1463 - 1024 delta / rootDelta) /
  1024 + (not improving and R[d] R[m] > 1010)`` with ``R[i] = int(20.81 ln
  i)`` (delta: the node's window, rootDelta: the root's); +2 at cut nodes for
  a move other than the first killer, +1 when the TT move is a capture, -1
  after a singular extension of the TT move, ``- statScore / 13628`` with
  ``statScore = H - 4433``; the move keeps >= 1 ply, a check 2 plies.  Stockfish's PV-node
  terms (-1 - 15/(3 + d), -2 at ttPv nodes) are left out (see ``reduce``).  A
  reduced move that beats alpha gets ``act=LMR-RESEARCH`` and a zero-window
  search at full depth.
* **Move ordering**: quiet moves that give a direct check get +16384 on top
  of their history.
* **Quiescence**: TT cutoffs, futility (stand pat + 153 V + victim <= alpha),
  move-count pruning (after 2 moves, captures that give no check) and SEE
  pruning (SEE < 0; SEE < 1 when stand pat + 153 V <= alpha).
* **why=** on a searched, unreduced move that a prune or reduce rule's depth
  and move-number conditions covered: see ``exemption``.

Calibration (issue 14): with these rules the 20 positions of
``fixtures/positions20.epd`` at depth 6 land in every band of real Stockfish
15.1 (``benchmarks/bench_fidelity.py``; docs/ENGINE.md gives the table).

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

#: Stockfish's ``Value`` per pawn of evaluation: 15.1 prints ``cp = value * 100 / 361`` (its
#: win-rate normalisation, the scale its search margins were tuned on).  Every evaluation margin
#: below is Stockfish's number in ``Value``, converted to this engine's centipawns by ``value_cp``.
SF_VALUE_PER_PAWN = 361
#: Stockfish's SEE thresholds are in its middle-game piece values, 126 per pawn; ``see_cp``
#: converts them to this engine's SEE values (``SEE_VALUE``: 100 per pawn).
SF_SEE_PAWN = 126


def _trunc_div(a: int, b: int) -> int:
    """C++'s integer division (toward zero) for ``b`` > 0."""
    return -((-a) // b) if a < 0 else a // b


def value_cp(v: int) -> int:
    """Stockfish ``Value`` ``v`` in this engine's centipawns (truncated toward zero)."""
    return _trunc_div(v * 100, SF_VALUE_PER_PAWN)


def see_cp(v: int) -> int:
    """A Stockfish SEE threshold ``v`` (126 per pawn) in this engine's SEE values (100 per pawn)."""
    return _trunc_div(v * SEE_VALUE[chess.PAWN], SF_SEE_PAWN)


#: NMP needs eval >= beta - 15 d - 15 improving + this (Stockfish ``Value``).
NULL_EVAL_MARGIN = 201
#: The stand-in (history units) for the continuation histories this engine does not keep.
#: Stockfish's ``statScore`` (LMR) and its parent-node futility's ``history`` are sums of the
#: main history and three continuation histories, negative for most late quiet moves (the move
#: searched and refuted in every context); this engine has one butterfly table that rewards
#: and punishes only at quiet cutoffs, 0 for 80-87% of the moves LMR reduces (measured at
#: depth 6 on fixtures/positions20.epd).  Both sums here are ``3 h - CONT_HISTORY_STANDIN``:
#: one ply of ``statScore`` (13628).  Without it every LMR and futility rule sees a history of
#: 0 where Stockfish sees a negative one, and the depth-6 bench gives EBF 3.01 (band <= 3),
#: LMR 1.72 plies (band 1.8-2.6) and 20% skips (band 22-36%).
CONT_HISTORY_STANDIN = 13628
#: ProbCut: the raised beta's margin (``Value``, minus ``PROBCUT_IMPROVING`` when improving) and the plies it saves.
PROBCUT_MARGIN = 179
PROBCUT_IMPROVING = 46
PROBCUT_DEPTH = 4
#: Singular extensions: the margin below the TT score per ply of depth and the double-extension
#: margin (``Value``).
SINGULAR_MARGIN = 3
DOUBLE_EXT_MARGIN = 26
#: Scores beyond this (cp) are treated as wins: no singular verification of them.
KNOWN_WIN = 10000
#: The quiet-move ordering bonus of a move that gives a direct check (history units).
CHECK_BONUS = 16384
#: Quiescence: the futility margin over stand pat (``Value``) and how many moves a quiet node considers.
QS_FUTILITY_MARGIN = 153
QS_MOVE_LIMIT = 2
#: IIR (Stockfish 15.1, as its traces show): plies a PV node without a TT move loses (keeping at
#: least one), and a cut node without one of at least ``IIR_CUT_DEPTH`` plies.
IIR_PV = 3
IIR_CUT = 2
IIR_CUT_DEPTH = 9

#: Stockfish's reduction table ``R[i] = int(20.81 ln i)`` (one thread).
_REDUCTIONS = [0] + [int(20.81 * math.log(i)) for i in range(1, 256)]


def lmr_base(improving: bool, depth_plies: int, move_number: int, delta: int, root_delta: int) -> int:
    """Stockfish 15's ``reduction()`` in whole plies, before the per-move adjustments."""
    r = _REDUCTIONS[min(depth_plies, 255)] * _REDUCTIONS[min(move_number, 255)]
    # C++ integer division truncates toward zero; every operand here is >= 0 except the sum's.
    num = r + 1463 - delta * 1024 // max(1, root_delta)
    return int(num / 1024) + (1 if not improving and r > 1010 else 0)


def futility_move_count(improving: bool, depth_plies: int) -> int:
    """Move-count pruning's threshold, Stockfish 15's ``(3 + d^2) / (2 - improving)``."""
    return (3 + depth_plies * depth_plies) // (1 if improving else 2)


class StockfishMechanisms(Mechanisms):
    __slots__ = ("make", "unmake", "move_text", "pfx", "tracing", "killers")

    CHECK_BONUS = CHECK_BONUS
    QS_PRUNED = True
    QS_FUTILITY_MARGIN = value_cp(QS_FUTILITY_MARGIN)
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
        v = prev * SF_VALUE_PER_PAWN // 100  # the previous score in Stockfish's Value
        return max(1, value_cp(16 + v * v // 19178))

    # ---------------------------------------------------------- before the move loop
    def node_cut(self, node: Node) -> Optional[int]:
        """Razoring and reverse futility (Stockfish's steps 7 and 8)."""
        if node.pv or node.in_check or node.root or node.excluded is not None:
            return None
        dp, ev = node.dp, node.ev
        if (dp <= 7 and ev < node.alpha - value_cp(348 + 258 * dp * dp)
                and not self._quiet_check()):
            s = self.searcher.qsearch(node.alpha - 1, node.alpha, node.ply, 0)
            if s < node.alpha:
                self._count("razor")
                return s
        if (dp < 8 and ev - value_cp(168 * (dp - node.improving)) >= node.beta
                and ev < KNOWN_WIN and node.beta > -MATE_BOUND):
            self._count("futility-cut")
            return ev
        return None

    def _quiet_check(self) -> bool:
        """The side to move has a quiet move that gives check.  Razoring hands the node to
        quiescence, which in Stockfish searches quiet checks at its first ply and here does not:
        the profile razors only nodes where that makes no difference (without this it razors the
        node before a quiet mate, e.g. the smothered Nf7# after Qg8+ Rxg8 at depth 4)."""
        b = self.board
        occupied = b.occupied
        for m in b.generate_legal_moves(to_mask=~occupied):
            if not m.promotion and b.gives_check(m):
                return True
        return False

    def null_ok(self, node: Node) -> bool:
        return (node.excluded is None
                and node.ev >= node.beta - value_cp(15 * node.dp + 15 * node.improving - NULL_EVAL_MARGIN))

    def null_reduction(self, node: Node) -> int:
        return (4 + node.dp // 3 + min(5, (node.ev - node.beta) // value_cp(147))) * ONE_PLY

    def iir(self, node: Node, tt_move: Optional[chess.Move]) -> int:
        if tt_move is not None or node.excluded is not None:
            return 0
        if node.pv and node.dp >= 2:
            self._count("iir")
            return min(IIR_PV, node.dp - 1) * ONE_PLY
        if node.cut and node.dp >= IIR_CUT_DEPTH:
            self._count("iir")
            return IIR_CUT * ONE_PLY
        return 0

    def probcut(self, node: Node, moves: list) -> Optional[int]:
        beta = node.beta
        if (node.pv or node.in_check or node.root or node.depth < 5 * ONE_PLY or node.excluded is not None
                or not -MATE_BOUND < beta < MATE_BOUND):
            return None
        rbeta = beta + value_cp(PROBCUT_MARGIN - PROBCUT_IMPROVING * node.improving)
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
        sbeta = tt_value - max(1, value_cp(SINGULAR_MARGIN * dp))
        sdepth = (dp - 1) // 2 * ONE_PLY
        self._count("verification")
        s = self.searcher.search(sbeta - 1, sbeta, sdepth, node.ply, False, node.cut, node.reduced,
                                 tt_move)
        if s < sbeta:
            return (2 if not node.pv and s < sbeta - value_cp(DOUBLE_EXT_MARGIN) else 1) * ONE_PLY, None
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
        if node.pv and node.alpha > node.alpha_seen:
            # Stockfish 15.1: each time a move raises alpha at a PV node of depth 2-5, the
            # node's later moves are searched one ply shallower
            node.alpha_seen = node.alpha
            if 1 < node.dp < 6 and node.beta < KNOWN_WIN and node.alpha > -KNOWN_WIN:
                node.depth -= ONE_PLY
                node.dp -= 1
                self._count("pv-depth-drop")
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
                if node.ev + value_cp(424 + 138 * lmr_depth) + value <= node.alpha:
                    return "FP-CAP"
            if (is_cap or check) and self.see(move) < see_cp(-214 * dp):
                return "SEE-CAP"
            return None
        h = self.history[node.hbase + move.from_square * 64 + move.to_square]
        if sc < ORDER_COUNTER and lmr_depth < 5 and h < -3875 * (dp - 1):
            return "HIST-PRUNE"
        if lmr_depth < 13 and node.ev + value_cp(106 + 145 * lmr_depth + _trunc_div(3 * h - CONT_HISTORY_STANDIN, 52)) <= node.alpha:
            return "FP-QUIET"
        if b.attackers_mask(not b.turn, move.to_square) and \
                self.see(move) < see_cp(-24 * lmr_depth * lmr_depth - 15 * lmr_depth):
            return "SEE-QUIET"
        return None

    def _lmr(self, node: Node, move: chess.Move, mn: int, sc: int, quiet: bool) -> tuple[int, int]:
        """LMR's ``r`` in plies before the history term, and the history term (plies taken off)."""
        r = self._reduction(node, mn)
        # Stockfish lowers r at PV nodes (1 + 15 / (3 + d), and 2 more at ttPv nodes) against a
        # statScore that is strongly negative there; this engine's history is 0 for most moves, so
        # PV nodes keep the formula's r (with Stockfish's PV terms the depth-6 bench's tree is
        # 2.2 times bigger: EBF 3.25, LMR 10% of decisions, 43% skips).
        if node.cut and sc != ORDER_KILLER:
            r += 2
        if node.tt_capture:
            r += 1
        if node.sing_ext > 0:
            r -= 1
        # the history of the move (its side: the node's side to move, the move now on the board)
        h = self.history[node.hbase + move.from_square * 64 + move.to_square] if quiet else 0
        return r, _trunc_div(3 * h - CONT_HISTORY_STANDIN - 4433, 13628)

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        dp = node.dp
        if dp < 2 or mn <= 1 + (node.pv and node.ply <= 1) or (node.pv and is_cap):
            return 0
        r, hist_term = self._lmr(node, move, mn, sc, quiet)
        # the move keeps >= 1 ply; a check keeps 2, so that the reply is searched by a node and
        # not by quiescence, which in Stockfish searches quiet checks at its first ply and here
        # does not (without this the profile misses the smothered Qg8+ Rxg8 Nf7# at depth 4)
        r = min(r - hist_term, dp - 2 - self.board.is_check())
        return r * ONE_PLY if r > 0 else 0

    # ---------------------------------------------------------- why=
    def reduce_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                         quiet: bool, gives_check: bool) -> Optional[str]:
        """Why LMR (d >= 2, m > 1, m > 2 at PV nodes of ply <= 1) left the move unreduced:
        ``gives-check`` (the check extension took it, or a check's 2 plies left no reduction),
        ``pv-node`` (a capture at a PV node), ``good-history`` (its history took r from >= 1
        ply to none)."""
        dp = node.dp
        if dp < 2 or mn <= 1 + (node.pv and node.ply <= 1):
            return None
        if self.extend(node, move, mn, gives_check) > 0:
            return "gives-check"
        if node.pv and is_cap:
            return "pv-node"
        r, hist_term = self._lmr(node, move, mn, sc, quiet)
        if gives_check and min(r - hist_term, dp - 2) > 0:
            return "gives-check"  # a check keeps 2 plies: it took the reduction away
        if quiet and min(r, dp - 2) > 0 and hist_term > 0 and min(r - hist_term, dp - 2) <= 0:
            return "good-history"
        return None

    def prune_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                        quiet: bool, gives_check: bool) -> Optional[str]:
        """Why the shallow-depth pruning (not the root, m > 1, non-pawn material) left the move
        alone: ``in-check`` (this search prunes nothing in check), ``gives-check`` (checks are
        exempt from move-count pruning, the quiet rules and FP-CAP), ``promotion`` (a quiet
        promotion: never pruned here), ``good-capture``/``capture`` (SEE >= 0 / < 0: a capture
        once move-count pruning drops the quiets: it drops quiets only), ``pv-node`` (FP-CAP
        skips PV nodes)."""
        if node.root or mn <= 1 or not node.npm:
            return None
        if node.in_check:
            return "in-check"
        if gives_check:
            return "gives-check"
        if quiet:
            return None
        if not is_cap:
            return "promotion"
        if node.skip_quiets:
            return "good-capture" if sc > 0 else "capture"
        if node.pv:
            return "pv-node"
        return None

    def _count(self, event: str) -> None:
        silent = self.silent
        silent[event] = silent.get(event, 0) + 1

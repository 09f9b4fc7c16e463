"""Stockfish's mechanisms: log-log LMR, shallow pruning by lmrDepth, move-count pruning, ProbCut.

Emulates the shape of Stockfish's ``search()`` in whole plies (``unit=1``):

* **LMR** from ``r = round(0.46 ln(d) ln(m))``, +1 at non-PV nodes, -1 for
  the TT move, captures, promotions, killers and the countermove; at d >= 2
  for m > 1 (m > 2 at the root), clamped so the move keeps >= 1 ply.  A
  reduced move that beats alpha gets ``act=LMR-RESEARCH`` and a zero-window
  re-search at full depth.
* **Shallow pruning** once a move has been searched (best > -mate), with
  ``lmrDepth = d - 1 - r``: FP-CAP, SEE-CAP for captures; HIST-PRUNE,
  FP-QUIET, SEE-QUIET for quiet moves (see :meth:`StockfishMechanisms.prune`).
* **Move-count pruning**: once m >= (3 + d^2)/2 + 1 ((3 + d^2) + 1 at PV
  nodes) later quiets are skipped without a MOVE line, as Stockfish's move
  picker never yields them (counted as ``silent["skip-quiets"]``).
* **ProbCut** (``act=PROBCUT``): at non-PV nodes with d >= 4, up to 3
  captures with SEE >= (beta + 200) - eval are searched at d - 3 with a zero
  window at beta + 200; a success cuts the node before its move loop.
* **NMP**: R = 3 + d/3 + min(3, (eval - beta)/200) plies.

The formulas are simplified re-implementations with this engine's
evaluation and tables, not Stockfish's.
"""
from __future__ import annotations

import math
from typing import Optional

import chess

from typhoon_py.evaluation import SEE_VALUE
from typhoon_py.mechanisms.base import SKIP, Mechanisms, Node
from typhoon_py.profiles import ONE_PLY
from typhoon_py.scores import MATE_BOUND, ORDER_COUNTER

#: HIST-PRUNE: quiets with history below ``-HIST_PRUNE_SCALE * d`` (plies).
HIST_PRUNE_SCALE = 24
#: ProbCut: the raised beta's margin (cp), the depth it saves (plies) and how many captures it tries.
PROBCUT_MARGIN = 200
PROBCUT_DEPTH = 3
PROBCUT_TRIES = 3

_LOG = [0.0] + [math.log(i) for i in range(1, 256)]


def lmr_plies(depth_plies: int, move_number: int) -> int:
    """Stockfish-like ``log(d) log(m)`` reduction in whole plies (before adjustments)."""
    return int(0.5 + 0.46 * _LOG[min(depth_plies, 255)] * _LOG[min(move_number, 255)])


class StockfishMechanisms(Mechanisms):
    __slots__ = ("make", "unmake", "move_text", "pfx", "tracing")

    def __init__(self, searcher) -> None:
        super().__init__(searcher)
        self.make = searcher.make
        self.unmake = searcher.unmake
        self.move_text = searcher.move_text
        self.pfx = searcher.pfx
        self.tracing = searcher.out is not None

    def null_reduction(self, node: Node) -> int:
        return (3 + node.dp // 3 + min(3, (node.ev - node.beta) // 200)) * ONE_PLY

    def probcut(self, node: Node, moves: list) -> Optional[int]:
        beta = node.beta
        if (node.pv or node.in_check or node.root or node.depth < 4 * ONE_PLY
                or not -MATE_BOUND < beta < MATE_BOUND):
            return None
        b = self.board
        rbeta = beta + PROBCUT_MARGIN
        ev = node.ev
        ply = node.ply
        nd = node.depth - PROBCUT_DEPTH * ONE_PLY
        tried = 0
        for m in moves:
            victim = b.piece_type_at(m.to_square)
            if not victim:
                continue
            if SEE_VALUE[victim] + ev < rbeta or self.see(m) < rbeta - ev:
                continue
            tried += 1
            path = node.sep + self.move_text(m) if self.tracing else ""
            self.decide("PROBCUT", path, ply + 1, tried, node.depth, nd, 0, node.alpha, beta, node.nt)
            self.pfx[ply + 1] = path
            self.make(m)
            try:
                s = self.child(rbeta - 1, rbeta, nd, ply, False, not node.cut, False)
            finally:
                self.unmake()
            if s >= rbeta:
                return s
            if tried >= PROBCUT_TRIES:
                break
        return None

    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        if node.best <= -MATE_BOUND:
            return None  # nothing searched yet (or only mated lines): search on
        if quiet and node.skip_quiets:
            silent = self.silent
            silent["skip-quiets"] = silent.get("skip-quiets", 0) + 1
            return SKIP
        dp = node.dp
        lmr_depth = max(0, dp - 1 - lmr_plies(dp, mn))
        if quiet and mn >= (3 + dp * dp) // (1 if node.pv else 2) + 1:
            node.skip_quiets = True  # move-count pruning: this one is still considered
        if is_cap and not move.promotion:
            return self._prune_capture(node, move, sc, lmr_depth)
        if quiet:
            return self._prune_quiet(node, move, sc, lmr_depth)
        return None

    def _prune_capture(self, node: Node, move: chess.Move, sc: int, lmr_depth: int) -> Optional[str]:
        """FP-CAP: the capture cannot lift eval to alpha; SEE-CAP: it loses too much material."""
        victim = self.board.piece_type_at(move.to_square)
        value = SEE_VALUE[victim] if victim else SEE_VALUE[chess.PAWN]  # en passant
        if (lmr_depth < 7 and node.ev + 200 + 200 * lmr_depth + value <= node.alpha
                and not self.board.gives_check(move)):
            return "FP-CAP"
        if sc < 0 and self.see(move) < -180 * node.dp:
            return "SEE-CAP"
        return None

    def _prune_quiet(self, node: Node, move: chess.Move, sc: int, lmr_depth: int) -> Optional[str]:
        """HIST-PRUNE: bad history; FP-QUIET: eval far below alpha; SEE-QUIET: moves onto a lost square."""
        b = self.board
        to = move.to_square
        h = self.history[node.hbase + move.from_square * 64 + to]
        if sc < ORDER_COUNTER and lmr_depth < 4 and h < -HIST_PRUNE_SCALE * node.dp:
            return "HIST-PRUNE"
        if lmr_depth < 7 and node.ev + 100 + 150 * lmr_depth <= node.alpha and not b.gives_check(move):
            return "FP-QUIET"
        if b.attackers_mask(not b.turn, to) and self.see(move) < -25 * lmr_depth * lmr_depth - 1:
            return "SEE-QUIET"
        return None

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        if node.depth < 2 * ONE_PLY or mn <= 1 + node.root:
            return 0
        dp = node.dp
        r = lmr_plies(dp, mn) + (0 if node.pv else 1) - (1 if is_cap or sc >= ORDER_COUNTER else 0)
        r = min(r, dp - 2)
        return r * ONE_PLY if r > 0 else 0

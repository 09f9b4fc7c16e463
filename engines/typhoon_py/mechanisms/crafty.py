"""Crafty's mechanisms: material-only futility pruning, move-count LMP, log-log LMR.

Emulates Crafty's ``Search()`` in whole plies (``unit=1``, SAN paths):

* **FP-QUIET**: a quiet, non-checking move (m > 1) at d < 7 when the side
  to move's *material* (Crafty prunes on material, not the full evaluation)
  plus ``FP_MARGIN[d]`` (25, 50, 100, 125, 150, 200 cp) cannot reach alpha.
* **LMP**: a quiet, non-checking move at d < 16 with m > 6 + (d + 0.5)^1.9.
  It skips that move only (``continue``, as real Crafty: its ``break`` leaves
  a ``do {} while (0)``); ``--prune-scope node`` abandons the node instead.
* **LMR**: m > 6, d >= 2, not a good capture, outside check, not at the root:
  ``int(ln(1.8 d) ln(m) / 2.6)`` plies, leaving at least one ply; a reduced
  move that beats alpha gets ``act=LMR-RESEARCH`` and a re-search at full depth.

Calibration (issue 14): the margins, the LMP base and the LMR start and
divisor are fitted so that the 20 positions of ``fixtures/positions20.epd``
at depth 6 give real Crafty 25.2's shares at depth 6 (FP-QUIET 48.9%, LMP
16.0%, LMR 2.4% at 1.3 plies; ``benchmarks/bench_fidelity.py``): measured
FP-QUIET 49.9%, LMP 17.1%, LMR 3.7% at 1.35 plies, EBF 3.87 (real 3.59).
* **NMP**: R = 3 + d/6 plies.

The formulas are simplified re-implementations, not Crafty's own code.
"""
from __future__ import annotations

import math
from typing import Optional

import chess

from typhoon_py.mechanisms.base import Mechanisms, Node
from typhoon_py.profiles import ONE_PLY

#: LMP move-count limits ``LMP_BASE + (d + 0.5) ** 1.9`` for d < 16 plies.
LMP_DEPTH = 16
LMP_BASE = 6
LMP_LIMIT = [LMP_BASE + int((d + 0.5) ** 1.9) for d in range(LMP_DEPTH)]
#: Futility margins (centipawns) by remaining depth in plies, d < 7.
FP_MARGIN = (0, 25, 50, 100, 125, 150, 200)
FP_DEPTH = len(FP_MARGIN)
#: LMR: moves after this place (1-based) may be reduced, by ``ln(1.8 d) ln(m) / LMR_DIVISOR`` plies.
LMR_MIN_MN = 6
LMR_DIVISOR = 2.6


def lmr_plies(depth_plies: int, move_number: int) -> int:
    """Crafty's LMR table: ``log(1.8 d) log(m) / LMR_DIVISOR`` plies, leaving at least one ply."""
    r = int(math.log(1.8 * depth_plies) * math.log(move_number) / LMR_DIVISOR)
    return max(0, min(r, depth_plies - 2))


class CraftyMechanisms(Mechanisms):
    __slots__ = ()

    def null_reduction(self, node: Node) -> int:
        return (3 + node.dp // 6) * ONE_PLY

    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        if not quiet:
            return None
        b = self.board
        dp = node.dp
        if dp < FP_DEPTH:
            material = self.searcher.mat if b.turn else -self.searcher.mat
            if material + FP_MARGIN[dp] <= node.alpha and not b.gives_check(move):
                return "FP-QUIET"
        if dp < LMP_DEPTH and mn > LMP_LIMIT[dp] and not b.gives_check(move):
            return "LMP"
        return None

    def prune_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                        quiet: bool, gives_check: bool) -> Optional[str]:
        dp = node.dp
        if mn <= 1 or node.root:
            return None
        fp = dp < FP_DEPTH and (self.searcher.mat if node.hbase == 0 else -self.searcher.mat) \
            + FP_MARGIN[dp] <= node.alpha
        if not (fp or (dp < LMP_DEPTH and mn > LMP_LIMIT[dp])):
            return None
        if node.in_check:
            return "in-check"
        if not quiet:
            return "good-capture" if is_cap and sc > 0 else ("promotion" if move.promotion else "capture")
        return "gives-check" if gives_check else None

    def reduce_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                         quiet: bool, gives_check: bool) -> Optional[str]:
        if node.depth < 2 * ONE_PLY or mn <= LMR_MIN_MN:
            return None
        if node.root:
            return "root"
        if node.in_check:
            return "in-check"
        return "good-capture" if is_cap and sc > 0 else None

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        if (node.depth < 2 * ONE_PLY or mn <= LMR_MIN_MN or (is_cap and sc > 0) or node.in_check
                or node.root):
            return 0
        return lmr_plies(node.dp, mn) * ONE_PLY

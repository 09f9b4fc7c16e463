"""typhoon's mechanisms: leftover-move LMP and fractional LMR, silent re-search, null-move bailout.

Emulates the typhoon C engine's search as its traces show it (depths in
1/64-ply ticks, ``unit=64``):

* Only *leftover* moves are pruned or reduced: not the TT move, not a good
  capture (SEE >= 0), not a killer or the countermove, not a promotion.
* **LMP** (``act=LMP``, a ``continue``): a leftover, non-checking move at
  d <= 6 plies whose place m exceeds ``LMP_LIMIT[d]`` (+2 at PV nodes).
* **LMR** (``act=LMR``): leftovers with m > 2 at d >= 3 plies, outside check:
  one ply plus a quarter ply for every 5 later moves, at most 1.75 plies.  A
  reduced move that beats alpha is re-searched at full depth *silently*: the
  typhoon dialect has no act for it, so the child's RESULT lines just appear
  again.
* **NMP**: R = 2 plies, 3 plies when d > 6.
* **NULLBAILOUT** (Romstad's bailout): at a node reached by a reduced move,
  a null-move probe that fails low by more than 150 cp shows a threat; the
  node writes ``act=NULLBAILOUT`` and fails low at once, so the parent's
  reduced search beats alpha and the parent re-searches the move.

The formulas are simplified re-implementations, not typhoon's own code.
"""
from __future__ import annotations

from typing import Optional

import chess

from typhoon_py.mechanisms.base import Mechanisms, Node
from typhoon_py.profiles import ONE_PLY, QUARTER_PLY
from typhoon_py.scores import ORDER_COUNTER

#: LMP: a leftover move beyond this place is skipped, by remaining depth in plies (d <= 6).
LMP_LIMIT = (0, 4, 6, 9, 13, 18, 24)
LMP_DEPTH = len(LMP_LIMIT)
#: NULLBAILOUT: a null-move probe this far below beta (cp) is a threat.
BAILOUT_MARGIN = 150


def _leftover(move: chess.Move, sc: int, is_cap: bool) -> bool:
    """Not the TT move, a good capture, a killer, the countermove or a promotion."""
    return sc < ORDER_COUNTER and not (is_cap and sc > 0) and not move.promotion


class TyphoonMechanisms(Mechanisms):
    __slots__ = ()
    RESEARCH_ACT = None  # typhoon re-searches a reduced move without a MOVE line

    def null_reduction(self, node: Node) -> int:
        return 3 * ONE_PLY if node.dp > 6 else 2 * ONE_PLY

    def after_null_fail_low(self, node: Node, score: int, path: str) -> Optional[int]:
        if node.reduced and score < node.beta - BAILOUT_MARGIN:
            self.decide("NULLBAILOUT", path, node.ply + 1, 0, node.depth, None, 0, node.alpha,
                        node.beta, node.nt)
            return node.alpha
        return None

    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        dp = node.dp
        if (dp < LMP_DEPTH and mn > LMP_LIMIT[dp] + (2 if node.pv else 0)
                and _leftover(move, sc, is_cap) and not self.board.gives_check(move)):
            return "LMP"
        return None

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        if mn > 2 and node.depth >= 3 * ONE_PLY and not node.in_check and _leftover(move, sc, is_cap):
            return ONE_PLY + QUARTER_PLY * min(3, (mn - 3) // 5)
        return 0

"""typhoon's mechanisms: leftover-move LMP and fractional LMR, silent re-search, null-move bailout.

Emulates the typhoon C engine's search as its traces show it (depths in
1/64-ply ticks, ``unit=64``):

* Only *leftover* moves are pruned or reduced: not the TT move, not a good
  capture (SEE >= 0), not a killer or the countermove, not a promotion.
* **LMP** (``act=LMP``, a ``continue``): a leftover, non-checking move at
  d <= 6 plies whose place m exceeds ``LMP_LIMIT[d]`` (+2 at PV nodes).
* **LMR** (``act=LMR``): leftovers at d >= 3 plies, outside check, from the
  place ``LMR_FIRST[d]`` on (12 at d = 3, 7 at d = 4, 4 deeper): one ply plus
  a quarter ply for every ``LMR_STEP`` later places, at most 1.75 plies.  A
  reduced move that beats alpha is re-searched at full depth *silently*: the
  typhoon dialect has no act for it, so the child's RESULT lines just appear
  again.
* **NMP**: at non-PV nodes of d >= 1 ply (static eval >= beta, and at one-ply
  nodes >= beta + ``NULL_D1_MARGIN``), R = 2 plies, 3 plies when d > 6.
* **NULLBAILOUT** (Romstad's bailout): at a node reached by a reduced move,
  a null-move probe that fails low by more than 150 cp shows a threat; the
  node writes ``act=NULLBAILOUT`` and fails low at once, so the parent's
  reduced search beats alpha and the parent re-searches the move.

Calibration (issue 14): the constants are set so that the 20 positions of
``fixtures/positions20.epd`` at depth 6 give the user's typhoon figures
(DEEPER_PRUNING.md): LMP 44-59% of MOVE records, LMR 2-3% at 1.2-1.3 plies,
NMP about 5% (``benchmarks/bench_fidelity.py`` measures it).  They are fitted
shares, not typhoon's own tables (which are gated on measured fail-high
rates, not move counts).

The formulas are simplified re-implementations, not typhoon's own code.
"""
from __future__ import annotations

from typing import Optional

import chess

from typhoon_py.mechanisms.base import Mechanisms, Node
from typhoon_py.profiles import ONE_PLY, QUARTER_PLY
from typhoon_py.scores import ORDER_COUNTER, ORDER_KILLER, ORDER_TT

#: LMP: a leftover move beyond this place is skipped, by remaining depth in plies (d <= 6).
LMP_LIMIT = (0, 12, 18, 24, 30, 36, 42)
LMP_DEPTH = len(LMP_LIMIT)
#: LMR: the first reduced place m by node depth in plies (d < 3: none), the last entry for deeper
#: nodes; a quarter ply more for every LMR_STEP places after it, at most 1.75 plies.
LMR_FIRST = (0, 0, 0, 12, 7, 4)
LMR_STEP = 7
#: NMP at one-ply nodes needs the static evaluation this far above beta (cp).
NULL_D1_MARGIN = 40
#: NULLBAILOUT: a null-move probe this far below beta (cp) is a threat.
BAILOUT_MARGIN = 150
_NEVER = 1 << 30


def lmr_first(dp: int) -> int:
    """The first place ``m`` LMR reduces at a node of ``dp`` plies (a huge number: none)."""
    if dp < 3:
        return _NEVER
    return LMR_FIRST[dp] if dp < len(LMR_FIRST) else LMR_FIRST[-1]


def _leftover(move: chess.Move, sc: int, is_cap: bool) -> bool:
    """Not the TT move, a good capture, a killer, the countermove or a promotion."""
    return sc < ORDER_COUNTER and not (is_cap and sc > 0) and not move.promotion


def not_leftover_reason(move: chess.Move, sc: int, is_cap: bool) -> Optional[str]:
    """The ``why=`` reason a move is not a leftover (``None`` for a leftover): ``tt-move``,
    ``good-capture`` (a capture ordered among the good ones: SEE >= 0), ``promotion``,
    ``killer``, ``countermove``, from the move-ordering band of ``sc``."""
    if sc >= ORDER_TT:
        return "tt-move"
    if is_cap and sc > 0:
        return "good-capture"
    if move.promotion:
        return "promotion"
    if sc >= ORDER_KILLER - 1:
        return "killer"
    if sc >= ORDER_COUNTER:
        return "countermove"
    return None


class TyphoonMechanisms(Mechanisms):
    __slots__ = ()
    RESEARCH_ACT = None  # typhoon re-searches a reduced move without a MOVE line

    NULL_MIN_DEPTH = ONE_PLY  # typhoon probes down to one-ply nodes (into quiescence)

    def null_ok(self, node: Node) -> bool:
        return node.depth >= 2 * ONE_PLY or node.ev >= node.beta + NULL_D1_MARGIN

    def null_reduction(self, node: Node) -> int:
        return 3 * ONE_PLY if node.dp > 6 else 2 * ONE_PLY

    def after_null_fail_low(self, node: Node, score: int, path: str) -> Optional[int]:
        if node.reduced and score < node.beta - BAILOUT_MARGIN:
            self.decide("NULLBAILOUT", path, node.ply + 1, 0, node.depth, None, 0, node.alpha,
                        node.beta, node.nt, "")
            return node.alpha
        return None

    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        dp = node.dp
        if (dp < LMP_DEPTH and mn > LMP_LIMIT[dp] + (2 if node.pv else 0)
                and _leftover(move, sc, is_cap) and not self.board.gives_check(move)):
            return "LMP"
        return None

    def prune_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                        quiet: bool, gives_check: bool) -> Optional[str]:
        dp = node.dp
        if node.root or mn <= 1 or not (dp < LMP_DEPTH and mn > LMP_LIMIT[dp]):
            return None
        if node.in_check:
            return "in-check"
        return (not_leftover_reason(move, sc, is_cap) or ("gives-check" if gives_check else None)
                or ("pv-node" if node.pv else None))

    def reduce_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                         quiet: bool, gives_check: bool) -> Optional[str]:
        if mn < lmr_first(node.dp):
            return None
        if node.in_check:
            return "in-check"
        return not_leftover_reason(move, sc, is_cap) or ("gives-check" if gives_check else None)

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        first = lmr_first(node.dp)
        if mn >= first and not node.in_check and _leftover(move, sc, is_cap):
            return ONE_PLY + QUARTER_PLY * min(3, (mn - first) // LMR_STEP)
        return 0

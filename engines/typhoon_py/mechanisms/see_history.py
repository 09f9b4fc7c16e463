"""``--lmr-policy see-history``: the forum post's SEE/history reduction rule, on top of any profile.

It replaces the profile's reduction and re-search rules (``reduce`` and
``search_move``); the profile's pruning, null move and ProbCut stay.

* Never the first move, never the root; at d >= 2 plies, reduce by one ply
  a capture with SEE < 0, or a quiet move with history < 0, or with
  history = 0 and SEE < 0.
* Moves after the first at PV nodes get a zero window first (the full
  window at the reduced depth if the score lands inside it).  A reduced move
  at a PV node whose search reaches beta is verified at full depth with the
  full window, logged as ``act=LMR-RESEARCH``.  Reduced moves at non-PV
  nodes are not re-searched.
"""
from __future__ import annotations

import chess

from typhoon_py.mechanisms.base import Mechanisms, Node
from typhoon_py.profiles import ONE_PLY


class SeeHistoryLmr(Mechanisms):
    """Put before a profile's mechanisms class (``make_mechanisms`` makes the combined class)."""

    __slots__ = ()

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        if mn <= 1 or node.depth < 2 * ONE_PLY or node.root:
            return 0
        if is_cap:
            bad = sc < 0  # ordered among the bad captures: SEE < 0
        elif quiet:
            h = self.history[node.hbase + move.from_square * 64 + move.to_square]
            bad = h < 0 or (h == 0 and self.searcher.see_after(move) < 0)
        else:
            bad = False
        return ONE_PLY if bad else 0

    def search_move(self, node: Node, path: str, mn: int, nd: int, red: int) -> int:
        child = self.child
        alpha, beta, ply, pv = node.alpha, node.beta, node.ply, node.pv
        s = child(alpha, alpha + 1, nd - red, ply, False, True, red > 0)
        if pv and alpha < s < beta:
            s = child(alpha, beta, nd - red, ply, True, False, red > 0)
        if red and pv and s >= beta:
            self.decide("LMR-RESEARCH", path, ply + 1, mn, node.depth, nd, 0, alpha, beta, node.nt)
            s = child(alpha, beta, nd, ply, True, False, False)
        return s

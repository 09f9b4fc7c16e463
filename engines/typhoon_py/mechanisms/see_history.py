"""``--lmr-policy see-history``: the forum post's SEE/history reduction rule, on top of any profile.

The rule and the re-search scheme are those of ``lmr_forum_post.txt`` (in
the user's shared context), line for line.  It replaces the profile's
reduction and re-search rules (``reduce`` and ``search_move``); the
profile's pruning, null move, ProbCut and the generic check extension stay.

* ``is_first`` is the move's place in the node's order (``mn == 1``): never
  reduced, at any node, the root included (the post has no root exception).
* ``is_capture`` is the post's ``move_is_cop``: a capture *or a promotion*.
  A bad capture (SEE < 0) is reduced.
* A quiet move is bad when its history is < 0, or its history is 0 and its
  SEE < 0; a bad quiet move is reduced.
* The reduction is one ply (the post's ``new_depth - reduce`` with
  ``reduce`` a boolean), at nodes of at least :data:`MIN_DEPTH` plies (the
  post's unquantified "min depth condition").
* Search: at a non-PV node, or for the first move, one search with the node's
  window at the (possibly reduced) depth.  At a PV node, a later move gets a
  zero-window search at the reduced depth first and, when it beats alpha, the
  full-window search at the same reduced depth (also when the zero window
  failed high).  Then, when a *reduced* move at a PV node scores >= beta, the
  verification search at full depth with the full window (``act=LMR-RESEARCH``).
  Reduced moves at non-PV nodes are never re-searched.
* Node types (``nt=``) as in the profiles' own PVS: a PV node's later moves
  are expected CUT nodes, a CUT node's children ALL and an ALL node's CUT;
  a full-window (re-)search is a PV node.

A checking move the generic search extends (``act=EXT``) is not asked the
rule (an extension is never combined with a reduction in this engine).
The variant this replaced (root never reduced, promotions never counted as
captures, no full-window search after a zero-window fail-high, every
zero-window child marked CUT) departed from the post without a reason, so it
is not kept.
"""
from __future__ import annotations

from typing import Optional

import chess

from typhoon_py.mechanisms.base import Mechanisms, Node
from typhoon_py.profiles import ONE_PLY

#: The post's "min depth condition": a move is reduced only at nodes of at least this many
#: plies, so the reduced search (depth - 2 plies) never goes below quiescence.
MIN_DEPTH = 2


def is_bad(move: chess.Move, is_cop: bool, see: int, hist: int) -> bool:
    """The post's reduction test for a move other than the first: a capture or promotion
    (``move_is_cop``) with SEE < 0, or a quiet move with history < 0, or history 0 and SEE < 0."""
    if is_cop:
        return see < 0
    return hist < 0 or (hist == 0 and see < 0)


class SeeHistoryLmr(Mechanisms):
    """Put before a profile's mechanisms class (``make_mechanisms`` makes the combined class)."""

    __slots__ = ()

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        if mn <= 1 or node.depth < MIN_DEPTH * ONE_PLY:
            return 0
        is_cop = not quiet  # a capture or a promotion
        h = self.history[node.hbase + move.from_square * 64 + move.to_square]
        if not is_cop and h < 0:
            return ONE_PLY  # bad history: no SEE needed
        if not is_cop and h > 0:
            return 0
        return ONE_PLY if self.searcher.see_after(move) < 0 else 0

    def reduce_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                         quiet: bool, gives_check: bool) -> Optional[str]:
        if mn <= 1 or node.depth < MIN_DEPTH * ONE_PLY:
            return None
        if quiet:
            h = self.history[node.hbase + move.from_square * 64 + move.to_square]
            return "good-history" if h > 0 else "good-see"  # history 0 and SEE >= 0
        return "good-capture" if is_cap else "promotion"  # SEE >= 0

    def search_move(self, node: Node, path: str, mn: int, nd: int, red: int) -> int:
        child = self.child
        alpha, beta, ply, pv = node.alpha, node.beta, node.ply, node.pv
        reduced = red > 0
        if not pv:
            # The node's own (zero) window; its children are expected of the other type.
            s = child(alpha, beta, nd - red, ply, False, not node.cut, reduced)
        else:
            s = child(alpha, alpha + 1, nd - red, ply, False, True, reduced)
            if s > alpha:
                s = child(alpha, beta, nd - red, ply, True, False, reduced)
        if reduced and pv and s >= beta:
            self.decide("LMR-RESEARCH", path, ply + 1, mn, node.depth, nd, 0, alpha, beta, node.nt)
            s = child(alpha, beta, nd, ply, True, False, False)
        return s

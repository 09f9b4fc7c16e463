"""Score constants and the move-ordering score bands, shared by the search and the mechanisms.

Scores are centipawns from the side to move's view; a mate ``n`` plies from
the root scores ``MATE - n``.  The ordering bands are the scores
``Searcher._order`` gives moves (highest searched first); the mechanisms read
them to tell a killer or a good capture from a leftover move.
"""
from __future__ import annotations

INF = 32000
MATE = 31000
#: Scores beyond +-MATE_BOUND are mate scores.
MATE_BOUND = MATE - 1000
#: The deepest ply the search goes before it returns the static evaluation.
MAX_PLY = 64

#: The TT move.
ORDER_TT = 1 << 30
#: Good captures (``ORDER_CAPTURE + 16 * victim - attacker``) and promotions.
ORDER_CAPTURE = 1 << 24
#: The first killer; the second is ``ORDER_KILLER - 1``.
ORDER_KILLER = 1 << 22
#: The countermove.  Every score below it is a quiet move's history (``|h| <= HISTORY_MAX``)
#: or a bad capture's (``-ORDER_CAPTURE + victim - attacker``): a "leftover" move.
ORDER_COUNTER = 1 << 21
#: History scores stay within +-HISTORY_MAX.
HISTORY_MAX = 1 << 20

"""The hooks through which the generic search asks a profile for its mechanisms, and their defaults.

``typhoon_py.search`` is one PVS alpha-beta search for every profile: move
ordering, the transposition table, repetition draws, the check extension,
quiescence and the null-move probe's common conditions are its own.  Where
the emulated engines differ it asks its :class:`Mechanisms` object:

============================  ===================================================
``null_reduction(node)``      R (ticks) of the null-move probe
``after_null_fail_low``       what a failed null-move probe does (``None``: go on)
``probcut(node, moves)``      a shallow capture search that may cut the node
``prune(node, move, ...)``    skip a move unsearched: ``None``, an act, or ``SKIP``
``reduce(node, move, ...)``   the move's reduction in ticks (0: ``FULL``)
``search_move(node, ...)``    the zero-window search and re-searches of a move
============================  ===================================================

The defaults here are a plain PVS search: no ProbCut, no pruning, no
reductions, and a reduced move that beats alpha is searched again at full
depth with an ``LMR-RESEARCH`` line.  A mechanisms object is made per search
(:func:`typhoon_py.mechanisms.make_mechanisms`) and holds the searcher it
serves, whose board, tables and ``decide``/``make``/``child`` it uses.
"""
from __future__ import annotations

from typing import Optional

import chess

from typhoon_py.profiles import ONE_PLY

#: ``prune`` returns this to skip a move without a MOVE line (counted in ``silent``).
SKIP = ""


class Node:
    """A non-quiescence node as the hooks see it.

    ``depth`` is in ticks (``dp`` in whole plies), ``ev`` the static
    evaluation (``-INF`` in check), ``nt`` the expected node type written in
    the trace, ``reduced`` whether a reduced move led here.
    ``alpha`` and ``best`` follow the move loop (the current window's lower
    bound and the best score so far); ``skip_quiets`` is for a prune rule
    that drops all later quiet moves.  ``hbase`` indexes the side to move's
    half of the history table; ``sep`` is the node's path plus ``/`` (empty at
    the root).
    """

    __slots__ = ("alpha", "beta", "depth", "dp", "ply", "pv", "cut", "reduced", "in_check", "root",
                 "may_prune", "ev", "nt", "sep", "hbase", "best", "skip_quiets", "improving", "npm",
                 "excluded", "tt", "sing_ext", "tt_capture", "alpha_seen")

    def __init__(self, alpha: int, beta: int, depth: int, ply: int, pv: bool, cut: bool,
                 reduced: bool, in_check: bool, ev: int, sep: str, hbase: int, best: int) -> None:
        self.alpha = alpha
        self.beta = beta
        self.depth = depth
        self.dp = depth // ONE_PLY
        self.ply = ply
        self.pv = pv
        self.cut = cut
        self.reduced = reduced
        self.in_check = in_check
        self.root = ply == 0
        self.may_prune = ply != 0 and not in_check  # the root and check evasions are never pruned
        self.ev = ev
        self.nt = "PV" if pv else ("CUT" if cut else "ALL")
        self.sep = sep
        self.hbase = hbase
        self.best = best
        self.skip_quiets = False
        #: The static evaluation rose since the side to move's previous node (two plies up,
        #: else four; ``True`` without one; ``False`` in check): Stockfish's ``improving``.
        self.improving = False
        #: The side to move has material other than pawns and king.
        self.npm = True
        #: The move a verification visit leaves out (a singular-extension search), else ``None``.
        self.excluded: Optional[chess.Move] = None
        #: The TT entry ``(depth ticks, score, bound, move)`` found for the node, else ``None``.
        self.tt: Optional[tuple] = None
        #: The extension (ticks, may be negative) the profile's ``singular`` gave the TT move.
        self.sing_ext = 0
        #: The TT move is a capture.
        self.tt_capture = False
        #: For a profile that acts when alpha rises in the move loop: the alpha it last saw
        #: (the node's entry alpha until it updates it).
        self.alpha_seen = alpha


class Mechanisms:
    """A plain PVS search's answers; each profile's class overrides what its engine does."""

    __slots__ = ("searcher", "board", "history", "silent", "see", "decide", "child")

    #: The act written before a reduced move's full-depth re-search (``None``: re-search silently).
    RESEARCH_ACT: Optional[str] = "LMR-RESEARCH"

    def __init__(self, searcher) -> None:
        self.searcher = searcher
        self.board: chess.Board = searcher.board
        self.history: list = searcher.history
        self.silent: dict = searcher.silent
        self.see = searcher.see
        self.decide = searcher.decide
        self.child = searcher.child

    #: The null-move probe is tried at nodes of at least this depth (ticks) ...
    NULL_MIN_DEPTH = 2 * ONE_PLY
    #: ... whose static evaluation is at least beta minus this margin (cp).
    NULL_MARGIN = 0
    #: Quiet moves giving a direct check get this on top of their history in move ordering.
    CHECK_BONUS = 0
    #: Quiescence with TT cutoffs, futility, move-count and SEE pruning (``Searcher.qsearch``).
    QS_PRUNED = False
    #: The pruned quiescence's futility margin over stand pat (cp) and its move-count limit.
    QS_FUTILITY_MARGIN = 0
    QS_MOVE_LIMIT = 0

    # ---------------------------------------------------------- the root
    def aspiration_delta(self, depth_plies: int, prev: int) -> Optional[int]:
        """The half-width (cp) of the root's first window at iteration ``depth_plies`` around
        the previous iteration's score ``prev``; ``None``: the full window (no aspiration)."""
        return None

    # ---------------------------------------------------------- before the move loop
    def node_cut(self, node: Node) -> Optional[int]:
        """A score the node returns before the null move (razoring, reverse futility), else
        ``None``.  Asked after the TT probe at every node."""
        return None

    def null_ok(self, node: Node) -> bool:
        """The profile's own conditions on the null-move probe, on top of the search's."""
        return True

    def iir(self, node: Node, tt_move: Optional[chess.Move]) -> int:
        """Internal iterative reduction: ticks the node loses before its move loop (0: none)."""
        return 0

    def singular(self, node: Node, tt_move: chess.Move, entry: tuple) -> tuple[int, Optional[int]]:
        """Before the move loop, for a node with a TT move (not the root, not a verification
        visit): ``(extension of the TT move in ticks, None)``, or ``(0, score)`` to return
        ``score`` at once (multi-cut).  A verification search is ``searcher.search(...,
        excluded=tt_move)`` at the node's own ply."""
        return 0, None

    def null_reduction(self, node: Node) -> int:
        """R of the null-move probe in ticks (the probe searches ``depth - ONE_PLY - R``)."""
        raise NotImplementedError

    def after_null_fail_low(self, node: Node, score: int, path: str) -> Optional[int]:
        """The null-move probe scored ``score`` < beta: a score for the node to return, or ``None``."""
        return None

    def probcut(self, node: Node, moves: list) -> Optional[int]:
        """A score that cuts the node before its move loop, or ``None``."""
        return None

    # ---------------------------------------------------------- per move
    def prune(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
              quiet: bool) -> Optional[str]:
        """Whether to skip ``move`` (1-based place ``mn``, ordering score ``sc``) unsearched:
        ``None`` searches it, an act string skips it with that MOVE line, ``SKIP`` skips it
        silently.  Asked only for moves after the first, at nodes other than the root that
        are not in check, with the move not yet made."""
        return None

    def extend(self, node: Node, move: chess.Move, mn: int, gives_check: bool) -> int:
        """The extension of ``move`` in ticks (> 0 writes ``act=EXT`` and skips ``reduce``;
        < 0 searches it shallower).  Asked with the move on the board.  Default: one ply for
        a check while ply < 2 x the iteration depth."""
        if gives_check and node.ply < 2 * self.searcher.root_depth:
            return ONE_PLY
        return 0

    def reduce(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
               quiet: bool) -> int:
        """The reduction of ``move`` in ticks (> 0 writes ``act=LMR``).  Asked with the move
        on the board, for every searched move the check extension did not extend."""
        return 0

    def exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool, quiet: bool,
                  gives_check: bool) -> Optional[str]:
        """The ``why=`` of a searched, unreduced move (``FULL`` or ``EXT``): the reason the
        profile's prune or reduce rule did not take it although the rule's depth and
        move-number conditions held (vocabulary in docs/TREEDUMP_FORMAT.md), else ``None``.
        Asked only when tracing, with the move on the board; the default is
        ``reduce_exemption``, then ``prune_exemption``."""
        return (self.reduce_exemption(node, move, mn, sc, is_cap, quiet, gives_check)
                or self.prune_exemption(node, move, mn, sc, is_cap, quiet, gives_check))

    def reduce_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                         quiet: bool, gives_check: bool) -> Optional[str]:
        """Why the reduce rule exempted this move (see ``exemption``); plain PVS: never."""
        return None

    def prune_exemption(self, node: Node, move: chess.Move, mn: int, sc: int, is_cap: bool,
                        quiet: bool, gives_check: bool) -> Optional[str]:
        """Why the prune rule exempted this move (see ``exemption``); plain PVS: never."""
        return None

    def search_move(self, node: Node, path: str, mn: int, nd: int, red: int) -> int:
        """Search the move on the board (``nd`` ticks, ``red`` of them reduced) and return its
        score for the node.  Asked for every move except a PV node's first, which the search
        gives the full window itself.

        PVS: a zero-window search at the reduced depth; a reduced move that beats alpha is
        searched again at full depth (after a ``RESEARCH_ACT`` line when there is one); at
        a PV node a score inside the window is searched again with the full window."""
        child = self.child
        alpha, beta, ply, pv = node.alpha, node.beta, node.ply, node.pv
        # At PV nodes the moves after the first are expected to fail high (CUT).
        child_cut = True if pv else not node.cut
        s = child(alpha, alpha + 1, nd - red, ply, False, child_cut, red > 0)
        if red and s > alpha:
            if self.RESEARCH_ACT is not None:
                self.decide(self.RESEARCH_ACT, path, ply + 1, mn, node.depth, nd, 0, alpha, beta, node.nt)
            # The same child searched again: the same expected type (it was labelled the opposite).
            s = child(alpha, alpha + 1, nd, ply, False, child_cut, False)
        if pv and alpha < s < beta:
            s = child(alpha, beta, nd, ply, True, False, False)
        return s

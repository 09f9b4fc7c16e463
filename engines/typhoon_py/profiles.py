"""Profiles: which engine's mechanisms to emulate and which TREEDUMP dialect to write.

The profiles *emulate* typhoon's, Stockfish's and Crafty's pruning and
reduction mechanisms in a small Python engine; they are not those engines.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import chess

#: Internal depth resolution: every profile searches in ticks of 1/64 ply.
ONE_PLY = 64
QUARTER_PLY = 16


class LmrPolicy(str, enum.Enum):
    PROFILE = "profile"          #: the profile's own reduction rule
    SEE_HISTORY = "see-history"  #: the forum post's SEE/history rule, any profile


class PruneScope(str, enum.Enum):
    """What an LMP/FP-QUIET/FP-CAP decision abandons, in any profile."""

    MOVE = "move"  #: an LMP/FP decision skips that move only (``continue``)
    NODE = "node"  #: it abandons the rest of the node's moves (``break``)


@dataclass(frozen=True)
class Profile:
    """A mechanism set plus its output dialect.

    ``unit`` is the dialect's depth ticks per ply; the engine's internal
    depth (ticks of 1/64 ply) is divided by ``ONE_PLY // unit`` on output.
    Moves are written in UCI notation, or as SAN when ``san``; ``upper_promotion``
    writes a UCI promotion piece in upper case (``e7e8Q``).  The mechanisms of
    each profile are in ``typhoon_py.mechanisms``.
    """

    name: str
    unit: int
    null_move: str
    san: bool = False
    upper_promotion: bool = False

    @property
    def divisor(self) -> int:
        return ONE_PLY // self.unit

    def move_text(self, board: chess.Board, move: chess.Move) -> str:
        """``move`` in this dialect's notation; ``board`` is the position before it."""
        if self.san:
            return board.san(move)
        text = move.uci()
        if self.upper_promotion and move.promotion:
            return text[:4] + text[4].upper()
        return text


PROFILES: dict[str, Profile] = {
    "typhoon": Profile("typhoon", 64, "(null)", upper_promotion=True),
    "stockfish": Profile("stockfish", 1, "0000"),
    "crafty": Profile("crafty", 1, "null", san=True),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None

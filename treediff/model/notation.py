"""Move notation as strings: null-move spellings, the UCI move and path shapes, the root's spellings.

Pure notation, no position: what a token or path looks like, not whether it
can be played.  Replaying moves on a board (SAN, legality) is the parser's
work (:mod:`treediff.parse.moves`).  Only :mod:`re` is imported: the SAN
worker process loads this module and starts faster without anything else.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

#: The null move in UCI, as every normalized path writes it.
NULL_UCI = "0000"

#: Every spelling of the null move that any engine (or user) writes.
NULL_SPELLINGS = frozenset({"0000", "(null)", "null", "--", "@@@@", "Z0"})

#: Null spellings read in every coordinate dialect's paths besides the dialect's own.
COMMON_NULL_SPELLINGS = frozenset({"(null)", "null", "--"})

#: One UCI-shaped move token; the promotion letter may be upper case (typhoon writes ``e7e8Q``).
UCI_MOVE_RE = re.compile(r"[a-h][1-8][a-h][1-8][qrbnQRBN]?\Z")

#: A path (already lower-cased, nulls as 0000) that is entirely UCI-shaped; ``""`` is the root.
UCI_PATH_PATTERN = r"^(?:(?:[a-h][1-8][a-h][1-8][qrbn]?|0000)(?:/(?:[a-h][1-8][a-h][1-8][qrbn]?|0000))*)?$"

#: How a RESULT line writes the root's path.
ROOT_PATH = "-"

#: :data:`UCI_PATH_PATTERN`, or the root written :data:`ROOT_PATH`.
UCI_OR_ROOT_PATTERN = "^(?:-|" + UCI_PATH_PATTERN.removeprefix("^").removesuffix("$") + ")$"

#: What a user may type for the root (e.g. ``diff --under -``).
TYPED_ROOTS = frozenset({"", ROOT_PATH, "/", "(root)"})


def coordinate_move(token: str) -> str | None:
    """``token`` as a UCI move if it is a null spelling (``0000``) or UCI-shaped (lower-cased); else None.

    Shape only: the move may still be illegal in its position.
    """
    if token in NULL_SPELLINGS:
        return NULL_UCI
    if UCI_MOVE_RE.match(token):
        return token.lower()
    return None


def looks_uci(move: str) -> bool:
    """A quick test that ``move`` starts like a UCI move (4 or 5 characters, a square first)."""
    return len(move) in (4, 5) and move[0] in "abcdefgh" and move[1] in "12345678"


def normalize_coord_paths(paths: "pl.Series", null_spellings: tuple[str, ...]) -> "pl.Series":
    """Lower-case coordinate paths and write null moves as ``0000``; the root ``-`` becomes ``""``.

    Only safe for paths whose elements are coordinate/UCI moves or nulls;
    callers check the result against :data:`~treediff.model.notation.UCI_PATH_PATTERN`.
    """
    out = paths.str.to_lowercase()
    for spelling in sorted(set(null_spellings) | COMMON_NULL_SPELLINGS, key=len, reverse=True):
        if spelling == NULL_UCI:
            continue
        escaped = re.escape(spelling.lower())
        # Applied twice because a match consumes the separator after it.
        for _ in range(2):
            out = out.str.replace_all(rf"(^|/){escaped}(/|$)", r"${1}0000${2}")
    return out.replace("-", "")

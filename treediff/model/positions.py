"""Positions: ids, phase labels from EPD files, and the material phase rule."""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import chess

from treediff.model.errors import InputError

PHASES = ("opening", "middlegame", "endgame")

#: Non-pawn material per piece type for the phase rule (pawns and kings count 0).
_PHASE_MATERIAL = {chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
ENDGAME_MAX_MATERIAL = 26
OPENING_MIN_MATERIAL = 56
#: Of the 16 back-rank squares, how many must still hold their initial piece for "opening".
OPENING_MIN_HOME_PIECES = 8
_INITIAL = chess.Board()


def fen_key(fen: str) -> str:
    """The first four FEN fields (placement, side, castling, en passant): what identifies a position."""
    return " ".join(fen.split()[:4])


def fen_hash_id(fen: str) -> str:
    """The position id used when a trace gives none: ``fen:`` + 10 hex digits of SHA-1 of :func:`fen_key`."""
    return "fen:" + hashlib.sha1(fen_key(fen).encode()).hexdigest()[:10]


@functools.lru_cache(maxsize=4096)  # a batch log repeats its positions once per engine and depth
def material_phase(fen: str) -> str | None:
    """Phase by the documented material rule (docs/TREEDUMP_FORMAT.md §5); None for an invalid FEN.

    Non-pawn material M counts N and B as 3, R as 5, Q as 9 for both sides
    together: endgame if M <= 26; opening if M >= 56 and at least 8 of the 16
    back-rank squares still hold their initial piece (move counters are not
    used: EPD lines and hand-typed FENs rarely carry real ones); middlegame
    otherwise.
    """
    try:
        board = chess.Board(fen)
    except ValueError:
        return None
    material = sum(
        value * len(board.pieces(piece_type, color))
        for piece_type, value in _PHASE_MATERIAL.items()
        for color in chess.COLORS
    )
    if material <= ENDGAME_MAX_MATERIAL:
        return "endgame"
    home = sum(
        1
        for square in chess.SquareSet(chess.BB_RANK_1 | chess.BB_RANK_8)
        if board.piece_at(square) is not None and board.piece_at(square) == _INITIAL.piece_at(square)
    )
    if material >= OPENING_MIN_MATERIAL and home >= OPENING_MIN_HOME_PIECES:
        return "opening"
    return "middlegame"


def normalize_phase(label: str | None) -> str | None:
    """``opening``/``middlegame``/``endgame`` (case-insensitive, ``middle`` and ``end`` accepted); None otherwise."""
    if not label:
        return None
    label = label.strip().lower()
    aliases = {"middle": "middlegame", "mid": "middlegame", "end": "endgame", "open": "opening"}
    label = aliases.get(label, label)
    return label if label in PHASES else None


_PHASE_IN_COMMENT = re.compile(r"phase\s*[=:]\s*(\w+)", re.IGNORECASE)


@dataclass
class EpdPosition:
    """One EPD line: its id, FEN and phase label (None if unlabelled)."""

    id: str | None
    fen: str
    phase: str | None
    line: int


@dataclass
class PositionBook:
    """Positions from an EPD file, looked up by id or by FEN."""

    positions: list[EpdPosition] = field(default_factory=list)
    by_id: dict[str, EpdPosition] = field(default_factory=dict)
    by_fen: dict[str, EpdPosition] = field(default_factory=dict)

    def lookup(self, position_id: str | None, fen: str | None) -> EpdPosition | None:
        if position_id and position_id in self.by_id:
            return self.by_id[position_id]
        if fen:
            return self.by_fen.get(fen_key(fen))
        return None


def epd_phase(operations: dict) -> str | None:
    """The phase label of an EPD line: an opcode ``phase``, or ``phase=...`` in a ``c0``..``c9`` comment."""
    direct = normalize_phase(str(operations.get("phase", "")) or None)
    if direct:
        return direct
    for key in (f"c{i}" for i in range(10)):
        value = operations.get(key)
        if isinstance(value, str):
            m = _PHASE_IN_COMMENT.search(value)
            if m and normalize_phase(m.group(1)):
                return normalize_phase(m.group(1))
            if normalize_phase(value):
                return normalize_phase(value)
    return None


def read_epd(path: str | Path) -> PositionBook:
    """Read an EPD file (python-chess parses every line); raises InputError on a bad line."""
    book = PositionBook()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such EPD file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text EPD file") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            board, ops = chess.Board.from_epd(line)
        except ValueError as exc:
            raise InputError(f"{path}:{lineno}: not a valid EPD line ({exc})") from None
        pos_id = ops.get("id")
        entry = EpdPosition(
            id=str(pos_id) if pos_id is not None else None,
            fen=board.fen(),
            phase=epd_phase(ops),
            line=lineno,
        )
        book.positions.append(entry)
        if entry.id:
            book.by_id[entry.id] = entry
        book.by_fen.setdefault(fen_key(entry.fen), entry)
    return book

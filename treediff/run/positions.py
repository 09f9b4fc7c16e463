"""Positions to search: FEN validation and EPD files.

Nothing the user typed is ever sent to an engine verbatim: every FEN is parsed
with python-chess, checked, and re-serialised with :meth:`chess.Board.fen`, so
a FEN cannot smuggle a newline or a second command into the protocol stream.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import chess

from treediff.model.errors import InputError
from treediff.model.positions import PHASES, epd_phase, fen_hash_id

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNQUOTED_PHASE = re.compile(r"\bphase\s+([A-Za-z]+)\s*;")


@dataclass(frozen=True)
class Position:
    """One position to search.

    ``fen`` is python-chess's normalised six-field FEN; ``phase`` is an explicit
    label (``opening``/``middlegame``/``endgame``) or None; ``line`` is the
    1-based EPD line it came from (0 for ``--fen``).
    """

    id: str
    fen: str
    phase: str | None = None
    line: int = 0


def _check_board(board: chess.Board, where: str) -> None:
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [flag.name.lower().replace("_", " ") for flag in chess.Status if flag and flag in status]
        raise InputError(f"{where}: not a legal position ({', '.join(problems) or 'invalid'})")
    if not any(board.generate_legal_moves()):
        raise InputError(f"{where}: the side to move has no legal move (mate or stalemate); nothing to search")


def validate_fen(fen: str, where: str = "--fen") -> str:
    """Return python-chess's normalised FEN of ``fen`` or raise :class:`InputError` with a one-line reason.

    Rejects control characters (a newline could carry a second engine
    command), anything python-chess cannot parse, illegal positions and
    positions with no legal move.
    """
    if _CONTROL.search(fen):
        raise InputError(f"{where}: FEN contains a newline or control character; refusing to send it to an engine")
    text = fen.strip()
    fields = text.split()
    if not 4 <= len(fields) <= 6:
        raise InputError(f"{where}: a FEN has 4 to 6 space-separated fields, got {len(fields)}: {text[:80]!r}")
    if len(fields) == 4:
        text += " 0 1"
    elif len(fields) == 5:
        text += " 1"
    try:
        board = chess.Board(text)
    except ValueError as exc:
        raise InputError(f"{where}: invalid FEN {text[:80]!r}: {exc}") from None
    _check_board(board, where)
    return board.fen()


def _phase_from_ops(ops: dict, where: str) -> str | None:
    phase = epd_phase(ops)
    if phase is None and ops.get("phase") not in (None, ""):
        raise InputError(f"{where}: unknown phase label {ops['phase']!r} (expected one of {', '.join(PHASES)})")
    return phase


def parse_epd_line(line: str, where: str, number: int = 0) -> Position | None:
    """One EPD line as a :class:`Position`; None for blank lines and ``#`` comments.

    Accepts four-field EPD (``hmvc``/``fmvn`` opcodes honoured) and full
    six-field FENs followed by opcodes.  The id comes from the ``id`` opcode
    (else ``fen:`` + a hash of the FEN); the phase from an opcode ``phase`` or a
    ``c0 "phase=opening"``-style comment.
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    if _CONTROL.search(text):
        raise InputError(f"{where}: contains a control character")
    # An unquoted phase operand would be read as a SAN move by python-chess.
    text = _UNQUOTED_PHASE.sub(r'phase "\1";', text)
    fields = text.split()
    candidates = [text]
    # A full FEN (halfmove and fullmove counters) before the opcodes.
    if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
        candidates.insert(0, " ".join(fields[:4] + fields[6:]))
    board: chess.Board | None = None
    ops: dict = {}
    error: Exception | None = None
    for candidate in candidates:
        try:
            board, ops = chess.Board.from_epd(candidate)
            break
        except ValueError as exc:
            error = error or exc
    if board is None:
        raise InputError(f"{where}: not a valid EPD record: {error}")
    if candidate is not text:
        board.halfmove_clock = int(fields[4])
        board.fullmove_number = max(1, int(fields[5]))
    _check_board(board, where)
    fen = board.fen()
    pos_id = ops.get("id")
    pos_id = str(pos_id) if pos_id not in (None, "") else fen_hash_id(fen)
    if _CONTROL.search(pos_id):
        raise InputError(f"{where}: id contains a control character")
    return Position(id=pos_id, fen=fen, phase=_phase_from_ops(ops, where), line=number)


def read_epd(path: str | Path, skip_bad: bool = False) -> tuple[list[Position], list[str]]:
    """All positions of an EPD file, in file order, and the problems skipped.

    Every line is validated before anything runs.  A bad line or a duplicate
    id is an :class:`InputError` naming the line, unless ``skip_bad`` (then it
    is skipped and reported in the returned list).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not an EPD file") from None
    positions: list[Position] = []
    skipped: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{p.name}:{number}"
        try:
            pos = parse_epd_line(line, where, number)
            if pos is None:
                continue
            if pos.id in seen:
                raise InputError(f"{where}: duplicate position id {pos.id!r} (first on line {seen[pos.id]})")
        except InputError as exc:
            if not skip_bad:
                raise
            skipped.append(str(exc))
            continue
        seen[pos.id] = number
        positions.append(pos)
    if not positions:
        raise InputError(f"{path}: no positions")
    return positions, skipped

"""Positions: the one :class:`Position` type, FEN validation, the one EPD reader, phase labels and rules.

* :class:`Position`: id, normalised FEN, phase label, EPD line.
* :func:`position_key`: the identity of a position (what pairs searches across inputs).
* :func:`validate_fen`: a user-typed FEN, checked and re-serialised.
* :func:`parse_epd_line` / :func:`read_positions`: the EPD reader (the
  runner's input); :func:`read_epd` gives the same positions as a
  :class:`PositionBook` looked up by id or FEN (the parser's ``--positions``).
* :func:`normalize_phase` / :func:`epd_phase`: the phase-label rules;
  :func:`material_phase`: the phase of an unlabelled position.

Nothing the user typed is ever sent to an engine verbatim: every FEN is parsed
with python-chess, checked, and re-serialised with :meth:`chess.Board.fen`, so
a FEN cannot smuggle a newline or a second command into the protocol stream;
control characters are refused outright.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from treediff.model.errors import InputError

if TYPE_CHECKING:
    import chess

# python-chess is imported where a FEN is read (about 30 ms): `treediff info small.log` and a parse of
# logs whose headers carry a phase label never read one (issue 17 item 4).

PHASES = ("opening", "middlegame", "endgame")

ENDGAME_MAX_MATERIAL = 26
OPENING_MIN_MATERIAL = 56
#: Of the 16 back-rank squares, how many must still hold their initial piece for "opening".
OPENING_MIN_HOME_PIECES = 8


@functools.cache
def _initial() -> "chess.Board":
    import chess

    return chess.Board()


def fen_key(fen: str) -> str:
    """The first four FEN fields (placement, side, castling, en passant): what identifies a position."""
    return " ".join(fen.split()[:4])


@functools.lru_cache(maxsize=1 << 14)
def position_key(fen: str | None) -> str | None:
    """What makes two searches searches of the same position: board, side to move, castling rights and
    en-passant square, as python-chess normalises them (:meth:`chess.Board.epd`).

    An en-passant square no pawn can take is dropped, castling rights the
    board cannot have are cleared; the halfmove and fullmove counters are
    ignored.  A FEN python-chess cannot read keeps its first four fields
    (:func:`fen_key`), so it still matches only itself; None for no FEN.
    """
    if fen is None or not str(fen).strip():
        return None
    text = str(fen).strip()
    plain = read_plain_fen(text)
    if plain is not None and plain.en_passant == "-":
        # What python-chess's epd() gives for it, without importing python-chess (~0.1 s of a small log's
        # report): the placement as written, the side, the castling rights the board can have (an en-passant
        # square would need the legal moves: python-chess keeps it only when a capture there is legal).
        return f"{plain.placement} {'w' if plain.white_to_move else 'b'} {plain.clean_castling()} -"
    import chess

    try:
        return chess.Board(text).epd()
    except ValueError:
        return fen_key(text)


def search_position_keys(fens: Iterable[object], ids: Iterable[object]) -> list[str]:
    """Each search's position identity: :func:`position_key` of its FEN, or ``id:`` + its id without one.

    ``fens`` and ``ids`` run in parallel, one per search (a searches table's
    ``fen`` and ``position`` columns); each distinct FEN is read once.
    """
    known: dict[str, str | None] = {}
    keys = []
    for fen, pid in zip(fens, ids):
        key = None
        if isinstance(fen, str):
            if fen not in known:
                known[fen] = position_key(fen)
            key = known[fen]
        keys.append(key if key is not None else f"id:{pid}")
    return keys


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

    A FEN of the plain form (:func:`read_plain_fen`: what engines write) is read here; any other goes to
    python-chess, whose reading decides what is invalid (importing it costs a small log's command ~0.1 s).
    """
    plain = read_plain_fen(fen)
    if plain is None:
        return _material_phase_by_python_chess(fen)
    ranks = plain.ranks
    material = sum(_PIECE_MATERIAL.get(c.lower(), 0) for rank in ranks for c in rank)
    if material <= ENDGAME_MAX_MATERIAL:
        return "endgame"
    home = sum(a == b for a, b in zip(ranks[0] + ranks[7], "rnbqkbnr" + "RNBQKBNR"))
    if material >= OPENING_MIN_MATERIAL and home >= OPENING_MIN_HOME_PIECES:
        return "opening"
    return "middlegame"


#: The FENs read without python-chess (:func:`read_plain_fen`): 8 ranks of pieces and digits, side, castling in
#: KQkq order, an en-passant square on rank 3 or 6, optionally both counters.  Engines write FENs of this form;
#: python-chess reads every one whose ranks fill 8 squares without two digits in a row.
PLAIN_FEN = re.compile(r"([1-8pnbrqkPNBRQK]{1,8}(?:/[1-8pnbrqkPNBRQK]{1,8}){7}) ([wb]) (-|(?=[KQkq])K?Q?k?q?) "
                       r"(-|[a-h][36])(?: \d+ \d+)?\Z")
_PIECE_MATERIAL = {"n": 3, "b": 3, "r": 5, "q": 9}


@dataclass(frozen=True)
class PlainFen:
    """A FEN of the :data:`PLAIN_FEN` form, read."""

    #: The placement field as written (canonical in a plain FEN: no two digits in a row, as python-chess
    #: writes it).
    placement: str
    #: The 8 ranks, rank 8 first, each spelled out square by square from the a-file (``.``: empty).
    ranks: tuple[str, ...]
    white_to_move: bool
    #: ``-`` or the letters of ``KQkq`` given (as written: rights the board cannot have included).
    castling: str
    #: ``-`` or the en-passant square (e.g. ``e3``), as written.
    en_passant: str

    def clean_castling(self) -> str:
        """The castling field of the rights the board can have (king on e1/e8, the rook on its corner), in KQkq
        order, ``-`` for none: python-chess's ``clean_castling_rights`` for a standard board."""
        white, black = self.ranks[7], self.ranks[0]
        rights = [flag for flag, rank, king, rook, corner in (("K", white, "K", "R", 7), ("Q", white, "K", "R", 0),
                                                              ("k", black, "k", "r", 7), ("q", black, "k", "r", 0))
                  if flag in self.castling and rank[4] == king and rank[corner] == rook]
        return "".join(rights) or "-"


def read_plain_fen(fen: str) -> PlainFen | None:
    """``fen`` read without python-chess when it has the :data:`PLAIN_FEN` form and every rank holds exactly 8
    squares with no two digits in a row (python-chess refuses ``44``); None otherwise (python-chess decides)."""
    match = PLAIN_FEN.match(fen)
    if match is None:
        return None
    ranks = []
    for rank in match.group(1).split("/"):
        squares, digit_before = [], False
        for c in rank:
            if c.isdigit():
                if digit_before:
                    return None
                squares.append("." * int(c))
                digit_before = True
            else:
                squares.append(c)
                digit_before = False
        spelled = "".join(squares)
        if len(spelled) != 8:
            return None
        ranks.append(spelled)
    return PlainFen(match.group(1), tuple(ranks), match.group(2) == "w", match.group(3), match.group(4))


def _material_phase_by_python_chess(fen: str) -> str | None:
    """:func:`material_phase` of any FEN, read by python-chess (None when it refuses it)."""
    import chess

    try:
        board = chess.Board(fen)
    except ValueError:
        return None
    # Non-pawn material per piece type for the phase rule (pawns and kings count 0).
    weights = {chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    material = sum(
        value * len(board.pieces(piece_type, color))
        for piece_type, value in weights.items()
        for color in chess.COLORS
    )
    if material <= ENDGAME_MAX_MATERIAL:
        return "endgame"
    initial = _initial()
    home = sum(
        1
        for square in chess.SquareSet(chess.BB_RANK_1 | chess.BB_RANK_8)
        if board.piece_at(square) is not None and board.piece_at(square) == initial.piece_at(square)
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


#: ``phase=LABEL`` (or ``phase: LABEL``) inside an EPD comment opcode.
_PHASE_IN_COMMENT = re.compile(r"phase\s*[=:]\s*(\w+)", re.IGNORECASE)
#: An unquoted ``phase LABEL;`` operand, which python-chess would read as a SAN move.
_UNQUOTED_PHASE = re.compile(r"\bphase\s+([A-Za-z]+)\s*;")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Position:
    """One position.

    ``id`` is the EPD ``id`` opcode (else ``fen:`` + a hash of the FEN, see
    :func:`fen_hash_id`); ``fen`` is python-chess's normalised six-field FEN;
    ``phase`` is an explicit label (``opening``/``middlegame``/``endgame``) or
    None; ``line`` is the 1-based EPD line it came from (0 for ``--fen``).
    """

    id: str
    fen: str
    phase: str | None = None
    line: int = 0


def epd_phase(operations: Mapping[str, object], where: str = "EPD") -> str | None:
    """The phase label of an EPD line: an opcode ``phase``, or ``phase=...`` in a ``c0``..``c9`` comment.

    None when the line has no label (a comment that is no phase label is only
    a comment); :class:`InputError` for a ``phase`` opcode that is not one of
    :data:`PHASES` (aliases of :func:`normalize_phase` accepted).
    """
    raw = operations.get("phase")
    if raw not in (None, ""):
        direct = normalize_phase(str(raw))
        if direct is None:
            raise InputError(f"{where}: unknown phase label {raw!r} (expected one of {', '.join(PHASES)})")
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


def _check_board(board: chess.Board, where: str) -> None:
    import chess

    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [flag.name.lower().replace("_", " ") for flag in chess.Status
                    if flag and flag in status and flag.name is not None]
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
    import chess

    try:
        board = chess.Board(text)
    except ValueError as exc:
        raise InputError(f"{where}: invalid FEN {text[:80]!r}: {exc}") from None
    _check_board(board, where)
    return board.fen()


#: The UTF-8 byte-order mark, as text (U+FEFF).
BOM = "\ufeff"


def parse_epd_line(line: str, where: str, number: int = 0) -> Position | None:
    """One EPD line as a :class:`Position`; None for blank lines and ``#`` comments.

    Accepts four-field EPD (``hmvc``/``fmvn`` opcodes honoured) and full
    six-field FENs followed by opcodes.  The id comes from the ``id`` opcode
    (else ``fen:`` + a hash of the FEN); the phase from :func:`epd_phase`.
    Raises :class:`InputError` naming ``where`` for a control character, a line
    python-chess cannot parse, an illegal position or one with no legal move,
    and an unknown phase label.
    """
    # A byte-order mark (an editor's, or one left where files were concatenated) is not part of the line.
    text = line.strip().lstrip(BOM).strip()
    if not text or text.startswith("#"):
        return None
    if _CONTROL.search(text):
        raise InputError(f"{where}: contains a control character")
    text = _UNQUOTED_PHASE.sub(r'phase "\1";', text)
    fields = text.split()
    candidates = [text]
    # A full FEN (halfmove and fullmove counters) before the opcodes.
    if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
        candidates.insert(0, " ".join(fields[:4] + fields[6:]))
    import chess

    board: chess.Board | None = None
    ops: Mapping[str, object] = {}
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
    return Position(id=pos_id, fen=fen, phase=epd_phase(ops, where), line=number)


def read_positions(path: str | Path, skip_bad: bool = False) -> tuple[list[Position], list[str]]:
    """All positions of an EPD file, in file order, and the problems skipped: the one EPD reader.

    Every line is validated (:func:`parse_epd_line`) before anything runs.  A
    bad line or a duplicate id is an :class:`InputError` naming the line,
    unless ``skip_bad`` (then it is skipped and reported in the returned list).
    A file without any position is an :class:`InputError`.
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
    # Lines end at \n (or \r\n) only: str.splitlines also breaks at U+2028, NEL (U+0085), \v, \f ..., which
    # would cut a line in two (an id truncated, the rest read as another line) and number the lines wrongly.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
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


@dataclass
class PositionBook:
    """Positions looked up by id or by FEN (the first four fields; the first position wins)."""

    positions: list[Position] = field(default_factory=list)
    by_id: dict[str, Position] = field(default_factory=dict)
    by_fen: dict[str, Position] = field(default_factory=dict)

    @classmethod
    def of(cls, positions: list[Position]) -> "PositionBook":
        book = cls()
        for position in positions:
            book.positions.append(position)
            book.by_id.setdefault(position.id, position)
            book.by_fen.setdefault(fen_key(position.fen), position)
        return book

    def lookup(self, position_id: str | None, fen: str | None) -> Position | None:
        if position_id and position_id in self.by_id:
            return self.by_id[position_id]
        if fen:
            return self.by_fen.get(fen_key(fen))
        return None


def read_epd(path: str | Path) -> PositionBook:
    """The positions of an EPD file (:func:`read_positions`) as a :class:`PositionBook`."""
    positions, _ = read_positions(path)
    return PositionBook.of(positions)

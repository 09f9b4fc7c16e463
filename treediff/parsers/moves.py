"""Move-notation normalization: every move becomes UCI (lower-case promotion, null ``0000``).

Coordinate and UCI moves are normalized column-wise (see
:func:`normalize_coord_paths`).  SAN needs the position, so
:class:`PathResolver` replays paths from the search's FEN.  Trace lines come
in depth-first order, so it keeps only the boards along the current path (a
stack), and remembers every (parent path, move) it already converted.
"""
from __future__ import annotations

import re

import chess
import polars as pl

NULL_UCI = "0000"
NULL_SPELLINGS = frozenset({"0000", "(null)", "null", "--", "@@@@", "Z0"})

_UCI_RE = re.compile(r"[a-h][1-8][a-h][1-8][qrbnQRBN]?\Z")
_SAN_RE = re.compile(
    r"(?P<piece>[NBRQK])?(?P<ff>[a-h])?(?P<fr>[1-8])?x?(?P<to>[a-h][1-8])(?:=?(?P<promo>[NBRQnbrq]))?[+#!?]*\Z"
)
_CASTLE_RE = re.compile(r"(?:O-O(?P<long>-O)?|0-0(?P<long0>-0)?)[+#!?]*\Z")

#: A path (already lower-cased, nulls as 0000) that is entirely UCI-shaped.
UCI_PATH_PATTERN = r"^(?:(?:[a-h][1-8][a-h][1-8][qrbn]?|0000)(?:/(?:[a-h][1-8][a-h][1-8][qrbn]?|0000))*)?$"

_PIECE_OF = {"N": chess.KNIGHT, "B": chess.BISHOP, "R": chess.ROOK, "Q": chess.QUEEN, "K": chess.KING}


def normalize_coord_paths(paths: pl.Series, null_spellings: tuple[str, ...]) -> pl.Series:
    """Lower-case coordinate paths and write null moves as ``0000``; the root ``-`` becomes ``""``.

    Only safe for paths whose elements are coordinate/UCI moves or nulls;
    callers check the result against :data:`UCI_PATH_PATTERN`.
    """
    out = paths.str.to_lowercase()
    for spelling in sorted(set(null_spellings) | {"(null)", "null", "--"}, key=len, reverse=True):
        if spelling == NULL_UCI:
            continue
        escaped = re.escape(spelling.lower())
        # Applied twice because a match consumes the separator after it.
        for _ in range(2):
            out = out.str.replace_all(rf"(^|/){escaped}(/|$)", r"${1}0000${2}")
    return out.replace("-", "")


class UnresolvedMove(ValueError):
    """A move that is not legal (or not parseable) in its position."""


def _san_to_move(board: chess.Board, token: str) -> chess.Move:
    """Resolve one move token (SAN, UCI or a null spelling) in ``board``."""
    if token in NULL_SPELLINGS:
        return chess.Move.null()
    if _UCI_RE.match(token):
        move = chess.Move.from_uci(token.lower())
        if board.is_legal(move):
            return move
        # Stays unresolved rather than guessed: a UCI-shaped token must be legal.
        raise UnresolvedMove(token)
    castle = _CASTLE_RE.match(token)
    if castle:
        rank = 0 if board.turn == chess.WHITE else 7
        to_file = 2 if (castle.group("long") or castle.group("long0")) else 6
        move = chess.Move(chess.square(4, rank), chess.square(to_file, rank))
        if board.is_legal(move):
            return move
        raise UnresolvedMove(token)
    m = _SAN_RE.match(token)
    if not m:
        raise UnresolvedMove(token)
    to_sq = chess.parse_square(m.group("to"))
    promo = m.group("promo")
    promotion = chess.PIECE_SYMBOLS.index(promo.lower()) if promo else None
    piece_letter = m.group("piece")
    ff, fr = m.group("ff"), m.group("fr")
    color = board.turn
    if piece_letter is None:
        # Pawn moves: the origin follows from file, colour and what stands in front.
        step = 8 if color == chess.WHITE else -8
        if ff is not None and chess.square_file(to_sq) != chess.FILE_NAMES.index(ff):
            from_sq = chess.square(chess.FILE_NAMES.index(ff), chess.square_rank(to_sq - step))
        else:
            from_sq = to_sq - step
            if board.piece_type_at(from_sq) != chess.PAWN and 0 <= to_sq - 2 * step < 64:
                from_sq = to_sq - 2 * step
        if promotion is None and chess.square_rank(to_sq) in (0, 7):
            promotion = chess.QUEEN  # "e8" for "e8=Q": liberal, as some engines write it
        move = chess.Move(from_sq, to_sq, promotion=promotion)
        if board.is_legal(move):
            return move
        raise UnresolvedMove(token)
    piece_type = _PIECE_OF[piece_letter]
    candidates = board.pieces_mask(piece_type, color) & board.attackers_mask(color, to_sq)
    if ff is not None:
        candidates &= chess.BB_FILES[chess.FILE_NAMES.index(ff)]
    if fr is not None:
        candidates &= chess.BB_RANKS[int(fr) - 1]
    found = None
    for from_sq in chess.scan_forward(candidates):
        move = chess.Move(from_sq, to_sq)
        if candidates & (candidates - 1) == 0 or board.is_legal(move):
            if found is not None:
                raise UnresolvedMove(token)  # ambiguous
            found = move
    if found is None or not board.is_legal(found):
        raise UnresolvedMove(token)
    return found


class PathResolver:
    """Converts move paths of one search into UCI, replaying them from the search's FEN."""

    def __init__(self, fen: str | None):
        self.board: chess.Board | None = None
        if fen:
            try:
                self.board = chess.Board(fen)
            except ValueError:
                self.board = None
        # Stack of (token, uci, board after the move) along the current path.
        self._stack: list[tuple[str, str, chess.Board]] = []
        self._cache: dict[tuple[str, str], str | None] = {}

    def _board_at(self, tokens: list[str]) -> tuple[chess.Board | None, str]:
        """Board after ``tokens`` and their UCI path; (None, "") if they do not resolve."""
        assert self.board is not None
        stack = self._stack
        common = 0
        limit = min(len(stack), len(tokens))
        while common < limit and stack[common][0] == tokens[common]:
            common += 1
        del stack[common:]
        board = stack[-1][2] if stack else self.board
        for token in tokens[common:]:
            try:
                move = _san_to_move(board, token)
            except (UnresolvedMove, ValueError, IndexError):
                return None, ""
            board = board.copy(stack=False)
            board.push(move)
            stack.append((token, move.uci() if move else NULL_UCI, board))
        return board, "/".join(entry[1] for entry in stack)

    def resolve(self, path: str) -> str | None:
        """The UCI path for ``path`` (``-`` or ``""`` is the root); None if a move does not resolve."""
        if path in ("-", ""):
            return ""
        if self.board is None:
            return None
        parent, _, last = path.rpartition("/")
        key = (parent, last)
        cached = self._cache.get(key, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        parent_tokens = parent.split("/") if parent else []
        board, parent_uci = self._board_at(parent_tokens)
        result: str | None
        if board is None:
            result = None
        else:
            try:
                move = _san_to_move(board, last)
                uci = move.uci() if move else NULL_UCI
                result = f"{parent_uci}/{uci}" if parent_uci else uci
            except (UnresolvedMove, ValueError, IndexError):
                result = None
        if len(self._cache) > 4_000_000:
            self._cache.clear()
        self._cache[key] = result
        return result

    def resolve_move(self, token: str) -> str | None:
        """One root move (e.g. END ``best=``) in UCI, None if it does not resolve."""
        return self.resolve(token) if token else None

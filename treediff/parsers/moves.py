"""Move-notation normalization: every move becomes UCI (lower-case promotion, null ``0000``).

Coordinate and UCI moves are normalized column-wise (see
:func:`normalize_coord_paths`).  SAN needs the position, so
:class:`PathResolver` replays paths from the search's FEN.  Trace lines come
in depth-first order, so it keeps only the boards along the current path (a
stack), and remembers every (parent path, move) it already converted.
"""
from __future__ import annotations

import functools
import re
from typing import Callable

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


# Token shapes, as parsed by _parse_token (board-independent, so cached by spelling).
_NULL, _UCI, _CASTLE, _PAWN, _PIECE, _INVALID = range(6)


@functools.lru_cache(maxsize=1 << 16)
def _parse_token(token: str) -> tuple:
    """What a move token says without a board: ``(shape, details...)``.

    ``(_UCI, move)``, ``(_CASTLE, long)``, ``(_PAWN, from_file or None, to_sq, promotion)``
    (``from_file`` only for a capture), ``(_PIECE, piece_type, file or None, rank or None, to_sq)``,
    ``(_NULL,)`` or ``(_INVALID,)``.
    """
    if token in NULL_SPELLINGS:
        return (_NULL,)
    if _UCI_RE.match(token):
        try:
            return (_UCI, chess.Move.from_uci(token.lower()))
        except ValueError:
            return (_INVALID,)
    castle = _CASTLE_RE.match(token)
    if castle:
        return (_CASTLE, bool(castle.group("long") or castle.group("long0")))
    m = _SAN_RE.match(token)
    if not m:
        return (_INVALID,)
    to_sq = chess.parse_square(m.group("to"))
    promo = m.group("promo")
    promotion = chess.PIECE_SYMBOLS.index(promo.lower()) if promo else None
    piece_letter = m.group("piece")
    ff, fr = m.group("ff"), m.group("fr")
    if piece_letter is None:
        from_file = chess.FILE_NAMES.index(ff) if ff is not None else None
        if from_file == chess.square_file(to_sq):
            from_file = None  # "e4e5"-like file on the same file: a push
        if promotion is None and chess.square_rank(to_sq) in (0, 7):
            promotion = chess.QUEEN  # "e8" for "e8=Q": liberal, as some engines write it
        return (_PAWN, from_file, to_sq, promotion)
    return (
        _PIECE,
        _PIECE_OF[piece_letter],
        chess.FILE_NAMES.index(ff) if ff is not None else None,
        int(fr) - 1 if fr is not None else None,
        to_sq,
    )


def _san_to_move(board: chess.Board, token: str, is_legal: Callable[[chess.Move], bool] | None = None) -> chess.Move:
    """Resolve one move token (SAN, UCI or a null spelling) in ``board``.

    ``is_legal`` answers ``board.is_legal`` (:class:`_Legality` does it cheaper
    when many moves are tested in the same position).
    """
    legal = is_legal or board.is_legal
    spec = _parse_token(token)
    shape = spec[0]
    if shape == _NULL:
        return chess.Move.null()
    if shape == _UCI:
        if legal(spec[1]):
            return spec[1]
        # Stays unresolved rather than guessed: a UCI-shaped token must be legal.
        raise UnresolvedMove(token)
    color = board.turn
    if shape == _CASTLE:
        rank = 0 if color == chess.WHITE else 7
        move = chess.Move(chess.square(4, rank), chess.square(2 if spec[1] else 6, rank))
        if legal(move):
            return move
        raise UnresolvedMove(token)
    if shape == _PAWN:
        # The origin follows from file, colour and what stands in front.
        _, from_file, to_sq, promotion = spec
        step = 8 if color == chess.WHITE else -8
        if from_file is not None:
            from_sq = chess.square(from_file, chess.square_rank(to_sq - step))
        else:
            from_sq = to_sq - step
            if board.piece_type_at(from_sq) != chess.PAWN and 0 <= to_sq - 2 * step < 64:
                from_sq = to_sq - 2 * step
        move = chess.Move(from_sq, to_sq, promotion=promotion)
        if legal(move):
            return move
        raise UnresolvedMove(token)
    if shape != _PIECE:
        raise UnresolvedMove(token)
    _, piece_type, file, rank, to_sq = spec
    candidates = board.pieces_mask(piece_type, color) & board.attackers_mask(color, to_sq)
    if file is not None:
        candidates &= chess.BB_FILES[file]
    if rank is not None:
        candidates &= chess.BB_RANKS[rank]
    if board.occupied_co[color] & chess.BB_SQUARES[to_sq]:
        raise UnresolvedMove(token)  # no candidate is pseudo-legal: the target holds our own piece
    # Each candidate now stands on its square, is ours and attacks a square we may enter:
    # a pseudo-legal move, so only the king's safety is left to test.
    safe = getattr(legal, "is_safe", legal)
    found = None
    for from_sq in chess.scan_forward(candidates):
        move = chess.Move(from_sq, to_sq)
        if safe(move):
            if found is not None:
                raise UnresolvedMove(token)  # ambiguous
            found = move
    if found is None:
        raise UnresolvedMove(token)
    return found


class _Legality:
    """``board.is_legal`` for many moves in one position: the king, its checkers and the pinned
    pieces are found once, not for every move (python-chess recomputes them on each call)."""

    __slots__ = ("board", "moves", "_king", "_checkers", "_blockers")

    def __init__(self, board: chess.Board):
        self.board = board
        #: Tokens already resolved in this position (None: does not resolve).
        self.moves: dict[str, chess.Move | None] = {}
        self._king: int | None = -1  # -1: not computed yet

    def resolve(self, token: str) -> chess.Move | None:
        """``token`` as a move in this position, None if it does not resolve (memoized)."""
        try:
            return self.moves[token]
        except KeyError:
            pass
        try:
            move: chess.Move | None = _san_to_move(self.board, token, self)
        except (UnresolvedMove, ValueError, IndexError):
            move = None
        self.moves[token] = move
        return move

    def __call__(self, move: chess.Move) -> bool:
        return self.board.is_pseudo_legal(move) and self.is_safe(move)

    def is_safe(self, move: chess.Move) -> bool:
        """Legality of a move already known to be pseudo-legal: it does not leave the king in check."""
        board = self.board
        if self._king == -1:
            self._king = board.king(board.turn)
            if self._king is not None:
                self._checkers = board.attackers_mask(not board.turn, self._king)
                self._blockers = board._slider_blockers(self._king)
        if self._king is None:
            return True  # as board.is_legal: no king, nothing can be left in check
        if self._checkers:
            return board.is_legal(move)  # evasions: python-chess's own path
        return board._is_safe(self._king, self._blockers, move)


#: Paths remembered per search (about 250 bytes each): enough for the re-searches of iterative
#: deepening and for RESULT lines, which repeat the path of a recent MOVE.
_CACHE_ENTRIES = 500_000


class PathResolver:
    """Converts move paths of one search into UCI, replaying them from the search's FEN.

    Trace lines come depth-first, so consecutive paths mostly share their
    parent: the boards along the current parent path stay on a stack, and the
    parent of the previous path is recognized without splitting the new one.
    """

    def __init__(self, fen: str | None):
        self.board: chess.Board | None = None
        if fen:
            try:
                self.board = chess.Board(fen)
            except ValueError:
                self.board = None
        self._root_legality = _Legality(self.board) if self.board is not None else None
        # Stack of (token, UCI path up to and including it, board after the move, its legality test).
        self._stack: list[tuple[str, str, chess.Board, _Legality]] = []
        # The raw parent path the stack stands at (None: unknown), and the stack's top.
        self._at: str | None = ""
        self._cache: dict[tuple[str, str], str | None] = {}

    def _board_at(self, tokens: list[str]) -> tuple[_Legality | None, str]:
        """Board (with its legality test) after ``tokens`` and their UCI path; (None, "") if they do not resolve."""
        assert self.board is not None and self._root_legality is not None
        stack = self._stack
        common = 0
        limit = min(len(stack), len(tokens))
        while common < limit and stack[common][0] == tokens[common]:
            common += 1
        del stack[common:]
        legality = stack[-1][3] if stack else self._root_legality
        for token in tokens[common:]:
            move = legality.resolve(token)
            if move is None:
                return None, ""
            board = legality.board.copy(stack=False)
            board.push(move)
            legality = _Legality(board)
            uci = move.uci() if move else NULL_UCI
            stack.append((token, f"{stack[-1][1]}/{uci}" if stack else uci, board, legality))
        return legality, stack[-1][1] if stack else ""

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
        legality: _Legality | None
        if parent == self._at:
            # A sibling of the previous path: the stack already stands at the parent.
            legality = self._stack[-1][3] if self._stack else self._root_legality
            parent_uci = self._stack[-1][1] if self._stack else ""
        else:
            legality, parent_uci = self._board_at(parent.split("/") if parent else [])
            self._at = parent if legality is not None else None
        result: str | None = None
        if legality is not None:
            move = legality.resolve(last)
            if move is not None:
                uci = move.uci() if move else NULL_UCI
                result = f"{parent_uci}/{uci}" if parent_uci else uci
        if len(self._cache) > _CACHE_ENTRIES:
            self._cache.clear()
        self._cache[key] = result
        return result

    def resolve_move(self, token: str) -> str | None:
        """One root move (e.g. END ``best=``) in UCI, None if it does not resolve."""
        return self.resolve(token) if token else None


def resolve_paths(fen: str | None, paths: list[str]) -> list[str | None]:
    """UCI forms of ``paths`` of one search (None where a move does not resolve); for worker processes."""
    resolver = PathResolver(fen)
    return [resolver.resolve(p) for p in paths]

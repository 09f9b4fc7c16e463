"""Move-notation normalization: every move becomes UCI (lower-case promotion, null ``0000``).

Coordinate and UCI moves are normalized column-wise (see
:func:`~treediff.model.notation.normalize_coord_paths`, re-exported here: the parser uses it
without importing python-chess).  SAN needs the position, so
:class:`PathResolver` replays paths from the search's FEN, keeping the
positions it reached by path and converting each distinct (parent path, move)
once.  The parser uses it where the compiled ``_cmoves.SanResolver`` does not resolve (not built,
``TREEDIFF_SAN=python``, a position with several kings of a side): that resolver reads tokens with
the grammar and the candidate rules below, and tests/parse/test_san_resolver.py holds the two to the same
answers, so a change here needs the same change in treediff/parse/_cmoves.c.
This module imports only python-chess: the SAN worker process loads it, and
starts faster without polars and pyarrow; the parser imports it only for paths that
are not UCI (python-chess costs ~30 ms of start-up).
"""
from __future__ import annotations

import functools
import re
from typing import Any

import chess

from treediff.model.notation import (
    NULL_SPELLINGS,
    NULL_UCI,
    TYPED_ROOTS,
    UCI_MOVE_RE,
    coordinate_move,
    normalize_coord_paths as normalize_coord_paths,  # re-exported: its home was here
)

_SAN_RE = re.compile(
    r"(?P<piece>[NBRQK])?(?P<ff>[a-h])?(?P<fr>[1-8])?x?(?P<to>[a-h][1-8])(?:=?(?P<promo>[NBRQnbrq]))?[+#!?]*\Z"
)
_CASTLE_RE = re.compile(r"(?:O-O(?P<long>-O)?|0-0(?P<long0>-0)?)[+#!?]*\Z")

_PIECE_OF = {"N": chess.KNIGHT, "B": chess.BISHOP, "R": chess.ROOK, "Q": chess.QUEEN, "K": chess.KING}


def chess_internals_usable(board_class: Any = chess.Board) -> bool:
    """Whether python-chess still has the private ``Board._slider_blockers`` and ``Board._is_safe`` (1.11 does).

    They save finding the king's pins again for every move tested; a release that renames them
    (they are not public API, hence chess<2 and this check) makes :class:`_Legality` use the public
    ``is_pinned`` / ``is_legal`` instead: the same answers, a little slower (tests/parse/test_moves_fallback.py).
    """
    return callable(getattr(board_class, "_slider_blockers", None)) and callable(getattr(board_class, "_is_safe", None))


#: Set once at import; tests switch it off to run the public-API path.
CHESS_INTERNALS = chess_internals_usable()


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
    if UCI_MOVE_RE.match(token):
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


_SQUARE_NAMES = chess.SQUARE_NAMES
_PROMOTION_LETTER = {None: "", chess.KNIGHT: "n", chess.BISHOP: "b", chess.ROOK: "r", chess.QUEEN: "q"}
_BB_SQUARES = chess.BB_SQUARES


def _uci(move: chess.Move) -> str:
    """``move.uci()`` for a non-null, non-drop move, without the method's general cases."""
    return _SQUARE_NAMES[move.from_square] + _SQUARE_NAMES[move.to_square] + _PROMOTION_LETTER[move.promotion]


_MISSING: Any = object()  # (Any: a sentinel among str | None values)
_SQUARE_INDEX = {name: i for i, name in enumerate(chess.SQUARE_NAMES)}
_PROMOTION_OF = {"": None, "n": chess.KNIGHT, "b": chess.BISHOP, "r": chess.ROOK, "q": chess.QUEEN}


def _move_of_uci(uci: str) -> chess.Move:
    """``chess.Move.from_uci`` for a UCI string this module made (or ``0000``), without re-validating it."""
    if uci == NULL_UCI:
        return chess.Move.null()
    return chess.Move(_SQUARE_INDEX[uci[0:2]], _SQUARE_INDEX[uci[2:4]], _PROMOTION_OF[uci[4:]])


class _Legality:
    """One position: its legality tests, and the tokens already resolved in it.

    python-chess's ``board.is_legal`` finds the king, its checkers and the
    pinned pieces again on every call; here they are found once per position,
    and SAN moves, whose shape already says a lot, are tested with what is
    left to test (e.g. a knight found by its attack pattern is pseudo-legal,
    so only the king's safety is checked).  Tested square by square against
    ``board.is_legal`` (tests/parse/test_moves.py).
    """

    __slots__ = ("board", "moves", "uci_path", "_king", "_checkers", "_blockers")

    def __init__(self, board: chess.Board, uci_path: str = ""):
        self.board = board
        #: The UCI path from the search's root to this position ("" at the root).
        self.uci_path = uci_path
        #: Tokens already resolved in this position, as UCI moves (None: does not resolve).
        self.moves: dict[str, str | None] = {}
        self._king: int | None = -1  # -1: not computed yet
        self._checkers = 0
        self._blockers = 0

    # ----------------------------------------------------------------- tokens
    def resolve(self, token: str) -> str | None:
        """``token`` as a UCI move in this position (``0000`` for a null move), None if it does not resolve."""
        uci = self.moves.get(token, _MISSING)
        if uci is _MISSING:
            try:
                uci = self._resolve_new(token)
            except (ValueError, IndexError):
                uci = None
            self.moves[token] = uci
        return uci

    def _resolve_new(self, token: str) -> str | None:
        spec = _parse_token(token)
        shape = spec[0]
        if shape == _PIECE:
            return self._piece_move(spec[1], spec[2], spec[3], spec[4])
        if shape == _PAWN:
            return self._pawn_move(spec[1], spec[2], spec[3])
        if shape == _NULL:
            return NULL_UCI
        if shape == _UCI:
            # Stays unresolved rather than guessed: a UCI-shaped token must be legal.
            return _uci(spec[1]) if self(spec[1]) else None
        if shape == _CASTLE:
            # Only a castling move: with a rook on e1 and the king elsewhere, e1g1 is a rook move.
            board = self.board
            side = board.is_queenside_castling if spec[1] else board.is_kingside_castling
            for move in board.generate_castling_moves():
                if side(move) and board.is_legal(move):
                    return _uci(move)
            return None
        return None

    def _pawn_move(self, from_file: int | None, to_sq: int, promotion: int | None) -> str | None:
        """A pawn push (``from_file`` None) or capture: the origin follows from file, colour and what stands in front."""
        board = self.board
        white = board.turn == chess.WHITE
        to_rank = to_sq >> 3
        from_rank = to_rank - 1 if white else to_rank + 1
        if not 0 <= from_rank <= 7 or (promotion is not None) != (to_rank == (7 if white else 0)):
            return None  # off the board; a move to the last rank must promote, and only there
        ours = board.pawns & board.occupied_co[board.turn]
        to_mask = _BB_SQUARES[to_sq]
        if from_file is None:
            if board.occupied & to_mask:
                return None
            from_sq = from_rank * 8 + (to_sq & 7)
            if not ours & _BB_SQUARES[from_sq]:
                # A double step: from the start rank, over an empty square.
                if to_rank != (3 if white else 4) or board.occupied & _BB_SQUARES[from_sq]:
                    return None
                from_sq = from_sq - 8 if white else from_sq + 8
                if not ours & _BB_SQUARES[from_sq]:
                    return None
        else:
            if abs(from_file - (to_sq & 7)) != 1:
                return None
            from_sq = from_rank * 8 + from_file
            if not ours & _BB_SQUARES[from_sq]:
                return None
            if not board.occupied_co[not board.turn] & to_mask:
                # Nothing to take: en passant or nothing; python-chess knows en passant's special cases.
                move = chess.Move(from_sq, to_sq, promotion)
                return _uci(move) if board.is_legal(move) else None
        if not self._safe(from_sq, to_sq, promotion):
            return None
        return _SQUARE_NAMES[from_sq] + _SQUARE_NAMES[to_sq] + _PROMOTION_LETTER[promotion]

    def _piece_move(self, piece_type: int, file: int | None, rank: int | None, to_sq: int) -> str | None:
        """A piece move: the one piece of that type that attacks ``to_sq`` (and stands on file/rank if given)."""
        board = self.board
        color = board.turn
        if board.occupied_co[color] & _BB_SQUARES[to_sq]:
            return None  # the target holds our own piece
        occupied = board.occupied
        if piece_type == chess.KNIGHT:
            attacks = chess.BB_KNIGHT_ATTACKS[to_sq]
        elif piece_type == chess.KING:
            attacks = chess.BB_KING_ATTACKS[to_sq]
        else:
            # A slider reaches to_sq from where to_sq's rays, stopped by the first piece, reach.
            attacks = 0
            if piece_type != chess.ROOK:
                attacks = chess.BB_DIAG_ATTACKS[to_sq][chess.BB_DIAG_MASKS[to_sq] & occupied]
            if piece_type != chess.BISHOP:
                attacks |= (chess.BB_RANK_ATTACKS[to_sq][chess.BB_RANK_MASKS[to_sq] & occupied]
                            | chess.BB_FILE_ATTACKS[to_sq][chess.BB_FILE_MASKS[to_sq] & occupied])
        candidates = board.pieces_mask(piece_type, color) & attacks
        if file is not None:
            candidates &= chess.BB_FILES[file]
        if rank is not None:
            candidates &= chess.BB_RANKS[rank]
        # Each candidate is ours and reaches a square we may enter: a pseudo-legal move,
        # so only the king's safety is left to test.
        if not candidates & (candidates - 1):  # zero or one candidate
            if candidates and self._safe(candidates.bit_length() - 1, to_sq):
                return _SQUARE_NAMES[candidates.bit_length() - 1] + _SQUARE_NAMES[to_sq]
            return None
        found = None
        for from_sq in chess.scan_forward(candidates):
            if self._safe(from_sq, to_sq):
                if found is not None:
                    return None  # ambiguous
                found = from_sq
        return None if found is None else _SQUARE_NAMES[found] + _SQUARE_NAMES[to_sq]

    # ------------------------------------------------------------------ moves
    def __call__(self, move: chess.Move) -> bool:
        """``board.is_legal(move)`` for any move."""
        return self.board.is_pseudo_legal(move) and self.is_safe(move)

    def _king_facts(self) -> None:
        board = self.board
        self._king = board.king(board.turn)
        if self._king is not None:
            self._checkers = board.attackers_mask(not board.turn, self._king)
            if CHESS_INTERNALS:
                self._blockers = board._slider_blockers(self._king)
            else:  # the public API: our pieces pinned to our king
                ours = board.occupied_co[board.turn]
                self._blockers = sum(_BB_SQUARES[sq] for sq in chess.scan_forward(ours & ~_BB_SQUARES[self._king])
                                     if board.is_pinned(board.turn, sq))

    def is_safe(self, move: chess.Move) -> bool:
        """Legality of any move already known to be pseudo-legal: it does not leave the king in check."""
        if self._king == -1:
            self._king_facts()
        if self._king is None:
            return True  # as board.is_legal: no king, nothing can be left in check
        if self._checkers or not CHESS_INTERNALS:
            return self.board.is_legal(move)  # evasions (or no internals): python-chess's own path
        return self.board._is_safe(self._king, self._blockers, move)

    def _safe(self, from_sq: int, to_sq: int, promotion: int | None = None) -> bool:
        """:meth:`is_safe` for a pseudo-legal move that is neither castling nor en passant."""
        king = self._king
        if king == -1:
            self._king_facts()
            king = self._king
        if king is None:
            return True
        if self._checkers:
            return self.board.is_legal(chess.Move(from_sq, to_sq, promotion))
        if from_sq == king:
            return not self.board.is_attacked_by(not self.board.turn, to_sq)
        return not self._blockers & _BB_SQUARES[from_sq] or bool(chess.ray(from_sq, to_sq) & _BB_SQUARES[king])

    def child(self, token: str) -> _Legality | None:
        """The position after ``token`` (None if it does not resolve)."""
        uci = self.resolve(token)
        if uci is None:
            return None
        board = self.board.copy(stack=False)
        board.push(_move_of_uci(uci))
        return _Legality(board, f"{self.uci_path}/{uci}" if self.uci_path else uci)


#: Positions kept per search (a board and its resolved tokens, about 2 kB each): enough for the
#: current path, its recent siblings, and much of the previous iteration of iterative deepening.
_CACHE_POSITIONS = 50_000


class PathResolver:
    """Converts move paths of one search into UCI, replaying them from the search's FEN.

    Every position reached is kept by its raw path (up to
    :data:`_CACHE_POSITIONS`), with the moves already resolved in it: trace
    lines come depth-first and iterative deepening revisits the same nodes,
    so most paths find their parent position there and each distinct
    (parent path, move) is converted once.
    """

    def __init__(self, fen: str | None):
        board: chess.Board | None = None
        if fen:
            try:
                board = chess.Board(fen)
            except ValueError:
                board = None
        self.board = board
        self._root = _Legality(board) if board is not None else None
        self._positions: dict[str, _Legality | None] = {}

    def _position(self, path: str) -> _Legality | None:
        """The position after raw ``path`` ("" is the root); None if a move on the way does not resolve."""
        positions = self._positions
        try:
            return positions[path]
        except KeyError:
            pass
        if len(positions) >= _CACHE_POSITIONS:
            positions.clear()
        # Walk up to the nearest known ancestor, then down, remembering every position on the way.
        todo: list[tuple[str, str]] = []
        node: _Legality | None = None
        at = path
        while at:
            node = positions.get(at, False)  # type: ignore[arg-type]
            if node is not False:
                break
            parent, _, last = at.rpartition("/")
            todo.append((at, last))
            at = parent
        else:
            node = self._root
        for at, last in reversed(todo):
            node = node.child(last) if node is not None else None
            positions[at] = node
        return node

    def resolve(self, path: str) -> str | None:
        """The UCI path for ``path`` (``-`` or ``""`` is the root); None if a move does not resolve."""
        if path in ("-", ""):
            return ""
        if self._root is None:
            return None
        return self.resolve_many([path])[0]

    def resolve_many(self, paths: list[str]) -> list[str | None]:
        """:meth:`resolve` for many paths of this search, in order."""
        if self._root is None:
            return [("" if p in ("-", "") else None) for p in paths]
        positions = self._positions
        out: list[str | None] = []
        append = out.append
        last_parent: str | None = None
        node: _Legality | None = None
        for path in paths:
            parent, _, token = path.rpartition("/")
            if parent != last_parent:
                node = positions.get(parent) if parent else self._root
                if node is None:
                    node = self._position(parent)
                last_parent = parent
            if node is None:
                append("" if path in ("-", "") else None)
                continue
            uci = node.moves.get(token, _MISSING)
            if uci is _MISSING:
                if not parent and path in ("-", ""):
                    append("")  # the root
                    continue
                uci = node.resolve(token)
            if uci is None:
                append(None)
            elif node.uci_path:
                append(f"{node.uci_path}/{uci}")
            else:
                append(uci)
        return out

    def resolve_move(self, token: str) -> str | None:
        """One root move (e.g. END ``best=``) in UCI, None if it does not resolve."""
        return self.resolve(token) if token else None


def resolve_paths(fen: str | None, paths: list[str]) -> list[str | None]:
    """UCI forms of ``paths`` of one search (None where a move does not resolve); for worker processes."""
    return PathResolver(fen).resolve_many(paths)


class UnreadableMove(ValueError):
    """A typed path has a move that cannot be read: ``token``, after the UCI path ``after``.

    ``position_known``: whether the move was tried on a board (False: no FEN,
    and the token is neither UCI-shaped nor a null spelling).
    """

    def __init__(self, token: str, after: str, position_known: bool):
        super().__init__(token)
        self.token, self.after, self.position_known = token, after, position_known


def normalize_typed_path(text: str, fen: str | None = None) -> str:
    """The normalized UCI path of a path typed by a user (``e2e4/e7e5``, ``e7e8Q``, nulls, SAN).

    Moves are separated by ``/`` and may be padded with blanks.  UCI-shaped
    moves and null spellings are read by their shape alone (as coordinate
    dialects' paths are); if any other token is present, the whole path is
    replayed from ``fen`` as SAN logs are (:class:`_Legality`), so every move
    must then be legal.  The root spellings (:data:`~treediff.model.notation.TYPED_ROOTS`)
    give ``""``.  Raises :class:`UnreadableMove` for the first move that cannot be read.
    """
    text = text.strip()
    if text in TYPED_ROOTS:
        return ""
    tokens = [token.strip() for token in text.strip("/").split("/")]
    coords = [coordinate_move(token) for token in tokens]
    if None not in coords:
        return "/".join(coords)  # type: ignore[arg-type]
    board = None
    if fen:
        try:
            board = chess.Board(fen)
        except ValueError:
            board = None
    if board is None:
        first = coords.index(None)
        raise UnreadableMove(tokens[first], "/".join(coords[:first]), position_known=False)  # type: ignore[arg-type]
    node = _Legality(board)
    for token in tokens:
        child = node.child(token)
        if child is None:
            raise UnreadableMove(token, node.uci_path, position_known=True)
        node = child
    return node.uci_path

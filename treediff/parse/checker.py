"""The compiled move checker's Python side: a position's arguments, legality codes, legal-move counts.

:mod:`treediff.parse._cmoves` (treediff/parse/_cmoves.c, built by ``pip install``) replays UCI paths on a
board of its own: the parser validates every path with it (:mod:`treediff.parse.paths`), and the scope
table counts the legal moves of the positions prunes leave (:mod:`treediff.report.tables.scope`).  This
module holds what both need, without the parser's polars: a report of a Parquet file imports it alone
(issue 17 item 4: a command imports only what it uses).  Paths are handed over as Arrow string views.
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from treediff.model.positions import read_plain_fen

if TYPE_CHECKING:
    import chess

try:  # The optional compiled legality checker (treediff/parse/_cmoves.c), built by `pip install`.
    from treediff.parse import _cmoves  # type: ignore[attr-defined]  # (compiled: no stub)
except ImportError:  # no C compiler at install time: python-chess checks UCI paths under --strict only
    _cmoves = None

#: Why a path is illegal, by the compiled checker's reason code (treediff/parse/_cmoves.c; 0: legal).
ILLEGAL_REASONS = {
    1: "not a UCI move",
    2: "no piece of the side to move on the from-square",
    3: "a piece of the side to move on the to-square",
    4: "the piece does not move that way",
    5: "a piece in the way",
    6: "a promotion missing or misplaced",
    7: "castling without the right, through pieces or through or out of check",
    8: "a pawn capturing onto an empty square that is not en passant",
    9: "leaves the mover's king in check",
}

#: ``TREEDIFF_MOVE_CHECK=python`` makes the parser use the python-chess fallback (tests, benchmarks).
MOVE_CHECK_ENV = "TREEDIFF_MOVE_CHECK"

#: ``TREEDIFF_SAN=python`` makes the parser resolve SAN paths with python-chess (:mod:`treediff.parse.moves`,
#: partly in the worker process) instead of the compiled ``_cmoves.SanResolver``: tests and A/B runs.
#: ``TREEDIFF_MOVE_CHECK=python`` does too (no compiled move code at all).
SAN_ENV = "TREEDIFF_SAN"


def compiled_checker_available() -> bool:
    """Whether UCI paths are validated by the compiled :mod:`treediff.parse._cmoves` (on every parse).

    False when it was not built, when pyarrow has no string views (< 16), or when
    ``TREEDIFF_MOVE_CHECK=python``: then python-chess validates them under ``--strict`` only.
    """
    return _cmoves is not None and hasattr(pa, "string_view") and os.environ.get(MOVE_CHECK_ENV, "") != "python"


def compiled_san_available() -> bool:
    """Whether SAN paths are resolved by the compiled ``_cmoves.SanResolver`` (the same answers as python-chess's
    :class:`~treediff.parse.moves.PathResolver`, tests/parse/test_san_*.py).

    False when ``_cmoves`` was not built (or built from older source), when pyarrow has no string views
    (< 16), or with ``TREEDIFF_SAN=python`` or
    ``TREEDIFF_MOVE_CHECK=python``: then python-chess resolves them, partly in the worker process.
    """
    return (_cmoves is not None and hasattr(_cmoves, "SanResolver") and hasattr(pa, "string_view")
            and os.environ.get(SAN_ENV, "") != "python" and os.environ.get(MOVE_CHECK_ENV, "") != "python")


CheckerArgs = tuple[bytes, bool, int, int]



#: The compiled checker's piece codes (white positive), by FEN letter.
_PIECE_CODES = {"P": 1, "N": 2, "B": 3, "R": 4, "Q": 5, "K": 6, "p": -1, "n": -2, "b": -3, "r": -4, "q": -5, "k": -6}


def board_checker_args(board: chess.Board) -> CheckerArgs:
    """:class:`treediff.parse._cmoves.Checker`'s arguments for a python-chess board (a standard board)."""
    import chess

    squares = bytearray(64)
    for square, piece in board.piece_map().items():
        squares[square] = (piece.piece_type if piece.color else -piece.piece_type) & 0xFF
    rights = board.clean_castling_rights()
    castling = ((1 if rights & chess.BB_H1 else 0) | (2 if rights & chess.BB_A1 else 0)
                | (4 if rights & chess.BB_H8 else 0) | (8 if rights & chess.BB_A8 else 0))
    ep = -1 if board.ep_square is None else board.ep_square
    return bytes(squares), board.turn == chess.WHITE, castling, ep


@functools.lru_cache(maxsize=1024)
def fen_checker_args(fen: str) -> CheckerArgs | None:
    """:func:`board_checker_args` of ``chess.Board(fen)`` (None where python-chess refuses the FEN).

    A plain FEN (``KQkq``-style castling) is read here, a few µs instead of python-chess's
    ~0.25 ms a search (tests/parse/test_uci_validation_oracle.py compares the two); others go to python-chess.
    """
    plain = read_plain_fen(fen)
    if plain is None:  # (or a rank of other than 8 squares, or two digits in a row: python-chess says)
        import chess

        try:
            return board_checker_args(chess.Board(fen))
        except ValueError:
            return None
    squares = bytearray(64)
    for rank, row in enumerate(reversed(plain.ranks)):
        for file, ch in enumerate(row):
            if ch != ".":
                squares[rank * 8 + file] = _PIECE_CODES[ch] & 0xFF
    flags = plain.castling
    # A right counts when its rook stands on the corner and the king on e1/e8 (clean_castling_rights).
    white_king, black_king = squares[4] == _PIECE_CODES["K"], squares[60] == _PIECE_CODES["k"] & 0xFF
    white_rook, black_rook = _PIECE_CODES["R"], _PIECE_CODES["r"] & 0xFF
    castling = ((1 if "K" in flags and white_king and squares[7] == white_rook else 0)
                | (2 if "Q" in flags and white_king and squares[0] == white_rook else 0)
                | (4 if "k" in flags and black_king and squares[63] == black_rook else 0)
                | (8 if "q" in flags and black_king and squares[56] == black_rook else 0))
    square = plain.en_passant  # [a-h][36]: chess.parse_square's number, file + 8 * rank
    ep = -1 if square == "-" else (ord(square[0]) - ord("a")) + 8 * (int(square[1]) - 1)
    return bytes(squares), plain.white_to_move, castling, ep


def checker_at(args: CheckerArgs) -> Any:
    """A :class:`treediff.parse._cmoves.Checker` at a position given by :func:`fen_checker_args`."""
    assert _cmoves is not None
    return _cmoves.Checker(*args)



def several_kings(squares: bytes) -> bool:
    """Whether a side has more than one king on :func:`fen_checker_args`' squares: python-chess then castles
    with one of them only (``Board.king``) and sees check from its own way, which the compiled checker does not
    model, so such positions are checked by python-chess."""
    return squares.count(_PIECE_CODES["K"] & 0xFF) > 1 or squares.count(_PIECE_CODES["k"] & 0xFF) > 1


def compiled_checker(board: chess.Board) -> Any:
    """A :class:`treediff.parse._cmoves.Checker` at ``board`` (a standard board; its move stack is not used)."""
    assert _cmoves is not None
    return checker_at(board_checker_args(board))



def legal_counts_compiled(checker: Any, paths: pa.Array) -> np.ndarray:
    """The number of legal moves (int32; python-chess's ``Board.legal_moves.count()``) in the position each
    of the UCI ``paths`` (an Arrow string array; ``""`` or ``-`` the root) reaches from the checker's, or -1
    where a move on it is illegal or not a move (:func:`check_paths_compiled` gives nonzero) and on nulls.
    Paths that share prefixes, one after the other (e.g. sorted), are replayed the least.
    """
    counts = np.full(len(paths), -1, dtype=np.int32)
    if not len(paths):
        return counts
    views, data, skip = _string_views(paths, None)
    checker.legal_counts(views, data, counts, None if skip is None else np.ascontiguousarray(skip, dtype=np.uint8))
    return counts


def _string_views(array: pa.Array, skip: np.ndarray | None) -> tuple[np.ndarray, tuple[Any, ...], np.ndarray | None]:
    """The compiled checker's view and data buffers of a string array (cast to string views: no copy when it
    is one), and ``skip`` with its nulls added."""
    if not pa.types.is_string_view(array.type):
        array = array.cast(pa.string_view())
    if array.null_count:
        nulls = array.is_null().to_numpy(zero_copy_only=False)
        skip = nulls if skip is None else (skip | nulls)
    buffers = array.buffers()
    views = np.frombuffer(buffers[1], dtype=np.uint8, count=len(array) * 16, offset=array.offset * 16)
    data = tuple(pa.py_buffer(b"") if b is None else b for b in buffers[2:])
    return views, data, skip

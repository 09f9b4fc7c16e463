"""An independent static exchange evaluation, for checking the ``see=`` keys typhoon_py writes.

Written from the definition in docs/ENGINE.md / docs/TREEDUMP_FORMAT.md, not
from the engine's code: the swap-off on the move's target square, each side
recapturing with its least valuable attacker (x-rays through the pieces that
already took part), either side free to stop; piece values 100, 320, 330,
500, 950 and 10000 for the king; a promotion adds the new piece's value less
a pawn's and the piece on the square is then the new piece; recaptures do
not promote.  Pins are ignored, as in every SEE.  Centipawns, mover's view;
a quiet move no enemy piece can take is 0.
"""
from __future__ import annotations

import chess

VALUE = {chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330, chess.ROOK: 500, chess.QUEEN: 950,
         chess.KING: 10000}


def reference_see(board: chess.Board, move: chess.Move) -> int:
    """SEE of ``move`` (legal in ``board``), centipawns from the mover's view."""
    to = move.to_square
    occ = board.occupied & ~chess.BB_SQUARES[move.from_square]
    if board.is_en_passant(move):
        gain = VALUE[chess.PAWN]
        # the pawn taken en passant leaves its square too
        occ &= ~chess.BB_SQUARES[to + (-8 if board.turn == chess.WHITE else 8)]
    else:
        victim = board.piece_type_at(to)
        gain = VALUE[victim] if victim else 0
    mover = board.piece_type_at(move.from_square)
    assert mover is not None
    on_square = VALUE[move.promotion] if move.promotion else VALUE[mover]
    if move.promotion:
        gain += VALUE[move.promotion] - VALUE[chess.PAWN]
    return gain - _best_reply(board, to, not board.turn, occ, on_square)


def _best_reply(board: chess.Board, to: int, side: chess.Color, occ: int, on_square: int) -> int:
    """What ``side`` gains at best by capturing the piece (worth ``on_square``) on ``to``: 0 if it
    does not capture."""
    attackers = board.attackers_mask(side, to, occ) & occ & board.occupied_co[side]
    if not attackers:
        return 0
    sq = min(chess.scan_forward(attackers), key=lambda s: VALUE[board.piece_type_at(s)])  # type: ignore[index]
    taker = VALUE[board.piece_type_at(sq)]  # type: ignore[index]
    return max(0, on_square - _best_reply(board, to, not side, occ & ~chess.BB_SQUARES[sq], taker))

"""Static evaluation: material plus tapered piece-square tables, kept incrementally.

All scores are centipawns.  Tables are indexed ``[color][piece_type][square]``
and already carry the sign (white positive, black negative), so an
incremental update is a handful of additions.  The game phase runs from 24
(all minor and major pieces on the board) down to 0 (bare kings and pawns).
"""
from __future__ import annotations

import chess

PIECE_VALUE_MG = (0, 100, 320, 330, 500, 950, 0)
PIECE_VALUE_EG = (0, 120, 300, 320, 550, 1000, 0)
#: Plain material used for SEE, MVV-LVA and Crafty's material-only futility.
SEE_VALUE = (0, 100, 320, 330, 500, 950, 10000)
PHASE_WEIGHT = (0, 0, 1, 1, 2, 4, 0)
PHASE_TOTAL = 24


def _center(square: int) -> int:
    """0 (corner) .. 6 (centre) closeness of ``square`` to the board's centre."""
    file_dist = int(abs(chess.square_file(square) - 3.5))
    rank_dist = int(abs(chess.square_rank(square) - 3.5))
    return 6 - file_dist - rank_dist


def _white_tables() -> tuple[list[list[int]], list[list[int]]]:
    """Piece-square bonuses (without material) for white, per piece type."""
    mg = [[0] * 64 for _ in range(7)]
    eg = [[0] * 64 for _ in range(7)]
    pawn_mg = (0, 0, 5, 10, 20, 35, 60, 0)
    pawn_eg = (0, 0, 10, 20, 35, 60, 100, 0)
    king_home = (20, 30, 10, 0, 0, 10, 30, 20)
    for sq in range(64):
        f, r, c = chess.square_file(sq), chess.square_rank(sq), _center(sq)
        mg[chess.PAWN][sq] = pawn_mg[r] + (12 if f in (3, 4) and r in (3, 4) else 0)
        eg[chess.PAWN][sq] = pawn_eg[r]
        mg[chess.KNIGHT][sq] = 6 * c - 20
        eg[chess.KNIGHT][sq] = 4 * c - 15
        mg[chess.BISHOP][sq] = 4 * c - 10
        eg[chess.BISHOP][sq] = 3 * c - 8
        mg[chess.ROOK][sq] = (20 if r == 6 else 0) + (5 if f in (3, 4) else 0)
        eg[chess.ROOK][sq] = 5 if r == 6 else 0
        mg[chess.QUEEN][sq] = 2 * c - 5
        eg[chess.QUEEN][sq] = 4 * c - 10
        mg[chess.KING][sq] = king_home[f] if r == 0 else -15 * r
        eg[chess.KING][sq] = 6 * c - 20
    return mg, eg


def _signed_tables() -> tuple[list, list, list]:
    """``[color][piece_type][square]`` tables with material and sign folded in."""
    wmg, weg = _white_tables()
    tmg: list = [None, None]
    teg: list = [None, None]
    mat: list = [None, None]
    for color in (chess.WHITE, chess.BLACK):
        sign = 1 if color == chess.WHITE else -1
        tmg[color] = [[0] * 64 for _ in range(7)]
        teg[color] = [[0] * 64 for _ in range(7)]
        mat[color] = [sign * SEE_VALUE[pt] if pt != chess.KING else 0 for pt in range(7)]
        for pt in range(1, 7):
            for sq in range(64):
                src = sq if color == chess.WHITE else sq ^ 56
                tmg[color][pt][sq] = sign * (PIECE_VALUE_MG[pt] + wmg[pt][src])
                teg[color][pt][sq] = sign * (PIECE_VALUE_EG[pt] + weg[pt][src])
    return tmg, teg, mat


TABLE_MG, TABLE_EG, MATERIAL = _signed_tables()


def full_evaluation(board: chess.Board) -> tuple[int, int, int, int]:
    """From scratch: (mg, eg, phase, material), white's view, centipawns."""
    mg = eg = phase = mat = 0
    for sq, piece in board.piece_map().items():
        c, pt = piece.color, piece.piece_type
        mg += TABLE_MG[c][pt][sq]
        eg += TABLE_EG[c][pt][sq]
        phase += PHASE_WEIGHT[pt]
        mat += MATERIAL[c][pt]
    return mg, eg, phase, mat


def blend(mg: int, eg: int, phase: int) -> int:
    """Tapered score (white's view, centipawns) for ``phase`` in 0..24."""
    if phase > PHASE_TOTAL:
        phase = PHASE_TOTAL
    return (mg * phase + eg * (PHASE_TOTAL - phase)) // PHASE_TOTAL

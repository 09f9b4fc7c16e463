"""The compiled parser's reading of Arrow string views (``views_in_bounds`` / ``view_bytes`` in
treediff/parse/_cmoves.c), through all three entry points that take them: ``Checker.check``,
``Checker.legal_counts`` and ``SanResolver.resolve_views``.

Views whose bytes lie outside their data buffer (a negative length, a buffer index or offset out of range,
a length running past the buffer's end) are refused with a ValueError before anything is read; paths
longer than 12 bytes (stored out of line) and shorter ones (inline) read the same as python-chess says.
"""
from __future__ import annotations

import chess
import numpy as np
import pyarrow as pa
import pytest

_cmoves = pytest.importorskip("treediff.parse._cmoves")

from treediff.parse.paths import _string_views, compiled_checker, fen_checker_args  # noqa: E402

# inline (<= 12 bytes) and out of line (> 12 bytes), legal and not
PATHS = ["", "e2e4", "e2e4/e7e5", "e2e4/e7e5/g1f3/b8c6", "e2e4/e7e5/g1f3/b8c7", "e2e5"]
SAN = ["e4", "e4/e5", "e4/e5/Nf3/Nc6/Bb5", "e4/e5/Nf3/Nc6/Bb6"]


def _views(paths: list[str]):
    views, data, _ = _string_views(pa.array(paths, pa.string()), None)
    return views.copy(), data


def _calls():
    board = chess.Board()

    def check(views, data):
        compiled_checker(board).check(views, data, np.zeros(len(views) // 16, np.uint8), None)

    def counts(views, data):
        compiled_checker(board).legal_counts(views, data, np.zeros(len(views) // 16, np.int32), None)

    def san(views, data):
        _cmoves.SanResolver(*fen_checker_args(chess.STARTING_FEN)).resolve_views(
            views, data, np.zeros(len(views) // 16, bool))

    return {"check": check, "legal_counts": counts, "resolve_views": san}


def _expected_counts(paths: list[str]) -> list[int]:
    out = []
    for path in paths:
        board = chess.Board()
        try:
            for uci in filter(None, path.split("/")):
                move = chess.Move.from_uci(uci)
                if move not in board.legal_moves:
                    raise ValueError(uci)
                board.push(move)
        except ValueError:
            out.append(-1)
            continue
        out.append(board.legal_moves.count())
    return out


def test_inline_and_out_of_line_views_read_as_python_chess_says():
    views, data = _views(PATHS)
    counts = np.zeros(len(PATHS), np.int32)
    compiled_checker(chess.Board()).legal_counts(views, data, counts, None)
    assert counts.tolist() == _expected_counts(PATHS)
    codes = np.zeros(len(PATHS), np.uint8)
    compiled_checker(chess.Board()).check(views, data, codes, None)
    assert [c == 0 for c in codes.tolist()] == [n >= 0 for n in _expected_counts(PATHS)]
    views, data = _views(SAN)
    unresolved = np.zeros(len(SAN), bool)
    offsets, chars = _cmoves.SanResolver(*fen_checker_args(chess.STARTING_FEN)).resolve_views(views, data, unresolved)
    assert unresolved.tolist() == [False, False, False, True]
    text = bytes(chars).decode()
    offsets = np.frombuffer(offsets, np.int64)
    assert text[offsets[2]:offsets[3]] == "e2e4/e7e5/g1f3/b8c6/f1b5"


def _corrupt(views: np.ndarray, row: int, field: int, value: int) -> np.ndarray:
    """``views`` with the int32 ``field`` (0 length, 2 buffer index, 3 offset) of view ``row`` set to ``value``."""
    out = views.copy()
    out[row * 16 + field * 4:row * 16 + field * 4 + 4] = np.frombuffer(np.int32(value).tobytes(), np.uint8)
    return out


@pytest.mark.parametrize("entry", ["check", "legal_counts", "resolve_views"])
@pytest.mark.parametrize("field, value", [(0, -1), (2, 7), (2, -1), (3, -5), (3, 10**6), (0, 10**6)])
def test_a_view_outside_its_buffer_is_refused(entry, field, value):
    paths = ["e2e4", "e2e4/e7e5/g1f3/b8c6"] if entry != "resolve_views" else ["e4", "e4/e5/Nf3/Nc6/Bb5"]
    views, data = _views(paths)
    row = 1  # the out-of-line view: its buffer index and offset are read
    with pytest.raises(ValueError, match="outside its data buffer"):
        _calls()[entry](_corrupt(views, row, field, value), data)
    _calls()[entry](views, data)  # (the same views untouched are read)

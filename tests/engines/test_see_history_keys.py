"""``see=`` and ``hist=`` on every MOVE record of a real move, in every profile; ``nt=`` always."""
from __future__ import annotations

import io
from pathlib import Path

import chess
import pytest

from support.see_reference import reference_see
from support.typhoon_trace_tools import read_trace, resolve_path
from typhoon_py import make_config, read_epd, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = {p.id: p for p in read_epd(EPD)}
NULL_ACTS = {"NMP", "NULLBAILOUT"}


@pytest.mark.parametrize("profile,depth", [
    ("typhoon", 4), ("crafty", 4),
    ("stockfish", 6),
])
def test_every_real_move_record_has_see_and_hist(profile, depth):
    checked = 0
    for pid in ("kiwipete", "rook-endgame"):
        buf = io.StringIO()
        run_search(POSITIONS[pid].board, depth, make_config(profile), buf, pid)
        (search,) = read_trace(buf.getvalue())
        root = chess.Board(search.header["fen"])
        cache: dict = {}
        for g in search.tagged("MOVE"):
            assert g["nt"] in ("PV", "CUT", "ALL")
            if g["act"] in NULL_ACTS:
                assert g["see"] is None and g["hist"] is None, g
                continue
            assert g["see"] is not None and g["hist"] is not None, g
            before = resolve_path(root, g["path"].rpartition("/")[0] or "-", profile, cache)
            move = resolve_path(root, g["path"], profile, cache).peek()
            assert int(g["see"]) == reference_see(before, move), g
            if not before.is_capture(move):
                assert int(g["hist"]) != 0 or g["act"] != "HIST-PRUNE", g  # a history prune reads < 0
            checked += 1
    assert checked > 1000

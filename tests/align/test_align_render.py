"""The column-wise text and meld renderers agree with the row-wise side-by-side layout."""
from __future__ import annotations

import numpy as np

from support.align_helpers import records_from_fixture
from treediff.align import align
from treediff.render import diffview as render
from support.synthetic import STOCKFISH_LIKE, TYPHOON_LIKE, synthetic_tree
from treediff.align.view import fold, select_rows


def _both_ways(al, rows, items, full_paths=False):
    fast = list(render.text_lines(al, rows, items, full_paths))[2:]
    slow = ["".join(t for t, _ in seg).rstrip() for seg in render.side_by_side(al, rows, items, full_paths)]
    return fast, slow


def test_text_lines_match_segments_on_fixture():
    al = align(records_from_fixture("align_basic_a.log"), records_from_fixture("align_basic_b.log"))
    for context in (None, 0, 2):
        fast, slow = _both_ways(al, al.rows, fold(al.rows, context))
        assert fast == slow


def test_text_lines_match_segments_on_synthetic_tree():
    al = align(synthetic_tree(TYPHOON_LIKE, 4, 3), synthetic_tree(STOCKFISH_LIKE, 4, 3))
    rows = select_rows(al.rows, only_diff=True)
    fast, slow = _both_ways(al, rows, fold(rows, None), full_paths=True)
    assert fast == slow and len(fast) == len(rows) + 1


def test_gap_fillers_are_unique_blank_lines():
    rows = np.array([0, 1, 5, 6, 1023])
    fillers = list(render._gap_fillers(rows, 11))
    assert fillers == [render.gap_filler(int(r), 11) for r in rows]
    assert len(set(fillers)) == len(fillers) and all(f.strip() == "" and len(f) == 11 for f in fillers)

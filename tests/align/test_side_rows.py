"""The aligned rows' side columns are built when first read (treediff/align/core.py ``SideRows``): a column read
at some rows (``at``, compare's shown rows) is that column of the whole rows, and reading a column before or
after the others gives the same values.  On real traces (a Stockfish 15.1 search against typhoon's), where
rows without a decision, multi-decision paths and nulls all occur."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from treediff.align import LOAD_COLUMNS
from treediff.align.api import align_arrays
from treediff.align.core import SideRows
from treediff.parse.source import open_source

ROOT = Path(__file__).resolve().parents[2]
TRACES, REAL = ROOT / "fixtures" / "traces", ROOT / "fixtures" / "real"
#: typhoon against Stockfish and Crafty (reference-engine traces), and a real Stockfish 15.1 search against
#: itself (its LMR and PVS re-searches decide some paths more than once).
PAIRS = [(TRACES / "typhoon_start.log", TRACES / "stockfish_start.log"),
         (TRACES / "typhoon_tactical-f6f7.log", TRACES / "crafty_tactical-f6f7.log"),
         (REAL / "mid_a_d7.log", REAL / "mid_a_d7.log")]


def _rows(a: Path, b: Path):
    records = [open_source(path).records(LOAD_COLUMNS) for path in (a, b)]
    rows, _, _, _ = align_arrays(*records)
    return rows


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=lambda p: p.name)
def test_a_column_at_some_rows_is_the_whole_column_there(a, b):
    whole, partial = _rows(a, b), _rows(a, b)
    rng = np.random.default_rng(7)
    picks = np.concatenate([np.arange(min(5, len(whole))), rng.integers(0, len(whole), 40)])
    for side_whole, side_partial in ((whole.a, partial.a), (whole.b, partial.b)):
        # Columns read at rows first (nothing built yet), then whole: the same values.
        for name in SideRows.COLUMNS:
            if name == "seq_categories":
                continue
            got = side_partial.at(name, picks)
            want = getattr(side_whole, name)[picks]
            assert got.dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        assert side_whole.seq_categories == side_partial.seq_categories
    # Rows without a decision (a NaN new depth) and with one occur on each side.
    for side in (whole.a, whole.b):
        assert (side.decisions == 0).any() and (side.decisions > 0).any()
        assert np.isnan(side.new_depth).any() and not np.isnan(side.new_depth).all()


def test_the_real_trace_decides_paths_more_than_once():
    rows = _rows(*PAIRS[2])
    multi = np.flatnonzero(rows.a.decisions > 1)
    assert len(multi) >= 5
    # final_depth is the last decision's new depth, new_depth the first's: they differ on some re-searched path.
    fresh = _rows(*PAIRS[2])
    first, last = fresh.a.at("new_depth", multi), fresh.a.at("final_depth", multi)
    assert (first != last).any()
    np.testing.assert_array_equal(last, rows.a.final_depth[multi])


def test_every_column_built_lets_the_decisions_go():
    rows = _rows(*PAIRS[0])
    assert rows.a._dec is not None
    for name in SideRows.COLUMNS:
        getattr(rows.a, name)
    assert rows.a._dec is None
    assert rows.a.at("depth", np.arange(3)).dtype == np.float32  # (read from the built column now)
    with pytest.raises(AttributeError):
        rows.a.no_such_column

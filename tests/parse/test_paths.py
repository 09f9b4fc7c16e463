"""PathNormalizer's helpers against the plain polars expressions they replace."""
from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.parse.paths import _root_as_empty
from treediff.parse.tokenizer import PATH_NONE, PATH_OTHER, PATH_ROOT, PATH_UCI

_PATHS = st.sampled_from(["-", "", "e2e4", "e2e4/e7e5", "-/-", "--", " -", "0000", "Nf3", None])


def _shape(path: str | None) -> int | None:
    """What the tokenizer gives: PATH_ROOT exactly for "-"; None for a slow-path row."""
    if path is None:
        return PATH_NONE
    return PATH_ROOT if path == "-" else (PATH_UCI if path.startswith("e2") else PATH_OTHER)


def _reference(raw: pl.Series) -> pl.Series:
    return pl.select(pl.when(raw == "-").then(pl.lit("")).otherwise(raw)).to_series()


@settings(max_examples=300, deadline=None)
@given(st.lists(_PATHS, max_size=40), st.booleans(), st.booleans())
def test_root_as_empty_matches_when_then(paths, with_shape, slow_row):
    raw = pl.Series("path", paths, dtype=pl.String)
    before = raw.to_list()
    shape = None
    if with_shape:
        shapes = [_shape(p) for p in paths]
        if slow_row and shapes:
            shapes[len(shapes) // 2] = None  # a slow-path row has no shape: the paths are compared instead
        shape = pl.Series(shapes, dtype=pl.UInt8)
    out = _root_as_empty(raw, shape)
    assert out.to_list() == _reference(raw).to_list()
    assert raw.to_list() == before  # the input is not overwritten


def test_root_as_empty_leaves_the_frame_column():
    rows = pl.DataFrame({"path": ["-", "e2e4", "-"], "s": pl.Series([PATH_ROOT, PATH_UCI, PATH_ROOT], dtype=pl.UInt8)})
    out = _root_as_empty(rows.get_column("path"), rows.get_column("s"))
    assert out.to_list() == ["", "e2e4", ""]
    assert rows.get_column("path").to_list() == ["-", "e2e4", "-"]
    out.scatter([1], "x")  # (a later patch of the result, as _patched_paths makes)
    assert rows.get_column("path").to_list() == ["-", "e2e4", "-"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from([PATH_NONE, PATH_UCI, PATH_ROOT, PATH_OTHER])), max_size=30))
def test_all_uci_or_root_matches_the_masks(shapes):
    """The two reductions against the masks they stand in for (a null shape is a row to look at: not told)."""
    from treediff.parse.paths import _all_uci_or_root

    shape = pl.Series(shapes, dtype=pl.UInt8)
    by_masks = len(shapes) > 0 and not shape.null_count() and bool(((shape == PATH_UCI) | (shape == PATH_ROOT)).all())
    assert _all_uci_or_root(shape) == by_masks

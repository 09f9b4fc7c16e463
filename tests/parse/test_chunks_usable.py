"""``chunks._any_unusable`` (tag length and path shape) against the string comparisons it stands in for."""
from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.parse import chunks, tokenizer
from treediff.parse.tokenizer import split_lines, tokenize_records

_LINE = st.tuples(
    st.sampled_from(["MOVE", "RESULT"]),
    st.sampled_from([None, "-", "e2e4", "e2e4/e7e5", "--", "Nf3", "-/-"]),
    st.sampled_from([None, "FULL", "-"]),
)


def _line(tag: str, path: str | None, act: str | None) -> str:
    return " ".join([tag] + ([f"path={path}"] if path is not None else []) + ["ply=1"]
                    + ([f"act={act}"] if act is not None else []))


def _by_strings(fast: pl.DataFrame) -> bool:
    path, tag, act = (fast.get_column(k) for k in ("path", "tag", "act"))
    is_move = tag == "MOVE"
    return bool((path.is_null() | (is_move & act.is_null()) | (is_move & (path == "-").fill_null(False))).any())


@pytest.mark.parametrize("compiled", [True, False])
@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=30))
def test_any_unusable_matches_string_compares(compiled, lines):
    data = "".join(_line(*t) + "\n" for t in lines).encode()
    with pytest.MonkeyPatch.context() as m:
        if not compiled:
            m.setenv("TREEDIFF_TOKENIZER", "regex")
        assert tokenizer.ctok_available() == (compiled and tokenizer._ctok is not None)
        fast = tokenize_records(split_lines(data)[0]).fast
    assert fast.height == len(lines)
    assert chunks._any_unusable(fast) == _by_strings(fast)
    # And the usable rows are those without such a problem, as before.
    kept = chunks._usable_fast_rows(fast, chunks.Problems())
    expected = [t for t in lines if t[1] is not None and not (t[0] == "MOVE" and (t[2] is None or t[1] == "-"))]
    assert kept.height == len(expected)

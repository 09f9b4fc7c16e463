"""The safe expression grammar (treediff/report/expr.py): what it accepts, what it refuses (with the position),
and that one parse evaluates the same over polars columns and over a dict of scalars."""
from __future__ import annotations

import polars as pl
import pytest

from treediff.model.errors import InputError
from treediff.report.expr import ExprError, check_types, parse, tokenize

COLUMNS = ("kind", "mn", "depth", "hist", "ratio")


@pytest.mark.parametrize("text, row, expected", [
    ('kind == "SEARCH" and mn >= 6', {"kind": "SEARCH", "mn": 6}, True),
    ('kind == "SEARCH" and mn >= 6', {"kind": "SEARCH", "mn": 5}, False),
    ("not (mn < 3 or depth > 4)", {"mn": 3, "depth": 4}, True),
    ("hist < -100", {"hist": -101}, True),
    ("hist < -100", {"hist": None}, None),         # missing: unknown, never a match
    ("not hist < -100", {"hist": None}, None),     # ... nor its negation
    ("ratio <= 1.5e0 and 'x' != kind", {"ratio": 1.5, "kind": "y"}, True),
    ("mn", {"mn": 0}, False),                       # a bare number: true when non-zero
    ("true or hist > 1", {"hist": None}, True),     # Kleene: true or unknown is true
    ("false and hist > 1", {"hist": None}, False),
    ("mn >= 2 and mn <= 4 or kind == 'EXTEND'", {"mn": 9, "kind": "EXTEND"}, True),  # and binds tighter
])
def test_evaluate_over_scalars_and_columns_agree(text, row, expected):
    expr = parse(text, COLUMNS)
    assert expr.evaluate(row) is expected or expr.evaluate(row) == expected
    frame = pl.DataFrame({c: [row.get(c)] for c in COLUMNS},
                         schema={"kind": pl.String, "mn": pl.Float64, "depth": pl.Float64, "hist": pl.Float64,
                                 "ratio": pl.Float64})
    got = frame.with_columns(expr.to_polars().alias("_m")).get_column("_m").to_list()[0]
    assert got == expected


@pytest.mark.parametrize("text, message", [
    ("__import__('os')", "function calls are not allowed at position 11"),
    ("kind.upper()", "unexpected character '.' at position 5"),
    ("().__class__", "unexpected character '.' at position 3"),
    ("()", "expected a value but found ')' at position 2"),
    ("mn[0] > 1", "unexpected character '[' at position 3"),
    ("mn >= 1 and eval", "unknown name 'eval'"),
    ("lambda: 1", "unexpected character ':' at position 7"),
    ("mn + 1 > 2", "unexpected character '+' at position 4"),
    ("mn >= ", "expected a value but found the end at position 7"),
    ("mn >= 1 mn", "unexpected 'mn' at position 9"),
    ('kind == "SEARCH', "unexpected character '\"' at position 9"),
    ("- mn > 1", "expected a number after '-' but found 'mn' at position 3"),
    ("and", "expected a value but found 'and' at position 1"),
])
def test_refused_with_position(text, message):
    with pytest.raises(ExprError) as info:
        parse(text, COLUMNS, "--rule")
    assert str(info.value).startswith("--rule: ")
    assert message in str(info.value), str(info.value)
    assert isinstance(info.value, InputError)  # the CLI's exit 2


def test_error_marks_the_offending_place():
    with pytest.raises(ExprError) as info:
        parse("mn >= 2 and open(x)", COLUMNS, "--rule")
    assert str(info.value).endswith("mn >= 2 and open\u2192(x)")


def test_type_checks():
    types = {"kind": str, "mn": float, "depth": float, "hist": float, "ratio": float}
    with pytest.raises(ExprError, match="cannot compare kind with 3"):
        check_types(parse("kind > 3", COLUMNS), types, "kind > 3")
    with pytest.raises(ExprError, match="cannot compare mn with 'x'"):
        check_types(parse("not mn == 'x'", COLUMNS), types, "not mn == 'x'")
    check_types(parse("kind == 'SEARCH' and mn > 3", COLUMNS), types, "")


def test_tokens():
    assert [t.kind for t in tokenize("mn>=-1.5")] == ["name", "op", "op", "number", "end"]

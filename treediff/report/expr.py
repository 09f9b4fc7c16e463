"""A small, safe boolean expression language: ``whatif --rule`` (and, over summary figures, ``compare --fail-if``).

Grammar (never Python ``eval``; anything else is refused with its position)::

    expr       := or
    or         := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | comparison
    comparison := operand (("==" | "!=" | "<" | "<=" | ">" | ">=") operand)? | "(" expr ")"
    operand    := NUMBER | "-" NUMBER | STRING | NAME | "true" | "false"

``NAME`` must be one of the caller's whitelisted columns; strings are in
double or single quotes (no escapes).  A comparison with a missing value is
false, and so is its negation (``not``): a try without ``hist`` matches
neither ``hist < 0`` nor ``not hist < 0``.  A bare name is true when the
value is true (booleans) or non-zero.

:func:`parse` gives an :class:`Expr` tree; :meth:`Expr.to_polars` compiles it
to a polars expression over columns, :meth:`Expr.evaluate` evaluates it over
a mapping of scalar values (missing value: None).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import polars as pl

from treediff.model.errors import InputError


class ExprError(InputError):
    """An expression that does not read: the message names the offending position (1-based)."""


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<string>"[^"]*"|'[^']*')
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|-)
""", re.VERBOSE)

_COMPARE = ("==", "!=", "<", "<=", ">", ">=")
_KEYWORDS = ("and", "or", "not", "true", "false")


@dataclass(frozen=True)
class Token:
    kind: str   #: number, string, name, op, end
    text: str
    pos: int    #: 0-based offset in the source


def tokenize(text: str, what: str = "expression") -> list[Token]:
    """The tokens of ``text`` (an :class:`ExprError` at the first character no token starts with)."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprError(_where(text, pos, what, f"unexpected character {text[pos]!r}"))
        kind = m.lastgroup or ""
        if kind != "space":
            tokens.append(Token(kind, m.group(), pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


def _where(text: str, pos: int, what: str, message: str) -> str:
    return f"{what}: {message} at position {pos + 1}: {text[:pos]}\u2192{text[pos:]}"


class Expr:
    """A node of a parsed expression."""

    def to_polars(self) -> pl.Expr:
        raise NotImplementedError

    def evaluate(self, values: Mapping[str, object]) -> object:
        raise NotImplementedError

    def names(self) -> set[str]:
        return set()


@dataclass(frozen=True)
class Literal(Expr):
    value: object

    def to_polars(self) -> pl.Expr:
        return pl.lit(self.value)

    def evaluate(self, values: Mapping[str, object]) -> object:
        return self.value


@dataclass(frozen=True)
class Name(Expr):
    name: str

    def to_polars(self) -> pl.Expr:
        return pl.col(self.name)

    def evaluate(self, values: Mapping[str, object]) -> object:
        value = values.get(self.name)
        if isinstance(value, float) and math.isnan(value):
            return None
        return value

    def names(self) -> set[str]:
        return {self.name}


_OPS: dict[str, Callable[[object, object], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr

    def to_polars(self) -> pl.Expr:
        a, b = self.left.to_polars(), self.right.to_polars()
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[self.op]

    def evaluate(self, values: Mapping[str, object]) -> object:
        a, b = self.left.evaluate(values), self.right.evaluate(values)
        if a is None or b is None:
            return None
        if isinstance(a, str) != isinstance(b, str):
            return False if self.op != "!=" else True
        return _OPS[self.op](a, b)

    def names(self) -> set[str]:
        return self.left.names() | self.right.names()


@dataclass(frozen=True)
class Truth(Expr):
    """A bare operand used as a condition."""

    item: Expr

    def to_polars(self) -> pl.Expr:
        e = self.item.to_polars()
        return e.cast(pl.Boolean)

    def evaluate(self, values: Mapping[str, object]) -> object:
        v = self.item.evaluate(values)
        return None if v is None else bool(v)

    def names(self) -> set[str]:
        return self.item.names()


@dataclass(frozen=True)
class Not(Expr):
    item: Expr

    def to_polars(self) -> pl.Expr:
        return ~self.item.to_polars()

    def evaluate(self, values: Mapping[str, object]) -> object:
        v = self.item.evaluate(values)
        return None if v is None else not v

    def names(self) -> set[str]:
        return self.item.names()


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  #: and, or
    items: tuple[Expr, ...]

    def to_polars(self) -> pl.Expr:
        out = self.items[0].to_polars()
        for item in self.items[1:]:
            out = (out & item.to_polars()) if self.op == "and" else (out | item.to_polars())
        return out

    def evaluate(self, values: Mapping[str, object]) -> object:
        # Three-valued logic, as polars (Kleene): None is unknown.
        got = [item.evaluate(values) for item in self.items]
        if self.op == "and":
            if any(v is False for v in got):
                return False
            return None if any(v is None for v in got) else True
        if any(v is True for v in got):
            return True
        return None if any(v is None for v in got) else False

    def names(self) -> set[str]:
        return set().union(*(i.names() for i in self.items))


class _Parser:
    def __init__(self, text: str, columns: Sequence[str], what: str):
        self.text = text
        self.columns = tuple(columns)
        self.what = what
        self.tokens = tokenize(text, what)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, message: str, tok: Token | None = None) -> ExprError:
        t = tok or self.tok
        return ExprError(_where(self.text, t.pos, self.what, message))

    def take(self) -> Token:
        t = self.tok
        self.i += 1
        return t

    def is_word(self, word: str) -> bool:
        return self.tok.kind == "name" and self.tok.text == word

    def parse(self) -> Expr:
        if self.tok.kind == "end":
            raise self.fail("empty expression")
        e = self.parse_or()
        if self.tok.kind != "end":
            raise self.fail(f"unexpected {self._describe(self.tok)}")
        return e

    def parse_or(self) -> Expr:
        items = [self.parse_and()]
        while self.is_word("or"):
            self.take()
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else BoolOp("or", tuple(items))

    def parse_and(self) -> Expr:
        items = [self.parse_not()]
        while self.is_word("and"):
            self.take()
            items.append(self.parse_not())
        return items[0] if len(items) == 1 else BoolOp("and", tuple(items))

    def parse_not(self) -> Expr:
        if self.is_word("not"):
            self.take()
            return Not(self.parse_not())
        return self.parse_comparison()

    def parse_comparison(self) -> Expr:
        if self.tok.kind == "op" and self.tok.text == "(":
            self.take()
            inner = self.parse_or()
            if not (self.tok.kind == "op" and self.tok.text == ")"):
                raise self.fail(f"expected ')' but found {self._describe(self.tok)}")
            self.take()
            return inner
        left = self.parse_operand()
        if self.tok.kind == "op" and self.tok.text in _COMPARE:
            op = self.take().text
            right = self.parse_operand()
            if self.tok.kind == "op" and self.tok.text in _COMPARE:
                raise self.fail("chained comparisons are not allowed (use and)")
            return Compare(op, left, right)
        return Truth(left)

    def parse_operand(self) -> Expr:
        t = self.tok
        if t.kind == "number":
            self.take()
            return Literal(_number(t.text))
        if t.kind == "op" and t.text == "-":
            self.take()
            if self.tok.kind != "number":
                raise self.fail(f"expected a number after '-' but found {self._describe(self.tok)}")
            return Literal(-_number(self.take().text))
        if t.kind == "string":
            self.take()
            return Literal(t.text[1:-1])
        if t.kind == "name":
            if t.text in ("true", "false"):
                self.take()
                return Literal(t.text == "true")
            if t.text in _KEYWORDS:
                raise self.fail(f"expected a value but found {t.text!r}")
            self.take()
            if self.tok.kind == "op" and self.tok.text == "(":
                raise self.fail("function calls are not allowed", self.tok)
            if t.text not in self.columns:
                raise self.fail(f"unknown name {t.text!r} (allowed: {', '.join(self.columns)})", t)
            return Name(t.text)
        raise self.fail(f"expected a value but found {self._describe(t)}")

    @staticmethod
    def _describe(t: Token) -> str:
        return "the end" if t.kind == "end" else repr(t.text)


def _number(text: str) -> int | float:
    return int(text) if re.fullmatch(r"\d+", text) else float(text)


def parse(text: str, columns: Sequence[str], what: str = "expression") -> Expr:
    """Parse ``text`` over the whitelisted ``columns`` (``what`` prefixes error messages, e.g. ``--rule``)."""
    return _Parser(text, columns, what).parse()


def check_types(expr: Expr, types: Mapping[str, type], text: str, what: str = "expression") -> None:
    """Refuse comparisons of a string column with a number, or of a numeric column with a string."""

    def kind(e: Expr) -> type | None:
        if isinstance(e, Literal):
            return str if isinstance(e.value, str) else (bool if isinstance(e.value, bool) else float)
        if isinstance(e, Name):
            return types.get(e.name)
        return None

    def walk(e: Expr) -> None:
        if isinstance(e, Compare):
            a, b = kind(e.left), kind(e.right)
            if a is not None and b is not None and (a is str) != (b is str):
                raise ExprError(f"{what}: cannot compare {_show(e.left)} with {_show(e.right)} "
                                f"(a {'string' if a is str else 'number'} with a "
                                f"{'string' if b is str else 'number'}) in: {text}")
        for child in (getattr(e, "left", None), getattr(e, "right", None), getattr(e, "item", None),
                      *getattr(e, "items", ())):
            if isinstance(child, Expr):
                walk(child)

    walk(expr)


def _show(e: Expr) -> str:
    if isinstance(e, Name):
        return e.name
    if isinstance(e, Literal):
        return repr(e.value)
    return "an expression"

"""Dialect parsers.  Every dialect is registered here, in one place.

Adding an engine: write ``treediff/parse/<name>.py`` with a ``DIALECT``
(:class:`~treediff.parse.dialects.base.Dialect`) and add its module name to
:data:`_DIALECT_MODULES`.
"""
from __future__ import annotations

import importlib

from treediff.parse.dialects.base import Dialect, Notation

_DIALECT_MODULES = ("typhoon", "stockfish", "crafty")

DIALECTS: dict[str, Dialect] = {}
for _name in _DIALECT_MODULES:
    _d = importlib.import_module(f"treediff.parse.dialects.{_name}").DIALECT
    DIALECTS[_d.name] = _d


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name`` (case-insensitive); ``KeyError`` if unknown."""
    return DIALECTS[name.lower()]


__all__ = ["DIALECTS", "Dialect", "Notation", "get_dialect"]

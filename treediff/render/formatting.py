"""How numbers are shown in the human formats (table, markdown).

CSV and JSON carry the full-precision values; the human formats round them
to the precision below, so the numbers agree to the shown precision.
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import pandas as pd

from treediff.model.text import printable

MISSING = "-"


def precision(column: str) -> int:
    """Decimal places shown for a float column, chosen from its name."""
    name = column.lower()
    if "pct" in name or name.endswith("%"):
        return 2
    if "ebf" in name or "fanout" in name or "ratio" in name:
        return 3
    if "red" in name or "plies" in name:
        return 2
    if "mean" in name:
        return 1
    return 2


def is_missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return isinstance(value, Real) and math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def format_cell(column: str, value) -> str:
    """One cell as text: integers with thousands separators, floats at :func:`precision`."""
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return f"{int(value):,}"
    if isinstance(value, Real):
        f = float(value)
        if f.is_integer() and "pct" not in column and precision(column) and not _always_decimal(column):
            return f"{int(f):,}"
        return f"{f:,.{precision(column)}f}"
    return printable(str(value))  # ids, FENs, paths from a log: no escape sequence reaches a terminal


def _always_decimal(column: str) -> bool:
    name = column.lower()
    return any(t in name for t in ("ebf", "fanout", "ratio", "red", "plies", "mean"))


def always_decimal(column: str) -> bool:
    """A column that is fractional by its name (rates, ratios, EBF, means, depths in plies), even when its
    values happen to be whole: machine formats keep it float (other whole-valued float columns are counts)."""
    name = column.lower()
    return "pct" in name or name.endswith("%") or "depth" in name or _always_decimal(column)


def to_python(value):
    """A JSON-safe Python value (NaN and missing become None)."""
    if is_missing(value):
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    return str(value)


#: Width the human formats fit when neither ``--width`` nor the terminal says (piped without ``COLUMNS``).
DEFAULT_WIDTH = 100


def fit_width(width: int | None = None) -> int:
    """The width report and compare fit: ``width`` (``--width N``), else the terminal's (``COLUMNS``
    first, as :func:`shutil.get_terminal_size` reads it), else :data:`DEFAULT_WIDTH` (the rule diff uses)."""
    if width:
        return int(width)
    import shutil

    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns

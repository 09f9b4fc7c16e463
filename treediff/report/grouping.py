"""Grouping records and searches by engine, phase, position and iteration.

Every report table is computed per *group*.  ``engine`` is always a grouping
key (mixing engines in one number is never meaningful); ``--by`` adds
``source`` (the log a search came from: two runs of one engine side by side),
``phase``, ``position``, ``iter`` and the record-level keys ``ply`` (the
deciding node's ply) and ``depth`` (the deciding node's remaining depth, whole
plies) and ``nt`` (a MOVE record's node type), which split a search's records.  Groups are numbered densely and the
numbers are used with ``numpy.bincount`` so that no table loops over rows in
Python.

Group order is stable and readable: engines and positions in order of first
appearance in the searches table, phases as opening, middlegame, endgame
(others after), iterations, plies and depths ascending.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError

BY_CHOICES = ("engine", "source", "phase", "position", "iter", "ply", "depth", "nt")
SEARCH_KEYS = ("engine", "source", "phase", "position")
#: Keys that are a property of each record, not of its search (a record's cell has a third component).
#: ``nt``: the node type a MOVE record carries (``nt=``: PV, CUT, ALL; RESULT records have none).
RECORD_KEYS = ("ply", "depth", "nt")
#: The records column each record-level key reads.
RECORD_KEY_COLUMNS = {"ply": "ply", "depth": "depth", "nt": "node_type"}
PHASE_ORDER = ("opening", "middlegame", "endgame")


def parse_by(by: str | Iterable[str] | None) -> tuple[str, ...]:
    """Normalize a ``--by`` value (comma-separated or a list) to ordered keys, ``engine`` first."""
    if by is None:
        items: list[str] = []
    elif isinstance(by, str):
        items = [b.strip() for b in by.split(",") if b.strip()]
    else:
        items = [str(b).strip() for b in by]
    unknown = [b for b in items if b not in BY_CHOICES]
    if unknown:
        raise InputError(f"--by: unknown key {unknown[0]!r} (choose from {', '.join(BY_CHOICES)})")
    keys = ["engine", *[b for b in BY_CHOICES[1:] if b in items]]
    return tuple(keys)


def codes_of(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (-1 for missing) and the category values of a column, without a Python loop."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return np.asarray(series.cat.codes, dtype=np.int64), np.asarray(series.cat.categories, dtype=object)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _ordered_codes(values: pd.Series, key: str) -> tuple[np.ndarray, list]:
    """Codes for one search-level key in display order (see module docstring)."""
    filled = values.astype("object").where(values.notna(), None)
    if key == "phase":
        seen = list(dict.fromkeys(v for v in filled if v is not None))
        order = [p for p in PHASE_ORDER if p in seen] + [p for p in seen if p not in PHASE_ORDER]
    else:
        order = list(dict.fromkeys(v for v in filled if v is not None))
    if filled.isna().any():
        order.append(None)
    index = {v: i for i, v in enumerate(order)}
    return np.fromiter((index[v] for v in filled), dtype=np.int64, count=len(filled)), order


@dataclass
class SearchGroups:
    """Searches mapped to groups of the search-level keys (engine, phase, position)."""

    keys: tuple[str, ...]
    search_group: np.ndarray  #: group number of each row of the searches table
    groups: pd.DataFrame      #: one row per group, the key columns, in display order


def group_searches(searches: pd.DataFrame, keys: Sequence[str]) -> SearchGroups:
    """Group the searches table by the search-level keys among ``keys``."""
    skeys = tuple(k for k in keys if k in SEARCH_KEYS)
    n = len(searches)
    if n == 0:
        return SearchGroups(skeys, np.zeros(0, dtype=np.int64), pd.DataFrame({k: [] for k in skeys}))
    combined = np.zeros(n, dtype=np.int64)
    orders = []
    for key in skeys:
        if key not in searches.columns:
            raise InputError(f"the searches table has no {key!r} column; cannot group by it")
        codes, order = _ordered_codes(searches[key], key)
        combined = combined * (len(order) + 1) + codes
        orders.append(order)
    uniq, inverse = np.unique(combined, return_inverse=True)
    cols = {}
    rest = uniq.copy()
    for key, order in reversed(list(zip(skeys, orders))):
        idx = rest % (len(order) + 1)
        rest = rest // (len(order) + 1)
        cols[key] = [order[i] for i in idx]
    groups = pd.DataFrame({k: cols[k] for k in skeys})
    return SearchGroups(skeys, inverse.astype(np.int64), groups)


@dataclass
class RecordGroups:
    """Records mapped to groups of all keys (search-level keys, plus ``iter`` when asked)."""

    keys: tuple[str, ...]
    record_group: np.ndarray  #: group number of each record
    groups: pd.DataFrame      #: one row per group, the key columns

    @property
    def n(self) -> int:
        return len(self.groups)


def key_frame(groups: pd.DataFrame, index: np.ndarray) -> pd.DataFrame:
    """The key columns of the groups numbered ``index``, as a fresh frame."""
    return groups.iloc[np.asarray(index, dtype=np.int64)].reset_index(drop=True)

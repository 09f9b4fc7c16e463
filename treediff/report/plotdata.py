"""Figures the charts of ``--plot DIR`` need beyond the report's own tables (computed here, drawn in render/).

``engine_ebf_cumulative``
    For searches whose node counts come from the engine (``node_source`` =
    ``engine``: the runner's ``info depth d nodes n`` lines, no trace), the EBF
    by iteration from the engine's *cumulative* counts C(d):
    ``ebf_cumulative`` = sqrt(Σ C(d) / Σ C(d − 2)) over the group's engine-sourced
    searches that list both d and d − 2 (``pairs``).  The report's ``ebf_iter``
    differences the cumulative counts (N(d) = C(d) − C(d − 1)), which falls below 1
    whenever an iteration is cheaper than the one two before it (a warm hash
    table); a cumulative count never decreases, so this ratio is ≥ 1 and the
    plot draws it instead.  A search whose counts decrease (a counter restarted
    between depths) is left out of the pairs where they do.
"""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report.grouping import SEARCH_KEYS, group_searches, key_frame


def _cumulative(text, where: str) -> dict[int, float]:
    """``{depth: cumulative nodes}`` of one search's ``iter_nodes`` JSON (empty when absent)."""
    if text is None or text is pd.NA or (isinstance(text, float) and np.isnan(text)):
        return {}
    try:
        return {int(d): float(n) for d, n in json.loads(text)}
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}: iter_nodes is not a JSON list of [depth, nodes] pairs: {text!r}") from exc


def engine_ebf_cumulative(searches: pd.DataFrame, keys: Sequence[str] = ("engine",)) -> pd.DataFrame:
    """Per group of the search-level ``keys`` and iteration d (plies): ``pairs`` and ``ebf_cumulative``
    over the engine-sourced searches (module docstring); no rows for groups without any."""
    skeys = [k for k in keys if k in SEARCH_KEYS]
    columns = [*skeys, "iter", "pairs", "ebf_cumulative"]
    if not len(searches) or "node_source" not in searches.columns or "iter_nodes" not in searches.columns:
        return pd.DataFrame({c: [] for c in columns})
    engine = (searches["node_source"].astype("object") == "engine").to_numpy()
    if not engine.any():
        return pd.DataFrame({c: [] for c in columns})
    sg = group_searches(searches, skeys)
    # One JSON list per engine-sourced search (searches, not records: a few hundred rows at most).
    rows = np.flatnonzero(engine)
    parsed = [_cumulative(searches["iter_nodes"].iat[r], f"search {searches['search'].iat[r]}") for r in rows]
    width = max((max(c) for c in parsed if c), default=0) + 1
    cum = np.zeros((len(rows), width))
    for i, c in enumerate(parsed):
        for d, n in c.items():
            cum[i, d] = n
    have = cum > 0
    pair = np.zeros_like(have)
    pair[:, 2:] = have[:, 2:] & have[:, :-2] & (cum[:, 2:] >= cum[:, :-2])
    shifted = np.zeros_like(cum)
    shifted[:, 2:] = cum[:, :-2]
    n_g = len(sg.groups)
    cell = sg.search_group[rows][:, None] * width + np.arange(width)[None, :]
    size = n_g * width
    pairs = np.bincount(cell[pair], minlength=size)
    num = np.bincount(cell[pair], weights=cum[pair], minlength=size)
    den = np.bincount(cell[pair], weights=shifted[pair], minlength=size)
    keep = np.flatnonzero(pairs > 0)
    body = pd.DataFrame({"iter": (keep % width).astype(np.int64), "pairs": pairs[keep].astype(np.int64),
                         "ebf_cumulative": np.sqrt(num[keep] / den[keep])})
    return pd.concat([key_frame(sg.groups, keep // width), body], axis=1)[columns]

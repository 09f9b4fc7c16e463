"""Choosing and folding the aligned rows a diff shows: pure computation on an Alignment's rows.

* :func:`normalize_path` reads a user-typed path (``e2e4/e7e5``, ``e7e8Q``,
  null spellings, SAN when the FEN is known) as the normalized UCI key;
* :func:`select_rows` applies ``--under``, ``--max-ply`` and ``--only-diff``;
* :func:`fold` folds runs of identical (``same``) rows more than ``context``
  rows away from any change into one item with a count.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from treediff.model.errors import InputError


def normalize_path(text: str, fen: str | None = None) -> str:
    """The normalized UCI path key for a user-typed path (``--under``).

    Read as the parser reads paths (:func:`~treediff.parse.moves.normalize_typed_path`):
    moves separated by ``/``; coordinate moves are lower-cased, null
    spellings become ``0000``, and other tokens are read as SAN in ``fen``'s
    position when it is known.  ``-``, ``/`` or an empty string is the root.
    """
    # (python-chess, ~30 ms of start-up, with the move reader: a diff without --under/--drill never loads it)
    from treediff.parse.moves import UnreadableMove, normalize_typed_path

    try:
        return normalize_typed_path(text, fen)
    except UnreadableMove as exc:
        if not exc.position_known:
            raise InputError(
                f"--under: cannot read move {exc.token!r} (write moves as UCI, e.g. e2e4/e7e5)"
            ) from None
        raise InputError(f"--under: {exc.token!r} is not a legal move after {exc.after or 'the root'}") from None


def select_rows(
    rows: pd.DataFrame,
    under: str | None = None,
    max_ply: int | None = None,
    only_diff: bool = False,
) -> pd.DataFrame:
    """The rows a view shows, in tree order; the index keeps the alignment's row numbers.

    ``under``: a normalized path; only it and its subtree (error if absent).
    ``max_ply``: rows at most that many plies from the root.  ``only_diff``:
    rows whose status is not ``same``.
    """
    keep = np.ones(len(rows), dtype=bool)
    if under:
        hits = np.flatnonzero(rows["path"].to_numpy(dtype=object) == under)
        if len(hits) == 0:
            raise InputError(f"--under {under}: neither side has this path")
        start = int(hits[0])
        keep[:] = False
        keep[start : start + int(rows["subtree_rows"].iloc[start])] = True
    if max_ply is not None:
        keep &= rows["ply"].to_numpy() <= max_ply
    if only_diff:
        keep &= rows["status"].to_numpy(dtype=object) != "same"
    return rows[keep]


def fold(rows: pd.DataFrame, context: int | None) -> pd.DataFrame:
    """Display items: ``row`` (position in ``rows``, -1 for a fold) and ``folded`` (rows a fold hides).

    With ``context`` None nothing is folded.  Otherwise a ``same`` row is
    shown only within ``context`` rows of a non-``same`` row; each run of
    hidden rows becomes one fold item.
    """
    n = len(rows)
    positions = np.arange(n)
    if context is None or n == 0:
        return pd.DataFrame({"row": positions, "folded": np.zeros(n, dtype=np.int64)})
    changed = np.flatnonzero(rows["status"].to_numpy(dtype=object) != "same")
    if len(changed):
        after = np.searchsorted(changed, positions)
        dist_next = np.where(after < len(changed), changed[np.minimum(after, len(changed) - 1)] - positions, n)
        dist_prev = np.where(after > 0, positions - changed[np.maximum(after - 1, 0)], n)
        shown = np.minimum(dist_next, dist_prev) <= context
    else:
        shown = np.zeros(n, dtype=bool)
    run_start = ~shown & np.r_[True, shown[:-1]]
    run_id = np.cumsum(run_start) - 1
    run_len = np.bincount(run_id[~shown], minlength=int(run_start.sum()))
    item = shown | run_start
    folded = np.zeros(n, dtype=np.int64)
    folded[run_start] = run_len[run_id[run_start]]
    return pd.DataFrame(
        {"row": np.where(shown, positions, -1)[item], "folded": folded[item]}
    )

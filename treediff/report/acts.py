"""The ``acts``, ``kinds`` and ``skips`` tables: counts of MOVE decisions.

* **acts**: MOVE records per raw ``act=`` value, with its ``kind`` and its share
  of the group's MOVE records (``pct_of_moves``, percent).
* **kinds**: the same per shared ``kind``.
* **skips**: PRUNE-kind decisions (moves skipped without being searched) per
  act, as percent of the group's MOVE records, plus an ``(all)`` row.

RESULT records are never counted here.  Rows are sorted by count, largest
first, within each group.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from treediff.report.context import Context
from treediff.report.grouping import key_frame

ALL_ROW = "(all)"


def move_totals(ctx: Context) -> np.ndarray:
    """Number of MOVE records per record group."""
    if "move_totals" not in ctx._cache:
        g = ctx.record_groups.record_group[ctx.is_move]
        ctx._cache["move_totals"] = np.bincount(g, minlength=ctx.record_groups.n).astype(np.int64)
    return ctx._cache["move_totals"]


def _act_kind_counts(ctx: Context) -> pd.DataFrame:
    """Long frame: group, act, kind, count (only non-zero cells), for MOVE records (cached on ``ctx``)."""
    if "act_kind_counts" not in ctx._cache:
        ctx._cache["act_kind_counts"] = _count_act_kind(ctx)
    return ctx._cache["act_kind_counts"]


def _count_act_kind(ctx: Context) -> pd.DataFrame:
    move = ctx.is_move
    g = ctx.record_groups.record_group[move]
    a_codes, a_cats = ctx.codes("act")
    k_codes, k_cats = ctx.codes("kind")
    a = a_codes[move] + 1  # -1 (missing) becomes 0
    k = k_codes[move] + 1
    na, nk = len(a_cats) + 1, len(k_cats) + 1
    flat = np.bincount((g * na + a) * nk + k, minlength=ctx.record_groups.n * na * nk)
    cells = np.flatnonzero(flat)
    acts = np.concatenate([[None], a_cats])
    kinds = np.concatenate([[None], k_cats])
    return pd.DataFrame(
        {
            "group": cells // (na * nk),
            "act": acts[(cells // nk) % na],
            "kind": kinds[cells % nk],
            "count": flat[cells].astype(np.int64),
        }
    )


def _finish(ctx: Context, long: pd.DataFrame, label_cols: list[str]) -> pd.DataFrame:
    totals = move_totals(ctx)
    long = long.copy()
    long["moves"] = totals[long["group"].to_numpy()]
    long["pct_of_moves"] = 100.0 * long["count"] / long["moves"]
    long = long.sort_values(["group", "count", *label_cols], ascending=[True, False, *([True] * len(label_cols))],
                            kind="stable")
    keys = key_frame(ctx.record_groups.groups, long["group"].to_numpy())
    body = long[[*label_cols, "count", "pct_of_moves", "moves"]].reset_index(drop=True)
    return pd.concat([keys, body], axis=1)


def acts_table(ctx: Context) -> pd.DataFrame:
    """MOVE decisions per raw act (with its kind), sorted by count, with % of MOVE decisions."""
    long = _act_kind_counts(ctx)
    return _finish(ctx, long, ["act", "kind"])


def kinds_table(ctx: Context) -> pd.DataFrame:
    """MOVE decisions per shared kind, sorted by count, with % of MOVE decisions."""
    long = _act_kind_counts(ctx).groupby(["group", "kind"], as_index=False, sort=False, dropna=False)["count"].sum()
    return _finish(ctx, long, ["kind"])


def skips_table(ctx: Context) -> pd.DataFrame:
    """PRUNE decisions per act as % of MOVE decisions, plus an ``(all)`` row per group.

    Groups without any PRUNE decision get an ``(all)`` row with count 0.
    """
    long = _act_kind_counts(ctx)
    prune = long[long["kind"] == "PRUNE"][["group", "act", "count"]]
    total = prune.groupby("group")["count"].sum()
    all_rows = pd.DataFrame({"group": np.arange(ctx.record_groups.n)})
    all_rows["act"] = ALL_ROW
    all_rows["count"] = total.reindex(all_rows["group"]).fillna(0).astype(np.int64).to_numpy()
    # The (all) row sorts first: it is the group's skip volume.
    all_rows["_order"] = 0
    prune = prune.assign(_order=1)
    both = pd.concat([all_rows, prune], ignore_index=True)
    totals = move_totals(ctx)
    both["moves"] = totals[both["group"].to_numpy()]
    with np.errstate(invalid="ignore", divide="ignore"):
        both["pct_of_moves"] = 100.0 * both["count"] / both["moves"].where(both["moves"] > 0)
    both = both.sort_values(["group", "_order", "count", "act"], ascending=[True, True, False, True], kind="stable")
    keys = key_frame(ctx.record_groups.groups, both["group"].to_numpy())
    body = both[["act", "count", "pct_of_moves", "moves"]].reset_index(drop=True)
    return pd.concat([keys, body], axis=1)

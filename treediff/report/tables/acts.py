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

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan

ALL_ROW = "(all)"

TITLES = {
    "acts": "MOVE decisions per act",
    "kinds": "MOVE decisions per kind",
    "skips": "Unsearched skips (kind PRUNE) as % of MOVE decisions",
}


@dataclass
class ActCounts:
    """MOVE records per (srow, iter) cell: in total (``moves``) and per (act, kind) (``long``)."""

    moves: pd.DataFrame  #: srow, iter, moves
    long: pd.DataFrame   #: srow, iter, act, kind, count (non-zero cells only)


def count_act_kind(batch: Batch) -> pd.DataFrame:
    """Long frame: group, act, kind, count (only non-zero cells), for MOVE records of a batch's cells."""
    move = batch.is_move
    g = batch.record_groups.record_group[move]
    a_codes, a_cats = batch.codes("act")
    k_codes, k_cats = batch.codes("kind")
    a = a_codes[move] + 1  # -1 (missing) becomes 0
    k = k_codes[move] + 1
    na, nk = len(a_cats) + 1, len(k_cats) + 1
    flat = np.bincount((g * na + a) * nk + k, minlength=batch.record_groups.n * na * nk)
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


def act_counts(batch: Batch) -> ActCounts:
    """The :class:`ActCounts` partial of one batch."""
    moves = np.bincount(batch.record_groups.record_group[batch.is_move], minlength=batch.n_cells)
    long = count_act_kind(batch)
    g = long["group"].to_numpy()
    return ActCounts(
        moves=batch.cell_frame(np.arange(batch.n_cells), moves=moves.astype(np.int64)),
        long=batch.cell_frame(g, act=long["act"].to_numpy(), kind=long["kind"].to_numpy(),
                              count=long["count"].to_numpy()),
    )


def merge_act_counts(partials: Sequence[ActCounts], grouping: Grouping) -> tuple[np.ndarray, pd.DataFrame]:
    """MOVE records per group, and the long (group, act, kind, count) frame summed per group."""
    moves = grouping.total(concat([p.moves for p in partials], ["srow", "iter", "moves"]), "moves")
    ak = concat([p.long for p in partials], ["srow", "iter", "act", "kind", "count"])
    long = pd.DataFrame({"group": grouping.group_of(ak), "act": ak["act"].to_numpy(dtype=object),
                         "kind": ak["kind"].to_numpy(dtype=object), "count": ak["count"].to_numpy(dtype=np.int64)})
    long = long.groupby(["group", "act", "kind"], sort=True, dropna=False, as_index=False)["count"].sum()
    long["act"] = none_for_nan(long["act"].to_numpy())
    long["kind"] = none_for_nan(long["kind"].to_numpy())
    long["group"] = long["group"].astype(np.int64)
    long["count"] = long["count"].astype(np.int64)
    return moves, long


def _finish(groups: pd.DataFrame, totals: np.ndarray, long: pd.DataFrame, label_cols: list[str]) -> pd.DataFrame:
    long = long.copy()
    long["moves"] = totals[long["group"].to_numpy()]
    long["pct_of_moves"] = 100.0 * long["count"] / long["moves"]
    long = long.sort_values(["group", "count", *label_cols], ascending=[True, False, *([True] * len(label_cols))],
                            kind="stable")
    keys = key_frame(groups, long["group"].to_numpy())
    body = long[[*label_cols, "count", "pct_of_moves", "moves"]].reset_index(drop=True)
    return pd.concat([keys, body], axis=1)


def acts_frame(groups: pd.DataFrame, totals: np.ndarray, long: pd.DataFrame) -> pd.DataFrame:
    """MOVE decisions per raw act (with its kind), sorted by count, with % of MOVE decisions."""
    return _finish(groups, totals, long, ["act", "kind"])


def kinds_frame(groups: pd.DataFrame, totals: np.ndarray, long: pd.DataFrame) -> pd.DataFrame:
    """MOVE decisions per shared kind, sorted by count, with % of MOVE decisions."""
    per_kind = long.groupby(["group", "kind"], as_index=False, sort=False, dropna=False)["count"].sum()
    return _finish(groups, totals, per_kind, ["kind"])


def skips_frame(groups: pd.DataFrame, totals: np.ndarray, long: pd.DataFrame) -> pd.DataFrame:
    """PRUNE decisions per act as % of MOVE decisions, plus an ``(all)`` row per group.

    Groups without any PRUNE decision get an ``(all)`` row with count 0.
    """
    prune = long[long["kind"] == "PRUNE"][["group", "act", "count"]]
    total = prune.groupby("group")["count"].sum()
    all_rows = pd.DataFrame({"group": np.arange(len(groups))})
    all_rows["act"] = ALL_ROW
    all_rows["count"] = total.reindex(all_rows["group"]).fillna(0).astype(np.int64).to_numpy()
    # The (all) row sorts first: it is the group's skip volume.
    all_rows["_order"] = 0
    prune = prune.assign(_order=1)
    both = pd.concat([all_rows, prune], ignore_index=True)
    both["moves"] = totals[both["group"].to_numpy()]
    with np.errstate(invalid="ignore", divide="ignore"):
        both["pct_of_moves"] = 100.0 * both["count"] / both["moves"].where(both["moves"] > 0)
    both = both.sort_values(["group", "_order", "count", "act"], ascending=[True, True, False, True], kind="stable")
    keys = key_frame(groups, both["group"].to_numpy())
    body = both[["act", "count", "pct_of_moves", "moves"]].reset_index(drop=True)
    return pd.concat([keys, body], axis=1)


class ActsTable:
    """``--table acts``: the ``acts`` and ``kinds`` sections."""

    name = "acts"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.07
    columns = ("tag", "act", "kind")

    def partial(self, batch: Batch) -> ActCounts:
        return act_counts(batch)

    def finish(self, partials: Sequence[ActCounts], grouping: Grouping) -> list[Section]:
        totals, long = merge_act_counts(partials, grouping)
        keys = tuple(grouping.keys)
        return [Section("acts", TITLES["acts"], acts_frame(grouping.groups, totals, long), keys),
                Section("kinds", TITLES["kinds"], kinds_frame(grouping.groups, totals, long), keys)]


class SkipsTable(ActsTable):
    """``--table skips``: unsearched skips per act (the same partial as ``acts``)."""

    name = "skips"

    def finish(self, partials: Sequence[ActCounts], grouping: Grouping) -> list[Section]:
        totals, long = merge_act_counts(partials, grouping)
        return [Section("skips", TITLES["skips"], skips_frame(grouping.groups, totals, long), tuple(grouping.keys))]


ACTS = ActsTable()
SKIPS = SkipsTable()

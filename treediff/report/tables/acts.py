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

from treediff.report.grouped import cell_counts, group_rows
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat

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
    a_codes, a_cats = batch.codes("act")
    k_codes, k_cats = batch.codes("kind")
    na, nk = len(a_cats) + 1, len(k_cats) + 1
    # Cell (group, act + 1, kind + 1) of each MOVE record: a missing act or kind (-1) becomes 0.
    flat = cell_counts(batch.record_groups.n * na * nk,
                       [(batch.record_groups.record_group, 0, na * nk), (a_codes, 1, nk), (k_codes, 1, 1)],
                       mask=batch.is_move)
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
    moves = cell_counts(batch.n_cells, [(batch.record_groups.record_group, 0, 1)], mask=batch.is_move)
    long = count_act_kind(batch)
    g = long["group"].to_numpy()
    return ActCounts(
        moves=batch.cell_frame(np.arange(batch.n_cells), moves=moves.astype(np.int64)),
        long=batch.cell_frame(g, act=long["act"].to_numpy(), kind=long["kind"].to_numpy(),
                              count=long["count"].to_numpy()),
    )


@dataclass
class ActLong:
    """The MOVE records of a report per (group, act, kind), summed over batches: one entry per combination
    holding records (in no particular order: the frames sort them, a missing act or kind after the others)."""

    group: np.ndarray  #: int64 group numbers
    act: np.ndarray    #: object: the raw act, or None
    kind: np.ndarray   #: object: the shared kind, or None
    count: np.ndarray  #: int64 MOVE records
    act_rank: np.ndarray   #: int64: the act's place among the report's acts (None last)
    kind_rank: np.ndarray  #: int64: the kind's place among the report's kinds (None last)

    def where(self, keep: np.ndarray) -> ActLong:
        return ActLong(self.group[keep], self.act[keep], self.kind[keep], self.count[keep], self.act_rank[keep],
                       self.kind_rank[keep])


def _ranked(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's place among the sorted distinct values (missing ones, None or NaN, after them all), and
    the distinct values followed by None (so that ``distinct[rank]`` gives the values back, None for NaN)."""
    values = np.asarray(values, dtype=object)
    # The few distinct values hashed out first, then sorted: np.unique sorted every row's string (0.1 s for
    # the ~0.5M rows of a 20M-record report's partials, twice: acts and skips finish).
    codes, uniques = pd.factorize(values, use_na_sentinel=True)  # (None and NaN: -1)
    distinct = np.sort(np.asarray(uniques, dtype=object))
    # place[c]: where distinct value c sorts; the last slot: the missing values' place, after them all
    place = np.append(np.searchsorted(distinct, np.asarray(uniques, dtype=object)), len(distinct)).astype(np.int64)
    rank = place[np.where(codes >= 0, codes, len(distinct))]
    with_none = np.empty(len(distinct) + 1, dtype=object)
    with_none[:-1] = distinct
    return rank, with_none


def merge_act_counts(partials: Sequence[ActCounts], grouping: Grouping) -> tuple[np.ndarray, ActLong]:
    """MOVE records per group, and the (group, act, kind) counts summed per group (:class:`ActLong`).

    numpy over the partials' rows, not pandas' groupby: compare finishes this table four times for a
    few hundred rows, where pandas' cost per call was most of the time (docs/PERFORMANCE.md, fifteenth)."""
    moves = grouping.total(concat([p.moves for p in partials], ["srow", "iter", "moves"]), "moves")
    ak = concat([p.long for p in partials], ["srow", "iter", "act", "kind", "count"])
    group = grouping.group_of(ak)
    act_rank, acts = _ranked(ak["act"].to_numpy(dtype=object))
    kind_rank, kinds = _ranked(ak["kind"].to_numpy(dtype=object))
    combos = group_rows(group, act_rank, kind_rank)
    a, k = combos.take(act_rank), combos.take(kind_rank)
    return moves, ActLong(combos.take(group), acts[a], kinds[k], combos.int_sums(ak["count"].to_numpy()), a, k)


def _frame(groups: pd.DataFrame, group: np.ndarray, body: dict) -> pd.DataFrame:
    """The key columns of each row's group, then ``body``'s columns."""
    return pd.concat([key_frame(groups, group), pd.DataFrame(body)], axis=1)


def acts_frame(groups: pd.DataFrame, totals: np.ndarray, long: ActLong) -> pd.DataFrame:
    """MOVE decisions per raw act (with its kind), sorted by count, with % of MOVE decisions."""
    order = np.lexsort((long.kind_rank, long.act_rank, -long.count, long.group))
    group, count = long.group[order], long.count[order]
    moves = totals[group]
    return _frame(groups, group, {"act": long.act[order], "kind": long.kind[order], "count": count,
                                  "pct_of_moves": 100.0 * count / moves, "moves": moves})


def kinds_frame(groups: pd.DataFrame, totals: np.ndarray, long: ActLong) -> pd.DataFrame:
    """MOVE decisions per shared kind, sorted by count, with % of MOVE decisions."""
    per_kind = group_rows(long.group, long.kind_rank)
    group, rank, count = per_kind.take(long.group), per_kind.take(long.kind_rank), per_kind.int_sums(long.count)
    order = np.lexsort((rank, -count, group))
    group, count = group[order], count[order]
    moves = totals[group]
    return _frame(groups, group, {"kind": per_kind.take(long.kind)[order], "count": count,
                                  "pct_of_moves": 100.0 * count / moves, "moves": moves})


def skips_frame(groups: pd.DataFrame, totals: np.ndarray, long: ActLong) -> pd.DataFrame:
    """PRUNE decisions per act as % of MOVE decisions, plus an ``(all)`` row per group.

    Groups without any PRUNE decision get an ``(all)`` row with count 0.
    """
    prune = long.where(long.kind == "PRUNE")
    n = len(groups)
    # The (all) row comes first in its group: it is the group's skip volume.
    group = np.concatenate([np.arange(n, dtype=np.int64), prune.group])
    count = np.concatenate([_group_sums(prune.group, prune.count, n), prune.count])
    act = np.concatenate([np.full(n, ALL_ROW, dtype=object), prune.act])
    rank = np.concatenate([np.full(n, -1, dtype=np.int64), prune.act_rank])
    order = np.lexsort((rank, -count, rank >= 0, group))
    group, count = group[order], count[order]
    moves = totals[group]
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100.0 * count / np.where(moves > 0, moves, np.nan)
    return _frame(groups, group, {"act": act[order], "count": count, "pct_of_moves": pct, "moves": moves})


def _group_sums(group: np.ndarray, count: np.ndarray, n: int) -> np.ndarray:
    """Σ ``count`` per group 0 .. n - 1, exactly (int64)."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, group, count)
    return out


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

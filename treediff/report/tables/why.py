"""The ``why`` table: MOVE records by their ``why=`` reason and kind (why a move was exempted from a rule).

Per group, reason and kind: ``count`` (MOVE records with that ``why`` and
kind), ``kind_moves`` (the group's MOVE records of that kind) and
``pct_of_kind`` = 100 · count / kind_moves.  Records without ``why`` are not
rows (they are in ``kind_moves``).  The suggested vocabulary is in
``docs/TREEDUMP_FORMAT.md`` (``tt-move``, ``good-capture``, ``killer``, ...);
any value is kept as written.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.grouped import cell_counts
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan

TITLE = "MOVE decisions by why= reason and kind"


def why_counts(batch: Batch) -> pd.DataFrame:
    move = batch.is_move
    w_codes, w_cats = batch.codes("why") if "why" in batch.records else (np.full(len(move), -1), np.zeros(0, object))
    k_codes, k_cats = batch.codes("kind")
    nw, nk = len(w_cats) + 1, len(k_cats) + 1
    # Cell (group, why + 1, kind + 1) of each MOVE record: a missing why or kind (-1) becomes 0.
    flat = cell_counts(batch.n_cells * nw * nk,
                       [(batch.record_groups.record_group, 0, nw * nk), (w_codes, 1, nk), (k_codes, 1, 1)], mask=move)
    cells = np.flatnonzero(flat)
    whys = np.concatenate([[None], w_cats.astype(object)])
    kinds = np.concatenate([[None], k_cats.astype(object)])
    return batch.cell_frame(cells // (nw * nk), why=whys[(cells // nk) % nw], kind=kinds[cells % nk],
                            count=flat[cells].astype(np.int64))


def why_frame(groups: pd.DataFrame, long: pd.DataFrame) -> pd.DataFrame:
    cols = ["why", "kind", "count", "kind_moves", "pct_of_kind"]
    if not len(long):
        return pd.concat([groups.iloc[:0].reset_index(drop=True), pd.DataFrame({c: [] for c in cols})], axis=1)
    long = long.groupby(["_group", "why", "kind"], sort=True, dropna=False, as_index=False)["count"].sum()
    per_kind = long.groupby(["_group", "kind"], dropna=False)["count"].transform("sum")
    long["kind_moves"] = per_kind.astype(np.int64)
    body = long[long["why"].notna()].copy()
    body["pct_of_kind"] = 100.0 * body["count"] / body["kind_moves"]
    body = body.sort_values(["_group", "count", "why", "kind"], ascending=[True, False, True, True], kind="stable")
    body["why"] = none_for_nan(body["why"].to_numpy())
    body["kind"] = none_for_nan(body["kind"].to_numpy())
    return pd.concat([key_frame(groups, body["_group"].to_numpy(dtype=np.int64)),
                      body[cols].reset_index(drop=True)], axis=1)


class WhyTable:
    """``--table why``."""

    name = "why"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.03
    columns = ("tag", "kind")
    optional_columns = ("why",)

    def partial(self, batch: Batch) -> pd.DataFrame:
        return why_counts(batch)

    def finish(self, partials: Sequence[pd.DataFrame], grouping: Grouping) -> list[Section]:
        long = concat(partials, ["srow", "iter", "key", "why", "kind", "count"])
        if len(long):
            long = pd.DataFrame({"_group": grouping.group_of(long), "why": long["why"].to_numpy(dtype=object),
                                 "kind": long["kind"].to_numpy(dtype=object),
                                 "count": long["count"].to_numpy(dtype=np.int64)})
        return [Section("why", TITLE, why_frame(grouping.groups, long), tuple(grouping.keys))]


WHY = WhyTable()

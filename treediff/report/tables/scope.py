"""The ``scope`` table: does a prune skip one move, or abandon the node?

For each PRUNE act and group:

* ``prunes``: MOVE records of that act;
* ``nodes``: node visits in which the act fired at least once (a *node visit*
  is one search of one node: its MOVE decisions up to and including the
  node's RESULT record; a node searched twice in an iteration, e.g. after an
  LMR re-search, is two visits);
* ``continued``: those visits in which some later sibling decision (a MOVE
  record of the same node, same visit, higher ``seq``) follows the act's first
  prune;
* ``pct_continued`` = 100 · continued / nodes.  Near 100 % means the act skips
  one move and the node goes on (``continue``); 0 % means the node is
  abandoned after it (``break``).  A node whose only prune is its last move
  counts as not continued, so "skip one move" engines land slightly below 100 %.

An ``(all)`` row per group does the same for any PRUNE act.

Implementation: the trace is a depth-first walk in decision order, so the
record after an unsearched (pruned) move is either the next decision of the
same node (a MOVE one ply deeper than the node) or the node's RESULT.  Node
visits are delimited without looking at paths: at node ply n, a visit ends
with a RESULT at ply n or when a record of a shallower node appears.  This
needs records in (search, seq) order of a single context.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from typing import Sequence

from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat, none_for_nan
from treediff.report.tables.acts import ALL_ROW

TITLE = "Prune scope: % of nodes still deciding moves after the prune"

_COLUMNS = ["act", "prunes", "nodes", "continued", "pct_continued"]


def _order(batch: Batch) -> np.ndarray | None:
    """Permutation putting records in (search, seq) order, or None when they already are."""
    seq = np.asarray(batch.records["seq"], dtype=np.int64)
    if len(seq) < 2:
        return None
    key = batch.srow * (int(seq.max()) + 1) + seq
    if np.all(key[1:] >= key[:-1]):
        return None
    return np.argsort(key, kind="stable")


def finish_scope(groups: pd.DataFrame, counts: pd.DataFrame | None) -> pd.DataFrame:
    """The scope table from :func:`scope_counts` rows (possibly summed over partitions)."""
    if counts is None or len(counts) == 0:
        return pd.concat([groups.iloc[:0].reset_index(drop=True), pd.DataFrame({c: [] for c in _COLUMNS})], axis=1)
    body = counts.copy()
    body["pct_continued"] = 100.0 * body["continued"] / body["nodes"]
    body = body.sort_values(["_group", "_all", "prunes", "act"], ascending=[True, True, False, True], kind="stable")
    keys = key_frame(groups, body["_group"].to_numpy())
    return pd.concat([keys, body[_COLUMNS].reset_index(drop=True)], axis=1)


def scope_counts(batch: Batch) -> pd.DataFrame | None:
    """Per record group and PRUNE act (``_all`` 1), and per group for any PRUNE act (``_all`` 0, act ``(all)``):
    ``prunes``, ``nodes`` and ``continued``; None when there is no PRUNE decision.

    Node visits never span two searches, so counts of disjoint sets of
    searches add up.
    """
    order = _order(batch)
    take = (lambda a: a) if order is None else (lambda a: a[order])
    is_move = take(batch.is_move)
    plies = take(batch.plies)
    srow = take(batch.srow)
    iters = take(batch.iters)
    group = take(batch.record_groups.record_group)
    a_codes, a_cats = batch.codes("act")
    acts = take(a_codes)
    prune = is_move & take(batch.kind_mask("PRUNE"))
    n = len(plies)
    if n == 0 or not prune.any():
        return None

    node_ply = plies - is_move.astype(np.int64)
    key = 2 * node_ply + is_move.astype(np.int64)  # RESULT at n -> 2n, MOVE at node n -> 2n + 1
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (srow[1:] != srow[:-1]) | (iters[1:] != iters[:-1])
    prevkey = np.empty(n, dtype=np.int64)
    prevkey[0] = -1
    prevkey[1:] = key[:-1]
    prevkey[new_run] = -1

    idx = np.flatnonzero(prune)
    level = node_ply[idx]
    nxt = np.minimum(idx + 1, n - 1)
    continued = (idx + 1 < n) & ~new_run[nxt] & (key[nxt] == 2 * level + 1)

    # Visit number of each prune within its level: at node ply n a visit starts after a record with
    # prevkey <= 2n (a shallower record, or the node's own RESULT), so a running count of such records
    # numbers the visits; it never decreases along the trace.
    visit = np.empty(len(idx), dtype=np.int64)
    for lv in np.unique(level):
        at = np.flatnonzero(level == lv)
        lo, hi = int(idx[at[0]]), int(idx[at[-1]]) + 1
        seg = np.cumsum(prevkey[lo:hi] <= 2 * lv, dtype=np.int32)
        visit[at] = seg[idx[at] - lo]

    g = group[idx]
    a = acts[idx] + 1
    na = len(a_cats) + 1
    size = batch.record_groups.n * na
    frames = []
    for per_act in (True, False):
        cell = g * na + (a if per_act else 0)
        # Sort prunes by (level, act), keeping trace order inside: visit numbers then never decrease inside
        # a block, and a prune is the first of its (act, visit) where the block starts or the number changes.
        block = level * na + (a if per_act else 0)
        order_b = np.argsort(block, kind="stable")
        b_sorted, v_sorted = block[order_b], visit[order_b]
        first_sorted = np.ones(len(order_b), dtype=bool)
        first_sorted[1:] = (b_sorted[1:] != b_sorted[:-1]) | (v_sorted[1:] != v_sorted[:-1])
        first = np.empty_like(first_sorted)
        first[order_b] = first_sorted
        prunes = np.bincount(cell, minlength=size)
        nodes = np.bincount(cell[first], minlength=size)
        # The first prune's successor decides: a sibling decision follows it iff the visit went on.
        cont = np.bincount(cell[first & continued], minlength=size)
        cells = np.flatnonzero(prunes)
        labels = np.concatenate([[None], a_cats])[cells % na] if per_act else np.full(len(cells), ALL_ROW, object)
        frames.append(pd.DataFrame({
            "_group": cells // na, "_all": 0 if not per_act else 1, "act": labels,
            "prunes": prunes[cells].astype(np.int64), "nodes": nodes[cells].astype(np.int64),
            "continued": cont[cells].astype(np.int64),
        }))
    return pd.concat(frames, ignore_index=True)


_PARTIAL_COLUMNS = ["srow", "iter", "_all", "act", "prunes", "nodes", "continued"]


class ScopeTable:
    """``--table scope``: share of node visits that go on deciding moves after a PRUNE act fired."""

    name = "scope"
    columns = ("tag", "act", "kind", "ply", "seq", "iter")

    def partial(self, batch: Batch) -> pd.DataFrame | None:
        sc = scope_counts(batch)
        if sc is None or not len(sc):
            return None
        return batch.cell_frame(sc["_group"].to_numpy(), _all=sc["_all"].to_numpy(), act=sc["act"].to_numpy(),
                                prunes=sc["prunes"].to_numpy(), nodes=sc["nodes"].to_numpy(),
                                continued=sc["continued"].to_numpy())

    def finish(self, partials: Sequence[pd.DataFrame | None], grouping: Grouping) -> list[Section]:
        sc = concat(partials, _PARTIAL_COLUMNS)
        counts = None
        if len(sc):
            sc = pd.DataFrame({"_group": grouping.group_of(sc), "_all": sc["_all"].to_numpy(),
                               "act": sc["act"].to_numpy(object), "prunes": sc["prunes"].to_numpy(),
                               "nodes": sc["nodes"].to_numpy(), "continued": sc["continued"].to_numpy()})
            sc = sc.groupby(["_group", "_all", "act"], sort=True, dropna=False, as_index=False)[
                ["prunes", "nodes", "continued"]].sum()
            sc["act"] = none_for_nan(sc["act"].to_numpy())
            for c in ("_group", "_all", "prunes", "nodes", "continued"):
                sc[c] = sc[c].astype(np.int64)
            counts = sc
        return [Section("scope", TITLE, finish_scope(grouping.groups, counts), tuple(grouping.keys))]


SCOPE = ScopeTable()

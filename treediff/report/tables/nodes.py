"""The ``nodes`` table: nodes per engine and the ratio to the first engine.

Per group: ``searches``; ``nodes`` = Σ node counts (RESULT records, or the
engine's own count for ``node_source`` = ``engine``, see :mod:`treediff.report.ebf`);
``mean_nodes`` = nodes / searches; ``end_nodes`` = Σ of the END records'
``nodes=`` (the engine's own counter; NaN when a search has none);
``ratio`` = mean_nodes / mean_nodes of the first engine (in input order; with
``--by source`` the first engine and source) among the groups with the same
phase, position and iteration keys.

With ``--by iter`` the counts are per iteration: N(d) summed over the searches
that have iteration d (``end_nodes`` does not apply and is NaN).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from typing import Sequence

from treediff.report.table import Batch, Grouping, Section
from treediff.report.tables.ebf import MergedResults, ResultPartial, merge_results, result_partial

TITLE = "Nodes (RESULT records) and ratio to the first engine"


def _ratio_to_first_engine(frame: pd.DataFrame, others: list[str]) -> np.ndarray:
    if not others:
        base = frame["mean_nodes"].iloc[0] if len(frame) else np.nan
        return (frame["mean_nodes"] / base).to_numpy()
    first = frame.groupby(others, sort=False, dropna=False)["mean_nodes"].transform("first")
    return (frame["mean_nodes"] / first).to_numpy()


def nodes_table(ctx: Grouping, merged: MergedResults) -> pd.DataFrame:
    """Nodes per group and the ratio to the first engine; see the module docstring."""
    sn = merged.nodes
    sg = ctx.search_groups
    n_g = len(sg.groups)
    g = sg.search_group
    if "iter" not in ctx.keys:
        known = ~np.isnan(sn.nodes)
        count = np.bincount(g, minlength=n_g)
        total = np.bincount(g[known], weights=sn.nodes[known], minlength=n_g)
        if "end_nodes" in ctx.searches.columns:
            end = np.asarray(ctx.searches["end_nodes"].astype("float64"), dtype=np.float64)
        else:
            end = np.full(len(g), np.nan)
        end_total = np.bincount(g, weights=np.nan_to_num(end), minlength=n_g)
        end_missing = np.bincount(g, weights=np.isnan(end), minlength=n_g) > 0
        labels = np.full(n_g, "", dtype=object)
        for name in sorted(set(sn.source)):
            hit = np.bincount(g[sn.source == name], minlength=n_g) > 0
            labels = np.where(hit, np.where(labels == "", name, labels + "," + name), labels)
        with np.errstate(invalid="ignore", divide="ignore"):
            frame = pd.concat([sg.groups.reset_index(drop=True), pd.DataFrame({
                "searches": count.astype(np.int64),
                "node_source": labels,
                "nodes": total,
                "mean_nodes": total / np.where(count > 0, count, np.nan),
                "end_nodes": np.where(end_missing, np.nan, end_total),
            })], axis=1)
    else:
        width = sn.per_iter.shape[1]
        have = sn.per_iter > 0
        cell = (g[:, None] * width + np.arange(width)[None, :])
        cnt = np.bincount(cell[have], minlength=n_g * width)
        tot = np.bincount(cell[have], weights=sn.per_iter[have], minlength=n_g * width)
        keep = np.flatnonzero(cnt)
        keys = sg.groups.iloc[keep // width].reset_index(drop=True)
        keys["iter"] = keep % width
        frame = pd.concat([keys, pd.DataFrame({
            "searches": cnt[keep].astype(np.int64),
            "node_source": "",
            "nodes": tot[keep],
            "mean_nodes": tot[keep] / cnt[keep],
            "end_nodes": np.nan,
        })], axis=1)
        frame["node_source"] = frame["engine"].map(
            pd.Series(sn.source, index=ctx.searches["engine"].astype("object")).groupby(level=0).agg(
                lambda v: ",".join(sorted(set(v)))))
    others = [k for k in ctx.keys if k not in ("engine", "source")]
    frame["ratio"] = _ratio_to_first_engine(frame, others)
    return frame


class NodesTable:
    """``--table nodes``."""

    name = "nodes"
    columns = ("tag", "iter", "ply", "depth")

    def partial(self, batch: Batch) -> ResultPartial:
        return result_partial(batch)

    def finish(self, partials: Sequence[ResultPartial], grouping: Grouping) -> list[Section]:
        return [Section("nodes", TITLE, nodes_table(grouping, merge_results(partials, grouping)), tuple(grouping.keys))]


NODES = NodesTable()

"""Divergence summaries of an :class:`~treediff.align.api.Alignment`: pure functions returning DataFrames."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from treediff.align.api import Alignment
from treediff.align.core import LOAD_COLUMNS
from treediff.model.schema import KIND_VALUES
from treediff.store.source import Source

#: The label for a shared path one side reached without a MOVE decision (the root, RESULT-only paths).
NO_DECISION = "(none)"


def kind_confusion(alignment: Alignment, within: np.ndarray | None = None) -> pd.DataFrame:
    """A's kind (rows) against B's kind (columns), counting paths both sides have.

    A path's kind is the kind of its first decision.  Paths neither side made
    a decision about (the root) are left out; a path only one side decided is
    counted under :data:`NO_DECISION` for the other.  Kinds are in taxonomy
    order; only kinds that occur are shown.  ``within``: optional boolean
    mask over the rows (e.g. one subtree) to count.
    """
    rows = alignment.rows
    status = rows["status"].to_numpy(dtype=object)
    shared = (status == "same") | (status == "differs")
    if within is not None:
        shared &= within
    ka = rows["kind_a"].astype(object).where(rows["kind_a"].notna(), NO_DECISION).to_numpy()[shared]
    kb = rows["kind_b"].astype(object).where(rows["kind_b"].notna(), NO_DECISION).to_numpy()[shared]
    decided = (ka != NO_DECISION) | (kb != NO_DECISION)
    ka, kb = ka[decided], kb[decided]
    order = [*KIND_VALUES, NO_DECISION]
    rank = {k: i for i, k in enumerate(order)}
    labels_a = sorted(set(ka), key=lambda k: (rank.get(k, len(order)), k))
    labels_b = sorted(set(kb), key=lambda k: (rank.get(k, len(order)), k))
    table = pd.crosstab(
        pd.Categorical(ka, categories=labels_a), pd.Categorical(kb, categories=labels_b), dropna=False
    )
    table.index = pd.Index(list(table.index.astype(str)), name="A")
    table.columns = pd.Index(list(table.columns.astype(str)), name="B")
    return table.astype("int64")


def _plies(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "?"
    return f"{value:g}"


def _nodes(n: int) -> str:
    return f"{n:,} node" + ("" if n == 1 else "s")


def describe_side(row: pd.Series, side: str, path_text: str) -> str:
    """What one side did with a path, as a verb phrase ("pruned it (FP-QUIET)")."""
    seq = str(row[f"seq_{side}"])
    kind = row[f"kind_{side}"]
    status = row["status"]
    if (status == "only-A" and side == "b") or (status == "only-B" and side == "a"):
        return f"never reached {path_text}"
    if not seq:
        return f"visited {path_text} without a move decision"
    acts = seq.split("→")
    depth, nd, red = row[f"depth_{side}"], row[f"new_depth_{side}"], row[f"reduction_{side}"]
    span = f"{_plies(depth)}→{_plies(nd)} plies"
    if kind == "SEARCH":
        text = f"searched {path_text} at full depth ({span})"
    elif kind == "REDUCE":
        by = f" by {_plies(red)} {'ply' if red == 1 else 'plies'}" if red == red and red is not None else ""
        text = f"reduced {path_text}{by} ({acts[0]}, {span})"
    elif kind == "RESEARCH":
        text = f"re-searched {path_text} ({acts[0]}, {span})"
    elif kind == "EXTEND":
        text = f"extended {path_text} ({acts[0]}, {span})"
    elif kind == "PRUNE":
        text = f"pruned {path_text} ({acts[0]})"
    elif kind == "NULL_PROBE":
        text = f"probed {path_text} ({acts[0]}, {span})"
    elif kind == "NODE_CUT":
        text = f"cut the node at {path_text} ({acts[0]})"
    else:
        text = f"decided {path_text} with {acts[0]}"
    if len(acts) > 1:
        text += ", then " + "→".join(acts[1:])
        final = row[f"final_depth_{side}"]
        if final == final and final is not None and final != nd:
            text += f" at {_plies(final)} {'ply' if final == 1 else 'plies'}"
    return text


def _sentence(row: pd.Series) -> str:
    path = row["path"] or "(root)"
    if row["nodes_a"] != row["nodes_b"]:
        lead, other = ("a", "b") if row["nodes_a"] > row["nodes_b"] else ("b", "a")
    else:  # equal cost: lead with the side that has the path
        lead, other = ("b", "a") if row["status"] == "only-B" else ("a", "b")
    first = describe_side(row, lead, f"`{path}`")
    second = describe_side(row, other, "it")
    text = f"{lead.upper()} {first}, {_nodes(int(row[f'nodes_{lead}']))} below it; {other.upper()} {second}"
    if int(row[f"nodes_{other}"]):
        text += f", {_nodes(int(row[f'nodes_{other}']))} below it"
    return text


def top_divergences(alignment: Alignment, n: int = 10, within: np.ndarray | None = None) -> pd.DataFrame:
    """The ``n`` divergences that cost the most nodes, with one sentence each.

    A divergence is a row whose status is not ``same``; rows inside a subtree
    that only one side has are left out (their top row already carries the
    whole subtree's cost).  Cost = |nodes_a - nodes_b| (RESULT counts of the
    two subtrees); ties keep tree order.  ``within``: optional boolean mask
    over the rows (e.g. one subtree) to pick from.
    """
    rows = alignment.rows
    status = rows["status"].to_numpy(dtype=object)
    parent = rows["parent"].to_numpy()
    one_sided = (status == "only-A") | (status == "only-B")
    parent_one_sided = np.zeros(len(rows), dtype=bool)
    has_parent = parent >= 0
    parent_one_sided[has_parent] = one_sided[parent[has_parent]]
    keep = (status != "same") & ~parent_one_sided
    if within is not None:
        keep &= within
    picked = rows[keep]
    cost = (picked["nodes_a"] - picked["nodes_b"]).abs()
    order = np.argsort(-cost.to_numpy(), kind="stable")[: max(n, 0)]
    top = picked.iloc[order].copy()
    top.insert(0, "cost", cost.iloc[order].to_numpy())
    top["sentence"] = [_sentence(r) for _, r in top.iterrows()]
    columns = ["path", "ply", "status", "cost", "nodes_a", "nodes_b", "seq_a", "seq_b",
               "kind_a", "kind_b", "depth_a", "new_depth_a", "depth_b", "new_depth_b", "sentence"]
    return top[columns].reset_index(drop=True)


def shared_positions(source_a: Source, source_b: Source) -> list[str]:
    """Position ids both sources searched, sorted."""
    return sorted(set(source_a.searches["position"].astype(str)) & set(source_b.searches["position"].astype(str)))


def divergences(source_a: Source, source_b: Source, n: int = 10
                ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Align A and B position by position; the ``n`` costliest divergences overall and the summed kind table.

    Only one position's records are read at a time.  Each position is
    aligned at its default iteration (the deepest both completed).  Returns
    (top divergences with a ``position`` column first, kind × kind counts
    summed over positions, notes about positions that could not be aligned).
    Positions are taken in sorted order; the top list keeps that order among
    equal costs.
    """
    from treediff.align.api import align
    from treediff.model.errors import InputError

    tops, tables, notes = [], [], []
    for position in shared_positions(source_a, source_b):
        ra = source_a.select_position(position).records(LOAD_COLUMNS)
        rb = source_b.select_position(position).records(LOAD_COLUMNS)
        try:
            alignment = align(ra, rb)
        except InputError as exc:
            notes.append(f"divergences: position {position} not aligned ({exc})")
            continue
        top = top_divergences(alignment, n=n)
        top.insert(0, "position", position)
        top.insert(1, "iter_a", alignment.iter_a)
        top.insert(2, "iter_b", alignment.iter_b)
        tops.append(top)
        tables.append(kind_confusion(alignment))
    if not tops:
        return pd.DataFrame(), pd.DataFrame(), notes
    top_all = pd.concat(tops, ignore_index=True)
    order = np.argsort(-top_all["cost"].to_numpy(), kind="stable")[:n]
    columns = ["position", "iter_a", "iter_b", "path", "status", "cost", "nodes_a", "nodes_b", "seq_a", "seq_b", "sentence"]
    top_all = top_all.iloc[order][columns].reset_index(drop=True)
    kinds = tables[0]
    for table in tables[1:]:
        kinds = kinds.add(table, fill_value=0)
    kinds = kinds.fillna(0).astype("int64")
    return top_all, kinds, notes

"""Divergences that add up: every node of either tree is attributed to exactly one place.

A node is a RESULT record of the aligned iteration (every visit counts).  It
goes to its *frontier* row: the topmost row, among the path's ancestors and
the path itself, whose status is not ``same``.  Frontier rows therefore never
nest, and a node with no non-``same`` ancestor-or-self belongs to the
*shared residual*.  With ``delta = nodes_a - nodes_b``::

    sum(delta of every frontier row) + shared_residual == nodes_a - nodes_b (of the whole scope)

exactly, by construction: the frontier rows' subtrees and the rows outside
every frontier subtree partition the scope's rows.  The residual is computed
from the uncovered rows' *own* RESULT counts (not as the difference), so the
identity is a property tests can check.

Everything is columnar (difference arrays over the depth-first row order,
``bincount``); no Python runs per row.  Sentences are made only for the rows
a caller shows (:func:`difference`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from treediff.model.schema import KIND_VALUES

#: The kind label of a side that has the path but made no decision there (the root, RESULT-only paths).
NO_DECISION = "(none)"
#: The kind label of a side that has no record at or below the path (only-A / only-B rows).
ABSENT = "(absent)"
#: The label of the shared residual in the breakdown tables.
SHARED = "(shared)"
#: The path label of the row that sums the frontier rows not shown.
REST = "(rest)"


@dataclass(frozen=True)
class Attribution:
    """Where every node of one scope went.

    ``scope``: the scope's top row (0: the whole tree); ``drill``: the top
    row itself was not allowed to be a frontier row (``--drill``).
    ``frontier``: row numbers of the frontier rows, in tree order, with their
    subtree counts ``nodes_a`` / ``nodes_b``.  ``total_*``: the scope's
    subtree counts; ``residual_*``: nodes under no frontier row;
    ``residual_rows``: rows under no frontier row.
    """

    scope: int
    drill: bool
    frontier: np.ndarray
    nodes_a: np.ndarray
    nodes_b: np.ndarray
    total_a: int
    total_b: int
    residual_a: int
    residual_b: int
    residual_rows: int

    @property
    def delta(self) -> np.ndarray:
        return self.nodes_a - self.nodes_b

    @property
    def total_delta(self) -> int:
        return self.total_a - self.total_b

    @property
    def shared_residual(self) -> int:
        return self.residual_a - self.residual_b

    def total(self) -> dict[str, int]:
        """The ``divergence_total`` record: scope nodes of both sides, their delta, and the shared residual."""
        return {
            "nodes_a": self.total_a,
            "nodes_b": self.total_b,
            "delta": self.total_delta,
            "shared_residual": self.shared_residual,
            "shared_residual_a": self.residual_a,
            "shared_residual_b": self.residual_b,
            "frontier_rows": int(len(self.frontier)),
        }


def _own(nodes: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """A row's own RESULT count: its subtree count less its children's."""
    has = parent >= 0
    children = np.bincount(parent[has], weights=nodes[has], minlength=len(nodes)).astype(np.int64)
    return nodes - children


def main_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per path: the aligned rows without the extra rows of other node visits (``visits="all"``).

    Those rows' nodes are already in their path's row (subtree counts count
    every visit), so the attribution runs on the main rows; ``parent`` and
    ``subtree_rows`` are renumbered (columnar).  Rows without ``visit_label``
    are returned as they are.
    """
    if "visit_label" not in rows.columns:
        return rows
    keep = (rows["visit_label"].astype(object) == "main").to_numpy()
    if keep.all():
        return rows
    kept = np.concatenate(([0], np.cumsum(keep)))
    size = rows["subtree_rows"].to_numpy(dtype=np.int64)
    start = np.arange(len(rows))
    parent = rows["parent"].to_numpy(dtype=np.int64)
    out = rows[keep].copy()
    out["subtree_rows"] = (kept[start + size] - kept[start])[keep]
    out["parent"] = np.where(parent >= 0, kept[np.maximum(parent, 0)], -1)[keep]
    return out.reset_index(drop=True)


def attribute(rows: pd.DataFrame, scope: int = 0, drill: bool = False) -> Attribution:
    """Attribute the nodes of row ``scope``'s subtree (default: the whole tree) to frontier rows.

    ``rows``: one row per path (:func:`main_rows`), depth-first, with
    ``status``, ``nodes_*``, ``parent`` and ``subtree_rows``.

    ``drill``: the scope row itself never counts as a frontier row, so the
    attribution is repeated inside its subtree (its own nodes, and those
    under only ``same`` rows below it, are the residual).
    """
    return attribute_arrays(rows["subtree_rows"].to_numpy(dtype=np.int64), rows["nodes_a"].to_numpy(dtype=np.int64),
                            rows["nodes_b"].to_numpy(dtype=np.int64), rows["status"].to_numpy(dtype=object) != "same",
                            rows["parent"].to_numpy(dtype=np.int64), scope, drill)


def attribute_arrays(size: np.ndarray, nodes_a: np.ndarray, nodes_b: np.ndarray, flagged: np.ndarray,
                     parent: np.ndarray, scope: int = 0, drill: bool = False) -> Attribution:
    """:func:`attribute` over the rows' columns as arrays (``flagged``: status is not ``same``)."""
    lo, hi = int(scope), int(scope) + (int(size[scope]) if len(size) else 0)
    m = hi - lo
    nodes_a = np.asarray(nodes_a, dtype=np.int64)[lo:hi]
    nodes_b = np.asarray(nodes_b, dtype=np.int64)[lo:hi]
    flagged = np.array(flagged[lo:hi], dtype=bool)
    if drill and m:
        flagged[0] = False
    # Rows are depth-first, so a row's subtree is [i, i + size).  cover[i] is
    # the number of flagged rows among i's ancestors-or-self within the scope.
    starts = np.flatnonzero(flagged)
    ends = starts + size[lo:hi][starts]
    steps = np.bincount(starts, minlength=m + 1) - np.bincount(ends, minlength=m + 1)
    cover = np.cumsum(steps)[:m]
    frontier = flagged & (cover == 1)
    uncovered = cover == 0
    parent = np.asarray(parent, dtype=np.int64)[lo:hi] - lo
    parent[parent < 0] = -1  # the scope's top row: its parent is outside
    own_a, own_b = _own(nodes_a, parent), _own(nodes_b, parent)
    where = np.flatnonzero(frontier)
    return Attribution(
        scope=lo,
        drill=drill,
        frontier=where + lo,
        nodes_a=nodes_a[where],
        nodes_b=nodes_b[where],
        total_a=int(nodes_a[0]) if m else 0,
        total_b=int(nodes_b[0]) if m else 0,
        residual_a=int(own_a[uncovered].sum()),
        residual_b=int(own_b[uncovered].sum()),
        residual_rows=int(uncovered.sum()),
    )


def shown(att: Attribution, n: int, min_cost: int = 0) -> np.ndarray:
    """Positions (into ``att.frontier``) of the frontier rows to show: the ``n`` of largest |delta|.

    Only rows with |delta| >= ``min_cost`` are candidates; ties keep tree order.
    """
    cost = np.abs(att.delta)
    candidates = np.flatnonzero(cost >= min_cost)
    order = np.argsort(-cost[candidates], kind="stable")[: max(n, 0)]
    return candidates[order]


def side_kinds(rows: pd.DataFrame, at: np.ndarray, side: str) -> np.ndarray:
    """Kind labels of one side at rows ``at``: the first decision's kind, :data:`NO_DECISION` or :data:`ABSENT`."""
    kinds = rows[f"kind_{side}"].iloc[at].astype(object)
    labels = kinds.where(kinds.notna(), NO_DECISION).to_numpy(dtype=object, copy=True)
    status = rows["status"].iloc[at].to_numpy(dtype=object)
    labels[status == ("only-B" if side == "a" else "only-A")] = ABSENT
    return labels


def _kind_rank(label: str) -> int:
    order = [*KIND_VALUES, NO_DECISION, ABSENT]
    return order.index(label) if label in order else len(order)


def by_kind(rows: pd.DataFrame, att: Attribution) -> pd.DataFrame:
    """The delta by (frontier kind in A, kind in B), in nodes; the shared residual last.

    Columns ``kind_a``, ``kind_b``, ``rows`` (frontier rows), ``nodes_a``,
    ``nodes_b``, ``delta``; largest |delta| first.  The residual row has both
    kinds :data:`SHARED` and counts the rows under no frontier row.  Its
    ``delta`` column sums to the scope's delta.
    """
    frame = pd.DataFrame({
        "kind_a": side_kinds(rows, att.frontier, "a"),
        "kind_b": side_kinds(rows, att.frontier, "b"),
        "rows": np.ones(len(att.frontier), dtype=np.int64),
        "nodes_a": att.nodes_a,
        "nodes_b": att.nodes_b,
    })
    return _with_residual(_grouped(frame, ["kind_a", "kind_b"]), att, {"kind_a": SHARED, "kind_b": SHARED})


def _grouped(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.groupby(keys, sort=False, observed=True)[["rows", "nodes_a", "nodes_b"]].sum().reset_index()
    out["delta"] = out["nodes_a"] - out["nodes_b"]
    if "kind_a" in keys:
        rank = [(-abs(int(d)), _kind_rank(a), _kind_rank(b)) for d, a, b in
                zip(out["delta"], out["kind_a"], out["kind_b"])]  # one per kind pair: a handful
        out = out.iloc[sorted(range(len(out)), key=rank.__getitem__)]
    return out.reset_index(drop=True)


def _with_residual(frame: pd.DataFrame, att: Attribution, labels: dict[str, object]) -> pd.DataFrame:
    residual = {**labels, "rows": att.residual_rows, "nodes_a": att.residual_a, "nodes_b": att.residual_b,
                "delta": att.shared_residual}
    out = pd.concat([frame, pd.DataFrame([residual])], ignore_index=True)
    for col in ("rows", "nodes_a", "nodes_b", "delta"):
        out[col] = out[col].astype(np.int64)
    return out


def by_ply(rows: pd.DataFrame, att: Attribution) -> pd.DataFrame:
    """The delta by the frontier row's ply, in nodes; the shared residual last (``ply`` = :data:`SHARED`).

    Columns ``ply``, ``rows``, ``nodes_a``, ``nodes_b``, ``delta``; plies in
    order, only plies with a frontier row.  ``delta`` sums to the scope's delta.
    """
    ply = rows["ply"].to_numpy(dtype=np.int64)[att.frontier]
    length = int(ply.max(initial=-1)) + 1
    count = np.bincount(ply, minlength=length)
    a = np.bincount(ply, weights=att.nodes_a, minlength=length).astype(np.int64)
    b = np.bincount(ply, weights=att.nodes_b, minlength=length).astype(np.int64)
    present = np.flatnonzero(count)
    frame = pd.DataFrame({"ply": pd.Series(present, dtype=object), "rows": count[present],
                          "nodes_a": a[present], "nodes_b": b[present]})
    frame["delta"] = frame["nodes_a"] - frame["nodes_b"]
    return _with_residual(frame, att, {"ply": SHARED})


def merge_breakdowns(frames: list[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Breakdown tables of several scopes (compare's positions) summed per key, the residual row last."""
    if not frames:
        return pd.DataFrame(columns=[*keys, "rows", "nodes_a", "nodes_b", "delta"])
    both = pd.concat(frames, ignore_index=True)
    residual = (both[keys[0]] == SHARED).to_numpy()
    parts = both[~residual]
    out = parts.groupby(keys, sort=False)[["rows", "nodes_a", "nodes_b"]].sum().reset_index()
    out["delta"] = out["nodes_a"] - out["nodes_b"]
    if keys == ["ply"]:
        out = out.iloc[np.argsort(out["ply"].to_numpy(dtype=np.int64), kind="stable")]
    else:
        rank = [(-abs(int(d)), _kind_rank(a), _kind_rank(b)) for d, a, b in
                zip(out["delta"], out["kind_a"], out["kind_b"])]
        out = out.iloc[sorted(range(len(out)), key=rank.__getitem__)]
    tail = both[residual][["rows", "nodes_a", "nodes_b", "delta"]].sum()
    last = pd.DataFrame([{**{k: SHARED for k in keys}, **{c: int(tail[c]) for c in tail.index}}])
    out = pd.concat([out.reset_index(drop=True), last], ignore_index=True)
    for col in ("rows", "nodes_a", "nodes_b", "delta"):
        out[col] = out[col].astype(np.int64)
    return out


# --- sentences --------------------------------------------------------------------------------------------


def _plies(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "?"
    return f"{value:g}"


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def nodes_text(n: int) -> str:
    return f"{n:,} node" + ("" if abs(n) == 1 else "s")


def signed_nodes(n: int) -> str:
    return ("+" if n > 0 else "-" if n < 0 else "") + nodes_text(abs(n))


def _ply_word(value) -> str:
    return "ply" if value == 1 else "plies"


def describe_side(row, side: str, path_text: str) -> str:
    """What one side did with a path, as a verb phrase ("pruned `g1f3` (FP-QUIET)").

    ``row`` is an aligned row (a Series or a mapping).  The phrase says the
    side's decisions there: the first act, its depths (node depth → new
    depth, plies) and reduction, and any later acts with the last one's depth.
    """
    seq = str(row[f"seq_{side}"]) if _present(row[f"seq_{side}"]) else ""
    kind = row[f"kind_{side}"]
    status = str(row["status"])
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
        by = f" by {_plies(red)} {_ply_word(red)}" if _present(red) else ""
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
        if _present(final) and final != nd:
            text += f" at {_plies(final)} {_ply_word(final)}"
    return text


def _span(row, side: str) -> str:
    """A side's depths at a row: depth→new depth(→re-search depth) plies, and the reduction when there is one."""
    depth, nd, final = row[f"depth_{side}"], row[f"new_depth_{side}"], row[f"final_depth_{side}"]
    text = f"{_plies(depth)}→{_plies(nd)}"
    if int(row[f"decisions_{side}"]) > 1 and _present(final) and final != nd:
        text += f"→{_plies(final)}"
    text += " plies"
    red = row[f"reduction_{side}"]
    if _present(red) and red:
        text += f", reduction {_plies(red)}"
    return text


def difference(row, path_text: str) -> str:
    """What differs at the row itself, without its nodes: the two sides' decisions, or one decision's depths."""
    status = str(row["status"])
    if status == "only-A":
        return f"A {describe_side(row, 'a', path_text)}; B never reached it"
    if status == "only-B":
        return f"B {describe_side(row, 'b', path_text)}; A never reached it"
    seq_a = str(row["seq_a"]) if _present(row["seq_a"]) else ""
    seq_b = str(row["seq_b"]) if _present(row["seq_b"]) else ""
    if status == "same":
        return f"both sides decided {path_text} identically ({seq_a or 'no decision'})"
    if seq_a and seq_a == seq_b:
        span_a, span_b = _span(row, "a"), _span(row, "b")
        if span_a == span_b:
            return f"both decided {path_text} with {seq_a}, differing in a later decision's depths"
        return f"both decided {path_text} with {seq_a} but at other depths: A {span_a}, B {span_b}"
    return f"A {describe_side(row, 'a', path_text)}; B {describe_side(row, 'b', 'it')}"


def _visits(row) -> str:
    """", A visited it 2 times (1 node outside the main visit)" when a side visited the row more than once."""
    if "visits_a" not in row or "visits_b" not in row:
        return ""
    parts = []
    for side in ("a", "b"):
        count = row[f"visits_{side}"]
        if not _present(count) or int(count) <= 1:
            continue
        other = row.get(f"other_visit_nodes_{side}")
        outside = f" ({nodes_text(int(other))} outside the main visit)" if _present(other) else ""
        parts.append(f"{side.upper()} visited it {int(count)} times{outside}")
    return ("; " + ", ".join(parts)) if parts else ""


def sentence(row, path_text: str | None = None) -> str:
    """One frontier row as a sentence: what differs at it, then its delta (``nodes_a - nodes_b``, its subtree).

    When the rows count node visits and a side visited the row more than once, the sentence says so.
    """
    path = path_text if path_text is not None else f"`{row['path'] or '(root)'}`"
    na, nb = int(row["nodes_a"]), int(row["nodes_b"])
    return f"{difference(row, path)}{_visits(row)}; delta {signed_nodes(na - nb)} (A {na:,}, B {nb:,})"


def rest_sentence(count: int, nodes_a: int, nodes_b: int) -> str:
    return (f"{count:,} other frontier row{'s' if count != 1 else ''}; "
            f"delta {signed_nodes(nodes_a - nodes_b)} (A {nodes_a:,}, B {nodes_b:,})")


#: The columns of a divergences table, in order (``path`` .. ``sentence`` are the documented ones).
DIVERGENCE_COLUMNS = ["path", "ply", "status", "nodes_a", "nodes_b", "delta", "kind_a", "kind_b",
                      "seq_a", "seq_b", "sentence"]


def divergence_rows(rows: pd.DataFrame, att: Attribution, n: int = 10, min_cost: int = 0,
                    name: Callable[[str], str] | None = None) -> pd.DataFrame:
    """The shown frontier rows (largest |delta| first) with a sentence each, then a ``(rest)`` row.

    The ``(rest)`` row (path :data:`REST`, status ``""``) sums the frontier
    rows not shown; it is left out when every frontier row is shown.  So the
    ``delta`` column plus the shared residual is the scope's delta.  ``name``
    formats a path for the sentences (default: the UCI path in backquotes).
    """
    pick = shown(att, n, min_cost)
    at = att.frontier[pick]
    top = rows.iloc[at]
    out = pd.DataFrame({
        "path": top["path"].astype(object).to_numpy(),
        "ply": top["ply"].to_numpy(dtype=np.int64),
        "status": top["status"].astype(object).to_numpy(),
        "nodes_a": att.nodes_a[pick],
        "nodes_b": att.nodes_b[pick],
        "delta": att.delta[pick],
        "kind_a": side_kinds(rows, at, "a"),
        "kind_b": side_kinds(rows, at, "b"),
        "seq_a": top["seq_a"].astype(object).to_numpy(),
        "seq_b": top["seq_b"].astype(object).to_numpy(),
    })
    texts = []
    for (_, row), path in zip(top.iterrows(), out["path"]):  # the shown rows only
        texts.append(sentence(row, name(path) if name is not None else None))
    out["sentence"] = pd.Series(texts, dtype=object)
    hidden = len(att.frontier) - len(pick)
    if hidden:
        rest_a = int(att.nodes_a.sum() - out["nodes_a"].sum())
        rest_b = int(att.nodes_b.sum() - out["nodes_b"].sum())
        rest = {"path": REST, "ply": None, "status": "", "nodes_a": rest_a, "nodes_b": rest_b,
                "delta": rest_a - rest_b, "kind_a": None, "kind_b": None, "seq_a": None, "seq_b": None,
                "sentence": rest_sentence(hidden, rest_a, rest_b)}
        out = pd.concat([out, pd.DataFrame([rest])], ignore_index=True)
    out["ply"] = out["ply"].astype("Int64")
    for col in ("nodes_a", "nodes_b", "delta"):
        out[col] = out[col].astype(np.int64)
    return out[DIVERGENCE_COLUMNS]

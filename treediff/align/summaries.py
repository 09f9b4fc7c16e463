"""Divergence summaries of an :class:`~treediff.align.api.Alignment`: pure functions returning DataFrames.

* :func:`kind_confusion`: A's kind x B's kind on shared paths (counts of paths);
* :func:`divergence_summary` / :func:`top_divergences`: every node attributed to
  its topmost non-``same`` row (:mod:`treediff.align.attribution`), the largest
  frontier rows with a sentence each, the total and its breakdowns;
* :func:`divergences`: the same over every position two sources share (compare).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from treediff.align.api import Alignment
from treediff.align.attribution import (
    REST,
    Attribution,
    attribute,
    by_kind,
    by_ply,
    divergence_rows,
    main_rows,
    merge_breakdowns,
    rest_sentence,
)
from treediff.align.core import LOAD_COLUMNS
from treediff.align.stream import MemoryBudget, position_pairs
from treediff.model.errors import InputError
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
    # One bincount over (code in A) x (code in B): pandas' crosstab cost ~30 ms a position (compare runs one
    # per shared position).
    codes_a = pd.Categorical(ka, categories=labels_a).codes.astype(np.int64)
    codes_b = pd.Categorical(kb, categories=labels_b).codes.astype(np.int64)
    counts = np.bincount(codes_a * len(labels_b) + codes_b, minlength=len(labels_a) * len(labels_b))
    return pd.DataFrame(counts.reshape(len(labels_a), len(labels_b)).astype("int64"),
                        index=pd.Index([str(k) for k in labels_a], name="A"),
                        columns=pd.Index([str(k) for k in labels_b], name="B"))


@dataclass
class DivergenceSummary:
    """The attribution of one scope as tables: see :mod:`treediff.align.attribution`.

    ``rows``: the shown frontier rows and the ``(rest)`` row
    (:func:`~treediff.align.attribution.divergence_rows`); ``total``: the
    ``divergence_total`` record; ``by_kind`` / ``by_ply``: the delta by
    frontier kind in A x kind in B and by frontier ply, the shared residual
    last; ``attribution``: the frontier rows themselves.
    """

    rows: pd.DataFrame
    total: dict
    by_kind: pd.DataFrame
    by_ply: pd.DataFrame
    attribution: Attribution


def divergence_summary(alignment: Alignment, n: int = 10, under: str | None = None, drill: bool = False,
                       min_cost: int = 0, name: Callable[[str], str] | None = None) -> DivergenceSummary:
    """Attribute every node of the tree (or of ``under``'s subtree) to its frontier row; the ``n`` largest.

    ``under``: a normalized path; the scope is its subtree, the path itself
    included as a possible frontier row.  ``drill``: the path itself is left
    out (the attribution is repeated inside it; needs ``under``).
    ``min_cost``: only frontier rows with |delta| >= it are listed (the others
    are in the ``(rest)`` row).  ``name``: how sentences write a path.
    """
    rows = main_rows(alignment.rows)
    scope = 0
    if under:
        hits = np.flatnonzero(rows["path"].to_numpy(dtype=object) == under)
        if len(hits) == 0:
            raise InputError(f"{under}: neither side has this path")
        scope = int(hits[0])
    att = attribute(rows, scope, drill=drill)
    return DivergenceSummary(
        rows=divergence_rows(rows, att, n=n, min_cost=min_cost, name=name),
        total=att.total(),
        by_kind=by_kind(rows, att),
        by_ply=by_ply(rows, att),
        attribution=att,
    )


def top_divergences(alignment: Alignment, n: int = 10, under: str | None = None, drill: bool = False,
                    min_cost: int = 0) -> pd.DataFrame:
    """The ``n`` frontier rows of largest |delta| with a sentence each, and a ``(rest)`` row.

    Every node counts once, at its topmost non-``same`` ancestor-or-self row;
    see :func:`divergence_summary` and docs/ALIGN.md.
    """
    return divergence_summary(alignment, n=n, under=under, drill=drill, min_cost=min_cost).rows


def _position_keys(searches: pd.DataFrame) -> np.ndarray:
    """Each search's position identity (:func:`~treediff.model.positions.search_position_keys`)."""
    from treediff.model.positions import search_position_keys

    fens = searches["fen"].astype(object).tolist() if "fen" in searches.columns else [None] * len(searches)
    return np.asarray(search_position_keys(fens, searches["position"].astype(object).tolist()), dtype=object)


def paired_positions(source_a: Source, source_b: Source) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The positions both sources searched, paired by position (board, side, castling, en passant), not by id.

    Returns (label, A's searches rows mask, B's) per position, sorted by label:
    A's id for the position (B's when A's is missing).  An id that names two
    different positions pairs nothing; a position under two ids is paired.
    """
    sa, sb = source_a.searches, source_b.searches
    ka, kb = _position_keys(sa), _position_keys(sb)
    ids_a, ids_b = sa["position"].astype(object).to_numpy(), sb["position"].astype(object).to_numpy()
    out = []
    for key in set(ka) & set(kb):
        mask_a, mask_b = ka == key, kb == key
        named = [str(p) for p in ids_a[mask_a] if isinstance(p, str) and p] or \
                [str(p) for p in ids_b[mask_b] if isinstance(p, str) and p] or [str(key)]
        out.append((named[0], mask_a, mask_b))
    return sorted(out, key=lambda item: item[0])


@dataclass
class CompareDivergences:
    """compare's divergences over every shared position (see :func:`divergences`)."""

    rows: pd.DataFrame          #: the shown frontier rows of all positions, then ``(rest)``; ``position`` first
    total: pd.DataFrame         #: one row: ``divergence_total`` summed over the aligned positions
    by_kind: pd.DataFrame       #: delta by frontier kind A x kind B, summed over positions; residual last
    by_ply: pd.DataFrame        #: delta by frontier ply, summed over positions; residual last
    kinds: pd.DataFrame         #: kind_confusion summed over positions (counts of aligned paths)
    notes: list[str]

    @property
    def empty(self) -> bool:
        return self.total.empty


@dataclass
class _PositionResult:
    """What one aligned position contributes to :func:`divergences` (its alignment itself is not kept)."""

    top: pd.DataFrame
    frontier_a: int
    frontier_b: int
    total: dict
    kinds: pd.DataFrame
    by_kind: pd.DataFrame
    by_ply: pd.DataFrame


def _position_result(position: str, alignment: Alignment, n: int, min_cost: int) -> _PositionResult:
    """One position's attribution (one tree walk), its own top ``n`` frontier rows and its breakdowns."""
    rows = main_rows(alignment.rows)
    att = attribute(rows)
    # Only a position's own top n can be among the overall top n: the rest is summed.
    top = divergence_rows(rows, att, n=n, min_cost=min_cost)
    top = top[top["path"] != REST]
    top.insert(0, "position", position)
    top.insert(1, "iter_a", alignment.iter_a)
    top.insert(2, "iter_b", alignment.iter_b)
    return _PositionResult(top=top, frontier_a=int(att.nodes_a.sum()), frontier_b=int(att.nodes_b.sum()),
                           total=att.total(), kinds=kind_confusion(alignment), by_kind=by_kind(rows, att),
                           by_ply=by_ply(rows, att))


def divergences(source_a: Source, source_b: Source, n: int = 10, iteration: int | None = None,
                min_cost: int = 0, progress: Callable[[int, int], None] | None = None,
                budget: MemoryBudget | None = None, paths: Sequence[str] = ("A", "B")) -> CompareDivergences:
    """Align A and B position by position and attribute every node; the ``n`` largest frontier rows overall.

    Positions are paired as compare pairs them (:func:`paired_positions`:
    by the position, not the id).  Each source is read once, in batches, and
    a position is aligned as soon as both sides' records of it are in
    (:func:`treediff.align.stream.position_pairs`: memory is bounded by
    ``budget``, ``--memory-limit``; a position pair larger than that is an
    error naming ``paths`` and the position).  Each position is aligned at ``iteration`` (compare's ``--depth``;
    default: the deepest iteration both completed).  The
    frontier rows of all positions compete for the ``n`` places (largest
    |delta| first; ties: positions in sorted order, then tree order); the
    ``(rest)`` row sums every frontier row not shown, of every position.
    ``total`` sums each aligned position's ``divergence_total`` (nodes of the
    aligned iterations, delta, shared residual) and counts the positions, so
    Σ delta (rows) + shared_residual = delta holds over the positions too.
    Positions that cannot be aligned are left out with a note.  ``progress`` (a terminal's display) gets
    (positions done, positions) after each position.
    """
    from treediff.align.api import align

    paired = paired_positions(source_a, source_b)
    labels = [position for position, _, _ in paired]
    per: dict[int, _PositionResult | str] = {}
    pairs = position_pairs(source_a, source_b, [(mask_a, mask_b) for _, mask_a, mask_b in paired], LOAD_COLUMNS,
                           budget or MemoryBudget(), labels, paths)
    for done, (index, ra, rb) in enumerate(pairs):
        if progress is not None:
            progress(done, len(paired))
        position = labels[index]
        try:
            alignment = align(ra, rb, iter=iteration)
        except InputError as exc:
            per[index] = f"divergences: position {position} not aligned ({exc})"
            continue
        del ra, rb
        per[index] = _position_result(position, alignment, n, min_cost)
    # Folded in the positions' sorted order, whatever order the inputs completed them in: same numbers, same ties.
    tops, kinds_tables, kind_parts, ply_parts, notes = [], [], [], [], []
    totals = {"positions": 0, "nodes_a": 0, "nodes_b": 0, "delta": 0, "shared_residual": 0,
              "shared_residual_a": 0, "shared_residual_b": 0, "frontier_rows": 0}
    frontier_a = frontier_b = 0
    for index in sorted(per):
        result = per[index]
        if isinstance(result, str):
            notes.append(result)
            continue
        tops.append(result.top)
        frontier_a += result.frontier_a
        frontier_b += result.frontier_b
        totals["positions"] += 1
        for key, value in result.total.items():
            totals[key] += value
        kinds_tables.append(result.kinds)
        kind_parts.append(result.by_kind)
        ply_parts.append(result.by_ply)
    if not tops:
        return CompareDivergences(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
                                  notes)
    top_all = pd.concat(tops, ignore_index=True)
    order = np.argsort(-top_all["delta"].abs().to_numpy(), kind="stable")[: max(n, 0)]
    top_all = top_all.iloc[order].reset_index(drop=True)
    hidden = totals["frontier_rows"] - len(top_all)
    if hidden:
        rest_a = frontier_a - int(top_all["nodes_a"].sum())
        rest_b = frontier_b - int(top_all["nodes_b"].sum())
        rest = {"position": "", "iter_a": None, "iter_b": None, "path": REST, "ply": None, "status": "",
                "nodes_a": rest_a, "nodes_b": rest_b, "delta": rest_a - rest_b,
                "sentence": rest_sentence(hidden, rest_a, rest_b)}
        top_all = pd.concat([top_all, pd.DataFrame([rest])], ignore_index=True)
    for col in ("iter_a", "iter_b", "ply"):
        top_all[col] = top_all[col].astype("Int64")
    columns = ["position", "iter_a", "iter_b", "path", "status", "nodes_a", "nodes_b", "delta", "sentence"]
    kinds = kinds_tables[0]
    for table in kinds_tables[1:]:
        kinds = kinds.add(table, fill_value=0)
    kinds = kinds.fillna(0).astype("int64")
    return CompareDivergences(
        rows=top_all[columns],
        total=pd.DataFrame([totals]),
        by_kind=merge_breakdowns(kind_parts, ["kind_a", "kind_b"]),
        by_ply=merge_breakdowns(ply_parts, ["ply"]),
        kinds=kinds,
        notes=notes,
    )

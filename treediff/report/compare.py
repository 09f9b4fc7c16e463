"""``treediff compare A B``: one screen answering "why is A's tree bigger than B's?".

:func:`compare` returns a :class:`Comparison` of DataFrames:

* ``nodes``: per position, A's and B's node counts (mean over the searches of
  that position), ``ratio`` = A / B, and each side's ``ebf``, LMR admission
  (``lmr_pct``, % of MOVE decisions) and skip volume (``skip_pct``, PRUNE % of
  MOVE decisions); then an ``(all)`` row (node sums over the positions both
  searched and the ratio of the sums; the other columns are each side's overall
  figures) and, with several positions, a ``(geomean)`` row (the geometric mean
  of the per-position ratios).
* ``acts``: the two act breakdowns side by side, each sorted by count
  (rank-aligned, like the user's hand-made table).
* ``kinds``: MOVE decisions per shared kind, merged on the kind.
* ``lmr``, ``ebf``: the report's lmr and ebf rows of A and of B, one row each.
* ``skips``: PRUNE decisions per act, merged on the act, ``(all)`` first.
* ``divergences``, ``divergence_total``, ``divergence_by_kind``,
  ``divergence_by_ply``, ``divergence_kinds``: filled by the aligner's
  attribution (``treediff.align.summaries.divergences``, docs/ALIGN.md) when
  asked for; rendered only when not None.

The definitions are the report's (``docs/REPORTS.md``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report.core import Section, build_report
from treediff.store.source import Source


@dataclass
class Side:
    """One side of a comparison: its label and its source (one engine)."""

    label: str
    source: Source

    @property
    def searches(self) -> pd.DataFrame:
        return self.source.searches


def _report(side: Side, tables, by):
    return build_report(side.source, tables, by)


@dataclass
class Comparison:
    label_a: str
    label_b: str
    nodes: pd.DataFrame
    acts: pd.DataFrame
    kinds: pd.DataFrame
    lmr: pd.DataFrame
    ebf: pd.DataFrame
    skips: pd.DataFrame
    #: Hooks for the aligner (treediff.align.attribution), each rendered when not None:
    #: the frontier rows of largest |delta| and the (rest) row,
    divergences: pd.DataFrame | None = None
    #: the total over the aligned positions (nodes_a, nodes_b, delta, shared_residual, ...),
    divergence_total: pd.DataFrame | None = None
    #: the delta by frontier kind in A x kind in B and by frontier ply (shared residual last),
    divergence_by_kind: pd.DataFrame | None = None
    divergence_by_ply: pd.DataFrame | None = None
    #: and kind(A) x kind(B) counts of aligned decisions.
    divergence_kinds: pd.DataFrame | None = None
    #: Positions only one side searched (with --allow-different-positions).
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()

    def sections(self) -> list[Section]:
        ab = f"A = {self.label_a}, B = {self.label_b}"
        out = [
            Section("nodes", f"Nodes per position, ratio A/B ({ab})", self.nodes, ("position",)),
            Section("acts", "MOVE decisions per act, side by side", self.acts),
            Section("kinds", "MOVE decisions per kind", self.kinds, ("kind",)),
            Section("lmr", "LMR admission, magnitude (plies) and re-search rate", self.lmr, ("side",)),
            Section("ebf", "Effective branching factor", self.ebf, ("side",)),
            Section("skips", "Unsearched skips (kind PRUNE) as % of MOVE decisions", self.skips, ("act",)),
        ]
        if self.divergences is not None:
            out.append(Section("divergences", "Divergences: frontier rows of largest |delta| (nodes A - B; "
                               "every node counted once, at its topmost differing row)", self.divergences))
        if self.divergence_total is not None:
            out.append(Section("divergence_total", "Divergence total over the aligned positions: "
                               "sum of delta (frontier rows) + shared_residual = delta", self.divergence_total))
        if self.divergence_by_kind is not None:
            out.append(Section("divergence_by_kind", "Delta by frontier kind in A x kind in B (nodes)",
                               self.divergence_by_kind, ("kind_a", "kind_b")))
        if self.divergence_by_ply is not None:
            out.append(Section("divergence_by_ply", "Delta by frontier ply (nodes)", self.divergence_by_ply,
                               ("ply",)))
        if self.divergence_kinds is not None:
            out.append(Section("divergence_kinds", "Aligned decisions: kind in A x kind in B",
                               self.divergence_kinds))
        return out

    def notes(self) -> list[str]:
        notes = []
        if self.only_a or self.only_b:
            notes.append(f"note: positions searched by only one side: {len(self.only_a)} only in A, "
                         f"{len(self.only_b)} only in B (--allow-different-positions)")
        return notes


def select_engine(source: Source, engine: str | None, side: str) -> Source:
    """Keep one engine of a side; error when the side holds several and none was chosen (nothing is read)."""
    engines = list(dict.fromkeys(source.searches["engine"].astype("object")))
    if engine is None:
        if len(engines) > 1:
            raise InputError(f"{side} holds several engines ({', '.join(map(str, engines))}); "
                             f"choose one with --engine-{side.lower()}")
        return source
    if engine not in engines:
        raise InputError(f"{side} has no searches of engine {engine!r} (it has {', '.join(map(str, engines))})")
    return source.select((source.searches["engine"].astype("object") == engine).to_numpy())


def _position_ids(searches: pd.DataFrame) -> pd.Series:
    pos = searches["position"].astype("object")
    return pos.where(pos.notna(), searches["fen"].astype("object"))


def _with_position_ids(side: Side) -> Side:
    """The side with every search's position set (its id, else its FEN)."""
    searches = side.searches.copy()
    searches["position"] = pd.array(_position_ids(searches), dtype="string")
    return Side(side.label, side.source.with_searches(searches))


@dataclass
class _Summary:
    """One side's per-position and overall figures for the nodes table."""

    per_position: pd.DataFrame  #: index position: phase, nodes, ebf, lmr_pct, skip_pct
    overall: dict


def _summary(side: Side) -> _Summary:
    tables = ("ebf", "lmr", "skips")
    per = _report(side, tables, ("engine", "position"))
    allr = _report(side, tables, ("engine",))

    def figures(rep) -> pd.DataFrame:
        keys = [k for k in ("position",) if k in rep["ebf"].columns]
        ebf = rep["ebf"].set_index(keys) if keys else rep["ebf"]
        lmr = rep["lmr"].set_index(keys) if keys else rep["lmr"]
        skips = rep["skips"][rep["skips"]["act"] == "(all)"]
        skips = skips.set_index(keys) if keys else skips
        return pd.DataFrame({"nodes": ebf["mean_nodes"], "ebf": ebf["ebf"], "lmr_pct": lmr["admission_pct"],
                             "skip_pct": skips["pct_of_moves"]})

    table = figures(per)
    phases = side.searches.groupby(side.searches["position"].astype("object"), sort=False)["phase"].first()
    table.insert(0, "phase", phases.reindex(table.index).astype("object"))
    overall = figures(allr).iloc[0].to_dict()
    return _Summary(table, overall)


def _nodes_table(a: Side, b: Side) -> pd.DataFrame:
    """Per position: nodes of A and B, ratio A/B, and each side's EBF, LMR % and skip %; then totals."""
    sa, sb = _summary(a), _summary(b)
    pa_, pb_ = sa.per_position, sb.per_position
    order = list(dict.fromkeys([*pa_.index, *pb_.index]))
    table = pd.DataFrame({"position": order})
    phase = pa_["phase"].reindex(order)
    table["phase"] = phase.where(phase.notna(), pb_["phase"].reindex(order)).to_numpy()
    table["nodes_a"] = pa_["nodes"].reindex(order).to_numpy()
    table["nodes_b"] = pb_["nodes"].reindex(order).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        table["ratio"] = table["nodes_a"] / table["nodes_b"]
    for col in ("ebf", "lmr_pct", "skip_pct"):
        table[f"{col}_a"] = pa_[col].reindex(order).to_numpy()
        table[f"{col}_b"] = pb_[col].reindex(order).to_numpy()
    both = table.dropna(subset=["nodes_a", "nodes_b"])
    rows = [table]
    if len(table) > 1 or len(both) != len(table):
        sum_a, sum_b = both["nodes_a"].sum(), both["nodes_b"].sum()
        total = {"position": "(all)", "phase": None, "nodes_a": sum_a, "nodes_b": sum_b,
                 "ratio": sum_a / sum_b if sum_b else np.nan}
        for col in ("ebf", "lmr_pct", "skip_pct"):
            total[f"{col}_a"], total[f"{col}_b"] = sa.overall[col], sb.overall[col]
        rows.append(pd.DataFrame([total]))
        good = both[(both["ratio"] > 0) & np.isfinite(both["ratio"])]
        if len(good) > 1:
            rows.append(pd.DataFrame([{"position": "(geomean)", "phase": None,
                                       "ratio": float(np.exp(np.log(good["ratio"]).mean()))}]))
    return pd.concat(rows, ignore_index=True)[table.columns]


def _rank_aligned(fa: pd.DataFrame, fb: pd.DataFrame, la: str, lb: str, label_col: str) -> pd.DataFrame:
    blocks = []
    for frame, label in ((fa, la), (fb, lb)):
        block = frame[[label_col, "count", "pct_of_moves"]].reset_index(drop=True)
        block.columns = [f"{label} {label_col}", f"{label} count", f"{label} pct_of_moves"]
        blocks.append(block)
    return pd.concat(blocks, axis=1)


def _merged(fa: pd.DataFrame, fb: pd.DataFrame, on: str) -> pd.DataFrame:
    left = fa[[on, "count", "pct_of_moves"]].rename(columns={"count": "count_a", "pct_of_moves": "pct_a"})
    right = fb[[on, "count", "pct_of_moves"]].rename(columns={"count": "count_b", "pct_of_moves": "pct_b"})
    merged = left.merge(right, on=on, how="outer", sort=False)
    for c in ("count_a", "count_b"):
        merged[c] = merged[c].fillna(0).astype(np.int64)
    for c in ("pct_a", "pct_b"):
        merged[c] = merged[c].fillna(0.0)
    merged["_total"] = merged["count_a"] + merged["count_b"]
    first = merged[on] == "(all)"
    merged = pd.concat([merged[first], merged[~first].sort_values("_total", ascending=False, kind="stable")])
    return merged.drop(columns="_total").reset_index(drop=True)


def _with_side(frame: pd.DataFrame, label: str) -> pd.DataFrame:
    frame = frame.drop(columns=["engine"]).copy()
    frame.insert(0, "side", label)
    return frame


def compare(a: Side, b: Side, allow_different_positions: bool = False) -> Comparison:
    """Compare two sides (one engine each); see the module docstring for the tables."""
    for side, name in ((a, "A"), (b, "B")):
        if len(side.searches) == 0:
            raise InputError(f"{name} ({side.label}) holds no searches")
    pa_ids, pb_ids = set(_position_ids(a.searches).dropna()), set(_position_ids(b.searches).dropna())
    only_a, only_b = tuple(sorted(pa_ids - pb_ids)), tuple(sorted(pb_ids - pa_ids))
    if (only_a or only_b) and not allow_different_positions:
        example = (only_a or only_b)[0]
        raise InputError(
            f"A and B searched different positions ({len(only_a)} only in A, {len(only_b)} only in B, "
            f"e.g. {example!r} only in {'A' if only_a else 'B'}); pass --allow-different-positions to compare anyway")
    a, b = _with_position_ids(a), _with_position_ids(b)
    label_a, label_b = a.label, b.label
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    ra = _report(a, ("acts", "lmr", "ebf", "skips"), ("engine",))
    rb = _report(b, ("acts", "lmr", "ebf", "skips"), ("engine",))
    return Comparison(
        label_a=label_a,
        label_b=label_b,
        nodes=_nodes_table(a, b),
        acts=_rank_aligned(ra["acts"], rb["acts"], label_a, label_b, "act"),
        kinds=_merged(ra["kinds"], rb["kinds"], "kind"),
        lmr=pd.concat([_with_side(ra["lmr"], label_a), _with_side(rb["lmr"], label_b)], ignore_index=True),
        ebf=pd.concat([_with_side(ra["ebf"], label_a), _with_side(rb["ebf"], label_b)], ignore_index=True),
        skips=_merged(ra["skips"], rb["skips"], "act"),
        only_a=only_a,
        only_b=only_b,
    )


def compare_sources(source_a: Source, source_b: Source, label_a: str = "A", label_b: str = "B",
                    engine_a: str | None = None, engine_b: str | None = None,
                    allow_different_positions: bool = False) -> Comparison:
    """:func:`compare` of two inputs, choosing one engine per side."""
    sa = select_engine(source_a, engine_a, "A")
    sb = select_engine(source_b, engine_b, "B")
    return compare(Side(label_a, sa), Side(label_b, sb), allow_different_positions)

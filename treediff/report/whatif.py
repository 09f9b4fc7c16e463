"""``treediff whatif``: what fraction of the tries a new pruning or reduction rule admits would have failed high.

Definitions (``docs/REPORTS.md``, "whatif"):

* The rule is a boolean expression over move-try columns (:data:`RULE_COLUMNS`,
  :mod:`treediff.report.expr`).
* The **eligible** tries are those the rule could change: first kind SEARCH,
  REDUCE or EXTEND with ``--as prune`` (default), SEARCH or EXTEND with
  ``--as reduce``.  The **newly admitted population** is the eligible tries
  matching the rule.
* Per group: ``all_tries`` (every move try), ``tries`` (admitted) and
  ``share_pct`` (100 · tries / all_tries), ``fail_highs`` (admitted tries that
  failed high), ``fh_pct``, ``fh_lo``, ``fh_hi`` (Wilson 95 %),
  ``baseline_tries``, ``baseline_fail_highs``, ``baseline_fh_pct`` (all eligible
  tries, for comparison) and ``subtree_nodes`` (Σ subtree nodes of the admitted
  tries over all visits: the most admitting them could save).
* **Silent misses**: the admitted tries that failed high, the ``top`` largest by
  subtree nodes, with their path, depth, mn, kind and source line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import polars as pl

from treediff.model.errors import InputError
from treediff.report.core import fold_tables
from treediff.report.expr import Expr, check_types, parse
from treediff.report.grouping import key_frame, parse_by
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tries import (COLUMNS, OPTIONAL, SHADOW_OPTIONAL, SHADOW_READS, SHADOW_TITLE, derive, pct,
                                   shadow_counts, shadow_frame, strings_at, try_columns, wilson)
from treediff.store.source import BATCH_RECORDS, Source

#: Columns a rule may name, and their types.
RULE_COLUMNS: dict[str, type] = {"kind": str, "act": str, "depth": float, "new_depth": float, "reduction": float,
                                 "mn": float, "ply": float, "see": float, "hist": float, "nt": str, "phase": str}
#: First kinds a rule can change, per ``--as``.
ELIGIBLE = {"prune": ("SEARCH", "REDUCE", "EXTEND"), "reduce": ("SEARCH", "EXTEND")}
_COUNTS = ("all_tries", "tries", "fail_highs", "baseline_tries", "baseline_fail_highs", "subtree_nodes")
_MISS_COLUMNS = ("search", "iter", "path", "kind", "act", "depth", "mn", "subtree_nodes", "line")
TITLES = {"whatif": "Tries the rule newly admits, their fail-high rate and subtree nodes",
          "silent_misses": "Silent misses: admitted tries that failed high, largest subtrees first"}


def parse_rule(rule: str) -> Expr:
    """The ``--rule`` expression (an error naming the offending position if it does not read)."""
    expr = parse(rule, tuple(RULE_COLUMNS), "--rule")
    check_types(expr, RULE_COLUMNS, rule, "--rule")
    return expr


@dataclass
class WhatifPartial:
    counts: pd.DataFrame  #: srow, iter, key and _COUNTS per cell
    misses: pd.DataFrame  #: the batch's top silent misses (srow, iter, key and _MISS_COLUMNS)
    shadow: pd.DataFrame  #: SHADOW records per cell and act (tries.shadow_counts)


class WhatifTable:
    """The whatif figures as a report table (folded over a source's batches like any other)."""

    name = "whatif"
    columns = (*COLUMNS, *SHADOW_READS, "mn", "line")  # act, depth, mn: the silent misses show them
    optional_columns = (*OPTIONAL, *SHADOW_OPTIONAL, "new_depth", "reduction", "see", "hist", "node_type", "phase")

    def __init__(self, rule: str, as_: str = "prune", top: int = 10):
        if as_ not in ELIGIBLE:
            raise InputError(f"--as: choose prune or reduce, not {as_!r}")
        self.rule = rule
        self.expr = parse_rule(rule)
        self.as_ = as_
        self.top = top

    def partial(self, batch: Batch) -> WhatifPartial | None:
        t = derive(batch)
        if not t.n:
            return None
        shadow = shadow_counts(batch, t)
        named = self.expr.names() | {"kind"}  # only the columns the rule names are built
        # ... and those the silent misses show
        tc = try_columns(batch, t, tuple(c for c in RULE_COLUMNS if c in named | {"act", "depth", "mn"}))
        pf = pl.DataFrame([tc.strings(c) if RULE_COLUMNS[c] is str else
                           pl.Series(c, tc.numbers[c], nan_to_null=True) for c in RULE_COLUMNS if c in named])
        try:
            # with_columns broadcasts a constant rule ("true") to every try
            match = pf.with_columns(self.expr.to_polars().fill_null(False).alias("_m")).get_column("_m").to_numpy()
        except pl.exceptions.PolarsError as exc:  # a type the checks did not foresee
            raise InputError(f"--rule: cannot be evaluated on the tries ({type(exc).__name__}: {exc})") from None
        match = np.asarray(match, dtype=bool)
        eligible_codes = np.flatnonzero(np.isin(tc.cats["kind"], ELIGIBLE[self.as_]))
        eligible = np.isin(tc.codes["kind"], eligible_codes)
        admitted = eligible & match
        fh = tc.fh
        cell = tc.cell
        n = batch.n_cells

        def count(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
            w = None if weights is None else weights[mask].astype(np.float64)
            return np.bincount(cell[mask], weights=w, minlength=n).astype(np.int64)

        every = np.ones(len(cell), dtype=bool)
        columns = {"all_tries": count(every), "tries": count(admitted), "fail_highs": count(admitted & fh),
                   "baseline_tries": count(eligible), "baseline_fail_highs": count(eligible & fh),
                   "subtree_nodes": count(admitted, tc.subtree)}
        used = np.flatnonzero(columns["all_tries"])
        counts = batch.cell_frame(used, **{k: v[used] for k, v in columns.items()})
        miss = np.flatnonzero(admitted & fh)
        if len(miss) > self.top:
            sub = tc.subtree[miss]
            miss = miss[np.argsort(-sub, kind="stable")[: self.top]]
        rec = tc.first[miss]
        records = batch.records
        misses = batch.cell_frame(
            cell[miss], search=records["search"].to_numpy()[rec], path=strings_at(records, "path", rec),
            kind=tc.labels("kind", miss), act=tc.labels("act", miss),
            depth=tc.numbers["depth"][miss], mn=tc.numbers["mn"][miss], subtree_nodes=tc.subtree[miss],
            line=records["line"].to_numpy()[rec] if "line" in records else np.full(len(rec), -1))
        return WhatifPartial(counts, misses, shadow)

    def finish(self, partials: Sequence[WhatifPartial | None], grouping: Grouping) -> list[Section]:
        parts = [p for p in partials if p is not None]
        counts = concat([p.counts for p in parts], ["srow", "iter", "key", *_COUNTS])
        tot = {c: grouping.total(counts, c) for c in _COUNTS}
        lo, hi = wilson(tot["fail_highs"], tot["tries"])
        body = pd.DataFrame({
            "all_tries": tot["all_tries"], "tries": tot["tries"],
            "share_pct": pct(tot["tries"], tot["all_tries"]), "fail_highs": tot["fail_highs"],
            "fh_pct": pct(tot["fail_highs"], tot["tries"]), "fh_lo": lo, "fh_hi": hi,
            "baseline_tries": tot["baseline_tries"], "baseline_fail_highs": tot["baseline_fail_highs"],
            "baseline_fh_pct": pct(tot["baseline_fail_highs"], tot["baseline_tries"]),
            "subtree_nodes": tot["subtree_nodes"]})
        table = pd.concat([grouping.groups.reset_index(drop=True), body], axis=1)
        misses = concat([p.misses for p in parts], ["srow", "iter", "key", "search", "path", "kind", "act",
                                                     "depth", "mn", "subtree_nodes", "line"])
        keys = tuple(grouping.keys)
        if len(misses):
            misses = misses.assign(_group=grouping.group_of(misses))
            misses = misses.sort_values(["subtree_nodes", "_group", "search", "line"],
                                        ascending=[False, True, True, True], kind="stable").head(self.top)
            kf = key_frame(grouping.groups, misses["_group"].to_numpy(dtype=np.int64))
            source = grouping.searches["source"].astype(object).to_numpy()[misses["srow"].to_numpy()] \
                if "source" in grouping.searches else np.full(len(misses), None)
            position = grouping.searches["position"].astype(object).to_numpy()[misses["srow"].to_numpy()]
            mframe = pd.concat([kf, pd.DataFrame({
                "position": position, "iter": misses["iter"].to_numpy(), "path": misses["path"].to_numpy(),
                "kind": misses["kind"].to_numpy(), "act": misses["act"].to_numpy(),
                "depth": misses["depth"].to_numpy(), "mn": misses["mn"].to_numpy(),
                "subtree_nodes": misses["subtree_nodes"].to_numpy(dtype=np.int64),
                "source": source, "line": misses["line"].to_numpy(dtype=np.int64)})], axis=1)
            mframe = mframe.loc[:, ~mframe.columns.duplicated()]
        else:
            mframe = pd.DataFrame({c: [] for c in ("engine", "position", "iter", "path", "kind", "act", "depth",
                                                   "mn", "subtree_nodes", "source", "line")})
        note = f"rule: {self.rule} (--as {self.as_}: eligible first kinds {', '.join(ELIGIBLE[self.as_])})"
        out = [Section("whatif", TITLES["whatif"], table, keys, notes=[note]),
               Section("silent_misses", TITLES["silent_misses"], mframe.reset_index(drop=True), ())]
        shadow = shadow_frame([p.shadow for p in parts], grouping)
        if shadow is not None:
            out.append(Section("shadow", SHADOW_TITLE, shadow, keys))
        return out


def whatif(source: Source, rule: str, as_: str = "prune", by: Sequence[str] | str | None = None, top: int = 10,
           target: int = BATCH_RECORDS) -> list[Section]:
    """The whatif sections of ``source`` for one rule (see the module docstring)."""
    table = WhatifTable(rule, as_, top)
    keys = parse_by(by)
    partials, grouping = fold_tables(source, [table], keys, target)
    return table.finish(partials[0], grouping)

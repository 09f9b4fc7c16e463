"""Assembling report tables: which columns each needs, and the :class:`Report` they make up.

Definitions of every table are in ``docs/REPORTS.md`` and in the docstrings of
the modules computing them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import pandas as pd

from treediff.model.errors import InputError
from treediff.report.acts import acts_table, kinds_table, skips_table
from treediff.report.context import Context
from treediff.report.ebf import ebf_iter_table, ebf_ply_table, ebf_table, search_nodes
from treediff.report.grouping import parse_by
from treediff.report.lmr import lmr_hist_table, lmr_table
from treediff.report.nodes import nodes_table
from treediff.report.scope import scope_table

#: The tables ``--table`` accepts, in display order.
TABLES = ("nodes", "acts", "lmr", "ebf", "skips", "scope")

#: Records columns each table reads (``engine`` and ``search`` are always read).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "nodes": ("tag", "iter", "ply", "depth"),
    "acts": ("tag", "act", "kind"),
    "lmr": ("tag", "kind", "null_move", "reduction"),
    "ebf": ("tag", "iter", "ply", "depth"),
    "skips": ("tag", "act", "kind"),
    "scope": ("tag", "act", "kind", "ply", "seq", "iter"),
}

TITLES = {
    "nodes": "Nodes (RESULT records) and ratio to the first engine",
    "acts": "MOVE decisions per act",
    "kinds": "MOVE decisions per kind",
    "lmr": "LMR admission, magnitude (plies) and re-search rate",
    "lmr_hist": "LMR reductions, quarter-ply histogram",
    "ebf": "Effective branching factor",
    "ebf_iter": "EBF per iteration: sqrt(N(d)/N(d-2))",
    "ebf_ply": "Final-iteration nodes per ply and fanout",
    "skips": "Unsearched skips (kind PRUNE) as % of MOVE decisions",
    "scope": "Prune scope: % of nodes still deciding moves after the prune",
}


@dataclass
class Section:
    """One rendered table: a stable ``name`` (used as JSON key / CSV section), a title and the data."""

    name: str
    title: str
    frame: pd.DataFrame
    keys: tuple[str, ...] = ()  #: grouping columns at the left of ``frame``


@dataclass
class Report:
    """The tables of one ``treediff report`` run, in display order."""

    sections: list[Section] = field(default_factory=list)
    keys: tuple[str, ...] = ("engine",)

    def __getitem__(self, name: str) -> pd.DataFrame:
        for s in self.sections:
            if s.name == name:
                return s.frame
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sections]


def parse_tables(tables: str | Iterable[str] | None) -> tuple[str, ...]:
    """Normalize ``--table`` (comma-separated, ``all`` for every table) to names in display order."""
    if tables is None:
        return TABLES
    items = [t.strip() for t in (tables.split(",") if isinstance(tables, str) else tables) if t.strip()]
    if not items or "all" in items:
        return TABLES
    unknown = [t for t in items if t not in TABLES]
    if unknown:
        raise InputError(f"--table: unknown table {unknown[0]!r} (choose from {', '.join(TABLES)}, all)")
    return tuple(t for t in TABLES if t in items)


def columns_for(tables: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The records columns the given tables need, grouping included."""
    cols: dict[str, None] = {}
    for t in tables:
        cols.update(dict.fromkeys(TABLE_COLUMNS[t]))
    if "iter" in keys:
        cols["iter"] = None
    return list(cols)


def build_report(records: pd.DataFrame, searches: pd.DataFrame, tables: Sequence[str] = TABLES,
                 by: Sequence[str] | str | None = None) -> Report:
    """Compute the requested tables; ``records`` must hold :func:`columns_for` columns."""
    keys = parse_by(by)
    tables = parse_tables(tables)
    if len(searches) == 0:
        raise InputError("no searches in the input")
    needed = columns_for(tables, keys)
    missing = [c for c in needed if c not in records.columns]
    if missing and len(records):
        raise InputError(f"the records table lacks column(s) {', '.join(missing)}")
    if missing:
        records = records.assign(**{c: pd.Series([], dtype="object") for c in missing})
    ctx = Context(records=records, searches=searches, keys=tuple(keys))
    sn = search_nodes(ctx) if {"nodes", "ebf"} & set(tables) else None
    return assemble_report(ctx, tables, sn)


def assemble_report(ctx: Context, tables: Sequence[str], sn=None) -> Report:
    """The report's sections computed from a :class:`Context` (its records, or caches pre-filled by
    :mod:`treediff.report.partitioned`); ``sn`` are the per-search node data when nodes/ebf are asked."""
    keys = ctx.keys
    search_keys = tuple(k for k in keys if k != "iter")
    report = Report(keys=tuple(keys))

    def add(name: str, frame: pd.DataFrame, k: tuple[str, ...] = tuple(keys)) -> None:
        report.sections.append(Section(name, TITLES[name], frame.reset_index(drop=True), k))

    for t in tables:
        if t == "nodes":
            add("nodes", nodes_table(ctx, sn))
        elif t == "acts":
            add("acts", acts_table(ctx))
            add("kinds", kinds_table(ctx))
        elif t == "lmr":
            add("lmr", lmr_table(ctx))
            add("lmr_hist", lmr_hist_table(ctx))
        elif t == "ebf":
            add("ebf", ebf_table(ctx, sn), search_keys)
            add("ebf_iter", ebf_iter_table(ctx, sn), search_keys)
            add("ebf_ply", ebf_ply_table(ctx, sn), search_keys)
        elif t == "skips":
            add("skips", skips_table(ctx))
        elif t == "scope":
            add("scope", scope_table(ctx))
    return report

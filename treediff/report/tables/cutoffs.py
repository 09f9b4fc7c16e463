"""The ``cutoffs`` table: how node visits end in a cutoff, by what, and at which move number.

Definitions (``docs/REPORTS.md``, "cutoffs"; the derivation is :mod:`treediff.report.tries`):

* ``cutoffs`` section, one row per group and class (``all``, ``move``,
  ``null``, ``probcut``, ``multicut``, ``none``): ``visits`` (node visits:
  RESULT records), ``cutoffs`` (visits of that class ending ``bound=lower``),
  ``pct_of_visits`` = 100 · cutoffs / visits, ``pct_of_cutoffs`` = 100 ·
  cutoffs / the group's cutoff visits.
* ``cutoff_mn`` section, per group, over the ``move``-class cutoffs:
  ``move_cutoffs``, ``mn1_pct``, ``mn2_pct``, ``mn3_4_pct``, ``mn5p_pct``
  (the cutoff record's ``mn`` = 1, 2, 3–4, ≥ 5, as % of move cutoffs with an
  ``mn``; ``mn1_pct`` is the first-move cutoff rate) and ``mean_mn``.

A visit is counted in the cell of its RESULT record (``--by depth``: the
node's entry depth, ``--by ply``: its ply); with ``--by nt``, in the cell of
its first MOVE record (the node type it carries; a visit without decisions:
its RESULT, no node type).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tries import CLASSES, COLUMNS, MOVE, OPTIONAL, derive, pct

TITLES = {
    "cutoffs": "Cutoff visits (RESULT bound=lower) by class, % of node visits and of cutoffs",
    "cutoff_mn": "Move cutoffs by the cutoff move's number (mn): the first-move cutoff rate",
}
_MN = ("mn1", "mn2", "mn3_4", "mn5p")
_COUNTS = ("visits", *CLASSES, *_MN, "mn_known", "mn_sum")


def cutoff_counts(batch: Batch) -> pd.DataFrame | None:
    """Per cell: node visits, cutoff visits per class, move cutoffs per mn band, Σ mn (None: no visit)."""
    t = derive(batch, full=False)
    if not len(t.v_result):
        return None
    n_cells = batch.n_cells
    # A RESULT carries no node type: with --by nt a visit is counted where its first MOVE record is.
    where = t.v_first if "nt" in batch.record_keys else t.v_result
    cell = batch.record_groups.record_group[where]
    out: dict[str, np.ndarray] = {"visits": np.bincount(cell, minlength=n_cells)}
    for code, name in enumerate(CLASSES):
        out[name] = np.bincount(cell[t.v_class == code], minlength=n_cells)
    move = (t.v_class == MOVE) & (t.v_decision >= 0)
    mn_all = np.asarray(batch.records["mn"].to_numpy(dtype=np.float64, na_value=np.nan))
    mn = mn_all[np.maximum(t.v_decision, 0)]
    known = move & ~np.isnan(mn) & (mn >= 1)
    for name, sel in zip(_MN, (mn == 1, mn == 2, (mn >= 3) & (mn <= 4), mn >= 5)):
        out[name] = np.bincount(cell[known & sel], minlength=n_cells)
    out["mn_known"] = np.bincount(cell[known], minlength=n_cells)
    out["mn_sum"] = np.bincount(cell[known], weights=mn[known], minlength=n_cells)
    used = np.flatnonzero(out["visits"])
    return batch.cell_frame(used, **{k: np.asarray(v[used], dtype=np.int64) for k, v in out.items()})


def finish_cutoffs(groups: pd.DataFrame, totals: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two sections' frames from per-group totals of :data:`_COUNTS`."""
    n = len(groups)
    visits = totals["visits"]
    cut: np.ndarray = np.sum([totals[c] for c in CLASSES], axis=0).astype(np.int64) if n else np.zeros(0, np.int64)
    rows: list[pd.DataFrame] = []
    for name, counts in (("all", cut), *((c, totals[c]) for c in CLASSES)):
        rows.append(pd.DataFrame({"_group": np.arange(n), "_order": len(rows), "class": name, "visits": visits,
                                  "cutoffs": counts, "pct_of_visits": pct(counts, visits),
                                  "pct_of_cutoffs": pct(counts, cut)}))
    body = pd.concat(rows, ignore_index=True).sort_values(["_group", "_order"], kind="stable")
    keys = key_frame(groups, body["_group"].to_numpy())
    frame = pd.concat([keys, body[["class", "visits", "cutoffs", "pct_of_visits", "pct_of_cutoffs"]]
                       .reset_index(drop=True)], axis=1)
    known = totals["mn_known"]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(known > 0, totals["mn_sum"] / np.where(known > 0, known, 1), np.nan)
    mn = pd.DataFrame({"move_cutoffs": totals["move"], **{f"{m}_pct": pct(totals[m], known) for m in _MN},
                       "mean_mn": mean})
    return frame, pd.concat([groups.reset_index(drop=True), mn], axis=1)


class CutoffsTable:
    """``--table cutoffs``: the ``cutoffs`` and ``cutoff_mn`` sections."""

    name = "cutoffs"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.1
    #: Reads the batch's move-try derivation (treediff.report.tries.derive): core runs it first, on its own.
    reads_tries = True
    columns = (*COLUMNS, "mn")
    optional_columns = OPTIONAL

    def partial(self, batch: Batch) -> pd.DataFrame | None:
        return cutoff_counts(batch)

    def finish(self, partials: Sequence[pd.DataFrame | None], grouping: Grouping) -> list[Section]:
        merged = concat(partials, ["srow", "iter", "key", *_COUNTS])
        totals = {c: grouping.total(merged, c) for c in _COUNTS}
        frame, mn = finish_cutoffs(grouping.groups, totals)
        keys = tuple(grouping.keys)
        return [Section("cutoffs", TITLES["cutoffs"], frame, keys),
                Section("cutoff_mn", TITLES["cutoff_mn"], mn, keys)]


CUTOFFS = CutoffsTable()

"""``align()``: two records tables -> an :class:`Alignment` of one position's trees."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from treediff.align.columns import filtered, has, numbers, records_table, value

from treediff.align.core import VISIT_MODES, RowArrays, _Side, align_sides
from treediff.align.select import SideChoice, choose_iterations, choose_searches
from treediff.model.errors import InputError


@dataclass
class Alignment:
    """Two sides' trees of one position, aligned path by path.

    ``rows`` has one row per move path in depth-first (pre-order) tree order:

    * ``path`` (UCI moves joined by ``/``, ``""`` for the root), ``ply``;
    * ``status``: ``same`` (both decided the path with the same acts, depths,
      new depths and reductions, in the same order), ``differs`` (both have
      it, decided differently: other acts, or the same acts at other depths),
      ``only-A`` / ``only-B`` (one side has no record at or below the path);
    * per side (suffix ``_a`` / ``_b``), about the decisions made in the
      parent's main visit (docs/ALIGN.md, "Node visits"; all the path's
      decisions when that visit made none): ``seq`` (their acts in ``seq``
      order, joined by ``→``, e.g. ``LMR→LMR-RESEARCH``; ``""`` when the side
      made no decision there), ``kind`` (of the first decision), ``depth``
      (node depth of the first decision, plies; for a path with no decision,
      e.g. the root, its main visit's RESULT depth), ``new_depth`` (first
      decision), ``final_depth`` (last decision's new depth: the depth of a
      re-search), ``reduction`` (first decision), ``mn``, ``decisions`` (how
      many), ``line`` (source line of the first decision, the row's main
      decision; for a path with no decision, its main visit's RESULT's line;
      null when unknown), ``visits`` (the path's RESULT records: its visits);
    * ``nodes_a`` / ``nodes_b``: RESULT records at the path or below it (the
      subtree's node count, all of the iteration's visits);
      ``other_visit_nodes_a`` / ``_b``: those of them under the path's other
      visits (not under its main visit);
    * ``parent``: row number of the parent path (-1 for the root);
      ``subtree_rows``: rows in the subtree, the row itself included.

    With ``visits="all"``: ``visit_label`` (``main`` for the path's row;
    ``verify`` or ``re-search`` for a row of one of its other visits, which
    follows the path's row), ``visit_a`` / ``_b`` (the visit's number) and
    ``visit_depth_a`` / ``_b`` (its RESULT ``d``).
    """

    rows: pd.DataFrame
    a: SideChoice
    b: SideChoice
    notes: list[str] = field(default_factory=list)

    @property
    def iter_a(self) -> int:
        return self.a.iter

    @property
    def iter_b(self) -> int:
        return self.b.iter

    @property
    def position(self) -> str:
        return self.a.position or self.b.position


def align(
    records_a: pd.DataFrame | pa.Table,
    records_b: pd.DataFrame | pa.Table,
    iter: int | None = None,
    position: str | None = None,
    visits: str = "main",
) -> Alignment:
    """Align A's and B's trees of one position and one iteration each.

    ``records_*`` are records tables (``Source.records(LOAD_COLUMNS)``, or Arrow tables); see
    :mod:`treediff.align.select` for how the search and iteration are chosen
    and :class:`Alignment` for the result.  ``visits``: ``"main"`` (one row
    per path) or ``"all"`` (also a row per other visit of a path in its
    parent's main visit, labelled in ``visit_label``).  Raises
    :class:`InputError` when the choice is impossible or ambiguous.
    """
    if visits not in VISIT_MODES:
        raise ValueError(f"visits must be one of {', '.join(VISIT_MODES)}, not {visits!r}")
    rows, ca, cb, notes = align_arrays(records_a, records_b, iter=iter, position=position, visits=visits)
    return Alignment(rows=rows.frame(), a=ca, b=cb, notes=notes)


def align_arrays(
    records_a: pa.Table | pd.DataFrame,
    records_b: pa.Table | pd.DataFrame,
    iter: int | None = None,
    position: str | None = None,
    visits: str = "main",
) -> tuple[RowArrays, SideChoice, SideChoice, list[str]]:
    """:func:`align` without building the rows' DataFrame: (rows as arrays, A's choice, B's choice, notes).

    ``records_*``: Arrow records tables (compare's positions, :mod:`treediff.align.stream`) or pandas frames
    (converted once, :func:`~treediff.align.columns.records_table`)."""
    records_a, records_b = records_table(records_a), records_table(records_b)
    search_a, search_b, pos = choose_searches(records_a, records_b, position)
    ra = filtered(records_a, numbers(records_a, "search", np.int64, fill=None) == search_a)
    rb = filtered(records_b, numbers(records_b, "search", np.int64, fill=None) == search_b)
    iter_a, iter_b, its_a, its_b, notes = choose_iterations(ra, rb, iter)
    sides = []
    dropped = 0
    for label, recs, it, its, search in (("A", ra, iter_a, its_a, search_a), ("B", rb, iter_b, its_b, search_b)):
        # The iteration is a mask over the columns, not a filtered table (_Side converts, then indexes).
        keep = numbers(recs, "iter", np.int64, fill=0) == it if it != 0 and has(recs, "iter") else None
        count = recs.num_rows if keep is None else int(keep.sum())
        if count == 0:
            raise InputError(f"{label} has no records in iteration {it} of position {pos}")
        first = 0 if keep is None else int(np.argmax(keep))
        if keep is not None and bool(keep[first:first + count].all()):
            # The iteration's records are one run (a search's iterations follow each other in record order):
            # a zero-copy slice, so _Side converts that run's columns only, not every iteration's (~30% of a
            # compare position's records are in earlier iterations).  A table in several chunks has its
            # dictionaries unified first: the slice's chunks then carry every chunk's labels, so a string
            # column's categories are those of the whole table, as without the slice.
            if recs.column(0).num_chunks > 1:  # (count > 0: the table has rows)
                recs = recs.unify_dictionaries()
            recs, keep = recs.slice(first, count), None
            first = 0
        engine_name = value(recs, "engine", first) if has(recs, "engine") else None
        engine = "" if engine_name is None else str(engine_name)
        choice = SideChoice(label, engine, pos, int(search), int(it), its[0], its[1])
        no_path = recs.column("path").is_null().to_numpy(zero_copy_only=False) if recs.column("path").null_count \
            else np.zeros(recs.num_rows, dtype=bool)
        dropped += int(no_path.sum() if keep is None else no_path[keep].sum())
        sides.append((_Side(recs, keep), choice))
    (side_a, ca), (side_b, cb) = sides
    rows = align_sides(side_a, side_b, keep_visits=visits == "all")
    if dropped:
        notes.append(f"{dropped} record(s) without a path were left out")
    return rows, ca, cb, notes

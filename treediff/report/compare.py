"""``treediff compare A B``: one screen answering "why is A's tree bigger than B's?".

:func:`compare` returns a :class:`Comparison` of DataFrames:

* ``nodes``: per position, A's and B's node counts (mean over the searches of
  that position), ``ratio`` = A / B, and each side's ``ebf``, LMR admission
  (``lmr_pct``, % of MOVE decisions) and skip volume (``skip_pct``, PRUNE % of
  MOVE decisions); then an ``(all)`` row (node sums over the positions both
  searched and the ratio of the sums; the other columns are each side's overall
  figures) and, with several positions, a ``(geomean)`` row (the geometric mean
  of the per-position ratios).
* ``acts``: the act breakdowns side by side, aligned by kind (a PRUNE act
  next to the other side's PRUNE acts; within a kind, each side's acts by
  count), ``kind`` first.
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

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report import floats
from treediff.report.core import (Fold, Folded, Report, ReportRequest, Section, _row_of, build_reports, finish_report,
                                  fold_many)
from treediff.report.filters import IterationCut
from treediff.report.pairing import (ITERATIONS, LETTERS, Pairing, SideDepths, cut_filter, cut_view, depths_of,
                                     pair_positions)
from treediff.report.table import Batch, Grouping, concat
from treediff.report.tables.nodes import search_position_keys
from treediff.store.source import BATCH_RECORDS, Source, release_freed_memory


@dataclass
class Side:
    """One side of a comparison: its label and its source (one engine)."""

    label: str
    source: Source

    @property
    def searches(self) -> pd.DataFrame:
        return self.source.searches


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
    #: Positions not every side searched (with --allow-different-positions): A's, B's.
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()
    #: Every side's label (A, B, C, ...; empty: A and B only).
    labels: tuple[str, ...] = ()
    #: Per side: the positions (row labels) it did not search.
    missing: tuple[tuple[str, ...], ...] = ()
    #: What pairing by position and cutting to a common depth did (clashes, cuts, unpaired positions).
    pairing_notes: list[str] = field(default_factory=list)
    #: With ``lmr_by_phase`` (``compare --plot``): each side's lmr rows per phase (``side``, ``phase``, ...).
    lmr_phase: pd.DataFrame | None = None

    @property
    def all_labels(self) -> tuple[str, ...]:
        return self.labels or (self.label_a, self.label_b)

    def sections(self) -> list[Section]:
        labels = self.all_labels
        ab = ", ".join(f"{LETTERS[i].upper()} = {label}" for i, label in enumerate(labels))
        ratio = "A/B" if len(labels) == 2 else "A/X"
        out = [
            Section("nodes", f"Nodes per position at a common depth, ratio {ratio} ({ab})", self.nodes,
                    ("position",)),
            Section("acts", "MOVE decisions per act, side by side, aligned by kind", self.acts, ("kind",)),
            Section("kinds", "MOVE decisions per kind", self.kinds, ("kind",)),
            Section("lmr", "LMR admission, magnitude (plies) and re-search rate", self.lmr, ("side",)),
            Section("ebf", "Effective branching factor", self.ebf, ("side",)),
            Section("skips", "Unsearched skips (kind PRUNE) as % of MOVE decisions", self.skips, ("act",)),
        ]
        if self.divergences is not None:
            out.append(Section("divergences", "Divergences: frontier rows of largest |delta| "
                               "(delta = nodes A - B, each node counted once)", self.divergences))
        if self.divergence_total is not None:
            out.append(Section("divergence_total", "Divergence total (aligned iterations): "
                               "sum of delta + shared_residual = delta", self.divergence_total))
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
        if len(self.all_labels) == 2 and (self.only_a or self.only_b):
            notes.append(f"note: positions searched by only one side: {len(self.only_a)} only in A, "
                         f"{len(self.only_b)} only in B (--allow-different-positions)")
        elif any(self.missing):
            lacking = ", ".join(f"{len(m)} missing in {LETTERS[i].upper()}" for i, m in enumerate(self.missing) if m)
            notes.append(f"note: positions not searched by every side: {lacking} (--allow-different-positions)")
        return notes + list(self.pairing_notes)


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


@dataclass
class _Figures:
    """One side's per-position and paired-overall figures (at the compared depth) and its side sections."""

    per_position: pd.DataFrame  #: index position label: phase, nodes, ebf, lmr_pct, skip_pct
    overall: dict
    report: Report              #: acts, lmr, ebf, skips over the paired positions
    lmr_phase: pd.DataFrame | None = None  #: lmr per phase over the paired positions (when asked)


def _figures(rep: Report, by_position: bool) -> pd.DataFrame:
    keys = ["position"] if by_position else []
    ebf = rep["ebf"].set_index(keys) if keys else rep["ebf"]
    lmr = rep["lmr"].set_index(keys) if keys else rep["lmr"]
    skips = rep["skips"][rep["skips"]["act"] == "(all)"]
    skips = skips.set_index(keys) if keys else skips
    return pd.DataFrame({"nodes": ebf["mean_nodes"], "ebf": ebf["ebf"], "lmr_pct": lmr["admission_pct"],
                         "skip_pct": skips["pct_of_moves"]})


def _figure_requests(keep: IterationCut | None, population: np.ndarray | None,
                     lmr_by_phase: bool) -> list[ReportRequest]:
    """A side's reports: per (engine, position) ebf/lmr/skips over every search; acts/lmr/ebf/skips per engine
    (and, when asked, lmr per (engine, phase)) over ``population``, the paired positions' searches (None:
    every search, as when none is paired); each counting the records ``keep`` keeps."""
    requests = [ReportRequest(("ebf", "lmr", "skips"), ("engine", "position"), keep=keep),
                ReportRequest(("acts", "lmr", "ebf", "skips"), ("engine",), keep=keep, rows=population)]
    if lmr_by_phase:
        requests.append(ReportRequest(("lmr",), ("engine", "phase"), keep=keep, rows=population))
    return requests


def _side_figures(view: Source, keep: IterationCut, paired_rows: np.ndarray, target: int,
                  lmr_by_phase: bool = False, first: _FirstRead | None = None) -> _Figures:
    """One side's figures (:func:`_figure_requests`) from one read of its cut view (:func:`build_reports`),
    or with no read at all from the side's first read (``first``) when that counted the same records."""
    population = paired_rows if paired_rows.any() and not paired_rows.all() else None
    reports = first.reports(view, keep, population) if first is not None else None
    if reports is None:
        reports = build_reports(view, _figure_requests(keep, population, lmr_by_phase), target)
    per, overall, *by_phase = reports
    table = _figures(per, True)
    searches = view.searches
    phases = searches.groupby(searches["position"].astype("object"), sort=False)["phase"].first()
    table.insert(0, "phase", phases.reindex(table.index).astype("object"))
    lmr_phase = by_phase[0]["lmr"] if by_phase else None
    return _Figures(table, _figures(overall, False).iloc[0].to_dict(), overall, lmr_phase)


class _TopIteration:
    """Per search row holding records: its records' largest iteration (as :class:`IterationCut` reads it)."""

    name = "top_iteration"
    columns = ("iter",)

    def partial(self, batch: Batch) -> pd.DataFrame:
        top = np.full(len(batch.searches), -1, dtype=np.int64)
        np.maximum.at(top, batch.srow, batch.iters)
        rows = np.flatnonzero(top >= 0)
        return pd.DataFrame({"srow": rows, "iter": top[rows]})

    def finish(self, partials: Sequence[pd.DataFrame], grouping: Grouping) -> list[Section]:
        return []


_TOP_ITERATION = _TopIteration()


@dataclass
class _FirstRead:
    """A side's first read: its iteration profile (:data:`ITERATIONS`) and, when the cut was expected to keep
    every record, its figures' tables folded over the uncut records, to be finished over the cut view."""

    depths: SideDepths
    folds: list[Fold]
    folded: list[Folded]
    top: pd.DataFrame  #: srow, iter: each search's largest records iteration

    @classmethod
    def depths_only(cls, depths: SideDepths) -> _FirstRead:
        """A first read that gave the iteration profile alone (no figures to reuse)."""
        return cls(depths, [], [], pd.DataFrame({"srow": [], "iter": []}))

    def reports(self, view: Source, keep: IterationCut, population: np.ndarray | None) -> list[Report] | None:
        """The figures' reports over ``view`` when this read counted what the cut view counts (every search in
        the population, no record beyond its cut), else None.  The partials depend on the records alone;
        ``view`` holds the same rows as the source read, relabelled and cut (:func:`cut_view`)."""
        if population is not None:
            return None
        numbers = view.searches["search"].to_numpy(dtype=np.int64)
        limit = np.full(len(numbers), np.iinfo(np.int64).max, dtype=np.int64)
        for row, number in enumerate(numbers.tolist()):
            if number in keep.cut:
                limit[row] = keep.cut[number]
        srow = self.top["srow"].to_numpy(dtype=np.int64)
        if np.any(self.top["iter"].to_numpy(dtype=np.int64) > limit[srow]):
            return None
        return [finish_report(fold, folded.partials, folded.grouping(fold, view.searches))
                for fold, folded in zip(self.folds, self.folded)]


def _first_read(source: Source, keys: np.ndarray, target: int, lmr_by_phase: bool, with_figures: bool
                ) -> _FirstRead:
    """A side's iteration profile, and with ``with_figures`` its figures' tables in the same read."""
    folds = [request.fold() for request in _figure_requests(None, None, lmr_by_phase)] if with_figures else []
    iterations = Fold((ITERATIONS,), ("engine",))
    top = Fold((_TOP_ITERATION,), ("engine",))
    first, *rest = fold_many(source, [iterations, *([top] if with_figures else []), *folds], target)
    depths = depths_of(source.searches, first.partials[0], keys)
    if not with_figures:
        return _FirstRead.depths_only(depths)
    tops = concat(rest[0].partials[0], ["srow", "iter"])
    return _FirstRead(depths, folds, rest[1:], tops)


def _profile_partial(source: Source) -> pd.DataFrame | None:
    """The source's own iteration profile (:meth:`~treediff.store.source.Source.iteration_profile`) as the
    :data:`ITERATIONS` partial of its searches rows (srow, iter, key, results, roots, root_depth), or None."""
    profile = source.iteration_profile()
    if profile is None:
        return None
    row_of = _row_of(source.searches)
    search = profile["search"].to_numpy(dtype=np.int64)
    srow = np.full(len(search), -1, dtype=np.int64)
    inside = (search >= 0) & (search < len(row_of))
    srow[inside] = row_of[search[inside]]
    mine = srow >= 0  # (a selection's profile lists its input's other searches too)
    return pd.DataFrame({"srow": srow[mine], "iter": profile["iter"].to_numpy(dtype=np.int64)[mine],
                         "key": np.zeros(int(mine.sum()), dtype=np.int64),
                         "results": profile["results"].to_numpy(dtype=np.int64)[mine],
                         "roots": profile["roots"].to_numpy(dtype=np.int64)[mine],
                         "root_depth": profile["root_depth"].to_numpy(dtype=np.float64)[mine]})


def _cut_expected_to_keep_everything(keys: Sequence[np.ndarray], searches: Sequence[pd.DataFrame],
                                     depth: int | None) -> bool:
    """Whether the searches table already says every side searched every position to one last iteration
    (``max_iter``, equal over the sides; ``--depth`` that one): then the cut most likely keeps every record
    and the figures are folded in the side's first read (checked before use: :meth:`_FirstRead.reports`)."""
    last: dict[str, set[int]] = {}
    sides_of: dict[str, set[int]] = {}
    for side, (k, frame) in enumerate(zip(keys, searches)):
        if "max_iter" not in frame.columns:
            return False
        tops = frame["max_iter"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
        for key, top in zip(k.tolist(), tops.tolist()):
            if np.isnan(top):
                return False
            last.setdefault(key, set()).add(int(top))
            sides_of.setdefault(key, set()).add(side)
    return all(len(tops) == 1 and len(sides_of[key]) == len(keys) and (depth is None or depth in tops)
               for key, tops in last.items())


def _nodes_table(figures: Sequence[_Figures], pairing: Pairing) -> pd.DataFrame:
    """Per position: each side's depth and nodes, the ratio(s) to A, each side's EBF, LMR % and skip %; totals."""
    n = len(figures)
    letters = LETTERS[:n]
    order = [pairing.label[k] for k in pairing.order]
    paired = {pairing.label[k] for k in pairing.paired}
    table = pd.DataFrame({"position": order})
    phase = pd.Series([None] * len(order), index=order, dtype=object)
    for f in figures:
        ph = f.per_position["phase"].reindex(order)
        phase = phase.where(phase.notna(), ph)
    table["phase"] = phase.to_numpy()
    for i, x in enumerate(letters):
        table[f"depth_{x}"] = pd.array([pairing.side_depth.get((k, i)) if pairing.present[k][i] else None
                                        for k in pairing.order], dtype="Int64")
    for i, x in enumerate(letters):
        table[f"nodes_{x}"] = figures[i].per_position["nodes"].reindex(order).to_numpy(dtype=np.float64)
    is_paired = table["position"].isin(paired).to_numpy()
    ratio_names = ["ratio"] if n == 2 else [f"ratio_{x}" for x in letters[1:]]
    for name, x in zip(ratio_names, letters[1:]):
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = table["nodes_a"].to_numpy() / table[f"nodes_{x}"].to_numpy()
        table[name] = np.where(is_paired, ratio, np.nan)
    for col in ("ebf", "lmr_pct", "skip_pct"):
        for i, x in enumerate(letters):
            table[f"{col}_{x}"] = figures[i].per_position[col].reindex(order).to_numpy(dtype=np.float64)
    both = table[is_paired]
    rows = [table]
    if len(table) > 1 or len(both) != len(table):
        total: dict = {"position": "(all)", "phase": None}
        common = {pairing.depth[k] for k in pairing.paired}
        for x in letters:  # the paired positions' depth when they share one
            total[f"depth_{x}"] = next(iter(common)) if len(common) == 1 else None
        sums = {x: both[f"nodes_{x}"].sum() if len(both) else np.nan for x in letters}
        for x in letters:
            total[f"nodes_{x}"] = sums[x]
        for name, x in zip(ratio_names, letters[1:]):
            total[name] = sums["a"] / sums[x] if len(both) and sums[x] else np.nan
        for col in ("ebf", "lmr_pct", "skip_pct"):
            for i, x in enumerate(letters):
                total[f"{col}_{x}"] = figures[i].overall[col] if len(both) else np.nan
        rows.append(pd.DataFrame([total]))
        geo: dict = {"position": "(geomean)", "phase": None}
        shown = False
        for name in ratio_names:
            good = both[(both[name] > 0) & np.isfinite(both[name])]
            if len(good) > 1:
                geo[name] = float(floats.exp(floats.log(good[name].to_numpy(dtype=np.float64)).mean()))
                shown = True
        if shown:
            rows.append(pd.DataFrame([geo]))
    out = pd.concat(rows, ignore_index=True)[table.columns]
    for x in letters:
        out[f"depth_{x}"] = out[f"depth_{x}"].astype("Int64")
    return out


def _kind_aligned(frames: Sequence[pd.DataFrame], labels: Sequence[str], label_col: str) -> pd.DataFrame:
    """Each side's acts side by side, aligned by kind: a PRUNE act stands next to the other side's PRUNE acts.

    Kinds in order of their total count over the sides; within a kind each
    side's acts by count (rank-aligned within the kind), the shorter side
    padded with empty cells.  Columns: ``kind``, then per side
    ``<label> act``, ``<label> count``, ``<label> pct_of_moves``.
    """
    sides = [(frame["kind"].astype(str).to_numpy(dtype=object), frame[label_col].astype(str).to_numpy(dtype=object),
              frame["count"].to_numpy(dtype=np.int64), frame["pct_of_moves"].to_numpy(dtype=np.float64))
             for frame in frames]  # (one pandas call a column: a few hundred rows cost pandas' per-call overhead)
    totals: dict[str, int] = {}
    for kind_of, _, count, _ in sides:
        for kind, n in zip(kind_of.tolist(), count.tolist()):
            totals[kind] = totals.get(kind, 0) + n
    kinds = sorted(totals, key=lambda k: (-totals[k], k))
    kind_column: list[str] = []
    per_side: list[tuple[list, list, list]] = [([], [], []) for _ in labels]  # names, counts, pcts
    #: Per side: whether a kind's block held none of its acts (only padding).
    padding_only = [False] * len(labels)
    for kind in kinds:
        parts = []
        for kind_of, names, count, pct in sides:
            rows = np.flatnonzero(kind_of == kind)
            rows = rows[np.argsort(-count[rows], kind="stable")]
            parts.append((names[rows].tolist(), count[rows].tolist(), pct[rows].tolist()))
        height = max(len(names) for names, _, _ in parts)
        kind_column += [kind] * height
        for i, ((names, count, pct), (all_names, all_counts, all_pcts)) in enumerate(zip(parts, per_side)):
            pad = height - len(names)
            padding_only[i] = padding_only[i] or not names
            all_names += names + [None] * pad
            all_counts += count + [None] * pad
            all_pcts += pct + [np.nan] * pad
    columns: dict = {"kind": kind_column}
    for label, (names, counts, pcts), padded in zip(labels, per_side, padding_only):
        # The dtype the blocks' concatenation gave: pandas 3 reads a block of strings as its str dtype, a
        # block of padding alone as object, and str with object concatenates to object.
        columns[f"{label} {label_col}"] = pd.Series(names, dtype=object) if padded else pd.array(names, dtype=object)
        columns[f"{label} count"] = pd.array(counts, dtype="Int64")
        columns[f"{label} pct_of_moves"] = pcts
    if not kinds:
        return pd.DataFrame({c: [] for c in columns})
    return pd.DataFrame(columns)


def _merged(frames: Sequence[pd.DataFrame], on: str) -> pd.DataFrame:
    letters = LETTERS[:len(frames)]
    merged: pd.DataFrame | None = None
    for frame, x in zip(frames, letters):
        part = frame[[on, "count", "pct_of_moves"]].rename(columns={"count": f"count_{x}", "pct_of_moves": f"pct_{x}"})
        merged = part if merged is None else merged.merge(part, on=on, how="outer", sort=False)
    assert merged is not None
    for x in letters:
        merged[f"count_{x}"] = merged[f"count_{x}"].fillna(0).astype(np.int64)
        merged[f"pct_{x}"] = merged[f"pct_{x}"].fillna(0.0)
    merged["_total"] = sum(merged[f"count_{x}"] for x in letters)
    first = merged[on] == "(all)"
    merged = pd.concat([merged[first], merged[~first].sort_values("_total", ascending=False, kind="stable")])
    return merged.drop(columns="_total").reset_index(drop=True)


def _with_side(frame: pd.DataFrame, label: str) -> pd.DataFrame:
    frame = frame.drop(columns=["engine"]).copy()
    frame.insert(0, "side", label)
    return frame


def _different_positions_error(pairing: Pairing, n: int) -> InputError:
    missing = [pairing.missing(i) for i in range(n)]
    only = [[pairing.label[k] for k in pairing.order if pairing.present[k][i] and not all(pairing.present[k])]
            for i in range(n)]
    clash = f"; {pairing.clashes[0]}" if pairing.clashes else ""
    if n == 2:
        example = (only[0] or only[1])[0]
        return InputError(
            f"A and B searched different positions ({len(only[0])} only in A, {len(only[1])} only in B, "
            f"e.g. {example!r} only in {'A' if only[0] else 'B'}{clash}); "
            "pass --allow-different-positions to compare anyway")
    lacking = ", ".join(f"{len(m)} missing in {LETTERS[i].upper()}" for i, m in enumerate(missing) if m)
    return InputError(f"the inputs searched different positions ({lacking}{clash}); "
                      "pass --allow-different-positions to compare anyway")


def compare(*sides: Side, allow_different_positions: bool = False, depth: int | None = None,
            target: int = BATCH_RECORDS, lmr_by_phase: bool = False) -> Comparison:
    """Compare two or more sides (one engine each; the first is the reference); see the module docstring.

    Searches are paired by position (:func:`treediff.model.positions.position_key`)
    and compared at a common depth (:mod:`treediff.report.pairing`); ``depth``
    (``--depth N``) chooses that depth instead of the deepest one every side completed;
    ``lmr_by_phase`` also fills :attr:`Comparison.lmr_phase` (``compare --plot``).
    """
    if len(sides) < 2:
        raise InputError("compare needs at least two inputs")
    if len(sides) > len(LETTERS):
        raise InputError(f"compare takes at most {len(LETTERS)} inputs")
    for i, side in enumerate(sides):
        if len(side.searches) == 0:
            raise InputError(f"{LETTERS[i].upper()} ({side.label}) holds no searches")
    release_freed_memory()  # (the tables read every batch of every side: freed batches go back to the system)
    keys = [search_position_keys(side.searches) for side in sides]
    known = [_profile_partial(side.source) for side in sides]
    if all(profile is not None for profile in known):
        # Every side's iteration profile was counted as its log was spilled: the pairing is known before any
        # read, and each side is read once, cut to it.
        one_read = False
        first = [_FirstRead.depths_only(depths_of(side.searches, [profile], k))
                 for side, k, profile in zip(sides, keys, known)]
    else:
        one_read = _cut_expected_to_keep_everything(keys, [side.searches for side in sides], depth)
        first = [_first_read(side.source, k, target, lmr_by_phase, one_read) for side, k in zip(sides, keys)]
    depths = [f.depths for f in first]
    pairing = pair_positions(depths, [side.searches for side in sides], depth)
    everywhere = all(all(pairing.present[k]) for k in pairing.order)
    if not everywhere and not allow_different_positions:
        raise _different_positions_error(pairing, len(sides))
    labels = [side.label for side in sides]
    if len(set(labels)) < len(labels):
        labels = [f"{label} ({LETTERS[i].upper()})" if labels.count(label) > 1 else label
                  for i, label in enumerate(labels)]
    paired_keys = set(pairing.paired)
    figures = []
    for i, side in enumerate(sides):
        view = cut_view(side.source, depths[i], pairing, i)
        paired_rows = np.fromiter((k in paired_keys for k in depths[i].keys.tolist()), dtype=bool,
                                  count=len(depths[i].keys))
        figures.append(_side_figures(view, cut_filter(pairing, i), paired_rows, target, lmr_by_phase,
                                     first[i] if one_read else None))
        first[i].folded = []  # (its partials are used: let them go)
    reports = [f.report for f in figures]
    notes = [f"note: {c}" for c in pairing.clashes] + pairing.notes
    if not pairing.paired:
        notes.append("note: no position was searched by every side at a common depth: acts, kinds, lmr, ebf "
                     "and skips cover each side's whole input")
    elif len(pairing.paired) < len(pairing.order):
        notes.append(f"note: totals and the acts, kinds, lmr, ebf and skips sections cover the "
                     f"{len(pairing.paired)} paired position(s) of {len(pairing.order)}")
    return Comparison(
        label_a=labels[0],
        label_b=labels[1],
        nodes=_nodes_table(figures, pairing),
        acts=_kind_aligned([r["acts"] for r in reports], labels, "act"),
        kinds=_merged([r["kinds"] for r in reports], "kind"),
        lmr=pd.concat([_with_side(r["lmr"], label) for r, label in zip(reports, labels)], ignore_index=True),
        ebf=pd.concat([_with_side(r["ebf"], label) for r, label in zip(reports, labels)], ignore_index=True),
        skips=_merged([r["skips"] for r in reports], "act"),
        only_a=tuple(pairing.label[k] for k in pairing.order if pairing.present[k][0] and not all(pairing.present[k])),
        only_b=tuple(pairing.label[k] for k in pairing.order
                     if pairing.present[k][1] and not all(pairing.present[k])),
        labels=tuple(labels),
        missing=tuple(tuple(pairing.missing(i)) for i in range(len(sides))),
        pairing_notes=notes,
        lmr_phase=(pd.concat([_with_side(f.lmr_phase, label) for f, label in zip(figures, labels)
                              if f.lmr_phase is not None], ignore_index=True) if lmr_by_phase else None),
    )


def compare_sources(source_a: Source, source_b: Source, label_a: str = "A", label_b: str = "B",
                    engine_a: str | None = None, engine_b: str | None = None,
                    allow_different_positions: bool = False, depth: int | None = None,
                    more: Sequence[tuple[Source, str]] = (), target: int = BATCH_RECORDS,
                    lmr_by_phase: bool = False) -> Comparison:
    """:func:`compare` of two (or, with ``more``, further) inputs, choosing one engine for A and B."""
    sa = select_engine(source_a, engine_a, "A")
    sb = select_engine(source_b, engine_b, "B")
    rest = [Side(label, select_engine(source, None, LETTERS[i + 2].upper())) for i, (source, label) in enumerate(more)]
    return compare(Side(label_a, sa), Side(label_b, sb), *rest, allow_different_positions=allow_different_positions,
                   depth=depth, target=target, lmr_by_phase=lmr_by_phase)

"""Record filters (:class:`treediff.report.core.RecordFilter`): which records of a search a report counts.

* :class:`IterationCut`: the records of iterations 1..N of each search
  (compare's cut to a common depth; records before the first ITER count too);
* :class:`UnderPath`: the records at or below one path (``report --under``;
  :func:`under_view` reads the typed path and keeps the searches holding it).

A filter never splits a batch's searches: it drops records inside them, so
every table's partials stay additive.  :func:`counts_view` gives the searches
table a filtered report must use (declared counts of the whole search are
dropped, so that the tables count the kept records).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from treediff.model.errors import InputError
from treediff.report.core import fold_tables
from treediff.report.table import Batch, Grouping, Section
from treediff.store.source import Source


@dataclass(frozen=True)
class IterationCut:
    """Keep the records of iterations up to ``cut[search]`` (a search not listed keeps everything)."""

    cut: Mapping[int, int]
    columns: tuple[str, ...] = ("iter",)

    def mask(self, records: pd.DataFrame) -> np.ndarray:
        search = records["search"].to_numpy(dtype=np.int64)
        top = int(search.max()) + 1 if len(search) else 1
        limit = np.full(max(top, max(self.cut, default=0) + 1), np.iinfo(np.int64).max, dtype=np.int64)
        for s, n in self.cut.items():
            limit[int(s)] = int(n)
        iters = np.asarray(records["iter"].fillna(0), dtype=np.int64)
        return np.asarray(iters <= limit[search], dtype=bool)


@dataclass(frozen=True)
class UnderPath:
    """Keep the records whose ``path`` is ``path`` or lies below it; ``paths`` per search overrides it
    (a SAN path is read against each search's own FEN; None: the search has no such path)."""

    path: str
    paths: Mapping[int, str | None] = field(default_factory=dict)
    columns: tuple[str, ...] = ("path",)

    def mask(self, records: pd.DataFrame) -> np.ndarray:
        paths = records["path"].astype("object").fillna("").to_numpy(dtype=object)
        if not self.paths:
            return _under(paths, self.path)
        search = records["search"].to_numpy(dtype=np.int64)
        keep = np.zeros(len(paths), dtype=bool)
        for s, p in self.paths.items():
            if p is None:
                continue
            rows = np.flatnonzero(search == s)
            keep[rows] = _under(paths[rows], p)
        return keep


def _under(paths: np.ndarray, path: str) -> np.ndarray:
    if path == "":
        return np.ones(len(paths), dtype=bool)
    series = pd.Series(paths, dtype="object")
    return np.asarray((series == path) | series.str.startswith(path + "/"), dtype=bool)


def counts_view(searches: pd.DataFrame) -> pd.DataFrame:
    """The searches table for a filtered report: the whole search's declared counts are not used
    (``result_nodes``, ``end_nodes``), so node counts come from the kept RESULT records."""
    out = searches.copy()
    for column in ("result_nodes", "end_nodes"):
        if column in out.columns:
            out[column] = pd.array([pd.NA] * len(out), dtype="Int64")
    return out


class _Present:
    """The searches rows a batch still holds records of (after the filter)."""

    name = "present"
    columns: tuple[str, ...] = ()

    def partial(self, batch: Batch) -> np.ndarray:
        return np.unique(batch.srow)

    def finish(self, partials: Sequence[np.ndarray], grouping: Grouping) -> list[Section]:
        return []


def read_under(text: str, searches: pd.DataFrame) -> UnderPath:
    """``--under PATH`` as an :class:`UnderPath`: UCI read by shape, SAN against each search's FEN
    (:func:`treediff.parse.moves.normalize_typed_path`, as the parser reads paths)."""
    from treediff.parse.moves import UnreadableMove, normalize_typed_path

    try:
        return UnderPath(normalize_typed_path(text))
    except UnreadableMove as exc:
        first = exc
    paths: dict[int, str | None] = {}
    cache: dict[str, str | None] = {}
    for search, fen in zip(searches["search"].to_numpy(dtype=np.int64).tolist(),
                           searches["fen"].astype("object").tolist()):
        key = fen if isinstance(fen, str) else ""
        if key not in cache:
            try:
                cache[key] = normalize_typed_path(text, fen if isinstance(fen, str) else None)
            except UnreadableMove as exc:
                cache[key] = None
                if exc.position_known:
                    first = exc  # a SAN move tried on a board says more than "cannot read"
        paths[int(search)] = cache[key]
    if all(p is None for p in paths.values()):
        if not first.position_known:
            raise InputError(f"--under: cannot read move {first.token!r} (write moves as UCI, e.g. e2e4/e7e5, "
                             "or as SAN legal in the searched position)") from None
        raise InputError(f"--under: {first.token!r} is not a legal move after {first.after or 'the root'}") from None
    return UnderPath(text, paths)


def under_view(source: Source, text: str, target: int) -> tuple[Source, UnderPath]:
    """The searches holding records at or below ``--under PATH`` (their declared counts dropped) and the filter.

    One pass reads the ``path`` column to find them; :class:`InputError` when none does.
    """
    keep = read_under(text, source.searches)
    (parts,), _ = fold_tables(source, [_Present()], ("engine",), target, keep=keep)
    rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if not len(rows):
        raise InputError(f"--under {text}: no search has records at or below this path")
    flags = np.zeros(len(source.searches), dtype=bool)
    flags[rows.astype(np.int64)] = True
    chosen = source.select(flags)
    return chosen.with_searches(counts_view(chosen.searches)), keep

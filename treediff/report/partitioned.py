"""Out-of-core reports over ``treediff batch`` datasets: per partition, then combined.

A dataset stores each search's records in its own file
(``records/engine=NAME/KEY.parquet``).  :func:`build_report_partitioned`
reads a few of those files at a time (whole searches, never split; about
:data:`PARTITION_RECORDS` records per read), only the columns the tables
need, and turns each read into small *partial aggregates* keyed by
(search, iteration).  The partials of all reads are concatenated (their size
grows with searches × acts × iterations, not with records) and mapped to the
report's groups, which gives exactly the numbers of the in-memory path
(:func:`treediff.report.core.build_report`):

* counts (acts, kinds, skips, LMR counts, RESULT counts per iteration and ply,
  scope's prunes / node visits / continued visits) are summed: node visits
  never span two searches;
* LMR reductions are kept as value counts per (search, iteration, value), so
  mean, median and 90th percentile are exact (the quantiles interpolate as
  pandas does; sums of quarter-ply values are exact in floating point);
* search-level figures (nodes, depths, EBF estimators) are computed from the
  searches table, which is read whole (one row per search), and the merged
  per-iteration and per-ply RESULT counts.

Memory is bounded by the largest read (and so by the largest single search),
not by the dataset.
"""
from __future__ import annotations

import os
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from treediff.model.errors import InputError
from treediff.store.dataset import DatasetSearches, is_dataset_dir, load_dataset_searches
from treediff.report.acts import _count_act_kind
from treediff.report.context import Context
from treediff.report.core import Report, assemble_report, columns_for, parse_tables
from treediff.report.ebf import ResultCounts, ply_grid, search_nodes
from treediff.report.grouping import RecordGroups, parse_by
from treediff.report.lmr import LmrStats, lmr_stats
from treediff.report.scope import scope_counts

#: Records read at once (whole searches; a bigger search is read alone).
PARTITION_RECORDS = 1_000_000
#: Iteration numbers are int16: (row, iteration) pairs are packed as row * _ITER_SPAN + iteration.
_ITER_SPAN = 1 << 16


def all_datasets(inputs: Iterable[str | os.PathLike]) -> bool:
    """True when every input is a ``treediff batch`` dataset directory (the out-of-core path applies)."""
    items = list(inputs)
    return bool(items) and all(is_dataset_dir(p) for p in items)


@dataclass
class DatasetSource:
    """Dataset directories read partition by partition: the searches (whole) and each row's records file."""

    searches: pd.DataFrame
    files: list[str | None]

    @classmethod
    def open(cls, inputs: Iterable[str | os.PathLike]) -> "DatasetSource":
        ds: DatasetSearches = load_dataset_searches(list(inputs))
        return cls(ds.searches, ds.files)

    def select(self, keep: np.ndarray) -> "DatasetSource":
        """The source restricted to the searches rows where ``keep`` is true."""
        rows = np.flatnonzero(np.asarray(keep, dtype=bool))
        return DatasetSource(self.searches.iloc[rows].reset_index(drop=True), [self.files[i] for i in rows])

    def with_searches(self, searches: pd.DataFrame) -> "DatasetSource":
        """The same rows (same order and search numbers) with other column values, e.g. filled positions."""
        if len(searches) != len(self.searches):
            raise ValueError("with_searches needs the same rows")
        return DatasetSource(searches.reset_index(drop=True), self.files)

    def chunks(self, target: int = PARTITION_RECORDS) -> list[list[int]]:
        """Searches rows grouped into reads of about ``target`` records (a search is never split)."""
        sizes = (self.searches["records"].fillna(0).to_numpy(dtype=np.int64) if "records" in self.searches.columns
                 else np.ones(len(self.searches), dtype=np.int64))
        out: list[list[int]] = []
        current: list[int] = []
        total = 0
        for row in range(len(self.searches)):
            if self.files[row] is None:
                continue
            if current and total + sizes[row] > target:
                out.append(current)
                current, total = [], 0
            current.append(row)
            total += int(sizes[row])
        if current:
            out.append(current)
        return out

    def read(self, rows: Sequence[int], columns: Sequence[str], with_engine: bool = False) -> pd.DataFrame:
        """Records of the given searches rows (``search`` renumbered as in :attr:`searches`), as pandas.

        Only ``columns`` are read; ``with_engine`` adds the ``engine`` column
        (categorical) from the searches rows.
        """
        wanted = [c for c in columns if c not in ("engine", "search")]
        search_ids = self.searches["search"].to_numpy(dtype=np.int64)
        engines = self.searches["engine"].astype("object").to_numpy()
        tables = []
        for row in rows:
            if self.files[row] is None:
                continue
            table = pq.read_table(self.files[row], columns=wanted)
            ids = pa.array(np.full(table.num_rows, search_ids[row], dtype=np.int32))
            table = table.append_column("search", ids)
            if with_engine:
                table = table.append_column("engine", pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(table.num_rows, dtype=np.int32)), pa.array([str(engines[row])])))
            tables.append(table)
        if not tables:
            return pd.DataFrame({c: [] for c in [*wanted, "search", *(["engine"] if with_engine else [])]})
        frame = pa.concat_tables(tables, promote_options="default").to_pandas()
        if with_engine:
            frame = frame[["engine", *[c for c in frame.columns if c != "engine"]]]
        return frame

    def rows_of_position(self, position: str) -> np.ndarray:
        """Searches rows of one position id (the partition files ``diff`` and ``compare`` align)."""
        return np.flatnonzero(self.searches["position"].astype("object").to_numpy() == position)


@dataclass
class _Partials:
    """What each read contributes; every frame is keyed by (srow, iter) and additive across reads."""

    fine: list[pd.DataFrame] = field(default_factory=list)        # srow, iter, n, moves, real, lmr, research
    act_kind: list[pd.DataFrame] = field(default_factory=list)    # srow, iter, act, kind, count
    red: list[pd.DataFrame] = field(default_factory=list)         # srow, iter, red, count
    results: list[pd.DataFrame] = field(default_factory=list)     # srow, iter, ply, count
    root: list[pd.DataFrame] = field(default_factory=list)        # srow, depth (deepest root RESULT d)
    scope: list[pd.DataFrame] = field(default_factory=list)       # srow, iter, _all, act, prunes, nodes, continued


def _fine_context(records: pd.DataFrame, searches: pd.DataFrame, srow: np.ndarray) -> tuple[Context, np.ndarray,
                                                                                              np.ndarray]:
    """A context over one read whose record groups are its (search row, iteration) cells."""
    ctx = Context(records=records, searches=searches, keys=("engine",))
    ctx.__dict__["srow"] = srow
    iters = ctx.iters
    packed = srow * _ITER_SPAN + iters
    cells, inverse = np.unique(packed, return_inverse=True)
    groups = pd.DataFrame({"srow": cells // _ITER_SPAN, "iter": cells % _ITER_SPAN})
    ctx.__dict__["record_groups"] = RecordGroups(("engine", "iter"), inverse.astype(np.int64), groups)
    return ctx, cells // _ITER_SPAN, cells % _ITER_SPAN


def _digest(records: pd.DataFrame, searches: pd.DataFrame, row_of: np.ndarray, tables: set[str],
            out: _Partials) -> None:
    """Add one read's partial aggregates to ``out``."""
    if len(records) == 0:
        return
    srow = row_of[records["search"].to_numpy(dtype=np.int64)]
    ctx, c_srow, c_iter = _fine_context(records, searches, srow)
    n_cells = len(c_srow)
    rg = ctx.record_groups.record_group
    fine = {"srow": c_srow, "iter": c_iter, "n": np.bincount(rg, minlength=n_cells)}
    if {"acts", "skips", "lmr"} & tables:
        fine["moves"] = np.bincount(rg[ctx.is_move], minlength=n_cells)
    if {"acts", "skips"} & tables:
        long = _count_act_kind(ctx)
        g = long["group"].to_numpy()
        out.act_kind.append(pd.DataFrame({"srow": c_srow[g], "iter": c_iter[g], "act": long["act"].to_numpy(),
                                          "kind": long["kind"].to_numpy(), "count": long["count"].to_numpy()}))
    if "lmr" in tables:
        st = lmr_stats(ctx)
        fine.update(real=st.real_moves, lmr=st.lmr, research=st.research)
        if len(st.red):
            vc = pd.DataFrame({"g": st.red_group, "red": st.red}).groupby(["g", "red"], sort=False).size()
            g = vc.index.get_level_values(0).to_numpy()
            out.red.append(pd.DataFrame({"srow": c_srow[g], "iter": c_iter[g],
                                         "red": vc.index.get_level_values(1).to_numpy(dtype=np.float64),
                                         "count": vc.to_numpy(dtype=np.int64)}))
    if {"nodes", "ebf"} & tables:
        res = ctx.is_result
        plies = ctx.plies[res]
        width = int(plies.max()) + 1 if len(plies) else 1
        flat = np.bincount(rg[res] * width + plies, minlength=n_cells * width)
        cells = np.flatnonzero(flat)
        g = cells // width
        out.results.append(pd.DataFrame({"srow": c_srow[g], "iter": c_iter[g], "ply": cells % width,
                                         "count": flat[cells].astype(np.int64)}))
        root = res & (ctx.plies == 0)
        if root.any():
            deepest = pd.Series(np.asarray(records["depth"], dtype=np.float64)[root]).groupby(srow[root]).max()
            out.root.append(pd.DataFrame({"srow": deepest.index.to_numpy(), "depth": deepest.to_numpy()}))
    if "scope" in tables:
        sc = scope_counts(ctx)
        if sc is not None and len(sc):
            g = sc["_group"].to_numpy()
            out.scope.append(pd.DataFrame({"srow": c_srow[g], "iter": c_iter[g], "_all": sc["_all"].to_numpy(),
                                           "act": sc["act"].to_numpy(), "prunes": sc["prunes"].to_numpy(),
                                           "nodes": sc["nodes"].to_numpy(), "continued": sc["continued"].to_numpy()}))
    out.fine.append(pd.DataFrame(fine))


def _concat(frames: list[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in columns})
    return pd.concat(frames, ignore_index=True)


def _none_for_nan(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=object)
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return values


def iter_reads(source: DatasetSource, columns: Sequence[str], target: int = PARTITION_RECORDS
               ) -> Iterator[pd.DataFrame]:
    """Each read of the source, the next one prefetched on a thread (Parquet decoding releases the GIL)."""
    chunks = source.chunks(target)
    if not chunks:
        return
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(source.read, chunks[0], columns)
        for nxt in chunks[1:]:
            current = pending.result()
            pending = pool.submit(source.read, nxt, columns)
            yield current
        yield pending.result()


def build_report_partitioned(source: DatasetSource, tables: Sequence[str] | str | None = None,
                             by: Sequence[str] | str | None = None, target: int = PARTITION_RECORDS) -> Report:
    """The report of :func:`treediff.report.core.build_report`, computed read by read (see the module docstring)."""
    keys = parse_by(by)
    tables = parse_tables(tables)
    searches = source.searches
    if len(searches) == 0:
        raise InputError("no searches in the input")
    wanted = set(tables)
    columns = columns_for(tables, keys)
    if "iter" not in columns:
        columns.append("iter")  # partials are always kept per iteration
    ids = searches["search"].to_numpy(dtype=np.int64)
    row_of = np.full(int(ids.max()) + 1 if len(ids) else 1, -1, dtype=np.int64)
    row_of[ids] = np.arange(len(ids))
    parts = _Partials()
    for records in iter_reads(source, columns, target):
        _digest(records, searches, row_of, wanted, parts)
    return _assemble(searches, keys, tables, parts)


def _assemble(searches: pd.DataFrame, keys: tuple[str, ...], tables: tuple[str, ...], parts: _Partials) -> Report:
    """Map the merged (srow, iter) partials to the report's groups and compute the tables."""
    empty_records = pd.DataFrame({"search": np.zeros(0, dtype=np.int32)})
    ctx = Context(records=empty_records, searches=searches, keys=tuple(keys))
    sg = ctx.search_groups
    fine = _concat(parts.fine, ["srow", "iter", "n", "moves", "real", "lmr", "research"])

    if "iter" in keys:
        width = int(fine["iter"].max()) + 1 if len(fine) else 1
        packed = sg.search_group[fine["srow"].to_numpy(dtype=np.int64)] * width + fine["iter"].to_numpy(dtype=np.int64)
        cells = np.unique(packed)
        groups = sg.groups.iloc[cells // width].reset_index(drop=True)
        groups["iter"] = (cells % width).astype(np.int64)

        def group_of(frame: pd.DataFrame) -> np.ndarray:
            p = sg.search_group[frame["srow"].to_numpy(dtype=np.int64)] * width + frame["iter"].to_numpy(dtype=np.int64)
            return np.searchsorted(cells, p)
    else:
        groups = sg.groups

        def group_of(frame: pd.DataFrame) -> np.ndarray:
            return sg.search_group[frame["srow"].to_numpy(dtype=np.int64)]

    n = len(groups)
    ctx.__dict__["record_groups"] = RecordGroups(tuple(keys), np.zeros(0, dtype=np.int64), groups)
    fg = group_of(fine)

    def total(column: str) -> np.ndarray:
        if column not in fine.columns:
            return np.zeros(n, dtype=np.int64)
        return np.bincount(fg, weights=fine[column].fillna(0).to_numpy(dtype=np.float64), minlength=n).astype(np.int64)

    if {"acts", "skips"} & set(tables):
        ctx._cache["move_totals"] = total("moves")
        ak = _concat(parts.act_kind, ["srow", "iter", "act", "kind", "count"])
        long = pd.DataFrame({"group": group_of(ak), "act": ak["act"].to_numpy(dtype=object),
                             "kind": ak["kind"].to_numpy(dtype=object), "count": ak["count"].to_numpy(dtype=np.int64)})
        long = long.groupby(["group", "act", "kind"], sort=True, dropna=False, as_index=False)["count"].sum()
        long["act"] = _none_for_nan(long["act"].to_numpy())
        long["kind"] = _none_for_nan(long["kind"].to_numpy())
        long["group"] = long["group"].astype(np.int64)
        long["count"] = long["count"].astype(np.int64)
        ctx._cache["act_kind_counts"] = long
    if "lmr" in tables:
        red = _concat(parts.red, ["srow", "iter", "red", "count"])
        ctx._cache["lmr_stats"] = LmrStats(
            moves=total("moves"), real_moves=total("real"), lmr=total("lmr"), research=total("research"),
            red_group=group_of(red).astype(np.int64), red=red["red"].to_numpy(dtype=np.float64),
            red_weight=red["count"].to_numpy(dtype=np.int64))
    if "scope" in tables:
        sc = _concat(parts.scope, ["srow", "iter", "_all", "act", "prunes", "nodes", "continued"])
        if len(sc):
            sc = pd.DataFrame({"_group": group_of(sc), "_all": sc["_all"].to_numpy(), "act": sc["act"].to_numpy(object),
                               "prunes": sc["prunes"].to_numpy(), "nodes": sc["nodes"].to_numpy(),
                               "continued": sc["continued"].to_numpy()})
            sc = sc.groupby(["_group", "_all", "act"], sort=True, dropna=False, as_index=False)[
                ["prunes", "nodes", "continued"]].sum()
            sc["act"] = _none_for_nan(sc["act"].to_numpy())
            for c in ("_group", "_all", "prunes", "nodes", "continued"):
                sc[c] = sc[c].astype(np.int64)
            ctx._cache["scope_counts"] = sc
        else:
            ctx._cache["scope_counts"] = None
    sn = None
    if {"nodes", "ebf"} & set(tables):
        res = _concat(parts.results, ["srow", "iter", "ply", "count"])
        root = _concat(parts.root, ["srow", "depth"])
        root_depth = np.full(len(searches), np.nan)
        root_depth[root["srow"].to_numpy(dtype=np.int64)] = root["depth"].to_numpy(dtype=np.float64)
        srow = res["srow"].to_numpy(dtype=np.int64)
        iters = res["iter"].to_numpy(dtype=np.int64)
        count = res["count"].to_numpy(dtype=np.float64)
        sn = search_nodes(ctx, ResultCounts(srow, iters, count, root_depth))
        grid = ply_grid(len(sg.groups), sg.search_group, sn, srow, iters, res["ply"].to_numpy(dtype=np.int64), count)
        ctx._cache["ply_grid"] = (sn, grid)
    return assemble_report(ctx, tables, sn)


def dataset_positions(path: str | os.PathLike) -> list[str] | None:
    """The position ids a dataset directory holds (its searches table only), None for any other input."""
    if not is_dataset_dir(path):
        return None
    from treediff.store.dataset import read_dataset_searches

    table = read_dataset_searches(Path(path))
    return [str(p) for p in table.column("position").to_pylist()] if "position" in table.column_names else []


def load_position(path: str | os.PathLike, columns: Sequence[str], position: str | None = None,
                  other: str | os.PathLike | None = None, label: str = "A"):
    """A dataset's records of one position only, for aligning (``treediff diff``): a :class:`treediff.store.files.Loaded`.

    The position is ``position``, else the one position this dataset shares
    with ``other`` (another input); the searches table says which files hold
    it, and only those are read.  Several shared positions and no
    ``position`` is an error naming them (as the aligner's); a dataset of one
    position, or an ``other`` that is not a dataset, is read whole.
    """
    from treediff.store.dataset import Loaded

    source = DatasetSource.open([path])
    if position is None:
        mine = list(dict.fromkeys(source.searches["position"].astype(str)))
        theirs = dataset_positions(other) if other is not None else None
        shared = sorted(set(mine) & set(theirs)) if theirs is not None else None
        if len(mine) > 1 and shared is not None and len(shared) > 1:
            raise InputError(f"A and B share {len(shared)} positions; choose one with --position: {', '.join(shared)}")
        if len(mine) > 1 and shared is not None and len(shared) == 1:
            position = shared[0]
    if position is None:
        keep = np.ones(len(source.searches), dtype=bool)
    else:
        keep = source.searches["position"].astype("object").to_numpy() == position
        if not keep.any():
            held = list(dict.fromkeys(source.searches["position"].astype(str)))
            raise InputError(f"{label} ({path}) has no search of position {position}; it has: "
                             f"{', '.join(held[:10])}{' ...' if len(held) > 10 else ''}")
    sub = source.select(keep)
    records = sub.read(np.arange(len(sub.searches)), list(columns), with_engine=True)
    return Loaded(records=records, searches=sub.searches)

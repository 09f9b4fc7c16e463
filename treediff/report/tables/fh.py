"""The ``fh`` table: the fail-high rate of move tries per bucket, with Wilson 95 % intervals.

Definitions (``docs/REPORTS.md``, "fh"; tries and "failed high" are :mod:`treediff.report.tries`):
``tries`` (move tries in the bucket), ``fail_highs`` (those holding their
visit's cutoff decision), ``fh_pct`` = 100 · fail_highs / tries, ``fh_lo`` and
``fh_hi`` (the Wilson score interval at 95 %, percent).

Buckets (``--bucket``, any of ``kind,act,depth,mn,ply,see,hist,nt``, default
``kind,depth,mn``) are the try's first record's values: ``kind`` its first
kind, ``act`` its first act, ``depth`` and ``ply`` whole plies (``floor(d)``,
the MOVE record's ``ply``), ``mn`` bands 1, 2, 3-4, 5-8, 9-16, 17+, ``see``
bands < -200, -200..-1, 0, 1..200, > 200 cp, ``hist`` its sign (``neg``,
``0``, ``pos``) and decile over all the report's tries with a ``hist``
(``D1`` lowest .. ``D10``), ``nt`` the node type (``PV``, ``CUT``, ``ALL``).
A try without the value is in a ``-`` bucket (None).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.errors import InputError
from treediff.report.grouped import group_rows
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tries import (COLUMNS, MN_BANDS, OPTIONAL, SHADOW_OPTIONAL, SHADOW_READS, SHADOW_TITLE, derive,
                                   mn_band, pct, see_band, shadow_counts, shadow_frame, try_columns, wilson)

TITLE = "Fail-high rate of move tries per bucket (Wilson 95 % interval)"
BUCKETS = ("kind", "act", "depth", "mn", "ply", "see", "hist", "nt")
DEFAULT_BUCKETS = ("kind", "depth", "mn")
#: The per-try values the partial keeps (aggregated): everything a bucket needs.
_DIMS = ("kind", "act", "depth", "mn", "ply", "see", "hist", "nt")
_STR_DIMS = ("kind", "act", "nt")


def parse_buckets(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``--bucket``: comma-separated keys of :data:`BUCKETS` (default :data:`DEFAULT_BUCKETS`), in given order."""
    if text is None:
        return DEFAULT_BUCKETS
    items = [b.strip() for b in (text.split(",") if isinstance(text, str) else text) if b.strip()]
    unknown = [b for b in items if b not in BUCKETS]
    if unknown:
        raise InputError(f"--bucket: unknown key {unknown[0]!r} (choose from {', '.join(BUCKETS)})")
    return tuple(dict.fromkeys(items)) or DEFAULT_BUCKETS


@dataclass
class FhPartial:
    #: Tries and fail highs per cell and bucket values (:data:`_COUNT_COLUMNS`), as Arrow: a batch's rows stay
    #: in memory until the report finishes (~125k rows a million records; as pandas frames with string columns,
    #: they held ~35 MB each, most of `report --table all`'s growth on a 20M-record file), as Arrow ~10 MB.
    counts: pa.Table | None
    shadow: pd.DataFrame         #: SHADOW records per cell and act (tries.shadow_counts)


def fh_partial(batch: Batch, dims: Sequence[str] = _DIMS) -> FhPartial:
    t = derive(batch, full=False)
    return FhPartial(fh_counts(batch, t, dims), shadow_counts(batch, t))


def fh_counts(batch: Batch, t, dims: Sequence[str] = _DIMS) -> pd.DataFrame | None:
    """Tries and fail-highs per (cell, and of kind, act, floor depth, mn band, ply, see band, hist, nt those in
    ``dims``) of one batch (a band as one number of it: :data:`_BANDED`).  The report's buckets are enough (:class:`FhTable`): the rows kept until the report
    finishes are then those of the buckets, not of every dimension (``see`` and ``hist`` take many values;
    with all eight, the rows were ~12% of the records: 3.2 GB at the end of a 100M-record report)."""
    if not t.n:
        return None
    dims = tuple(d for d in _DIMS if d in dims)
    tc = try_columns(batch, t, dims)
    # Strings stay codes while aggregating (the aggregated rows get their labels).
    cols: dict[str, np.ndarray] = {"cell": tc.cell, "fh": tc.fh.astype(np.int64)}
    for name in dims:
        if name in _STR_DIMS:
            cols[name] = tc.codes[name]
        else:
            cols[name] = _BANDED.get(name, _same)(tc.numbers[name])
    keys = ["cell", *dims]
    packed = _pack(cols, keys)
    if packed is not None:  # one int64 key: one hash column to group on instead of nine
        key, decode = packed
        groups = group_rows(key)
        got = decode(groups.take(key))
    else:
        groups = group_rows(*(cols[name] for name in keys))
        got = {name: groups.take(cols[name]) for name in keys}
    tries, fail_highs = groups.sizes(), groups.int_sums(cols["fh"])
    rows = got["cell"].astype(np.int64)
    columns: dict[str, pa.Array] = {"srow": pa.array(batch.cell_srow[rows]), "iter": pa.array(batch.cell_iter[rows]),
                                    "key": pa.array(batch.cell_key[rows])}
    for name in dims:
        col = got[name]
        if name in _STR_DIMS:  # the labels as a dictionary of this batch's categories (missing: null)
            codes = col.astype(np.int32)
            columns[name] = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0),
                                                           pa.array(np.asarray(tc.cats[name], dtype=object),
                                                                    type=pa.string()))
        else:
            columns[name] = pa.array(col.astype(np.float64))  # (NaN stays a NaN value, as in a frame)
    columns["tries"] = pa.array(tries)
    columns["fail_highs"] = pa.array(fail_highs)
    return pa.table(columns)


def _same(values: np.ndarray) -> np.ndarray:
    return values


def _floor(depth: np.ndarray) -> np.ndarray:
    """Whole plies (the ``depth`` bucket)."""
    return np.floor(depth)


def _mn_band_low(mn: np.ndarray) -> np.ndarray:
    """Each move number replaced by the lowest number of its ``mn`` band (NaN: no band, as :func:`mn_band` gives
    None): the finish labels and orders a band's numbers alike, so a partial need not keep them apart.

    Whole numbers up to :data:`_MN_TABLE_SIZE` (every move number an engine writes) by a lookup in a table of
    :func:`_mn_band_low_search`'s answers (a third of its CPU); others by the search itself."""
    mn = np.asarray(mn, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        at = mn.astype(np.int64)  # (NaN and the infinities cast to anything: not read below)
        table_read = (mn >= 0) & (mn < _MN_TABLE_SIZE) & (at == mn)
    out = np.where(table_read, _MN_TABLE[np.where(table_read, at, 0)], np.nan)
    rest = ~table_read & ~np.isnan(mn)
    if rest.any():
        out[rest] = _mn_band_low_search(mn[rest])
    return out


def _mn_band_low_search(mn: np.ndarray) -> np.ndarray:
    """:func:`_mn_band_low` of any numbers, by one search over the bands' lows."""
    mn = np.asarray(mn, dtype=np.float64)
    # The conditions of tries.mn_band (lo <= mn <= hi), in one search over the bands' lows: the band whose low
    # is the largest at or below mn holds it if mn is also at or below its high (a number between two bands,
    # below the first, or NaN is in none).  Band by band, the masks cost 0.3 CPU-s a 20M-record report.
    lows = np.asarray([lo for lo, _, _ in MN_BANDS], dtype=np.float64)
    highs = np.asarray([np.inf if hi is None else hi for _, hi, _ in MN_BANDS], dtype=np.float64)
    band = np.searchsorted(lows, mn, side="right") - 1
    at = np.maximum(band, 0)
    return np.where((band >= 0) & (mn <= highs[at]), lows[at], np.nan)


#: The move numbers :func:`_mn_band_low` looks up (0 .. this - 1) and their band lows.
_MN_TABLE_SIZE = 1024
_MN_TABLE = _mn_band_low_search(np.arange(_MN_TABLE_SIZE, dtype=np.float64))


def _see_band_value(see: np.ndarray) -> np.ndarray:
    """Each SEE value (centipawns) replaced by one value of its ``see`` band (NaN stays NaN), as
    :func:`_mn_band_low` for ``mn``: -201, -1, 0, 1, 201 for the bands of :func:`see_band`."""
    see = np.asarray(see, dtype=np.float64)
    return np.select([see < -200, see < 0, see == 0, see <= 200, see > 200], [-201.0, -1.0, 0.0, 1.0, 201.0],
                     default=np.nan)


#: What a partial keeps of a numeric dimension: ``depth`` whole plies, ``mn`` and ``see`` one value a band
#: (their finish reads only the band: with raw move numbers, a 20M-record report's fh partials were ~3 MB a
#: million records, most of its partials' growth); ``ply`` and ``hist`` as they are (``hist``'s deciles are
#: over every value).
_BANDED: dict[str, Callable[[np.ndarray], np.ndarray]] = {"depth": _floor, "mn": _mn_band_low,
                                                          "see": _see_band_value}


#: Packed keys stay below this (int64 without overflow); float values packed lie within ±_VALUE_LIMIT.
_KEY_LIMIT = 1 << 62
_VALUE_LIMIT = float(1 << 40)


def _pack(cols: dict[str, np.ndarray],
          names: Sequence[str]) -> tuple[np.ndarray, Callable[[np.ndarray], dict[str, np.ndarray]]] | None:
    """The columns ``names`` packed into one int64 key per row, and the function giving them back from keys
    (integer columns as int64, float columns as float64 with NaN); None when a float column holds a value that
    is not a whole number or the key would overflow (then the caller groups on the columns themselves)."""
    parts: list[tuple[str, bool, int, int]] = []  # (name, is_float, low, width)
    codes: list[np.ndarray] = []
    total = 1
    for name in names:
        v = cols[name]
        if v.dtype.kind == "f":
            finite = ~np.isnan(v)
            # min and max over the values present, without a NaN-free copy
            lo_f = float(np.min(v, where=finite, initial=np.inf))
            hi_f = float(np.max(v, where=finite, initial=-np.inf))
            if lo_f == np.inf:  # a column the input lacks: one code
                parts.append((name, True, 0, 1))
                codes.append(np.zeros(len(v), dtype=np.int64))
                continue
            if not (-_VALUE_LIMIT < lo_f <= hi_f < _VALUE_LIMIT):
                return None
            lo, hi = int(np.floor(lo_f)), int(hi_f)
            shifted = v - (lo - 1)
            np.copyto(shifted, 0.0, where=~finite)  # 0: missing; whole numbers stay whole
            code = shifted.astype(np.int64)
            if not np.array_equal(code, shifted):  # a value that is not a whole number
                return None
            width = hi - lo + 2
            parts.append((name, True, lo, width))
        else:
            iv = np.asarray(v, dtype=np.int64)
            lo, hi = (int(iv.min()), int(iv.max())) if len(iv) else (0, 0)
            width = hi - lo + 1
            code = iv - lo
            parts.append((name, False, lo, width))
        total *= width
        if total >= _KEY_LIMIT:
            return None
        codes.append(code)
    key = np.zeros(len(cols[names[0]]), dtype=np.int64)
    for (_, _, _, width), code in zip(parts, codes):
        key *= width
        key += code

    def decode(k: np.ndarray) -> dict[str, np.ndarray]:
        k = np.asarray(k, dtype=np.int64).copy()
        out: dict[str, np.ndarray] = {}
        for name, is_float, lo, width in reversed(parts):
            code = k % width
            k //= width
            if is_float:
                out[name] = np.where(code == 0, np.nan, (code - 1 + lo).astype(np.float64))
            else:
                out[name] = code + lo
        return out

    return key, decode


def _labels(frame: pd.DataFrame, bucket: str) -> tuple[np.ndarray, np.ndarray]:
    """Each row's label for one bucket key, and a sort key for display order."""
    n = len(frame)
    if bucket in _STR_DIMS:
        lab = frame[bucket].astype(object).where(frame[bucket].notna(), None).to_numpy(dtype=object)
        order = pd.factorize(pd.Series(lab, dtype=object).fillna("\uffff"), sort=True)[0]
        return lab, order.astype(np.float64)
    v = frame[bucket].to_numpy(dtype=np.float64)
    if bucket in ("depth", "ply"):
        missing = np.isnan(v)
        lab = np.where(missing, 0, v).astype(np.int64).astype(object)  # Python ints, as int(x) would give
        lab[missing] = None
        return lab, np.where(np.isnan(v), np.inf, v)
    if bucket == "mn":
        lab = mn_band(v)
        # band order from the number itself (bands ascend with mn; missing last)
        order = np.searchsorted(np.asarray([lo for lo, _, _ in MN_BANDS], dtype=np.float64), v, side="right")
        return lab, np.where(pd.isna(lab), np.inf, order.astype(np.float64))
    if bucket == "see":
        lab = see_band(v)
        order = np.select([v < -200, v < 0, v == 0, v <= 200, v > 200], [0, 1, 2, 3, 4], default=5)
        return lab, order.astype(np.float64)
    # hist: sign and decile over all rows (weighted by their tries).
    lab = np.full(n, None, dtype=object)
    order = np.full(n, np.inf)
    known = ~np.isnan(v)
    if known.any():
        w = frame["tries"].to_numpy(dtype=np.float64)[known]
        vals = v[known]
        srt = np.argsort(vals, kind="stable")
        cum = np.cumsum(w[srt])
        # Decile of a value: the share of tries strictly below it, in tenths (ties share one decile).
        below = np.searchsorted(vals[srt], vals, side="left")
        below_w = np.where(below > 0, cum[np.maximum(below - 1, 0)], 0.0)
        dec = np.minimum((10 * below_w / cum[-1]).astype(np.int64), 9) + 1
        sign = np.sign(vals).astype(np.int64) + 1  # 0 neg, 1 zero, 2 pos
        names = np.asarray([f"{s} D{d}" for s in ("neg", "0", "pos") for d in range(1, 11)], dtype=object)
        lab[known] = names[sign * 10 + dec - 1]
        order[known] = np.sign(vals) * 100 + dec
    return lab, order


def finish_fh(frame: pd.DataFrame, groups: pd.DataFrame, buckets: Sequence[str]) -> pd.DataFrame:
    """The fh table from merged partial rows carrying a ``_group`` column."""
    cols = ["tries", "fail_highs", "fh_pct", "fh_lo", "fh_hi"]
    if not len(frame):
        return pd.concat([groups.iloc[:0].reset_index(drop=True),
                          pd.DataFrame({c: [] for c in [*buckets, *cols]})], axis=1)
    labels = {"_group": frame["_group"].to_numpy()}
    orders = {}
    for b in buckets:
        lab, order = _labels(frame, b)
        labels[b] = lab
        orders[f"_o_{b}"] = order
    work = pd.DataFrame({**labels, **orders, "tries": frame["tries"].to_numpy(),
                         "fail_highs": frame["fail_highs"].to_numpy()})
    gcols = ["_group", *[f"_o_{b}" for b in buckets], *buckets]
    body = work.groupby(gcols, sort=True, dropna=False, as_index=False)[["tries", "fail_highs"]].sum()
    body["fh_pct"] = pct(body["fail_highs"].to_numpy(), body["tries"].to_numpy())
    body["fh_lo"], body["fh_hi"] = wilson(body["fail_highs"].to_numpy(), body["tries"].to_numpy())
    keys = key_frame(groups, body["_group"].to_numpy(dtype=np.int64))
    out = body[[*buckets, *cols]].reset_index(drop=True)
    for b in buckets:
        out[b] = out[b].astype(object).where(out[b].notna(), None)
    return pd.concat([keys, out], axis=1)


def merge_fh(partials: Sequence[pa.Table | None], grouping: Grouping, buckets: Sequence[str]) -> pd.DataFrame:
    """Every batch's fh rows summed per report group (``_group``) and values of the ``buckets``: what
    :func:`finish_fh` reads (its sums and the tries-weighted hist deciles are the same over these rows as over
    the batches' own, which differ only by cell).  Summed on the Arrow columns before any pandas frame: on a
    20M-record file the batches' rows are ~2.5M and the per-row label columns of the finish held ~0.5 GB.
    The rows come in the order their key first appears (as ``groupby(sort=False)``)."""
    tables = [p for p in partials if p is not None and p.num_rows]
    if not tables:
        return concat([], _COUNT_COLUMNS)
    merged = pa.concat_tables(tables)
    group = grouping.group_of(merged.select(["srow", "iter", "key"]).to_pandas())
    keys: dict[str, np.ndarray] = {"_group": group}
    for name in buckets:
        column = merged.column(name)
        if name in _STR_DIMS:  # the labels (None: missing), whatever each batch's dictionary
            keys[name] = pc.cast(column, pa.string()).to_numpy(zero_copy_only=False)
        else:
            keys[name] = column.to_numpy()
    groups = group_rows(*keys.values())
    out = {name: groups.take(values) for name, values in keys.items()}
    out["tries"] = groups.int_sums(merged.column("tries").to_numpy())
    out["fail_highs"] = groups.int_sums(merged.column("fail_highs").to_numpy())
    return pd.DataFrame(out)


#: The records columns of the dimensions an input may lack (a missing one puts every try in the ``-`` bucket).
_OPTIONAL_DIM_COLUMNS = {"see": "see", "hist": "hist", "nt": "node_type"}

#: The columns of an fh partial's rows (:func:`fh_counts`).
_COUNT_COLUMNS = ["srow", "iter", "key", *_DIMS, "tries", "fail_highs"]


class FhTable:
    """``--table fh``: fail-high rate per bucket (``ReportOptions.fh_buckets``, ``--bucket``).

    ``buckets``: what its partials count by besides the cell (None: every dimension).  A report's folds hold
    the instance of their options' buckets (:meth:`for_options`, called by ``report.core.Fold``)."""

    name = "fh"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.2
    #: Reads the batch's move-try derivation (treediff.report.tries.derive): core runs it first, on its own.
    reads_tries = True
    columns = (*COLUMNS, *SHADOW_READS, "mn")  # the buckets: kind, act, depth, mn, ply (+ see, hist, nt)

    @property
    def optional_columns(self) -> tuple[str, ...]:
        """The visit and shadow columns, and those of the ``see``, ``hist`` and ``nt`` buckets it counts by:
        decoding and converting the three when no bucket reads them was ~0.5 CPU-s of `report --table all`
        of a 20M-record Parquet file (issue 17)."""
        buckets = (_OPTIONAL_DIM_COLUMNS[d] for d in self.dims if d in _OPTIONAL_DIM_COLUMNS)
        return (*OPTIONAL, *SHADOW_OPTIONAL, *buckets)

    def __init__(self, buckets: Sequence[str] | None = None):
        self.buckets = None if buckets is None else tuple(buckets)

    @property
    def dims(self) -> tuple[str, ...]:
        """The dimensions a partial counts by (in :data:`_DIMS`' order)."""
        return _DIMS if self.buckets is None else tuple(d for d in _DIMS if d in self.buckets)

    def for_options(self, options: object) -> FhTable:
        """The table counting by ``options``' buckets (``fh_buckets``; no options: :data:`DEFAULT_BUCKETS`, as
        :meth:`finish` reads them)."""
        return FhTable(getattr(options, "fh_buckets", DEFAULT_BUCKETS))

    @property
    def partial_key(self) -> tuple[object, ...]:
        """What identifies its partial of a batch (``report.core``: folds with the same buckets share one)."""
        return (FhTable.partial, self.dims)

    def partial(self, batch: Batch) -> FhPartial:
        return fh_partial(batch, self.dims)

    def finish(self, partials: Sequence[FhPartial], grouping: Grouping) -> list[Section]:
        buckets = getattr(grouping.options, "fh_buckets", DEFAULT_BUCKETS)
        # A bucket that is also a --by key (depth, ply, nt) is the group's column already.
        shared = [b for b in buckets if b in grouping.keys]
        buckets = tuple(b for b in buckets if b not in grouping.keys)
        missing = [b for b in buckets if b not in self.dims]
        if missing:  # (a fold made with other options than the grouping's: its partials lack these buckets)
            raise ValueError(f"fh: the partials were not counted by {', '.join(missing)}")
        frame = finish_fh(merge_fh([p.counts for p in partials], grouping, buckets), grouping.groups, buckets)
        notes = [f"note: --bucket {', '.join(shared)} left out: also a --by key"] if shared else []
        out = [Section("fh", TITLE, frame, tuple(grouping.keys), notes=notes)]
        shadow = shadow_frame([p.shadow for p in partials], grouping)
        if shadow is not None:
            out.append(Section("fh_shadow", SHADOW_TITLE, shadow, tuple(grouping.keys)))
        return out


FH = FhTable()

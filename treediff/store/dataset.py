"""Reading what ``treediff parse`` and ``treediff batch`` wrote: Parquet pairs and dataset directories."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from treediff.model.errors import InputError
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA, searches_path_for

if TYPE_CHECKING:
    import pandas as pd

_PARQUET_MAGIC = b"PAR1"


@dataclass
class Loaded:
    """Records and searches of one or more inputs, as pandas DataFrames."""

    records: pd.DataFrame
    searches: pd.DataFrame
    #: What parsing log inputs warned about (empty for Parquet files and datasets).
    warnings: list[str] = field(default_factory=list)


def _is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def _engine_partitioning():
    """Hive partitioning by engine name.  pyarrow.dataset is imported here, not at module level,
    because it pulls in pandas, which `treediff parse` never needs."""
    import pyarrow.dataset as pads

    return pads, pads.partitioning(pa.schema([pa.field("engine", pa.string())]), flavor="hive")


def is_dataset_dir(path: str | os.PathLike) -> bool:
    """True for a directory written by ``treediff batch`` (``searches/`` inside; ``records/`` too unless no
    engine wrote a trace)."""
    p = Path(path)
    return str(path) != "-" and p.is_dir() and (p / "searches").is_dir()


def _dataset_records_schema() -> pa.Schema:
    # The partition value is a plain string; it becomes dictionary-encoded after reading.
    engine_at = RECORDS_SCHEMA.get_field_index("engine")
    return RECORDS_SCHEMA.set(engine_at, pa.field("engine", pa.string()))


def read_dataset_searches(path: Path) -> pa.Table:
    """The searches table of a dataset directory, ``engine`` taken from the partition directory."""
    srch_dir = Path(path) / "searches"
    search_files = sorted(str(f) for f in srch_dir.rglob("*.parquet"))
    if not search_files:
        return SEARCHES_SCHEMA.empty_table()
    file_schemas = [pq.read_schema(f) for f in search_files]
    srch_schema = pa.unify_schemas(
        [pa.schema([pa.field("engine", pa.string())])] + [s.remove(s.get_field_index("engine")) if "engine" in s.names else s for s in file_schemas]
    )
    pads, partitioning = _engine_partitioning()
    searches = pads.dataset(search_files, format="parquet", partitioning=partitioning,
                            partition_base_dir=str(srch_dir), schema=srch_schema)
    return searches.to_table()


def read_dataset_records(path: Path, columns: Sequence[str] | None = None, files: Sequence[str] | None = None,
                         filter=None) -> pa.Table:
    """Records of a dataset directory (all files, or only ``files``), ``engine`` from the partition directory.

    ``filter``: an optional ``pyarrow.dataset`` expression applied while scanning.
    """
    rec_dir = Path(path) / "records"
    if files is None and not rec_dir.is_dir():
        # Only engines without TREEDUMP (own node counts): no records at all.
        empty = _dataset_records_schema().empty_table()
        return empty.select(list(columns)) if columns else empty
    source = list(files) if files is not None else rec_dir
    kwargs = {"partition_base_dir": str(rec_dir)} if files is not None else {}
    pads, partitioning = _engine_partitioning()
    records = pads.dataset(source, format="parquet", partitioning=partitioning,
                           schema=_dataset_records_schema(), **kwargs)
    table = records.to_table(columns=list(columns) if columns else None, filter=filter)
    if "engine" in table.column_names:
        i = table.column_names.index("engine")
        table = table.set_column(i, "engine", pc.dictionary_encode(table.column("engine")))
    return table


def _read_dataset_dir(path: Path, columns: Sequence[str] | None) -> tuple[pa.Table, pa.Table]:
    """A dataset from ``treediff batch``: ``records/`` and ``searches/``, hive-partitioned by engine."""
    if not is_dataset_dir(path):
        raise InputError(f"{path}: not a treediff dataset (expected searches/ and records/ inside)")
    return read_dataset_records(path, columns), read_dataset_searches(path)


def _read_parquet_pair(path: Path, columns: Sequence[str] | None) -> tuple[pa.Table, pa.Table]:
    records = pq.read_table(path, columns=list(columns) if columns else None)
    spath = Path(searches_path_for(str(path)))
    if not spath.exists():
        raise InputError(f"{path}: its searches table {spath.name} is missing (write both with `treediff parse`)")
    return records, pq.read_table(spath)


def _concat_keeping_categories(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat`` that keeps categorical columns categorical (one shared category list)."""
    import pandas as pd  # not at module level: `treediff parse` never needs pandas

    if len(frames) == 1:
        return frames[0]
    frames = [f.copy(deep=False) for f in frames]
    for column in frames[0].columns:
        if not all(column in f.columns and isinstance(f[column].dtype, pd.CategoricalDtype) for f in frames):
            continue
        categories = list(dict.fromkeys(c for f in frames for c in f[column].cat.categories))
        for f in frames:
            f[column] = f[column].cat.set_categories(categories)
    return pd.concat(frames, ignore_index=True)


def _renumber(searches: pd.DataFrame, records: pd.DataFrame | None, offset: int) -> int:
    """Renumber ``search`` to offset + rank (in place); returns the next offset."""
    if not len(searches):
        return offset
    ids = np.unique(searches["search"].to_numpy(dtype=np.int64))
    searches["search"] = (np.searchsorted(ids, searches["search"].to_numpy(dtype=np.int64)) + offset).astype("int32")
    if records is not None and len(records):
        records["search"] = (np.searchsorted(ids, records["search"].to_numpy(dtype=np.int64)) + offset).astype("int32")
    return offset + len(ids)


def _finish_searches(frames: list[pd.DataFrame]) -> pd.DataFrame:
    searches = _concat_keeping_categories(frames)
    for col in ("engine", "position", "phase"):
        if col in searches.columns:
            searches[col] = searches[col].astype("string")
    return searches


@dataclass
class DatasetSearches:
    """The searches of dataset directories as :func:`load` numbers them, and where each row's records are.

    ``files`` holds, per searches row, the path of its records file (None when
    the search has none, e.g. an engine without TREEDUMP).
    """

    searches: pd.DataFrame
    files: list[str | None]


def load_dataset_searches(inputs: Iterable[str | os.PathLike]) -> DatasetSearches:
    """Only the searches tables of dataset directories (small: one row per search), numbered as :func:`load` does."""
    frames, files = [], []
    offset = 0
    for path in inputs:
        p = Path(path)
        if not is_dataset_dir(p):
            raise InputError(f"{path}: not a treediff dataset (expected records/ and searches/ inside)")
        srch = read_dataset_searches(p).to_pandas()
        if len(srch) and "task" not in srch.columns:
            raise InputError(f"{path}: its searches table has no task column (not written by treediff batch)")
        for engine, task in zip(srch["engine"].astype("object"), srch["task"].astype("object") if len(srch) else []):
            f = p / "records" / f"engine={engine}" / f"{task}.parquet"
            files.append(str(f) if f.exists() else None)
        offset = _renumber(srch, None, offset)
        frames.append(srch)
    if not frames:
        raise InputError("no input given")
    return DatasetSearches(_finish_searches(frames), files)



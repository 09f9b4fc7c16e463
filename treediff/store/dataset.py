"""Reading back what ``treediff parse`` and ``treediff batch`` wrote (the layout itself is :mod:`treediff.store.layout`)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from treediff.model.schema import SEARCHES_SCHEMA
from treediff.store.layout import ENGINE_PARTITION_SCHEMA, PARTITION_COLUMN, SEARCHES, searches_dir, table_files

if TYPE_CHECKING:
    import pandas as pd



def read_dataset_searches(path: str | Path) -> pa.Table:
    """The searches table of a dataset directory, ``engine`` taken from the partition directory.

    Files are read in the order of their paths as strings (this order numbers the searches).
    """
    files = sorted((str(f) for f in table_files(path, SEARCHES)))
    if not files:
        return SEARCHES_SCHEMA.empty_table()
    from treediff.store.layout import DATASET_SEARCHES_SCHEMA
    from treediff.store.validate import check_searches_schema, open_parquet

    file_schemas = []
    for f in files:
        schema = open_parquet(f, "searches").schema_arrow  # a garbage file is named, not an internal error
        check_searches_schema(f, schema, required=("search", "task"), expected=DATASET_SEARCHES_SCHEMA)
        file_schemas.append(schema)
    schema = pa.unify_schemas([ENGINE_PARTITION_SCHEMA] + [
        s.remove(s.get_field_index(PARTITION_COLUMN)) if PARTITION_COLUMN in s.names else s for s in file_schemas])
    # pyarrow.dataset is imported here, not at module level: it pulls in pandas, which `treediff parse` never needs.
    import pyarrow.dataset as pads

    partitioning = pads.partitioning(ENGINE_PARTITION_SCHEMA, flavor="hive")
    return pads.dataset(files, format="parquet", partitioning=partitioning,
                        partition_base_dir=str(searches_dir(path)), schema=schema).to_table()


def concat_keeping_categories(frames: list[pd.DataFrame]) -> pd.DataFrame:
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


def finish_searches(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Searches frames as one, with ``engine``, ``position`` and ``phase`` as pandas strings."""
    searches = concat_keeping_categories(frames)
    for col in ("engine", "position", "phase"):
        if col in searches.columns:
            searches[col] = searches[col].astype("string")
    return searches

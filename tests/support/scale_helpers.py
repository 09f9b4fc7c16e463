"""Test helpers: turn parsed TREEDUMP logs into a dataset directory laid out as ``treediff batch`` writes it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from treediff.store.files import write_table_atomic
from treediff.parse.core import parse_logs
from treediff.store.layout import DATASET_RECORDS_SCHEMA, DATASET_SEARCHES_SCHEMA, records_file, searches_file

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
POSITIONS = ROOT / "fixtures" / "positions20.epd"


def dataset_from_logs(logs: list[Path], dataset: Path) -> Path:
    """One file per search, engine = the log's dialect (hive partition), ``task`` = a running key."""
    dataset.mkdir(parents=True, exist_ok=True)
    number = 0
    for log in logs:
        parsed = parse_logs([str(log)], positions=str(POSITIONS))
        for row in parsed.searches.to_pylist():
            engine, search = row["engine"], row["search"]
            key = f"{number:06d}"
            records = parsed.records.filter(pc.equal(parsed.records.column("search"), search)).drop_columns(["engine"])
            i = records.schema.get_field_index("search")
            records = records.set_column(i, records.schema.field(i),
                                         pa.array(np.full(records.num_rows, number, dtype=np.int32)))
            write_table_atomic(records.cast(DATASET_RECORDS_SCHEMA), records_file(dataset, engine, key))
            row = {**row, "search": number, "task": key}
            searches = pa.Table.from_pylist([{k: row.get(k) for k in DATASET_SEARCHES_SCHEMA.names}],
                                            schema=DATASET_SEARCHES_SCHEMA)
            write_table_atomic(searches, searches_file(dataset, engine, key))
            number += 1
    return dataset


def fixture_logs() -> list[Path]:
    return sorted(p for p in TRACES.glob("*.log"))

"""The dataset layout: one definition of its paths and schemas, and the read-side helpers."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA
from treediff.store import layout
from treediff.store.files import write_table_atomic
from treediff.store.layout import (
    DATASET_RECORDS_READ_SCHEMA,
    DATASET_RECORDS_SCHEMA,
    DATASET_SEARCHES_SCHEMA,
    ENGINE_PARTITION_SCHEMA,
    engine_of,
    failure_file,
    is_dataset_dir,
    key_of,
    log_path,
    manifest_path,
    records_dir,
    records_file,
    searches_dir,
    searches_file,
    table_files,
    trace_path,
)


def test_paths(tmp_path):
    d = tmp_path / "ds"
    assert manifest_path(d) == d / "batch.json"
    assert records_dir(d) == d / "records" and searches_dir(d) == d / "searches"
    assert records_file(d, "sf", "000003") == d / "records" / "engine=sf" / "000003.parquet"
    assert searches_file(d, "sf", "000003") == d / "searches" / "engine=sf" / "000003.parquet"
    assert failure_file(d, "sf", "000003") == d / "failures" / "engine=sf" / "000003.parquet"
    assert log_path(d, "sf", "000003") == d / "logs" / "engine=sf" / "000003.log"
    assert trace_path(d, "sf", "000003") == d / "traces" / "engine=sf" / "000003.log.zst"
    # A str dataset works as well as a Path.
    assert records_file(str(d), "sf", "7") == records_file(d, "sf", "7")
    for f in (records_file(d, "typhoon_py:crafty", "000001"), log_path(d, "typhoon_py:crafty", "000001"),
              trace_path(d, "typhoon_py:crafty", "000001")):
        assert engine_of(f) == "typhoon_py:crafty" and key_of(f) == "000001"
    with pytest.raises(ValueError, match="partition"):
        engine_of(d / "x.parquet")


def test_schemas_are_the_normalized_ones_without_the_partition_column():
    assert DATASET_RECORDS_SCHEMA.names == [n for n in RECORDS_SCHEMA.names if n != "engine"]
    assert DATASET_SEARCHES_SCHEMA.names[: len(SEARCHES_SCHEMA) - 1] == [n for n in SEARCHES_SCHEMA.names if n != "engine"]
    assert {"task", "dialect", "requested_depth"} <= set(DATASET_SEARCHES_SCHEMA.names)
    assert DATASET_RECORDS_READ_SCHEMA.names == RECORDS_SCHEMA.names
    assert DATASET_RECORDS_READ_SCHEMA.field("engine").type == pa.string()
    assert ENGINE_PARTITION_SCHEMA.names == ["engine"]


def test_is_dataset_dir_and_table_files(tmp_path):
    d = tmp_path / "ds"
    assert not is_dataset_dir(d) and not is_dataset_dir("-")
    assert table_files(d, layout.SEARCHES) == []
    row = dict({n: None for n in DATASET_SEARCHES_SCHEMA.names}, search=0)
    for engine, key in (("b", "000001"), ("a", "000002"), ("a", "000000")):
        write_table_atomic(pa.Table.from_pylist([dict(row, task=key)], schema=DATASET_SEARCHES_SCHEMA),
                           searches_file(d, engine, key))
    (searches_file(d, "a", "000009").parent / ".000009.parquet.1234abcd.tmp").write_bytes(b"")  # a writer's temp file
    (searches_file(d, "a", "000009").parent / ".hidden.parquet").write_bytes(b"")
    assert is_dataset_dir(d) and is_dataset_dir(str(d))
    assert not is_dataset_dir(searches_file(d, "a", "000000"))
    files = table_files(d, layout.SEARCHES)
    assert [(engine_of(f), key_of(f)) for f in files] == [("a", "000000"), ("a", "000002"), ("b", "000001")]
    assert all(isinstance(f, Path) for f in files)
    assert table_files(d, layout.RECORDS) == []  # no engine wrote a trace


def test_writer_and_reader_agree_on_the_layout(tmp_path):
    """The resume scan looks where the path helpers point: a records file without its searches file is redone."""
    from treediff.store.layout import scan_done

    d = tmp_path / "ds"
    row = dict({n: None for n in DATASET_SEARCHES_SCHEMA.names}, search=0)
    write_table_atomic(pa.Table.from_pylist([row], schema=DATASET_SEARCHES_SCHEMA), searches_file(d, "e", "000000"))
    write_table_atomic(DATASET_RECORDS_SCHEMA.empty_table(), records_file(d, "e", "000001"))  # no searches row
    done = scan_done(d, ["e"])
    assert done.completed == {"e": {"000000"}} and not records_file(d, "e", "000001").exists()


# -- issue 15: one writer per dataset; leftovers of a killed writer ------------------------------------------

def test_the_dataset_lock_refuses_a_second_process(tmp_path):
    import subprocess
    import sys

    from treediff.model.errors import InputError
    from treediff.store.layout import DatasetLock

    ds = tmp_path / "ds"
    ds.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from treediff.store.layout import DatasetLock\n"
         "lock = DatasetLock(sys.argv[1]); print('locked', flush=True); sys.stdin.read()", str(ds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(InputError, match=rf"another treediff batch is writing this dataset \(pid {holder.pid} "):
            DatasetLock(ds)
    finally:
        holder.stdin.close()
        holder.wait(10)
    first = DatasetLock(ds)  # the holder is gone: free again; and shared within this process
    second = DatasetLock(ds)
    second.release()
    first.release()
    first.release()  # once only


def test_remove_temporary_files(tmp_path):
    from treediff.store.layout import remove_temporary_files

    left = [layout.partition_dir(tmp_path, "searches", "e") / ".000000.parquet.abcd1234.tmp",
            layout.partition_dir(tmp_path, "logs", "e") / ".000000.log.abcd1234.tmp",
            tmp_path / ".batch.json.abcd1234.tmp"]
    kept = layout.partition_dir(tmp_path, "searches", "e") / "000001.parquet"
    for path in [*left, kept]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    assert remove_temporary_files(tmp_path) == 3
    assert kept.exists() and not any(p.exists() for p in left)

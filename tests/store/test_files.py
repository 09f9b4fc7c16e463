"""The one atomic writer (treediff.store.files.atomic_output) and what is built on it."""
from __future__ import annotations

import os
import stat

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treediff.store.files import (
    AtomicParquetWriter,
    atomic_output,
    write_bytes_atomic,
    write_table_atomic,
    write_text_atomic,
)


@pytest.fixture
def umask():
    """``umask(mask)`` sets the process umask for the test; the old one is restored after it."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _write_bytes(path):
    write_bytes_atomic(path, b"data")


def _write_text(path):
    write_text_atomic(path, "data\r\n")


def _write_table(path):
    write_table_atomic(pa.table({"x": [1, 2, 3]}), path)


def _copy_into(path):
    with atomic_output(path) as tmp:
        tmp.write_bytes(b"data")


WRITERS = [_write_bytes, _write_text, _write_table, _copy_into]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o000, 0o666)])
def test_the_mode_follows_the_umask(tmp_path, umask, writer, mask, mode):
    umask(mask)
    target = tmp_path / "out"
    writer(target)
    assert _mode(target) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_replaced_file_gets_the_umask_mode_not_the_old_one(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "out"
    target.write_bytes(b"old")
    target.chmod(0o600)
    write_bytes_atomic(target, b"new")
    assert target.read_bytes() == b"new" and _mode(target) == 0o644


def test_text_is_utf8_and_newlines_are_kept(tmp_path):
    write_text_atomic(tmp_path / "t.txt", "é\r\nx\n")
    assert (tmp_path / "t.txt").read_bytes() == "é\r\nx\n".encode()


def test_missing_directories_are_created(tmp_path):
    write_bytes_atomic(tmp_path / "a" / "b" / "c.bin", b"x")
    assert (tmp_path / "a" / "b" / "c.bin").read_bytes() == b"x"


class Boom(Exception):
    pass


@pytest.mark.parametrize("interrupt", [Boom, KeyboardInterrupt])
def test_an_exception_mid_write_leaves_no_temp_file_and_the_destination_untouched(tmp_path, interrupt):
    target = tmp_path / "out"
    target.write_bytes(b"old")
    with pytest.raises(interrupt):
        with atomic_output(target) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"half")
            assert tmp.parent == tmp_path and tmp.name.startswith(".out.")
            raise interrupt()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_write_of_a_new_file_leaves_nothing(tmp_path):
    with pytest.raises(Boom):
        with atomic_output(tmp_path / "new"):
            raise Boom()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_removes_the_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "out"
    target.write_bytes(b"old")

    def refuse(*_):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_bytes_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_the_file_is_fsynced_before_the_rename_and_the_directory_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode)))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.getsize(src)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_bytes_atomic(tmp_path / "out", b"12345")
    assert events == [("fsync", False), ("replace", 5), ("fsync", True)]


def test_parquet_writer_on_an_exception_leaves_the_old_file(tmp_path):
    target = tmp_path / "t.parquet"
    _write_table(target)
    schema = pa.schema([pa.field("x", pa.int64())])
    with pytest.raises(Boom):
        with AtomicParquetWriter(target, schema) as writer:
            writer.write(pa.table({"x": [7]}))
            raise Boom()
    assert pq.read_table(target).column("x").to_pylist() == [1, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_parquet_writer_counts_rows_and_appears_on_close(tmp_path):
    target = tmp_path / "t.parquet"
    schema = pa.schema([pa.field("x", pa.int64())])
    with AtomicParquetWriter(target, schema) as writer:
        writer.write(pa.table({"x": [1, 2]}))
        writer.write(pa.record_batch({"x": [3]}))
        assert not target.exists()
    assert writer.rows == 3 and pq.read_table(target).num_rows == 3
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_parquet_writer_with_a_bad_option_leaves_no_temp_file(tmp_path):
    schema = pa.schema([pa.field("x", pa.int64())])
    with pytest.raises(Exception):
        AtomicParquetWriter(tmp_path / "t.parquet", schema, compression="no-such-codec")
    assert list(tmp_path.iterdir()) == []

"""The one atomic writer (treediff.store.files.atomic_output) and what is built on it."""
from __future__ import annotations

import os
import stat

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treediff.store.files import (
    AtomicOutput,
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


# -- issue 15: destinations, inputs, failed writes, names ----------------------------------------------------

from treediff.store.files import OutputError, check_output, display_path, open_log  # noqa: E402


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_destination_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    dest = tmp_path / "dest"
    if kind == "symlink":
        dest.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(dest)
    else:
        dest.mkdir()
    with pytest.raises(OutputError, match="not a regular file"):
        write_bytes_atomic(dest, b"new")
    assert target.read_bytes() == b"keep"
    assert {"symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "directory": stat.S_ISDIR}[kind](os.lstat(dest).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", "target"]  # no temporary file


def test_check_output_refuses_an_input(tmp_path):
    from treediff.model.errors import InputError

    log = tmp_path / "in.log"
    log.write_bytes(b"x")
    other = tmp_path / "other.log"
    check_output(other, [log, "-"])  # absent: fine
    other.write_bytes(b"y")
    check_output(other, [log, tmp_path / "missing"])
    with pytest.raises(InputError, match="is also an input"):
        check_output(log, [log])
    link = tmp_path / "hard.log"
    os.link(log, link)
    with pytest.raises(InputError, match="is also an input"):
        check_output(link, [log])  # the same inode under another name
    sym = tmp_path / "sym.log"
    sym.symlink_to(other)
    with pytest.raises(InputError, match="symbolic link"):
        check_output(sym, [])


@pytest.mark.parametrize("code, text", [(28, "no space left"), (30, "the file system is read-only"), (13, "permission denied"),
                                        (27, "file too large")])
def test_a_failed_write_is_a_clear_error_and_leaves_nothing(tmp_path, monkeypatch, code, text):
    import treediff.store.files as files

    def full(path):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files, "_fsync_path", full)
    with pytest.raises(OutputError, match=f"cannot write .*out: {text}"):
        write_bytes_atomic(tmp_path / "out", b"data")
    assert list(tmp_path.iterdir()) == []


def test_pyarrow_errors_without_errno_are_recognised(tmp_path):
    from treediff.store.files import is_write_failure, write_error

    exc = OSError(f"IOError: [Errno 28] {os.strerror(28)}. Detail: [errno 28] {os.strerror(28)}")
    assert is_write_failure(exc) and "no space left" in str(write_error(tmp_path / "x", exc))
    assert not is_write_failure(OSError("something else"))


def test_new_directories_are_fsynced_into_their_parents(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_bytes_atomic(tmp_path / "a" / "b" / "out", b"data")
    assert str(tmp_path) in synced and str(tmp_path / "a") in synced and str(tmp_path / "a" / "b") in synced


def test_a_directory_that_cannot_be_made_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        write_bytes_atomic(blocker / "sub" / "out", b"data")


def test_names_that_are_not_utf8(tmp_path):
    name = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xfe.parquet"))
    write_table_atomic(pa.table({"a": [1]}), name)  # pyarrow takes the (ASCII) temporary name
    with open(name, "rb") as fh:
        assert pq.read_table(fh).num_rows == 1
    assert display_path(name).endswith("\\xfe.parquet")
    bad = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xff.log"))
    with open(bad, "wb") as fh:
        fh.write(b"x\n")
    from treediff.model.errors import InputError

    with pytest.raises(InputError, match=r"\\xff.log: the file name is not valid UTF-8"):
        open_log(bad)


def test_open_log_errors(tmp_path):
    from treediff.model.errors import InputError

    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="symbolic links"):
        open_log(loop)
    with pytest.raises(InputError, match="is a directory"):
        open_log(tmp_path)


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_corrupt_compressed_data_is_an_oserror_naming_the_offset(tmp_path, kind):
    import gzip

    import zstandard

    data = os.urandom(1 << 16).hex().encode()
    packed = bytearray(gzip.compress(data) if kind == "gzip" else zstandard.ZstdCompressor(write_checksum=True).compress(data))
    packed[40:80] = b"\xff" * 40
    path = tmp_path / f"x.{kind}"
    path.write_bytes(bytes(packed))
    with pytest.raises(OSError, match=f"corrupt {kind} data .*bytes of the file"):
        with open_log(path) as fh:
            while fh.read(1 << 14):
                pass


def test_a_temporary_file_is_removed_at_exit_whatever_interrupted_its_writer(tmp_path):
    """A signal can land between the temporary file's creation and the try that removes it: atexit does."""
    import subprocess
    import sys

    code = ("import os, sys\nfrom treediff.store.files import AtomicOutput\n"
            "out = AtomicOutput(sys.argv[1])\nprint(out.tmp, flush=True)\nsys.exit(0)  # neither committed nor aborted\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith(".tmp")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("writer", ["AtomicOutput", "write_text_atomic", "AtomicParquetWriter"])
def test_a_signal_as_the_temporary_file_is_created_leaves_nothing(tmp_path, writer):
    """SIGTERM raised as ``os.open`` returns the new temporary file: the file is removed at once and not
    left registered (before, it was unregistered and left behind: the CI failure of 2026-12-07)."""
    from support.signal_windows import sigterm_as_it_returns
    from treediff.run.signals import Terminated
    from treediff.store import files

    out = tmp_path / "out.parquet"
    write = {"AtomicOutput": lambda: AtomicOutput(out),
             "write_text_atomic": lambda: write_text_atomic(out, "x"),
             "AtomicParquetWriter": lambda: AtomicParquetWriter(out, pa.schema([("a", pa.int64())]))}[writer]
    with pytest.raises(Terminated):
        with sigterm_as_it_returns(os, "open", lambda path, *rest: str(path).endswith(".tmp")) as hit:
            write()
    assert len(hit) == 1
    assert list(tmp_path.iterdir()) == []
    assert not [name for name in files._LIVE_TEMPS if name.startswith(str(tmp_path))]

"""Reading inputs and writing outputs.

* :func:`open_log` opens a plain, gzip or zstd log (or ``-`` for stdin) as bytes.
* :func:`atomic_output` (:class:`AtomicOutput`) is the one atomic writer:
  a temporary file beside the destination, fsynced and renamed over it, mode
  as the umask says.  :func:`write_bytes_atomic`, :func:`write_text_atomic`,
  :class:`AtomicParquetWriter` and :func:`write_table_atomic` are built on it.
"""
from __future__ import annotations

import gzip
import io
import os
import secrets
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, cast

import pyarrow as pa
import pyarrow.parquet as pq

from treediff.model.errors import InputError

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a log for binary reading; gzip and zstd are detected by their magic bytes.

    ``-`` is standard input.  Raises :class:`InputError` for a missing file.
    """
    if str(path) == "-":
        raw: BinaryIO = sys.stdin.buffer
    else:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - returned to the caller
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory, not a log") from None
        except PermissionError:
            raise InputError(f"{path}: permission denied") from None
    # Only a replaced sys.stdin gets here: typeshed types its buffer as BinaryIO, which lacks the readinto()
    # BufferedReader asks of its raw stream; the binary streams found there at run time (BytesIO, ...) have it.
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(io.RawIOBase, raw))
    head = buffered.peek(4)[:4]
    if head.startswith(_GZIP_MAGIC):
        # GzipFile is a BufferedIOBase, not nominally a typing.BinaryIO, though it has BinaryIO's methods.
        return cast(BinaryIO, gzip.GzipFile(fileobj=buffered))
    if head.startswith(_ZSTD_MAGIC):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)
    return buffered


def input_size(path: str | os.PathLike[str]) -> int | None:
    """Size in bytes of a file on disk (compressed size for .gz/.zst); None for stdin."""
    if str(path) == "-":
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


class AtomicOutput:
    """A temporary file beside ``path`` that replaces ``path`` only on :meth:`commit`.

    The one atomic writer: every output file of treediff goes through it.

    * The temporary file is created in the destination's directory (so the
      rename is atomic) with mode ``0o666`` filtered by the process umask, as
      a plain ``open()`` would make it (not ``tempfile.mkstemp``'s ``0o600``).
    * :meth:`commit` fsyncs the file, renames it over ``path`` and fsyncs the
      directory, so after a crash the destination holds the old or the new
      content, never a part.
    * :meth:`abort` (and any exception inside ``with``, Ctrl-C included)
      removes the temporary file; the destination is left as it was.

    As a context manager it yields the temporary path; whatever writes it
    (``open``, pyarrow, matplotlib, shutil) writes to that path by name::

        with atomic_output(out) as tmp:
            shutil.copyfile(src, tmp)
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = _create_temp_beside(self.path)
        self._done = False

    def commit(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            _fsync_path(self.tmp)
            os.replace(self.tmp, self.path)
        except BaseException:
            self.tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(self.path.parent)

    def abort(self) -> None:
        self._done = True
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def atomic_output(path: str | os.PathLike[str]) -> AtomicOutput:
    """``with atomic_output(path) as tmp:`` write ``tmp``; it becomes ``path`` if the block succeeds.

    See :class:`AtomicOutput`.
    """
    return AtomicOutput(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :class:`AtomicOutput`)."""
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically, UTF-8, newlines untranslated (see :class:`AtomicOutput`)."""
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def _create_temp_beside(path: Path) -> Path:
    """A new, empty file ``.NAME.XXXXXXXX.tmp`` in ``path``'s directory; the kernel applies the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"{path.parent}: could not create a temporary file for {path.name}")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicParquetWriter:
    """A ``pyarrow.parquet.ParquetWriter`` whose file appears only when it is closed cleanly.

    Used as a context manager: on an exception (or Ctrl-C) the temporary file
    is removed and the destination is left as it was.  Built on :class:`AtomicOutput`.
    """

    def __init__(self, path: str | os.PathLike[str], schema: pa.Schema, **kwargs: Any) -> None:
        self._output = AtomicOutput(path)
        self.path = self._output.path
        kwargs.setdefault("compression", "zstd")
        try:
            self._writer = pq.ParquetWriter(self._output.tmp, schema, **kwargs)
        except BaseException:
            self._output.abort()
            raise
        self.rows = 0

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        self._writer.write_table(table)
        self.rows += table.num_rows

    def commit(self) -> None:
        try:
            self._writer.close()
        except BaseException:
            self._output.abort()
            raise
        self._output.commit()

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self._output.abort()

    def __enter__(self) -> "AtomicParquetWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_table_atomic(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write one Parquet file atomically."""
    with AtomicParquetWriter(path, table.schema) as writer:
        writer.write(table)

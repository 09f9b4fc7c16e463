"""Reading inputs and writing outputs.

* :func:`open_log` opens a plain, gzip or zstd log (or ``-`` for stdin) as bytes.
* :class:`AtomicParquetWriter` / :func:`write_table_atomic` never leave a
  half-written file behind: they write a temporary file and rename it.
"""
from __future__ import annotations

import gzip
import io
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from treediff.model.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA, searches_path_for

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def open_log(path: str | os.PathLike) -> BinaryIO:
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
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
    head = buffered.peek(4)[:4]
    if head.startswith(_GZIP_MAGIC):
        return gzip.GzipFile(fileobj=buffered)  # type: ignore[return-value]
    if head.startswith(_ZSTD_MAGIC):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)  # type: ignore[return-value]
    return buffered


def input_size(path: str | os.PathLike) -> int | None:
    """Size in bytes of a file on disk (compressed size for .gz/.zst); None for stdin."""
    if str(path) == "-":
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _temp_beside(path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


class AtomicParquetWriter:
    """A ``pyarrow.parquet.ParquetWriter`` whose file appears only when it is closed cleanly.

    Used as a context manager: on an exception (or Ctrl-C) the temporary file
    is removed and the destination is left as it was.
    """

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, **kwargs):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = _temp_beside(self.path)
        kwargs.setdefault("compression", "zstd")
        self._writer = pq.ParquetWriter(self._tmp, schema, **kwargs)
        self.rows = 0

    def write(self, table: pa.Table | pa.RecordBatch) -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        self._writer.write_table(table)
        self.rows += table.num_rows

    def commit(self) -> None:
        self._writer.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "AtomicParquetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_table_atomic(table: pa.Table, path: str | os.PathLike) -> None:
    """Write one Parquet file atomically."""
    with AtomicParquetWriter(path, table.schema) as writer:
        writer.write(table)



"""What kind of file a path is, by its first bytes (Parquet, gzip, zstd), without importing pyarrow.

Light on purpose: ``treediff info small.log`` asks whether its input is Parquet before it imports the
dataset layer (pyarrow.parquet), and the log index and browse ask whether a log is compressed.
"""
from __future__ import annotations

from pathlib import Path

PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def is_parquet_file(path: str | Path) -> bool:
    """True when ``path`` starts with Parquet's magic bytes (False for a directory or a file it cannot read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def is_compressed(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first 4 bytes or more) is one
    :func:`treediff.store.files.open_input` decompresses (gzip or zstd)."""
    return head.startswith((GZIP_MAGIC, ZSTD_MAGIC))

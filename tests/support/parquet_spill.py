"""The log spill as it was before the Arrow IPC spill: a Parquet pair in a scratch directory, read back
through ``parquet_source`` (the reference the IPC spill's frames and outputs are compared with)."""
from __future__ import annotations

import os
from pathlib import Path

from treediff.parse import source as source_module
from treediff.parse.core import parse_to_parquet
from treediff.parse.source import remove_scratch, scratch_dir
from treediff.store.source import Source, parquet_source


def parquet_spilled_log(path: str | os.PathLike, **parse_options) -> Source:
    """What ``treediff.parse.source._spilled_log`` returned before: the log parsed into a scratch Parquet
    pair, read back as any Parquet pair (removed with the source, as the IPC spill is)."""
    import weakref

    scratch = scratch_dir("log")
    try:
        out = scratch / "records.parquet"
        result = parse_to_parquet([str(path)], out, **parse_options)
        source = parquet_source(out)
    except BaseException:
        remove_scratch(scratch)
        raise
    source.warnings = list(result.warnings)
    weakref.finalize(source._read, remove_scratch, scratch)
    return source


def use_parquet_spill(monkeypatch) -> None:
    """Make every log opened from now on (``open_source``) spill to Parquet, as before the IPC spill."""
    monkeypatch.setattr(source_module, "_spilled_log", parquet_spilled_log)


def parts_of(directory: Path) -> list[Path]:
    """The IPC part files of a spill directory."""
    return sorted(directory.glob("records-*.arrow"))

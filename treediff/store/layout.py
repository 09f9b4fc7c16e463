"""The batch dataset on disk: layout, schemas, manifest, and what is already done.

Layout (hive partitioning by engine name; ``KEY`` is the position's 0-based
index in the EPD file, zero-padded)::

    DATASET/batch.json                              the manifest (depth, engines, positions digest)
    DATASET/records/engine=NAME/KEY.parquet         records of one search (RECORDS_SCHEMA minus engine)
    DATASET/searches/engine=NAME/KEY.parquet        its one searches row (+ runner columns)
    DATASET/failures/engine=NAME/KEY.parquet        a failed search: reason and detail
    DATASET/logs/engine=NAME/KEY.log                the engine's stdin/stdout transcript
    DATASET/traces/engine=NAME/KEY.log.zst          the raw trace (with --keep-traces)

The ``engine`` column is not stored inside the files: the partition
directory carries it.  Every file is written atomically; a search's
``searches`` file is written last and marks it complete.

This module is the one definition of that layout: writers and readers take
every path from it, never spell ``"records"`` or ``engine=`` themselves.

* Schemas: :data:`DATASET_RECORDS_SCHEMA`, :data:`DATASET_SEARCHES_SCHEMA`,
  :data:`FAILURES_SCHEMA` (as stored), :data:`DATASET_RECORDS_READ_SCHEMA`
  and :data:`ENGINE_PARTITION_SCHEMA` (as read back with the partition column).
* Paths: :func:`manifest_path`, :func:`records_dir`, :func:`searches_dir`,
  :func:`failures_dir`, :func:`table_dir`, :func:`partition_dir`,
  :func:`records_file`, :func:`searches_file`, :func:`failure_file`,
  :func:`result_path`, :func:`log_path`, :func:`trace_path`.
* Reading: :func:`is_dataset_dir`, :func:`table_files`, :func:`engine_of`,
  :func:`key_of`, :func:`read_manifest`.
* Writing: :func:`prepare_dataset`, :func:`scan_done`, :func:`make_manifest`,
  :class:`DatasetLock` (one writer at a time: ``fcntl.flock`` on
  ``DATASET/.treediff.lock``).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence, cast

import pyarrow as pa

from treediff.model.errors import InputError
from treediff.model.schema import (
    FORMAT_VERSION,
    RECORDS_COLUMN_DOCS,
    RECORDS_FORMAT,
    RECORDS_SCHEMA,
    SEARCHES_COLUMN_DOCS,
    SEARCHES_FORMAT,
    SEARCHES_SCHEMA,
    column_docs,
    described,
)
from treediff.store.files import display_path, write_bytes_atomic, write_error

MANIFEST = "batch.json"
MANIFEST_VERSION = 1
#: The dataset's lock file (hidden: no reader looks at it).
LOCK_FILE = ".treediff.lock"

#: Records as stored in the dataset: the normalized schema without the partition column.
DATASET_RECORDS_SCHEMA = described(pa.schema([f for f in RECORDS_SCHEMA if f.name != "engine"]),
                                   RECORDS_COLUMN_DOCS, RECORDS_FORMAT)

#: Columns the runner adds to each searches row.
RUNNER_SEARCH_FIELDS = [
    pa.field("dialect", pa.string()),          # TREEDUMP dialect of the trace; null for an engine without one
    pa.field("protocol", pa.string()),         # uci or xboard
    pa.field("requested_depth", pa.int16()),   # plies asked for (go depth / sd)
    pa.field("iter_nodes", pa.string()),       # JSON [[depth, nodes], ...]: the engine's cumulative counter per iteration
    pa.field("engine_nodes", pa.int64()),      # the engine's own final node count (last info/thinking line)
    pa.field("engine_depth", pa.int16()),      # deepest iteration the engine reported (plies)
    pa.field("bestmove", pa.string()),         # the engine's answer, UCI
    pa.field("seconds", pa.float64()),         # wall-clock seconds from engine start to reaped
    pa.field("task", pa.string()),             # KEY
]
#: Unit and one-line description of the runner's searches columns (Parquet field metadata).
RUNNER_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    "dialect": ("label", "TREEDUMP dialect of the trace; null for an engine without one"),
    "protocol": ("label", "uci or xboard"),
    "requested_depth": ("plies", "depth asked for (go depth / sd)"),
    "iter_nodes": ("JSON", "[[depth, nodes], ...]: the engine's cumulative node counter per iteration"),
    "engine_nodes": ("nodes", "the engine's own final node count (last info/thinking line)"),
    "engine_depth": ("plies", "deepest iteration the engine reported"),
    "bestmove": ("UCI move", "the engine's answer"),
    "seconds": ("seconds", "wall-clock time from engine start to reaped"),
    "task": ("label", "the task KEY (the position's index in the EPD file)"),
}
DATASET_SEARCHES_SCHEMA = described(
    pa.schema([f for f in SEARCHES_SCHEMA if f.name != "engine"] + RUNNER_SEARCH_FIELDS),
    {**SEARCHES_COLUMN_DOCS, **RUNNER_COLUMN_DOCS}, SEARCHES_FORMAT)

FAILURES_SCHEMA = pa.schema([
    pa.field("task", pa.string()),
    pa.field("search", pa.int32()),
    pa.field("position", pa.string()),
    pa.field("fen", pa.string()),
    pa.field("phase", pa.string()),
    pa.field("requested_depth", pa.int16()),
    pa.field("failure", pa.string()),        # a treediff.run.search.Failure value
    pa.field("detail", pa.string()),         # one line, human-readable
    pa.field("seconds", pa.float64()),
    pa.field("trace_lines", pa.int64()),
    pa.field("returncode", pa.int32()),
    pa.field("log", pa.string()),            # the transcript, relative to the dataset (null if not kept)
])
#: ``treediff.format`` of a dataset's failures files.
FAILURES_FORMAT = "treediff-failures"
FAILURES_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    "task": ("label", "the task KEY (the position's index in the EPD file)"),
    "search": ("ordinal", "the search number the task would have had"),
    "position": ("label", "position id"),
    "fen": ("FEN", "the position"),
    "phase": ("label", "opening, middlegame or endgame"),
    "requested_depth": ("plies", "depth asked for"),
    "failure": ("label", "why the search failed (a treediff.run.search.Failure value)"),
    "detail": ("text", "one human-readable line"),
    "seconds": ("seconds", "wall-clock time until the engine was reaped"),
    "trace_lines": ("count", "trace lines read before the failure"),
    "returncode": ("exit status", "the engine's exit status (negative: killed by that signal)"),
    "log": ("path", "the transcript, relative to the dataset (null if not kept)"),
}
FAILURES_SCHEMA = described(FAILURES_SCHEMA, FAILURES_COLUMN_DOCS, FAILURES_FORMAT)

#: The dataset's subdirectories.
RECORDS, SEARCHES, FAILURES, LOGS, TRACES = "records", "searches", "failures", "logs", "traces"
#: The subdirectories holding Parquet tables.
TABLES = (RECORDS, SEARCHES, FAILURES)
#: The hive partition: every file lives in ``TABLE/engine=NAME/``; the column is not stored in the files.
PARTITION_COLUMN = "engine"
#: The partition's schema, for ``pyarrow.dataset.partitioning(ENGINE_PARTITION_SCHEMA, flavor="hive")``.
ENGINE_PARTITION_SCHEMA = pa.schema([pa.field(PARTITION_COLUMN, pa.string())])
#: Records as read back with ``engine`` from the partition directory: the normalized schema with
#: ``engine`` a plain string (the partition value; dictionary-encode it after reading if wanted).
DATASET_RECORDS_READ_SCHEMA = RECORDS_SCHEMA.set(RECORDS_SCHEMA.get_field_index(PARTITION_COLUMN),
                                                 pa.field(PARTITION_COLUMN, pa.string()))


# Paths.  Every function takes the dataset directory as a str or a path and returns a Path.

def manifest_path(dataset: str | os.PathLike[str]) -> Path:
    """``DATASET/batch.json``."""
    return Path(dataset) / MANIFEST


def table_dir(dataset: str | os.PathLike[str], table: str) -> Path:
    """``DATASET/TABLE``: one of :data:`TABLES`, or ``logs``/``traces``."""
    return Path(dataset) / table


def records_dir(dataset: str | os.PathLike[str]) -> Path:
    """``DATASET/records``: absent when no engine of the batch wrote a TREEDUMP trace."""
    return table_dir(dataset, RECORDS)


def searches_dir(dataset: str | os.PathLike[str]) -> Path:
    """``DATASET/searches``: one file per completed search."""
    return table_dir(dataset, SEARCHES)


def failures_dir(dataset: str | os.PathLike[str]) -> Path:
    """``DATASET/failures``: one file per failed search."""
    return table_dir(dataset, FAILURES)


def partition_dir(dataset: str | os.PathLike[str], table: str, engine: str) -> Path:
    """``DATASET/TABLE/engine=ENGINE``."""
    return table_dir(dataset, table) / f"{PARTITION_COLUMN}={engine}"


def result_path(dataset: str | os.PathLike[str], table: str, engine: str, key: str) -> Path:
    """``DATASET/TABLE/engine=ENGINE/KEY.parquet`` for a table of :data:`TABLES`."""
    return partition_dir(dataset, table, engine) / f"{key}.parquet"


def records_file(dataset: str | os.PathLike[str], engine: str, key: str) -> Path:
    """The records of search ``key`` of ``engine`` (may not exist: an engine without TREEDUMP has none)."""
    return result_path(dataset, RECORDS, engine, key)


def searches_file(dataset: str | os.PathLike[str], engine: str, key: str) -> Path:
    """The searches row of search ``key`` of ``engine``; it exists once the search is complete."""
    return result_path(dataset, SEARCHES, engine, key)


def failure_file(dataset: str | os.PathLike[str], engine: str, key: str) -> Path:
    """The failure row of search ``key`` of ``engine``."""
    return result_path(dataset, FAILURES, engine, key)


def log_path(dataset: str | os.PathLike[str], engine: str, key: str) -> Path:
    """``DATASET/logs/engine=ENGINE/KEY.log``: the engine's stdin/stdout transcript."""
    return partition_dir(dataset, LOGS, engine) / f"{key}.log"


def trace_path(dataset: str | os.PathLike[str], engine: str, key: str) -> Path:
    """``DATASET/traces/engine=ENGINE/KEY.log.zst``: the raw trace (``--keep-traces``)."""
    return partition_dir(dataset, TRACES, engine) / f"{key}.log.zst"


def is_dataset_dir(path: str | os.PathLike[str]) -> bool:
    """True for a directory written by ``treediff batch``: ``searches/`` inside (``records/`` too unless
    no engine wrote a trace).  ``-`` (stdin) is never one."""
    return str(path) != "-" and Path(path).is_dir() and searches_dir(path).is_dir()


def table_files(dataset: str | os.PathLike[str], table: str) -> list[Path]:
    """Every ``.parquet`` file of ``table`` (all engines), sorted by path; temporary files are skipped."""
    directory = table_dir(dataset, table)
    if not directory.is_dir():
        return []
    return sorted(f for f in directory.glob(f"{PARTITION_COLUMN}=*/*.parquet") if not f.name.startswith("."))


def engine_of(file: str | os.PathLike[str]) -> str:
    """The engine a dataset file belongs to, from its ``engine=NAME`` directory."""
    parent = Path(file).parent.name
    prefix = f"{PARTITION_COLUMN}="
    if not parent.startswith(prefix):
        raise ValueError(f"{file}: not inside an {prefix}NAME partition directory")
    return parent[len(prefix):]


def key_of(file: str | os.PathLike[str]) -> str:
    """The task key a dataset file belongs to (``KEY`` of ``KEY.parquet``, ``KEY.log``, ``KEY.log.zst``)."""
    return Path(file).name.split(".", 1)[0]


def _keys(directory: Path) -> set[str]:
    if not directory.is_dir():
        return set()
    return {p.name[: -len(".parquet")] for p in directory.iterdir()
            if p.name.endswith(".parquet") and not p.name.startswith(".")}


@dataclass
class DoneState:
    """Which (engine, key) results already exist."""

    completed: dict[str, set[str]]
    failed: dict[str, set[str]]

    def is_done(self, engine: str, key: str, retry_failed: bool) -> bool:
        if key in self.completed.get(engine, set()):
            return True
        return not retry_failed and key in self.failed.get(engine, set())


def remove_temporary_files(dataset: Path) -> int:
    """Remove the ``.NAME.XXXXXXXX.tmp`` files a killed writer left in the dataset; their number.

    Only safe while holding the dataset's :class:`DatasetLock` (no writer is running).
    """
    removed = 0
    for table in (*TABLES, LOGS, TRACES):
        directory = table_dir(dataset, table)
        if not directory.is_dir():
            continue
        for tmp in directory.glob(f"{PARTITION_COLUMN}=*/.*.tmp"):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    for tmp in Path(dataset).glob(f".{MANIFEST}.*.tmp"):
        tmp.unlink(missing_ok=True)
        removed += 1
    return removed


def scan_done(dataset: Path, engines: Iterable[str]) -> DoneState:
    """The completed and failed keys per engine; removes records files left without their searches file."""
    completed, failed = {}, {}
    for name in engines:
        completed[name] = _keys(partition_dir(dataset, SEARCHES, name))
        failed[name] = _keys(partition_dir(dataset, FAILURES, name)) - completed[name]
        # A crash between the records and the searches write leaves records alone; they are redone.
        for key in _keys(partition_dir(dataset, RECORDS, name)) - completed[name]:
            records_file(dataset, name, key).unlink(missing_ok=True)
    return DoneState(completed, failed)


def positions_digest(rows: Sequence[tuple[str, str, str | None]]) -> str:
    """SHA-256 over (id, fen, phase) of every position, in order."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row).encode())
        h.update(b"\n")
    return h.hexdigest()


def make_manifest(depth: int, engines: list[dict[str, Any]], n_positions: int, digest: str,
                  source: str) -> dict[str, Any]:
    from treediff import __version__

    return {
        "format": "treediff-batch",
        "version": MANIFEST_VERSION,
        "depth": depth,
        "engines": engines,
        "positions": {"count": n_positions, "sha256": digest, "source": source},
        # Self-description (issue 16): who wrote it, the dialects, and every table's columns with units.
        "treediff_version": __version__,
        "dialects": list(dict.fromkeys(e["dialect"] for e in engines if e.get("dialect"))),
        "tables": manifest_tables(),
    }


def manifest_tables() -> dict[str, dict[str, Any]]:
    """The ``tables`` entry of the manifest: each Parquet table's format, version and columns (name, Arrow
    type, unit, description), as stored (the ``engine`` partition column is the directory)."""
    return {
        name: {"format": fmt, "format_version": FORMAT_VERSION, "columns": column_docs(schema)}
        for name, fmt, schema in ((RECORDS, RECORDS_FORMAT, DATASET_RECORDS_SCHEMA),
                                  (SEARCHES, SEARCHES_FORMAT, DATASET_SEARCHES_SCHEMA),
                                  (FAILURES, FAILURES_FORMAT, FAILURES_SCHEMA))
    }


_HELD: dict[str, list[int]] = {}
_HELD_LOCK = threading.Lock()


class DatasetLock:
    """One writer per dataset: an exclusive ``flock`` on ``DATASET/.treediff.lock``, held until :meth:`release`.

    A second ``treediff batch`` (``--resume`` or not) on the same dataset is
    refused with :class:`InputError` naming the holder (pid, host, start);
    the lock goes with its process, however it ends (the kernel drops it).
    Within one process the lock is shared (counted), so planning the same
    dataset twice in a program is not refused.  On a file system without
    locks, none is taken.
    """

    def __init__(self, dataset: str | os.PathLike[str]) -> None:
        import fcntl

        self.dataset = Path(dataset)
        self._key = os.path.realpath(dataset)
        self._released = False
        with _HELD_LOCK:
            held = _HELD.get(self._key)
            if held is not None:
                held[1] += 1
                return
            path = self.dataset / LOCK_FILE
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            except OSError as exc:
                raise write_error(path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)  # no locks on this file system: go on without one
                    _HELD[self._key] = [-1, 1]
                    return
                try:
                    holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                finally:
                    os.close(fd)
                raise InputError(f"{display_path(dataset)}: another treediff batch is writing this dataset"
                                 f"{f' ({holder})' if holder else ''}; wait for it to finish (or stop it), "
                                 "then use --resume; or choose another directory") from None
            note = f"pid {os.getpid()} on {socket.gethostname()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, note.encode(), 0)
            except OSError:
                pass
            _HELD[self._key] = [fd, 1]

    def release(self) -> None:
        """Give the lock back (once; the last holder in the process unlocks)."""
        if self._released:
            return
        self._released = True
        with _HELD_LOCK:
            held = _HELD.get(self._key)
            if held is None:
                return
            held[1] -= 1
            if held[1] == 0:
                del _HELD[self._key]
                if held[0] >= 0:
                    os.close(held[0])  # closing the descriptor drops the flock

    def __enter__(self) -> "DatasetLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def has_results(dataset: Path) -> bool:
    return any(table_dir(dataset, t).is_dir() and any(table_dir(dataset, t).rglob("*.parquet")) for t in TABLES)


def prepare_dataset(dataset: Path, manifest: dict[str, Any], resume: bool) -> None:
    """Create the dataset directory and its manifest, or check a resumed one matches.

    Raises :class:`InputError` for a non-empty dataset without ``resume`` and
    for a resumed dataset whose depth, engines or positions differ.
    """
    mpath = manifest_path(dataset)
    if dataset.exists() and not dataset.is_dir():
        raise InputError(f"{display_path(dataset)}: exists and is not a directory")
    if mpath.exists():
        try:
            old = json.loads(mpath.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{mpath}: unreadable manifest ({exc})") from None
        if not resume:
            raise InputError(f"{dataset}: already holds a batch; use --resume to continue it, or choose a new directory")
        for key, what in (("depth", "depth"), ("positions", "positions (EPD content)")):
            if old.get(key) != manifest[key]:
                raise InputError(f"{dataset}: --resume with different {what} than the batch it holds "
                                 f"({old.get(key)!r} vs {manifest[key]!r})")
        # Search numbers derive from each engine's place in this list, so it must not change.
        old_names = [e.get("name") for e in old.get("engines", [])]
        new_names = [e["name"] for e in manifest["engines"]]
        if old_names != new_names:
            raise InputError(f"{dataset}: --resume needs the same engines in the same order as the batch it holds "
                             f"({', '.join(old_names)}); got {', '.join(new_names)}")
        for engine, prior in zip(manifest["engines"], old.get("engines", [])):
            if prior != engine:
                raise InputError(f"{dataset}: --resume with engine {engine['name']} configured differently "
                                 "than in the batch it holds (see its batch.json)")
    elif has_results(dataset) and not resume:
        raise InputError(f"{display_path(dataset)}: holds results but no {MANIFEST}; choose a new directory")
    make_dataset_dir(dataset)
    write_bytes_atomic(mpath, (json.dumps(manifest, indent=2) + "\n").encode())


def make_dataset_dir(dataset: Path) -> None:
    """Create the dataset directory (and its parents); a clear :class:`OutputError` when it cannot be."""
    if dataset.exists() and not dataset.is_dir():
        raise InputError(f"{display_path(dataset)}: exists and is not a directory")
    try:
        dataset.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(dataset, exc) from None


def read_manifest(dataset: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads(manifest_path(dataset).read_text())
    except (OSError, ValueError):
        return None
    # batch.json is the JSON object prepare_dataset wrote; its content is not validated here.
    return cast("dict[str, Any]", manifest)

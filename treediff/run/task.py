"""One (position, engine) search as a self-contained, picklable task: :func:`run_task`.

:func:`run_task` is the unit every executor runs: it starts the engine in a
fresh temporary directory, turns the outcome into the dataset's records and
searches rows (or a failure row), writes them atomically into the dataset and
returns a small :class:`TaskResult`.  It needs nothing from the process that
planned the batch but the :class:`Task` itself, so a local process pool and a
cluster scheduler (Dask) can submit the same function; the dataset directory
must be reachable from wherever it runs.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.errors import InputError
from treediff.store.files import OutputError, atomic_output, write_bytes_atomic, write_table_atomic
from treediff.model.positions import Position, PositionBook, material_phase
from treediff.store.layout import (
    DATASET_RECORDS_SCHEMA,
    DATASET_SEARCHES_SCHEMA,
    FAILURES_SCHEMA,
    failure_file,
    log_path,
    records_file,
    searches_file,
    trace_path,
)
from treediff.run.contain import start_time
from treediff.run.engines import EngineSpec
from treediff.run.process import abandoned
from treediff.run.search import BadTrace, Failure, Limits, SearchOutcome, open_trace, run_search
from treediff.run.signals import deferred
from treediff.model.schema import DICT_STR


_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
#: ``treediff-PID-STARTTIME-HOST-...``: a working directory names the process that made it, so one left by a
#: process that died (a worker killed by the OOM killer) can be recognised and removed.
_WORKDIR = re.compile(r"^treediff-(\d+)-(\d+)-([0-9a-f]{8})-")
_SWEPT_ROOTS: set[str] = set()


def _workdir_prefix(what: str) -> str:
    return f"treediff-{os.getpid()}-{start_time(os.getpid()) or 0}-{_HOST}-{what}-"


def make_workdir(what: str, tmp_root: str | None = None) -> Path:
    """A fresh working directory for one search, named after this process (see :func:`sweep_workdirs`)."""
    root = tmp_root or tempfile.gettempdir()
    if root not in _SWEPT_ROOTS:
        _SWEPT_ROOTS.add(root)
        sweep_workdirs(root)
    return Path(tempfile.mkdtemp(prefix=_workdir_prefix(what), dir=root))


def sweep_workdirs(tmp_root: str | None = None) -> int:
    """Remove the working directories that processes of this host left when they died; their number."""
    root = tmp_root or tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0
    for entry in entries:
        m = _WORKDIR.match(entry.name)
        if m is None or m.group(3) != _HOST:
            continue
        if start_time(int(m.group(1))) == m.group(2):
            continue  # its process still runs
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
        except OSError:
            continue
    return removed


class TaskAbandoned(Exception):
    """The process running the task is shutting down (see :func:`treediff.run.process.abandon_all`)."""


@dataclass(frozen=True)
class Task:
    """Everything one search needs; picklable.

    ``key`` names its files in the dataset, ``search`` is its unique search
    number there, ``keep_logs`` is ``all``, ``failed`` or ``none``.
    """

    key: str
    search: int
    engine: EngineSpec
    position: Position
    depth: int
    dataset: str
    limits: Limits = Limits()
    keep_logs: str = "all"
    keep_traces: bool = False
    tmp_root: str | None = None


@dataclass
class TaskResult:
    """What a task reports back (its data went to the dataset)."""

    engine: str
    key: str
    position: str
    ok: bool
    failure: str | None = None
    detail: str = ""
    nodes: int | None = None
    node_source: str | None = None
    contexts: int = 0
    warnings: list[str] = field(default_factory=list)
    engine_seconds: float = 0.0   #: engine started → reaped
    parse_seconds: float = 0.0    #: turning the trace (or the engine's counts) into rows
    total_seconds: float = 0.0    #: the whole task, writes included

    @property
    def overhead_seconds(self) -> float:
        """The runner's own time: the task minus the engine's lifetime (parsing included)."""
        return max(0.0, self.total_seconds - self.engine_seconds)


@dataclass
class Analysis:
    """An outcome turned into table rows (search number 0), or a failure."""

    ok: bool
    failure: Failure | None = None
    detail: str = ""
    records: pa.Table | None = None   # RECORDS_SCHEMA (engine column = dialect), None for no trace
    search_row: dict | None = None    # SEARCHES_SCHEMA + runner columns, engine column excluded
    warnings: list[str] = field(default_factory=list)
    contexts: int = 0


def _const_dict(value: str | None, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, DICT_STR)
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value], pa.string()))


def _set(table: pa.Table, name: str, array: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), table.schema.field(name), array)


def _phase(position: Position) -> tuple[str | None, str]:
    if position.phase:
        return position.phase, "epd"
    return material_phase(position.fen), "material"


def _runner_columns(spec: EngineSpec, depth: int, outcome: SearchOutcome) -> dict:
    return {
        "dialect": spec.dialect,
        "protocol": spec.protocol.value,
        "requested_depth": depth,
        "iter_nodes": json.dumps([list(p) for p in outcome.iter_nodes]) if outcome.iter_nodes else None,
        "engine_nodes": outcome.engine_nodes,
        "engine_depth": outcome.engine_depth,
        "bestmove": outcome.bestmove or None,
        "seconds": round(outcome.timings.exited, 6),
    }


def _analyze_trace(spec: EngineSpec, position: Position, depth: int, outcome: SearchOutcome) -> Analysis:
    from treediff.parse.core import parse_logs

    assert outcome.trace_path is not None
    phase, phase_source = _phase(position)
    # Looked up by id only: the trace's own header FEN is not matched against the task's.
    entry = Position(id=position.id, fen=position.fen, phase=phase, line=position.line)
    book = PositionBook(positions=[entry], by_id={entry.id: entry})
    try:
        parsed = parse_logs([outcome.trace_path], engine=spec.dialect or "auto", positions=book)
    except InputError as exc:
        return Analysis(False, Failure.UNPARSEABLE, str(exc).replace(str(outcome.trace_path), spec.trace_file or "trace"))
    searches, records = parsed.searches, parsed.records
    if searches.num_rows == 0:
        return Analysis(False, Failure.UNPARSEABLE, "the trace holds no TREEDUMP search")
    warnings = list(outcome.warnings)
    if searches.num_rows > 1:
        warnings.append(f"the trace holds {searches.num_rows} searches; only the first is kept")
        first = searches.column("search")[0]
        records = records.filter(pc.equal(records.column("search"), first))
        searches = searches.slice(0, 1)
    row = searches.to_pylist()[0]
    contexts = len([c for c in (row.get("contexts") or "").split(",") if c])
    if not row.get("result_nodes"):
        return Analysis(False, Failure.ZERO_NODES,
                        f"0-node search: the trace has {row.get('records') or 0} records and no RESULT "
                        f"(the engine answered {outcome.bestmove or 'nothing'})", contexts=contexts)
    n = records.num_rows
    records = _set(records, "position", _const_dict(position.id, n))
    records = _set(records, "fen", _const_dict(position.fen, n))
    records = _set(records, "phase", _const_dict(phase, n))
    row.update(position=position.id, fen=position.fen, phase=phase, phase_source=phase_source)
    if row.get("warnings"):
        warnings.append(row["warnings"])
    row["warnings"] = "\n".join(warnings) or None
    row.update(_runner_columns(spec, depth, outcome))
    return Analysis(True, records=records, search_row=row, warnings=warnings, contexts=contexts)


def _analyze_engine_counts(spec: EngineSpec, position: Position, depth: int, outcome: SearchOutcome) -> Analysis:
    if not outcome.iter_nodes:
        return Analysis(False, Failure.ZERO_NODES, "the engine reported no node count (no info depth/nodes lines)")
    if not outcome.engine_nodes:
        return Analysis(False, Failure.ZERO_NODES, "0-node search: the engine's own count is 0")
    phase, phase_source = _phase(position)
    row: dict[str, Any] = {name: None for name in DATASET_SEARCHES_SCHEMA.names}
    row.update(
        search=0, position=position.id, fen=position.fen, phase=phase, phase_source=phase_source,
        iterations=len(outcome.iter_nodes), max_iter=outcome.engine_depth, records=0, moves=0,
        end_nodes=outcome.engine_nodes, end_best=outcome.bestmove or None, end_score=outcome.engine_score,
        node_source="engine", warnings="\n".join(outcome.warnings) or None,
    )
    row.update(_runner_columns(spec, depth, outcome))
    return Analysis(True, search_row=row, warnings=list(outcome.warnings))


def analyze(spec: EngineSpec, position: Position, depth: int, outcome: SearchOutcome) -> Analysis:
    """Turn a finished run into rows: the parsed trace, or the engine's own counts without one."""
    if not outcome.ok:
        return Analysis(False, outcome.failure, outcome.detail, warnings=list(outcome.warnings))
    if spec.has_trace:
        return _analyze_trace(spec, position, depth, outcome)
    return _analyze_engine_counts(spec, position, depth, outcome)


def _open_kept_trace(spec: EngineSpec, workdir: Path):
    """The verified trace file (never through a symlink, FIFO or device), opened for reading; None if absent."""
    assert spec.trace_file is not None
    try:
        fd = open_trace(workdir, spec.trace_file)
    except BadTrace:
        return None
    return None if fd is None else os.fdopen(fd, "rb")


def _copy_at_most(fin, fout, limit: int) -> int:
    """Copy at most ``limit`` bytes; the number copied."""
    copied = 0
    while copied < limit:
        block = fin.read(min(1 << 20, limit - copied))
        if not block:
            break
        fout.write(block)
        copied += len(block)
    return copied


def _compress_file(fin, dest: Path, limit: int) -> None:
    import zstandard

    with fin, atomic_output(dest) as tmp, open(tmp, "wb") as fout:
        with zstandard.ZstdCompressor(level=3).stream_writer(fout, closefd=False) as zout:
            _copy_at_most(fin, zout, limit)


def _write_failure(task: Task, analysis: Analysis, outcome: SearchOutcome | None, log_rel: str | None) -> None:
    phase, _ = _phase(task.position)
    row = {
        "task": task.key, "search": task.search, "position": task.position.id, "fen": task.position.fen,
        "phase": phase, "requested_depth": task.depth,
        "failure": (analysis.failure or Failure.INTERNAL).value, "detail": analysis.detail,
        "seconds": outcome.timings.exited if outcome else None,
        "trace_lines": outcome.trace_lines if outcome else None,
        "returncode": outcome.returncode if outcome else None, "log": log_rel,
    }
    write_table_atomic(pa.Table.from_pylist([row], schema=FAILURES_SCHEMA),
                       failure_file(task.dataset, task.engine.name, task.key))


def _write_success(task: Task, analysis: Analysis, source: str) -> None:
    dataset, name = Path(task.dataset), task.engine.name
    row = dict(analysis.search_row or {})
    row["search"] = task.search
    row["task"] = task.key
    row["source"] = source
    if analysis.records is not None:
        records = analysis.records.drop_columns(["engine"])
        records = _set(records, "search", pa.array(np.full(records.num_rows, task.search, dtype=np.int32)))
        write_table_atomic(records.cast(DATASET_RECORDS_SCHEMA), records_file(dataset, name, task.key))
    searches = pa.Table.from_pylist([{k: row.get(k) for k in DATASET_SEARCHES_SCHEMA.names}],
                                    schema=DATASET_SEARCHES_SCHEMA)
    # Written last: its presence marks the task complete (see --resume).
    write_table_atomic(searches, searches_file(dataset, name, task.key))
    failure_file(dataset, name, task.key).unlink(missing_ok=True)


def run_task(task: Task) -> TaskResult:
    """Run one task and write its result into the dataset atomically; never raises for engine trouble.

    Interrupts (KeyboardInterrupt, SystemExit) propagate after the engine is
    killed and the working directory removed; nothing partial is left in
    the dataset.
    """
    t0 = time.perf_counter()
    spec = task.engine
    result = TaskResult(engine=spec.name, key=task.key, position=task.position.id, ok=False)
    outcome: SearchOutcome | None = None
    workdir: Path | None = None
    try:
        with deferred():  # (a signal as mkdir returns would orphan the directory: raised once it is known)
            workdir = make_workdir(task.key, task.tmp_root)
        try:
            outcome = run_search(spec, task.position.fen, task.depth, workdir, task.limits)
            t_parse = time.perf_counter()
            analysis = analyze(spec, task.position, task.depth, outcome)
            result.parse_seconds = time.perf_counter() - t_parse
        except Exception as exc:  # noqa: BLE001 - a runner bug must become a failure row, not a dead batch
            analysis = Analysis(False, Failure.INTERNAL, f"{type(exc).__name__}: {exc}")
        if abandoned():
            # The worker is being shut down and killed this engine: record nothing, --resume reruns it.
            raise TaskAbandoned(f"{spec.name}/{task.key}")
        try:
            _record(task, result, outcome, analysis, workdir)
        except OutputError as exc:
            raise OutputError(f"{exc}; every completed search is saved: fix this, then rerun with --resume") from None
        result.engine_seconds = outcome.timings.exited if outcome else 0.0
    finally:
        if workdir is not None:
            with deferred():
                shutil.rmtree(workdir, ignore_errors=True)
    result.total_seconds = time.perf_counter() - t0
    return result


def _record(task: Task, result: TaskResult, outcome: SearchOutcome | None, analysis: Analysis, workdir: Path) -> None:
    """Write the task's transcript, trace and rows into the dataset and fill ``result``."""
    spec = task.engine
    dataset = Path(task.dataset)
    log_rel = None
    if outcome is not None and (task.keep_logs == "all" or (task.keep_logs == "failed" and not analysis.ok)):
        dest = log_path(dataset, spec.name, task.key)
        write_bytes_atomic(dest, outcome.transcript.encode("utf-8", "replace"))
        log_rel = str(dest.relative_to(dataset))
    source = f"batch task {spec.name}/{task.key}"
    kept = _open_kept_trace(spec, workdir) if (outcome is not None and outcome.trace_path is not None
                                                and task.keep_traces) else None
    if kept is not None:
        dest = trace_path(dataset, spec.name, task.key)
        _compress_file(kept, dest, task.limits.trace_bytes)
        source = str(dest.relative_to(dataset))
    elif log_rel is not None and not spec.has_trace:
        source = log_rel
    if analysis.ok:
        _write_success(task, analysis, source)
    else:
        _write_failure(task, analysis, outcome, log_rel)
    row = analysis.search_row or {}
    result.ok, result.failure, result.detail = analysis.ok, (analysis.failure.value if analysis.failure else None), analysis.detail
    result.nodes = row.get("result_nodes") if row.get("node_source") == "result" else row.get("end_nodes")
    result.node_source = row.get("node_source")
    result.contexts = analysis.contexts
    result.warnings = analysis.warnings


@dataclass
class RunReport:
    """What ``treediff run`` reports about its one search."""

    outcome: SearchOutcome
    analysis: Analysis
    seconds: float


def run_one(spec: EngineSpec, position: Position, depth: int, out: Path, limits: Limits = Limits(),
            transcript_out: Path | None = None, tmp_root: str | None = None) -> RunReport:
    """One search; its trace (or, for an engine without TREEDUMP, its output) saved to ``out``.

    Whatever the engine wrote is saved even when the run failed, for
    inspection.  ``transcript_out`` receives the stdin/stdout transcript.
    """
    t0 = time.perf_counter()
    workdir: Path | None = None
    try:
        with deferred():  # (as in run_task)
            workdir = make_workdir("run", tmp_root)
        outcome = run_search(spec, position.fen, depth, workdir, limits)
        try:
            analysis = analyze(spec, position, depth, outcome)
        except Exception as exc:  # noqa: BLE001 - a runner bug is reported as a failed search, the trace kept
            analysis = Analysis(False, Failure.INTERNAL, f"{type(exc).__name__}: {exc}")
        if spec.has_trace:
            # Only the regular file the engine wrote in its directory, never where a symlink points.
            fin = _open_kept_trace(spec, workdir) if outcome.trace_path is not None else None
            if fin is not None:
                with fin, atomic_output(out) as tmp, open(tmp, "wb") as fout:
                    # At most the trip-wire's bytes: a runaway engine writes on until it is killed.
                    _copy_at_most(fin, fout, limits.trace_bytes)
        else:
            write_bytes_atomic(out, outcome.transcript.encode("utf-8", "replace"))
        if transcript_out is not None:
            write_bytes_atomic(transcript_out, outcome.transcript.encode("utf-8", "replace"))
    finally:
        if workdir is not None:
            with deferred():
                shutil.rmtree(workdir, ignore_errors=True)
    return RunReport(outcome, analysis, time.perf_counter() - t0)

"""Running real engines safely, one search or a batch: see docs/RUNNER.md.

Positions (:class:`Position`, :func:`validate_fen`, :func:`read_positions`)
come from :mod:`treediff.model.positions`, re-exported here.

* :mod:`treediff.run.engines`: presets and user-configured engines (:class:`EngineSpec`).
* :mod:`treediff.run.search`: one search, driven over UCI or xboard with timeouts and trip-wires.
* :mod:`treediff.run.process`: one engine process: non-blocking I/O, bounded memory, always reaped.
* :mod:`treediff.run.contain`: the per-run cgroup, the subreaper and the parent-death signal.
* :mod:`treediff.run.signals`: SIGTERM and SIGHUP handled like Ctrl-C; cleanup no signal cuts short.
* :mod:`treediff.run.task`: one (position, engine) task written into a dataset (the executor's unit).
* :mod:`treediff.run.batch`: plans and runs a batch on a pluggable executor.
* :mod:`treediff.store.layout`: the dataset layout and schemas.

The names below are imported on first use, so importing a light submodule
(:mod:`treediff.run.signals`, which the CLI needs before it knows the command)
does not import pyarrow and the parser.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "Position": "treediff.model.positions", "read_positions": "treediff.model.positions",
    "validate_fen": "treediff.model.positions",
    "BatchPlan": "treediff.run.batch", "BatchSummary": "treediff.run.batch", "LocalExecutor": "treediff.run.batch",
    "SerialExecutor": "treediff.run.batch", "make_executor": "treediff.run.batch", "plan_batch": "treediff.run.batch",
    "run_batch": "treediff.run.batch",
    "EngineSpec": "treediff.run.engines", "Protocol": "treediff.run.engines", "load_config": "treediff.run.engines",
    "parse_engine_arg": "treediff.run.engines", "presets": "treediff.run.engines",
    "Failure": "treediff.run.search", "Limits": "treediff.run.search", "SearchOutcome": "treediff.run.search",
    "run_search": "treediff.run.search",
    "Task": "treediff.run.task", "TaskResult": "treediff.run.task", "run_one": "treediff.run.task",
    "run_task": "treediff.run.task",
}

__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    from treediff.model.positions import Position, read_positions, validate_fen
    from treediff.run.batch import (BatchPlan, BatchSummary, LocalExecutor, SerialExecutor, make_executor, plan_batch,
                                    run_batch)
    from treediff.run.engines import EngineSpec, Protocol, load_config, parse_engine_arg, presets
    from treediff.run.search import Failure, Limits, SearchOutcome, run_search
    from treediff.run.task import Task, TaskResult, run_one, run_task


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'treediff.run' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value

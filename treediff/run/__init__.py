"""Running real engines safely, one search or a batch: see docs/RUNNER.md.

Positions (:class:`Position`, :func:`validate_fen`, :func:`read_positions`)
come from :mod:`treediff.model.positions`, re-exported here.

* :mod:`treediff.run.engines`: presets and user-configured engines (:class:`EngineSpec`).
* :mod:`treediff.run.search`: one search, driven over UCI or xboard with timeouts and trip-wires.
* :mod:`treediff.run.task`: one (position, engine) task written into a dataset (the executor's unit).
* :mod:`treediff.run.batch`: plans and runs a batch on a pluggable executor.
* :mod:`treediff.store.layout`: the dataset layout and schemas.
"""
from treediff.model.positions import Position, read_positions, validate_fen
from treediff.run.batch import BatchPlan, BatchSummary, LocalExecutor, SerialExecutor, make_executor, plan_batch, run_batch
from treediff.run.engines import EngineSpec, Protocol, load_config, parse_engine_arg, presets
from treediff.run.search import Failure, Limits, SearchOutcome, run_search
from treediff.run.task import Task, TaskResult, run_one, run_task

__all__ = [
    "BatchPlan", "BatchSummary", "EngineSpec", "Failure", "Limits", "LocalExecutor", "Position", "Protocol",
    "SearchOutcome", "SerialExecutor", "Task", "TaskResult", "load_config", "make_executor", "parse_engine_arg",
    "plan_batch", "presets", "read_positions", "run_batch", "run_one", "run_search", "run_task", "validate_fen",
]

"""``treediff run`` (one search) and ``treediff batch`` (EPD × engines into a dataset)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from treediff.model.errors import InputError

_LIMIT_OPTIONS = [
    click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
                 help="Wall-clock seconds per search (engine start-up included); the engine is killed after."),
    click.option("--max-trace-lines", type=click.IntRange(min=1), default=2_000_000, show_default=True,
                 help="Trip-wire: kill the engine when its trace (or its output) passes this many lines."),
    click.option("--max-trace-bytes", type=click.IntRange(min=1), default=None,
                 help="Trip-wire in bytes on the trace (and the output), newlines or not.  "
                      "[default: 256 per --max-trace-lines]"),
    click.option("--engines-config", type=click.Path(dir_okay=False), default=None,
                 help="TOML file defining more engines ([engines.NAME] tables; see `treediff docs runner`)."),
    click.option("--tmpdir", type=click.Path(file_okay=False), default=None,
                 help="Where the per-search working directories are made (default: the system's)."),
]


def _limit_options(fn):
    for option in reversed(_LIMIT_OPTIONS):
        fn = option(fn)
    return fn


def _known(engines_config: str | None):
    from treediff.run.engines import load_config, presets

    known = presets()
    if engines_config:
        known.update(load_config(engines_config, known))
    return known


def _list_engines(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from treediff.run.engines import presets

    for name, spec in sorted(presets().items()):
        trace = f"trace {spec.trace_file} ({spec.dialect})" if spec.has_trace else "no trace: engine's own node counts"
        click.echo(f"{name:22s} {spec.protocol.value:6s} {trace:40s} {spec.description}")
    ctx.exit(0)


_list_option = click.option("--list-engines", is_flag=True, expose_value=False, is_eager=True, callback=_list_engines,
                            help="List the built-in engine presets and exit.")


@click.command("run")
@click.option("--engine", "engine_arg", required=True, metavar="[LABEL@]NAME[=ARGV]",
              help="Engine preset or configured engine (e.g. stockfish, typhoon_py:stockfish, uci=/path/engine).")
@click.option("--cmd", default=None, metavar="ARGV", help="The engine's command line (split like a shell, never run by one).")
@click.option("--fen", required=True, help="The position (validated with python-chess before anything is sent).")
@click.option("--depth", type=click.IntRange(min=1, max=200), required=True, help="Search depth in plies.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), required=True,
              help="Where the trace goes (for an engine without TREEDUMP: its output).")
@click.option("--transcript", type=click.Path(dir_okay=False), default=None,
              help="Also save the engine's stdin/stdout transcript here.")
@_limit_options
@_list_option
def run(engine_arg, cmd, fen, depth, output, transcript, timeout, max_trace_lines, max_trace_bytes, engines_config,
        tmpdir):
    """Run one fixed-depth search safely and save its trace.

    The engine starts in a fresh temporary directory, single-threaded, with
    stdin held open until it answers; a timeout and a trace trip-wire kill
    its whole process group.  Prints a one-line summary; exit status 1 when
    the search failed (what the engine wrote is still saved).
    """
    from treediff.run.engines import check_executable, parse_engine_arg
    from treediff.model.positions import Position, validate_fen
    from treediff.run.search import Limits
    from treediff.run.task import run_one

    spec = check_executable(parse_engine_arg(engine_arg, _known(engines_config), cmd))
    from treediff.model.positions import fen_hash_id

    clean = validate_fen(fen)
    _check_run_outputs(output, transcript, spec, engines_config)
    position = Position(id=fen_hash_id(clean), fen=clean)
    limits = Limits(timeout=timeout, max_trace_lines=max_trace_lines, max_trace_bytes=max_trace_bytes)
    report = run_one(spec, position, depth, Path(output), limits,
                     transcript_out=Path(transcript) if transcript else None, tmp_root=tmpdir)
    click.echo(_run_summary(spec.name, depth, report, output))
    for warning in report.analysis.warnings:
        click.echo(f"treediff: warning: {warning}", err=True)
    if not report.analysis.ok:
        sys.exit(1)


def _check_run_outputs(output: str, transcript: str | None, spec, engines_config: str | None) -> None:
    """Refuse, before the engine starts, outputs that are inputs (the engine's program and files named in its
    command, the engines config) or not regular files, and a transcript written over the trace."""
    from treediff.store.files import check_output

    inputs = [a for a in spec.argv if os.path.isfile(a)] + ([engines_config] if engines_config else [])
    check_output(output, inputs)
    if transcript:
        check_output(transcript, [*inputs, output])
        if os.path.abspath(transcript) == os.path.abspath(output):
            raise InputError(f"--transcript {transcript}: the same file as -o; give it another name")


def _run_summary(name: str, depth: int, report, output: str) -> str:
    a, o = report.analysis, report.outcome
    if not a.ok:
        saved = f"; what it wrote is in {output}" if Path(output).exists() else ""
        return f"{name}: FAILED ({a.failure.value if a.failure else 'unknown'}): {a.detail}{saved}"
    row = a.search_row or {}
    if row.get("node_source") == "result":
        nodes = f"{row['result_nodes']:,} nodes (RESULT count"
        nodes += f"; END says {row['end_nodes']:,})" if row.get("end_nodes") is not None else ")"
        reached = row.get("max_iter")
        extra = f", {o.trace_lines:,} trace lines"
        if a.contexts > 1:
            extra += f", {a.contexts} contexts (only the first kept)"
    else:
        nodes = f"{row['end_nodes']:,} nodes (engine's own count, quiescence included)"
        reached = row.get("max_iter")
        extra = ""
    return (f"{name}: depth {reached}/{depth}, {nodes}, bestmove {o.bestmove or '-'}, "
            f"{o.timings.exited:.2f} s{extra} -> {output}")


@click.command("batch")
@click.argument("epd", type=click.Path(dir_okay=False))
@click.option("--engine", "engine_args", multiple=True, required=True, metavar="[LABEL@]NAME[=ARGV]",
              help="An engine to run on every position (repeat for several).")
@click.option("--depth", type=click.IntRange(min=1, max=200), required=True, help="Search depth in plies.")
@click.option("-o", "--output", "output", type=click.Path(file_okay=False), required=True,
              help="The dataset directory (records/ and searches/ partitioned by engine).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Searches run at once (worker processes).  [default: the number of CPUs]")
@click.option("--executor", "executor_name", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where searches run: worker processes here, or tasks on a Dask cluster (pip install -e .[dask]).")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="With --executor dask: a running scheduler (tcp://host:8786); default: a local cluster of -j "
                   "workers.  OUTPUT must be a path every worker can reach.")
@click.option("--resume", is_flag=True, help="Continue a batch in OUTPUT: skip searches already done.")
@click.option("--retry-failed", is_flag=True, help="With --resume, run the failed searches again.")
@click.option("--skip-bad-positions", is_flag=True, help="Skip (and report) invalid EPD lines instead of stopping.")
@click.option("--logs", "keep_logs", type=click.Choice(["all", "failed", "none"]), default="all", show_default=True,
              help="Which engine transcripts to keep under OUTPUT/logs/.")
@click.option("--keep-traces", is_flag=True, help="Keep every raw trace, zstd-compressed, under OUTPUT/traces/.")
@_limit_options
@_list_option
def batch(epd, engine_args, depth, output, jobs, executor_name, scheduler, resume, retry_failed, skip_bad_positions, keep_logs, keep_traces,
          timeout, max_trace_lines, max_trace_bytes, engines_config, tmpdir):
    """Run every EPD position with every engine into a Parquet dataset.

    Each result is written atomically as it finishes; Ctrl-C loses no
    completed search and --resume skips them.  Failures (timeout, trip-wire,
    crash, 0-node search, bad trace) are recorded under OUTPUT/failures/
    and do not stop the batch.  Exit status 1 when any search failed, 130
    when interrupted.
    """
    from rich.console import Console

    from treediff.run.batch import make_executor, plan_batch
    from treediff.run.engines import check_executable, parse_engine_arg
    from treediff.model.positions import read_positions as read_epd
    from treediff.run.search import Limits

    if retry_failed and not resume:
        raise InputError("--retry-failed only makes sense with --resume")
    if scheduler and executor_name != "dask":
        raise InputError("--scheduler only makes sense with --executor dask")
    if executor_name == "dask":
        from treediff.run.dask_executor import dask_available

        if not dask_available():
            raise InputError("--executor dask needs Dask: pip install 'treediff[dask]' "
                             "(or: pip install 'dask[distributed]')")
    known = _known(engines_config)
    engines = [check_executable(parse_engine_arg(arg, known)) for arg in engine_args]
    positions, skipped = read_epd(epd, skip_bad=skip_bad_positions)
    for problem in skipped:
        click.echo(f"treediff: warning: skipped {problem}", err=True)
    limits = Limits(timeout=timeout, max_trace_lines=max_trace_lines, max_trace_bytes=max_trace_bytes)
    plan = plan_batch(positions, engines, depth, output, limits,
                      resume=resume, retry_failed=retry_failed, keep_logs=keep_logs, keep_traces=keep_traces,
                      tmp_root=tmpdir, source=str(epd))
    try:
        if jobs is None:
            jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if executor_name == "dask":
            from treediff.run.dask_executor import DaskExecutor

            executor = DaskExecutor(min(jobs, max(1, len(plan.tasks))), scheduler=scheduler) if plan.tasks \
                else make_executor(1)
        else:
            executor = make_executor(min(jobs, max(1, len(plan.tasks))))
    except BaseException:
        plan.release()
        raise
    from treediff.run.batch import WorkerLost
    from treediff.run.signals import interrupt_status

    try:
        summary = _run_with_progress(plan, executor, Console(stderr=True))
    except WorkerLost as exc:
        # Not bad input (exit 2): the batch stopped early; what it completed is saved.
        if exc.summary is not None:
            _print_quietly(exc.summary)
        click.echo(f"treediff: error: {exc}", err=True)
        sys.exit(1)
    _print_quietly(summary)
    if summary.interrupted:
        sys.exit(interrupt_status(KeyboardInterrupt()) if summary.signal is None
                 else 128 + summary.signal)
    if summary.failed:
        sys.exit(1)


def _print_quietly(summary) -> None:
    """The summary, unless the terminal is gone (SIGHUP): the exit status still says what happened."""
    from rich.console import Console

    from treediff.cli import detach_closed_streams

    try:
        _print_summary(summary, Console())
    except OSError:
        detach_closed_streams()


def _run_with_progress(plan, executor, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from treediff.run.batch import run_batch

    progress = Progress(
        TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
        TextColumn("[red]{task.fields[failed]} failed"), TextColumn("elapsed"), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(), console=console, disable=not console.is_terminal, transient=False,
    )
    with progress:
        bar = progress.add_task("batch", total=len(plan.tasks), failed=0)
        failed = 0

        def on_result(result):
            nonlocal failed
            failed += not result.ok
            progress.update(bar, advance=1, failed=failed)

        return run_batch(plan, executor, on_result)


def _print_summary(summary, console) -> None:
    from rich.table import Table

    plan = summary.plan
    table = Table(title=f"treediff batch: {plan.dataset}", title_justify="left")
    for col in ("engine", "ok", "failed", "failures", "nodes", "extra contexts"):
        table.add_column(col, justify="right" if col in ("ok", "failed", "nodes", "extra contexts") else "left")
    for name, tally in summary.per_engine.items():
        reasons = ", ".join(f"{k} {v}" for k, v in tally.by_failure.most_common())
        table.add_row(name, str(tally.ok), str(tally.failed), reasons or "-", f"{tally.nodes:,}", str(tally.contaminated))
    console.print(table)
    line = (f"{summary.ok} done, {summary.failed} failed in {summary.seconds:.1f} s"
            f"; {plan.already_done} already in the dataset (of {plan.total})")
    if summary.interrupted:
        line += f"; INTERRUPTED with {summary.not_run} not run (rerun with --resume)"
    console.print(line, highlight=False)
    for result in summary.failures()[:10]:
        console.print(f"  failed: {result.engine} {result.position}: {result.failure}: {result.detail}",
                      highlight=False, markup=False)
    if summary.failed > 10:
        console.print(f"  ... {summary.failed - 10} more in {plan.dataset}/failures/", highlight=False)


COMMANDS = [run, batch]

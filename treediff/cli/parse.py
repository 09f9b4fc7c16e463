"""``treediff parse`` and ``treediff info``."""
from __future__ import annotations

import contextlib
import sys

import click

from treediff.model.errors import InputError
from treediff.model.text import printable
from treediff.cli.common import echo_warnings, keep_complete_option
from treediff.parse.dialects import DIALECTS
from treediff.parse.core import parse_to_parquet, total_input_bytes

#: Inputs smaller than this parse without a progress bar.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024

ENGINE_CHOICE = click.Choice(["auto", *DIALECTS], case_sensitive=False)


@contextlib.contextmanager
def byte_progress(paths: list[str], label: str):
    """A rich bytes/s progress bar on a terminal for large inputs; yields an ``advance(n)`` callback or None."""
    total = total_input_bytes(paths)
    if not sys.stderr.isatty() or (total is not None and total < PROGRESS_MIN_BYTES):
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import ProgressColumn

    columns: list[str | ProgressColumn] = [
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, transient=True, console=_stderr_console()) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


@click.command("parse")
@click.argument("logs", nargs=-1, required=True)
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Records Parquet file; the searches table goes beside it as OUT.searches.parquet.")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True,
              help="Dialect; auto reads it from each header's engine= key.")
@click.option("--positions", type=click.Path(dir_okay=False), default=None,
              help="EPD file giving position ids and phase labels (matched by id, else by FEN).")
@click.option("--strict", is_flag=True, help="Fail (exit 2) on any bad line, unknown act or unresolved move.")
@click.option("--all-contexts", is_flag=True, help="Keep every search context, not just that of each search's first record.")
@keep_complete_option
def parse_command(logs, output, engine, positions, strict, all_contexts, keep_complete):
    """Parse TREEDUMP LOGS (plain, .gz, .zst or - for stdin) into one Parquet file."""
    paths = list(logs)
    if paths.count("-") > 1:
        raise InputError("stdin (-) can be given only once")
    from treediff.model.schema import searches_path_for
    from treediff.store.files import check_output

    # Both files written must be neither an input nor a symlink/FIFO/device: refused before any work.
    for target in (output, searches_path_for(output)):
        check_output(target, [*paths, *([positions] if positions else [])])
    with byte_progress(paths, "parsing") as advance:
        result = parse_to_parquet(paths, output, engine=engine, positions=positions,
                                  strict=strict, all_contexts=all_contexts, progress=advance,
                                  keep_complete=keep_complete)
    echo_warnings(result.warnings)
    searches = result.searches
    records = sum(searches.column("records").to_pylist())
    nodes = sum(searches.column("result_nodes").to_pylist())
    click.echo(f"{output}: {searches.num_rows} searches, {records:,} records, {nodes:,} RESULT nodes")


INFO_COLUMNS = ["engine", "position", "phase", "iterations", "records", "result_nodes", "end_nodes", "contexts", "warnings"]


def info_rows(path: str, engine: str) -> list[dict]:
    """One dict per search of ``path`` (a log, parsed Parquet or dataset), with the info columns."""
    from treediff.parse.source import open_source

    # Integer columns with nulls come back from pandas as floats: convert_dtypes makes them Int64 again.
    searches = open_source(path, engine=engine).searches.convert_dtypes()
    searches = searches.astype(object).where(searches.notna(), None)
    rows = []
    for row in searches.to_dict("records"):
        warnings = row.get("warnings") or ""
        rows.append({
            "engine": row["engine"],
            "position": row["position"],
            "phase": row["phase"] or "",
            "iterations": row["iterations"],
            "records": row["records"],
            "result_nodes": row["result_nodes"],
            "end_nodes": "" if row["end_nodes"] is None else row["end_nodes"],
            "contexts": _contexts_cell(row["contexts"]),
            "warnings": len(warnings.splitlines()) if warnings else 0,
            "_warning_text": warnings,
        })
    return rows


def _contexts_cell(contexts: str | None) -> str:
    """``1`` for a clean search; the per-context record counts when several contexts wrote into it."""
    parts = [p for p in (contexts or "").split(",") if p]
    if len(parts) <= 1:
        return str(len(parts))
    return f"{len(parts)} ({', '.join(p if not p.startswith(':') else '(unlabelled)' + p for p in parts)})"


@click.command("info")
@click.argument("file")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Print every search's warnings in full.")
def info_command(file, engine, verbose):
    """One line per search in FILE: engine, position, phase, iterations, records, nodes, contexts, warnings."""
    rows = info_rows(file, engine)
    headers = ["engine", "position", "phase", "iterations", "records", "RESULT nodes", "END nodes", "contexts", "warnings"]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(*headers)
        for r in rows:
            table.add_row(*[escape(printable(str(r[c]))) for c in INFO_COLUMNS])
        Console().print(table)
    else:
        click.echo("\t".join(headers))
        for r in rows:
            click.echo("\t".join(printable(str(r[c])) for c in INFO_COLUMNS))
    for r in rows:
        if r["_warning_text"] and verbose:
            for w in r["_warning_text"].splitlines():
                click.echo(f"warning: {printable(str(r['position']))}: {printable(w)}", err=True)


COMMANDS = [parse_command, info_command]

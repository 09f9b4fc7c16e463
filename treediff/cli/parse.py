"""``treediff parse`` and ``treediff info``."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from treediff.model.errors import InputError
from treediff.model.text import printable
from treediff.store.magic import is_parquet_file
from treediff.cli.common import echo_warnings, importing, keep_complete_option
from treediff.parse.dialects import DIALECTS

#: Inputs smaller than this parse without a progress bar.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024

ENGINE_CHOICE = click.Choice(["auto", *DIALECTS], case_sensitive=False)


@contextlib.contextmanager
def byte_progress(paths: list[str], label: str):
    """A rich bytes/s progress bar on a terminal for large inputs; yields an ``advance(n)`` callback or None."""
    from treediff.parse.core import total_input_bytes

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
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Records Parquet file; the searches table goes beside it as OUT.searches.parquet. "
                   "- writes the records to stdout (not a terminal) and no searches table.")
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

    with importing():
        from treediff.parse.core import parse_to_parquet

    to_stdout = output == "-"
    if to_stdout and sys.stdout.isatty():
        raise InputError("-o -: the records Parquet file is binary; redirect stdout (> FILE.parquet, | tool) "
                         "or give -o FILE.parquet")
    # Both files written must be neither an input nor a symlink/FIFO/device: refused before any work.
    for target in (() if to_stdout else (output, searches_path_for(output))):
        check_output(target, [*paths, *([positions] if positions else [])])
    with contextlib.ExitStack() as stack:
        target = output
        if to_stdout:
            from treediff.parse.source import remove_scratch, scratch_dir

            # (a scratch directory is removed at exit whatever interrupts its making: TemporaryDirectory's is not)
            scratch = scratch_dir("parse")
            stack.callback(remove_scratch, scratch)
            target = str(scratch / "records.parquet")
        with byte_progress(paths, "parsing") as advance:
            result = parse_to_parquet(paths, target, engine=engine, positions=positions,
                                      strict=strict, all_contexts=all_contexts, progress=advance,
                                      keep_complete=keep_complete)
        if to_stdout:
            _copy_to_stdout(target)
    echo_warnings(result.warnings)
    searches = result.searches
    records = sum(searches.column("records").to_pylist())
    nodes = sum(searches.column("result_nodes").to_pylist())
    summary = f"{output}: {searches.num_rows} searches, {records:,} records, {nodes:,} RESULT nodes"
    if to_stdout:
        click.echo(f"(stdout): {summary[3:]}; the searches table is not written (-o FILE writes both)", err=True)
    else:
        click.echo(summary)


def _copy_to_stdout(path: str) -> None:
    """The finished records file's bytes to stdout (Parquet is written front to back: a pipe will do)."""
    import shutil

    sys.stdout.flush()
    with open(path, "rb") as src:
        shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
    sys.stdout.buffer.flush()


INFO_COLUMNS = ["engine", "position", "phase", "iterations", "records", "result_nodes", "end_nodes", "contexts", "warnings"]


def _searches_rows(path: str, engine: str) -> list[dict]:
    """The searches table of ``path`` as dicts: read as Arrow for a log or a parsed Parquet file (no pandas:
    `treediff info small.log` starts 0.2 s faster), through the Source of a dataset."""
    p = Path(path)
    if path == "-" or p.is_file():
        if path != "-" and is_parquet_file(p):
            import pyarrow.parquet as pq

            from treediff.model.schema import searches_path_for

            spath = Path(searches_path_for(str(p)))
            if not spath.exists():
                raise InputError(f"{path}: its searches table {spath.name} is missing "
                                 "(write both with `treediff parse`)")
            # ParquetFile.read, not pq.read_table: the latter goes through pyarrow.dataset, which imports pandas.
            return pq.ParquetFile(spath).read().to_pylist()
        with importing():
            from treediff.parse.core import parse_logs

        return parse_logs([path], engine=engine).searches.to_pylist()
    from treediff.parse.source import open_source  # datasets; and the errors for missing or odd paths

    # Integer columns with nulls come back from pandas as floats: convert_dtypes makes them Int64 again.
    searches = open_source(path, engine=engine).searches.convert_dtypes()
    return searches.astype(object).where(searches.notna(), None).to_dict("records")


def info_rows(path: str, engine: str) -> list[dict]:
    """One dict per search of ``path`` (a log, parsed Parquet or dataset), with the info columns."""
    rows = []
    for row in _searches_rows(path, engine):
        warnings = row.get("warnings") or ""
        rows.append({
            "engine": row["engine"],
            "position": row["position"],
            "phase": row.get("phase") or "",
            "iterations": row["iterations"],
            "records": row["records"],
            "result_nodes": row["result_nodes"],
            "end_nodes": "" if row.get("end_nodes") is None else row["end_nodes"],
            "contexts": _contexts_cell(row.get("contexts")),
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


def schema_lines(path: str, engine: str) -> list[str]:
    """``info --schema``: each table's format, version, producer and dialects, then its columns (name,
    Arrow type, unit, description), tab-separated; from the file's own metadata (a log: as parse writes it)."""
    from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA, column_docs, dialects_of, schema_info

    p = Path(path)
    tables: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []
    if path != "-" and p.is_dir():
        from treediff.store.layout import is_dataset_dir, manifest_tables, read_manifest

        if not is_dataset_dir(p):
            raise InputError(f"{path}: a directory but not a treediff batch dataset (no searches/ inside)")
        manifest = read_manifest(p) or {}
        head = {"treediff.format": str(manifest.get("format", "?")), "version": str(manifest.get("version", "?")),
                "treediff.version": str(manifest.get("treediff_version", "(not recorded: an older treediff)")),
                "treediff.dialects": ",".join(manifest.get("dialects") or
                                              [e.get("dialect") or "-" for e in manifest.get("engines", [])])}
        tables.append((f"{path} (batch.json)", head, []))
        for name, table in (manifest.get("tables") or manifest_tables()).items():
            tables.append((f"{path}/{name}", {"treediff.format": table["format"],
                                              "treediff.format_version": str(table["format_version"])},
                           table["columns"]))
    elif path != "-" and p.exists() and is_parquet_file(p):
        import pyarrow.parquet as pq

        from treediff.model.schema import searches_path_for

        for file in (str(p), searches_path_for(str(p))):
            if not Path(file).exists():
                continue
            try:
                footer = pq.read_metadata(file).metadata or {}
                schema = pq.read_schema(file)
            except Exception as exc:  # noqa: BLE001 - pyarrow's errors have no common base worth naming
                raise InputError(f"{file}: not a readable Parquet file ({exc})") from None
            meta = schema_info(schema)
            meta.update({k.decode(): v.decode() for k, v in footer.items() if k.startswith(b"treediff.")})
            tables.append((file, meta, column_docs(schema)))
    else:
        from treediff.parse.core import parse_logs

        result = parse_logs([path], engine=engine)
        dialects = ",".join(dialects_of(result.searches))
        for label, schema in (("records", RECORDS_SCHEMA), ("searches", SEARCHES_SCHEMA)):
            meta = {**schema_info(schema), "treediff.dialects": dialects}
            tables.append((f"{path} (a log: the {label} table as treediff parse writes it)", meta, column_docs(schema)))
    lines: list[str] = []
    for title, meta, columns in tables:
        if lines:
            lines.append("")
        if not meta:
            meta = {"treediff.format": "(none: not written by treediff)"}
        lines.append(f"{title}: " + ", ".join(f"{k.removeprefix('treediff.')}={v}" for k, v in meta.items()))
        if columns:
            lines.append("column\ttype\tunit\tdescription")
            lines += [f"{c['column']}\t{c['type']}\t{c['unit']}\t{c['description']}" for c in columns]
    return lines


@click.command("info")
@click.argument("file")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Print every search's warnings in full.")
@click.option("--schema", "show_schema", is_flag=True,
              help="Print the tables' format, version, producer and dialects and every column's type, unit and "
                   "description (from the file's Parquet metadata, or a dataset's batch.json) instead of the searches.")
def info_command(file, engine, verbose, show_schema):
    """One line per search in FILE: engine, position, phase, iterations, records, nodes, contexts, warnings."""
    if show_schema:
        for line in schema_lines(file, engine):
            click.echo(line)
        return
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

"""``treediff report`` and ``treediff compare``: thin shells over treediff.report and treediff.render."""
from __future__ import annotations

from pathlib import Path

import click

from treediff.cli.common import echo_warnings
from treediff.render import FORMATS, emit

_PARSE_HELP = "Dialect for logs whose header does not say (default: auto)."

_in_memory_option = click.option(
    "--in-memory", is_flag=True,
    help="Read dataset directories in one batch instead of a few searches at a time (same numbers, more memory).")


def _open(inputs, engine: str, positions: str | None):
    """The inputs as one Source (logs are parsed; their warnings are echoed)."""
    from treediff.parse.source import open_sources

    options: dict = {"engine": engine}
    if positions:
        options["positions"] = positions
    source = open_sources(list(inputs), **options)
    echo_warnings(source.warnings)
    return source


def _batch_target(in_memory: bool) -> int:
    from treediff.store.source import BATCH_RECORDS

    return 2**62 if in_memory else BATCH_RECORDS


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--table", "tables", default="all", show_default=True,
              help="Comma-separated: nodes,acts,lmr,ebf,skips,scope or all.")
@click.option("--by", default="engine", show_default=True,
              help="Comma-separated grouping: engine,source,phase,position,iter (engine is always included).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE (atomically) instead of stdout.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False),
              help="Also write PNG charts (acts, EBF by iteration, LMR by phase) into DIR.")
@click.option("--engine", default="auto", show_default=True, help=_PARSE_HELP)
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
@_in_memory_option
def report(inputs, tables, by, fmt, output, plot_dir, engine, positions, in_memory):
    """Act breakdowns, LMR, EBF, skips, prune scope and nodes for logs, Parquet files or datasets.

    Definitions of every table: docs/REPORTS.md.  Dataset directories are
    read partition by partition, so memory does not grow with the dataset
    (docs/SCALING.md).
    """
    from treediff.report.core import build_report, parse_tables
    from treediff.report.grouping import parse_by

    names = parse_tables(tables)
    keys = parse_by(by)
    source = _open(inputs, engine, positions)
    target = _batch_target(in_memory)
    result = build_report(source, names, keys, target)
    emit(result.sections, fmt, output)
    if plot_dir:
        from treediff.render.plots import write_plots

        base = build_report(source, ("acts", "ebf"), ("engine",), target)
        by_phase = build_report(source, ("lmr",), ("engine", "phase"), target)
        files = write_plots(base["acts"], base["ebf_iter"], by_phase["lmr"], plot_dir)
        click.echo("wrote " + ", ".join(str(f) for f in files), err=True)


@click.command("compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE (atomically) instead of stdout.")
@click.option("--allow-different-positions", is_flag=True,
              help="Compare even if A and B did not search the same positions.")
@click.option("--engine-a", help="The engine to take from A when it holds several.")
@click.option("--engine-b", help="The engine to take from B when it holds several.")
@click.option("--label-a", help="Name shown for A (default: its engine, and file name if both engines agree).")
@click.option("--label-b", help="Name shown for B.")
@click.option("--engine", default="auto", show_default=True, help=_PARSE_HELP)
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0),
              help="How many of the costliest divergent subtrees to show (aligned per position); 0 skips aligning.")
@_in_memory_option
def compare(a, b, fmt, output, allow_different_positions, engine_a, engine_b, label_a, label_b, engine, positions, top,
            in_memory):
    """Why is A's tree bigger than B's? Nodes and ratio, acts, LMR, EBF and skips side by side."""
    from treediff.align.summaries import divergences
    from treediff.report.compare import compare_sources, select_engine

    source_a = _open([a], engine, positions)
    source_b = _open([b], engine, positions)
    la = label_a or _default_label(source_a.searches, engine_a, a, source_b.searches, engine_b)
    lb = label_b or _default_label(source_b.searches, engine_b, b, source_a.searches, engine_a)
    result = compare_sources(source_a, source_b, la, lb, engine_a, engine_b, allow_different_positions)
    notes = result.notes()
    if top > 0:
        found = divergences(select_engine(source_a, engine_a, "A"), select_engine(source_b, engine_b, "B"), n=top)
        if not found.empty:
            result.divergences, result.divergence_total = found.rows, found.total
            result.divergence_by_kind, result.divergence_by_ply = found.by_kind, found.by_ply
            result.divergence_kinds = found.kinds.reset_index()
        notes += found.notes
    _emit_comparison(result, notes, fmt, output)


def _emit_comparison(result, notes: list[str], fmt: str, output: str | None) -> None:
    extra = {"label_a": result.label_a, "label_b": result.label_b,
             "only_in_a": list(result.only_a), "only_in_b": list(result.only_b)}
    emit(result.sections(), fmt, output, extra_json=extra, notes=notes)


def _default_label(searches, chosen: str | None, path: str, other_searches, other_chosen: str | None) -> str:
    """A side's name: its engine(s), plus the file name when both sides would otherwise look the same."""
    mine = chosen or ",".join(dict.fromkeys(searches["engine"].astype(str)))
    theirs = other_chosen or ",".join(dict.fromkeys(other_searches["engine"].astype(str)))
    return f"{mine} ({Path(path).name})" if mine == theirs else mine


COMMANDS = [report, compare]

"""``treediff report`` and ``treediff compare``: thin shells over treediff.report and treediff.render."""
from __future__ import annotations

from pathlib import Path

import click

from treediff.cli.common import echo_warnings
from treediff.render import FORMATS, emit

_PARSE_HELP = "Dialect for logs whose header does not say (default: auto)."

from treediff.align import LOAD_COLUMNS as _ALIGN_COLUMNS
from treediff.align.summaries import divergences_by_position

#: Extra records columns ``compare`` loads for filling ``Comparison.divergences`` (the aligner's needs).
COMPARE_EXTRA_COLUMNS: tuple[str, ...] = _ALIGN_COLUMNS


_in_memory_option = click.option(
    "--in-memory", is_flag=True,
    help="Load dataset directories whole instead of partition by partition (same numbers, more memory).")


def _partitioned(inputs, in_memory: bool) -> bool:
    from treediff.report.partitioned import all_datasets

    return not in_memory and all_datasets(inputs)


def _parse_options(engine: str, positions: str | None) -> dict:
    options: dict = {"engine": engine}
    if positions:
        options["positions"] = positions
    return options


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
    from treediff.report.core import build_report, columns_for, parse_tables
    from treediff.report.grouping import parse_by
    from treediff.parse.load import load

    names = parse_tables(tables)
    keys = parse_by(by)
    if _partitioned(inputs, in_memory):
        from treediff.report.partitioned import DatasetSource, build_report_partitioned

        source = DatasetSource.open(inputs)

        def make(t, k):
            return build_report_partitioned(source, t, k)
    else:
        wanted = set(names) | ({"acts", "lmr", "ebf"} if plot_dir else set())
        cols = columns_for(tuple(wanted), keys)
        loaded = load(list(inputs), columns=cols, **_parse_options(engine, positions))
        echo_warnings(loaded.warnings)

        def make(t, k):
            return build_report(loaded.records, loaded.searches, t, k)
    result = make(names, keys)
    emit(result.sections, fmt, output)
    if plot_dir:
        from treediff.render.plots import write_plots

        base = make(("acts", "ebf"), ("engine",))
        by_phase = make(("lmr",), ("engine", "phase"))
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
    if _partitioned([a, b], in_memory):
        _compare_datasets(a, b, fmt, output, allow_different_positions, engine_a, engine_b, label_a, label_b, top)
        return
    from treediff.parse.load import load
    from treediff.report.compare import compare_loaded
    from treediff.report.core import columns_for

    cols = list(dict.fromkeys([*columns_for(("acts", "lmr", "ebf", "skips"), ("engine",)), *COMPARE_EXTRA_COLUMNS]))
    options = _parse_options(engine, positions)
    loaded_a = load([a], columns=cols, **options)
    loaded_b = load([b], columns=cols, **options)
    echo_warnings(loaded_a.warnings + loaded_b.warnings)

    la = label_a or _default_label(loaded_a.searches, engine_a, a, loaded_b.searches, engine_b)
    lb = label_b or _default_label(loaded_b.searches, engine_b, b, loaded_a.searches, engine_a)
    result = compare_loaded(loaded_a, loaded_b, la, lb, engine_a, engine_b, allow_different_positions)
    notes = result.notes()
    if top > 0:
        shared = sorted(set(loaded_a.searches["position"].astype(str)) & set(loaded_b.searches["position"].astype(str)))
        divergences, kinds, align_notes = divergences_by_position(
            _side(loaded_a.records, engine_a), _side(loaded_b.records, engine_b), shared, n=top)
        notes += _attach_divergences(result, divergences, kinds, align_notes)
    _emit_comparison(result, notes, fmt, output)


def _attach_divergences(result, divergences, kinds, align_notes: list[str]) -> list[str]:
    """Put the aligner's tables into the comparison (when any position aligned); returns its notes."""
    if len(divergences):
        result.divergences, result.divergence_kinds = divergences, kinds.reset_index()
    return align_notes


def _emit_comparison(result, notes: list[str], fmt: str, output: str | None) -> None:
    extra = {"label_a": result.label_a, "label_b": result.label_b,
             "only_in_a": list(result.only_a), "only_in_b": list(result.only_b)}
    emit(result.sections(), fmt, output, extra_json=extra, notes=notes)


def _default_label(searches, chosen: str | None, path: str, other_searches, other_chosen: str | None) -> str:
    """A side's name: its engine(s), plus the file name when both sides would otherwise look the same."""
    mine = chosen or ",".join(dict.fromkeys(searches["engine"].astype(str)))
    theirs = other_chosen or ",".join(dict.fromkeys(other_searches["engine"].astype(str)))
    return f"{mine} ({Path(path).name})" if mine == theirs else mine


def _compare_datasets(a, b, fmt, output, allow_different_positions, engine_a, engine_b, label_a, label_b, top):
    """``compare`` of two dataset directories, partition by partition (the same numbers as in memory)."""
    from treediff.report.compare import compare_sources, select_source_engine
    from treediff.report.partitioned import DatasetSource

    source_a, source_b = DatasetSource.open([a]), DatasetSource.open([b])

    la = label_a or _default_label(source_a.searches, engine_a, a, source_b.searches, engine_b)
    lb = label_b or _default_label(source_b.searches, engine_b, b, source_a.searches, engine_a)
    result = compare_sources(source_a, source_b, la, lb, engine_a, engine_b, allow_different_positions)
    notes = result.notes()
    if top > 0:
        side_a = select_source_engine(source_a, engine_a, "A")
        side_b = select_source_engine(source_b, engine_b, "B")
        shared = sorted(set(source_a.searches["position"].astype(str)) & set(source_b.searches["position"].astype(str)))
        divergences, kinds, align_notes = _divergences_per_partition(side_a, side_b, shared, top)
        notes += _attach_divergences(result, divergences, kinds, align_notes)
    _emit_comparison(result, notes, fmt, output)


def _divergences_per_partition(source_a, source_b, shared: list[str], n: int):
    """:func:`divergences_by_position` reading only each position's partitions, one position at a time.

    Combined exactly as that function combines positions: the tops in
    position order, then the ``n`` costliest (stable), and the kind tables summed.
    """
    import numpy as np
    import pandas as pd

    tops, kinds, notes = [], None, []
    for position in shared:
        ra = source_a.read(source_a.rows_of_position(position), _ALIGN_COLUMNS, with_engine=True)
        rb = source_b.read(source_b.rows_of_position(position), _ALIGN_COLUMNS, with_engine=True)
        top, table, more = divergences_by_position(ra, rb, [position], n=n)
        notes += more
        if len(top):
            tops.append(top)
            kinds = table if kinds is None else kinds.add(table, fill_value=0)
    if not tops:
        return pd.DataFrame(), pd.DataFrame(), notes
    top_all = pd.concat(tops, ignore_index=True)
    order = np.argsort(-top_all["cost"].to_numpy(), kind="stable")[:n]
    return top_all.iloc[order].reset_index(drop=True), kinds.fillna(0).astype("int64"), notes


def _side(records, engine: str | None):
    """One side's records, restricted to ``engine`` when the side holds several."""
    if engine:
        return records[records["engine"].astype(str) == engine]
    return records


COMMANDS = [report, compare]

"""``treediff report`` and ``treediff compare``: thin shells over treediff.report and treediff.render."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable

import click

from treediff.cli.common import echo_warnings, format_from_output, importing, keep_complete_option
from treediff.cli.opening import ForkedParse, Opening, raised
from treediff.cli.sides import _memory_limit, memory_limit_option
from treediff.render import FORMATS, emit

#: --format choices of report and compare: the renderers' formats and the one-file web page (cli/html_output.py).
_FORMAT_CHOICES = (*FORMATS, "html")

_PARSE_HELP = "Dialect for logs whose header does not say (default: auto)."

_in_memory_option = click.option(
    "--in-memory", is_flag=True,
    help="Read dataset directories in one batch instead of a few searches at a time (same numbers, more memory).")


def _open_each(inputs, engine: str, positions: str | None, keep_complete: bool = False,
               fork: bool = False, meanwhile: Callable[[bool], object] | None = None) -> list:
    """Each input as its own Source, the logs parsed at the same time (:func:`treediff.parse.source.open_each`);
    warnings echoed in input order, as opening them one by one would.

    ``fork`` (``compare``): when the first input is a log, it is parsed in a forked child while this process
    parses the others (:class:`ForkedParse`): two parses on threads of one process share its GIL, in two
    processes they do not.  From ``store.budget.FORK_MIN_LOG_BYTES`` of logs; below, when every input is a
    log, one child parses them all (:class:`Opening`) while this process imports.

    ``meanwhile(parses_here)``: called once before this process parses, after the child started when there is
    one (compare imports its other modules there: ~0.1 s the child's parse then overlaps, where it used to come
    before the fork); ``parses_here``: whether this process parses a log itself (else it needs no parser)."""
    from treediff.parse.source import is_plain_log, open_each
    from treediff.render.progress import parsing
    from treediff.store import budget

    options: dict = {"engine": engine, "keep_complete": keep_complete}
    if positions:
        options["positions"] = positions
    inputs = list(inputs)
    logs = [path for path in inputs if is_plain_log(path)] if fork and len(inputs) >= 2 else []
    small = sum(os.path.getsize(path) for path in logs) < budget.FORK_MIN_LOG_BYTES
    if logs and small and len(logs) == len(inputs):
        # Small logs: one child parses them all from now on, while this process imports what compare needs
        # after the parse (meanwhile), the parser and polars left to the child (docs/PERFORMANCE.md,
        # fourteenth session: the two processes' imports overlap).
        with Opening(inputs, engine, positions, keep_complete, per_input=True) as opening:
            if meanwhile is not None:
                meanwhile(not opening.forked)
            return opening.each()
    fork = bool(logs) and is_plain_log(inputs[0]) and not small
    sources = []
    with contextlib.ExitStack() as steps:  # a byte count per input on a terminal only (ticks None otherwise)
        ticks = [steps.enter_context(parsing([path])) for path in inputs]
        first = steps.enter_context(ForkedParse.start(inputs[:1], ticks[:1], options, imports_first=True)
                                    or contextlib.nullcontext()) if fork else None
        if meanwhile is not None:
            meanwhile(any(is_plain_log(path) for path in inputs[1 if first is not None else 0:]))
        if first is None:
            for source in open_each(inputs, progresses=ticks, **options):
                echo_warnings(source.warnings)
                sources.append(source)
            return sources

        def shown_too(tick):
            def progress(n: int) -> None:  # (the child's progress shown as this process's parse goes)
                if tick is not None:
                    tick(n)
                first.show_progress()
            return progress

        rest: list = []
        failed: BaseException | None = None
        try:
            for source in open_each(inputs[1:], progresses=[shown_too(t) for t in ticks[1:]], **options):
                rest.append(source)
        except Exception as error:  # (raised after the first input's answer: errors and warnings in input order)
            failed = error
        sources.extend(raised(entry) for entry in first.sources())  # (the first log's error first)
        sources.extend(rest)
        for source in sources:
            echo_warnings(source.warnings)
        if failed is not None:
            raise failed
    return sources


def _check_output(output: str | None, inputs: list[str], fmt: str = "table") -> None:
    """Refuse, before reading anything, an ``-o`` that is one of the inputs or not a regular file
    (``--format csv -o DIR`` names a directory: its files are checked as they are written)."""
    from treediff.render.output import is_directory_output

    if output and not (fmt == "csv" and is_directory_output(output)):
        from treediff.store.files import check_output

        check_output(output, inputs)


_width_option = click.option(
    "--width", type=click.IntRange(min=20), metavar="N",
    help="Fit the table format in N columns (default: the terminal's, COLUMNS, else 100); "
         "wide tables are transposed or split into column groups.")


def _batch_target(in_memory: bool) -> int:
    from treediff.store.source import BATCH_RECORDS

    return 2**62 if in_memory else BATCH_RECORDS


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--table", "tables", default="all", show_default=True,
              help="Comma-separated: nodes,acts,lmr,ebf,skips,scope,cutoffs,fh,depths,why,residual or all.")
@click.option("--by", default="engine", show_default=True,
              help="Comma-separated grouping: engine,source,phase,position,iter,ply,depth,nt (engine is always "
                   "included; ply and depth: the deciding node's ply and remaining depth, per record; nt: the "
                   "node type MOVE records carry).")
@click.option("--format", "fmt", type=click.Choice(_FORMAT_CHOICES), default=None,
              help="Output format; default: from -o's extension (.csv .json .jsonl .md .html .txt), else table.")
@click.option("-o", "--output", type=click.Path(), metavar="FILE|DIR",
              help="Write to FILE (atomically) instead of stdout; with --format csv a DIR gets one CSV per table.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False),
              help="Also write PNG charts (acts, EBF by iteration, LMR by phase, cutoff share by mn, fh%% by "
                   "depth, residual depth by iteration) into DIR.")
@click.option("--engine", default="auto", show_default=True, help=_PARSE_HELP)
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
@click.option("--under", metavar="PATH",
              help="Count only records at or below PATH (moves separated by /, UCI or SAN; e.g. e2e4/e7e5).")
@click.option("--allow-different-depths", is_flag=True,
              help="Give the nodes table's ratio also between groups searched to different depths.")
@click.option("--bucket", default="kind,depth,mn", show_default=True,
              help="The fh table's buckets, comma-separated: kind,act,depth,mn,ply,see,hist,nt.")
@_width_option
@_in_memory_option
@click.option("--memory-limit", "memory_limit", default="2GB", show_default=True, metavar="SIZE",
              callback=_memory_limit,
              help="Memory the report may hold at once (e.g. 2GB, 512MB): records are read in batches of about "
                   "an eighth of what fits (600 bytes a record), whole searches at a time; --in-memory reads "
                   "everything at once instead.")
@keep_complete_option
def report(inputs, tables, by, fmt, output, plot_dir, engine, positions, under, allow_different_depths, width,
           in_memory, keep_complete, bucket="kind,depth,mn", memory_limit=None):
    """Act breakdowns, LMR, EBF, skips, prune scope and nodes for logs, Parquet files or datasets.

    Definitions of every table: `treediff docs reports`.  Dataset directories
    are read partition by partition, so memory does not grow with the dataset
    (`treediff docs scaling`).
    """
    from treediff.store.budget import MemoryBudget
    from treediff.store.heap import keep_freed_heap, kept_within

    budget = memory_limit or MemoryBudget()
    keep_freed_heap(kept_within(budget.limit))  # (numpy temporaries reuse freed memory; the forks inherit it)
    with Opening(inputs, engine, positions, keep_complete) as opening:  # (the logs' parse starts now)
        with importing():
            from treediff.report.core import ReportOptions, build_report, parse_tables
            from treediff.report.filters import under_view
            from treediff.report.grouping import parse_by
            from treediff.run.forked import in_background

        names = parse_tables(tables)
        keys = parse_by(by)
        fmt = format_from_output(fmt, output, choices=_FORMAT_CHOICES)
        _check_output(output, [*inputs, *([positions] if positions else [])], fmt)
        source = opening.source()
    target = _batch_target(True) if in_memory else budget.report_batch_records
    keep = None
    notes: list[str] = []
    if under:
        source, keep = under_view(source, under, target)
        notes.append(f"note: records at or below {keep.path or under} only ({len(source.searches)} searches)")
    from treediff.render.progress import paused, step
    from treediff.report.tables.fh import parse_buckets

    options = ReportOptions(allow_different_depths=allow_different_depths, fh_buckets=parse_buckets(bucket))
    # The later half of the searches is folded in a forked child (treediff.run.forked; the tables use polars:
    # only while polars has not started its threads here, e.g. for Parquet files and datasets).  The display's
    # threads are stopped while it forks (it forks only a process running no other thread).
    def background(work):
        with paused():
            return in_background(work, uses_polars=True, name="process counting the later searches")

    with step("counting the tables"):
        result = build_report(source, names, keys, target, options=options, keep=keep, background=background)
    if fmt == "html":
        from treediff.cli.html_output import report_page

        with step("writing the HTML page"):
            report_page(source, result.sections, notes, inputs, target, output)
    else:
        emit(result.sections, fmt, output, notes=notes, width=width)
    if plot_dir:
        with step("drawing the charts"):
            _report_plots(source, keys, target, plot_dir)


def _report_plots(source, keys, target: int, plot_dir: str) -> None:
    """``report --plot DIR``: the report's charts and the analytics charts."""
    from treediff.report.core import ReportOptions, build_report

    from treediff.render.plots import write_plots
    from treediff.report.grouping import SEARCH_KEYS
    from treediff.report.plotdata import engine_ebf_cumulative

    plot_keys = tuple(k for k in keys if k in SEARCH_KEYS)  # --by's search-level keys (acts, EBF)
    base = build_report(source, ("acts", "ebf"), plot_keys, target)
    by_phase = build_report(source, ("lmr",), ("engine", "phase"), target)
    engines = [str(e) for e in dict.fromkeys(source.searches["engine"].astype("object"))]
    files = write_plots(base["acts"], base["ebf_iter"], by_phase["lmr"], plot_dir, ebf=base["ebf"],
                        cumulative=engine_ebf_cumulative(source.searches, plot_keys), keys=plot_keys,
                        engines=engines)
    from treediff.render.analytics_plots import write_analytics_plots

    quality = build_report(source, ("cutoffs", "fh", "residual"), ("engine",), target,
                           options=ReportOptions(fh_buckets=("depth",)))
    files += write_analytics_plots(quality["cutoff_mn"], quality["fh"], quality["residual_iter"], plot_dir)
    click.echo("wrote " + ", ".join(str(f) for f in files), err=True)


@click.command("compare")
@click.argument("inputs", nargs=-1, required=True, metavar="A B [C...]")
@click.option("--format", "fmt", type=click.Choice(_FORMAT_CHOICES), default=None,
              help="Output format; default: from -o's extension (.csv .json .jsonl .md .html .txt), else table.")
@click.option("-o", "--output", type=click.Path(), metavar="FILE|DIR",
              help="Write to FILE (atomically) instead of stdout; with --format csv a DIR gets one CSV per table.")
@click.option("--allow-different-positions", is_flag=True,
              help="Compare even if the inputs did not search the same positions.")
@click.option("--depth", type=click.IntRange(min=1), metavar="N",
              help="Compare at iteration N (default: per position the deepest one every input completed).")
@click.option("--engine-a", help="The engine to take from A when it holds several.")
@click.option("--engine-b", help="The engine to take from B when it holds several.")
@click.option("--label-a", help="Name shown for A (default: its engine, and file name if both engines agree).")
@click.option("--label-b", help="Name shown for B.")
@click.option("--engine", default="auto", show_default=True, help=_PARSE_HELP)
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0),
              help="How many of the costliest divergent subtrees to show (aligned per position); 0 skips aligning.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False),
              help="Also write PNG charts (node ratio per position, acts side by side aligned by kind, LMR by "
                   "phase) into DIR.")
@click.option("--fail-if", "fail_if", metavar="EXPR",
              help="Exit 1 when EXPR holds over the summary figures, e.g. 'ratio > 1.05' (a regression gate; "
                   "names: treediff docs reports, 'compare --fail-if').")
@_width_option
@_in_memory_option
@memory_limit_option
@keep_complete_option
def compare(inputs, fmt, output, allow_different_positions, depth, engine_a, engine_b, label_a, label_b, engine,
            positions, top, width, in_memory, keep_complete, fail_if=None, plot_dir=None, memory_limit=None):
    """Why is A's tree bigger than B's? Nodes and ratio at a common depth, acts, LMR, EBF and skips side by side.

    With three or more inputs the first is the reference and each other is shown side by side with it.
    """
    if len(inputs) < 2:
        raise click.UsageError("compare needs at least two inputs: A B [C...]")
    a, b, *rest = inputs
    gate = None
    if fail_if is not None:
        from treediff.report.gate import parse_gate

        gate = parse_gate(fail_if, len(inputs))  # a bad expression fails before anything is read
    fmt = format_from_output(fmt, output, choices=_FORMAT_CHOICES)
    _check_output(output, [*inputs, *([positions] if positions else [])], fmt)
    source_a, source_b, *others = _open_each(inputs, engine, positions, keep_complete, fork=True,
                                             meanwhile=_compare_modules)
    from treediff.align.summaries import PositionAligner, divergences
    from treediff.report.compare import compare_sources, select_engine
    from treediff.run.forked import fork_allowed, in_background

    engines = [_engines(source_a.searches, engine_a), _engines(source_b.searches, engine_b),
               *(_engines(o.searches, None) for o in others)]
    names = [_default_label(engines, i, path) for i, path in enumerate(inputs)]
    la, lb = label_a or names[0], label_b or names[1]
    from treediff.render.progress import paused, step

    aligned_top = 0 if rest else top  # divergences are aligned for two inputs only
    # The divergences run in a forked child while this process counts the tables (treediff.run.forked: the
    # two passes need nothing from each other and each keeps about one core busy); the divergences get half
    # the budget.  Not when a position pair needs more than half to be aligned: then one after the other, as
    # before.  The tables read batches of the whole limit's size either way: halved, their fixed cost (~17
    # ms a batch) cost compare 4-8% of its CPU, for ~80 MB less at 20M + 20M (docs/PERFORMANCE.md, ninth).
    # (The progress display's threads are stopped while it forks: it forks only a process running no other.)
    with paused():
        forking = aligned_top > 0 and _divergences_fit(source_a, source_b, engine_a, engine_b,
                                                       memory_limit) and fork_allowed()
        budget = memory_limit.share(2) if forking else memory_limit

        def align_divergences(progress, helping):
            return divergences(select_engine(source_a, engine_a, "A"), select_engine(source_b, engine_b, "B"),
                               n=aligned_top, iteration=depth, progress=progress, budget=budget, paths=(a, b),
                               helping=helping)

        # Once its tables are done, this process aligns positions the child hands it (Background.help).
        aligning = in_background(align_divergences, fork=forking, name="process aligning the divergences",
                                 helping=True)
    found = None
    with aligning:
        with step("comparing"):
            result = compare_sources(source_a, source_b, la, lb, engine_a, engine_b, allow_different_positions,
                                     depth, more=list(zip(others, names[2:])),
                                     target=_batch_target(True) if in_memory else memory_limit.batch_records,
                                     lmr_by_phase=bool(plot_dir))
        if aligned_top > 0:
            with step("aligning and attributing", unit="positions") as tick:
                aligning.help(PositionAligner(aligned_top, depth), tick.set if tick is not None else None)
                found = aligning.result(tick.set if tick is not None else None)
            if aligning.stalled:  # (a bug: the divergences must not use what a fork breaks, e.g. polars)
                click.echo("treediff: warning: the process aligning the divergences was stuck; they were "
                           "aligned again in this process", err=True)
    notes = result.notes()
    if rest and top > 0:
        notes.append("note: divergences are aligned for two inputs; run compare A C to align A with C")
        top = 0
    if found is not None:
        if not found.empty:
            result.divergences, result.divergence_total = found.rows, found.total
            result.divergence_by_kind, result.divergence_by_ply = found.by_kind, found.by_ply
            result.divergence_kinds = found.kinds.reset_index()
        notes += found.notes
    if fmt == "html":
        from treediff.cli.html_output import compare_page

        aligned = (select_engine(source_a, engine_a, "A"), select_engine(source_b, engine_b, "B")) if top else None
        sides = [(source_a, la), (source_b, lb), *zip(others, names[2:])]
        with step("writing the HTML page"):
            compare_page(result, notes, sides, aligned, depth, _batch_target(in_memory), output)
    else:
        _emit_comparison(result, notes, fmt, output, width)
    if plot_dir:
        from treediff.render.plots import write_compare_plots

        assert result.lmr_phase is not None
        with step("drawing the charts"):
            files = write_compare_plots(result.nodes, result.acts, result.lmr_phase, list(result.all_labels),
                                        plot_dir)
        click.echo("wrote " + ", ".join(str(f) for f in files), err=True)
    if gate is not None:
        from treediff.report.gate import evaluate_gate

        verdict = evaluate_gate(gate, fail_if, result)
        click.echo(f"compare: --fail-if {'holds' if verdict.failed else 'does not hold'}: {verdict.message}", err=True)
        if verdict.failed:
            raise SystemExit(1)


def _compare_modules(parses_here: bool = True) -> None:
    """Import what compare uses after its parse (the aligner, the tables, the renderer: ~0.1 s) while the forked
    child parses the first log: imported before the fork, they delayed the child's start by as much.  The
    parser's modules too when this process parses a log (``parses_here``); else polars is never imported here
    (a child parses every log, or the inputs are Parquet files)."""
    with importing():
        import treediff.align.summaries  # noqa: F401
        import treediff.render.text  # noqa: F401
        import treediff.report.compare  # noqa: F401

        if parses_here:
            import treediff.parse.pipeline  # noqa: F401


def _divergences_fit(source_a, source_b, engine_a, engine_b, limit) -> bool:
    """Whether compare's divergences may run in a forked child beside the tables, each with half of ``limit``
    (a ``MemoryBudget``): every position pair compare aligns fits half, and both inputs together hold at least
    ``store.budget.FORK_MIN_RECORDS`` records and at most ``limit.fork_records`` (what two processes were
    measured to hold within the limit).  The searches tables count the records; when they do not, False."""
    from treediff.align.summaries import largest_pair
    from treediff.model.errors import TreediffError
    from treediff.report.compare import select_engine
    from treediff.store import budget

    try:
        side_a, side_b = select_engine(source_a, engine_a, "A"), select_engine(source_b, engine_b, "B")
        largest = largest_pair(side_a, side_b)
    except TreediffError:  # (an engine not found: the tables say so first, as before)
        return False
    if largest is None or largest > limit.share(2).records:
        return False
    total = sum(int(side.searches["records"].fillna(0).sum()) for side in (side_a, side_b))
    return budget.FORK_MIN_RECORDS <= total <= limit.fork_records


def _emit_comparison(result, notes: list[str], fmt: str, output: str | None, width: int | None = None) -> None:
    labels = list(result.all_labels)
    extra: dict = {"label_a": result.label_a, "label_b": result.label_b,
                   "only_in_a": list(result.only_a), "only_in_b": list(result.only_b)}
    if len(labels) > 2:
        extra["labels"] = labels
        extra["missing_in"] = {chr(ord("a") + i): list(m) for i, m in enumerate(result.missing)}
    emit(result.sections(), fmt, output, extra_json=extra, notes=notes, width=width)


def _engines(searches, chosen: str | None) -> str:
    return chosen or ",".join(dict.fromkeys(searches["engine"].astype(str)))


def _default_label(engines: list[str], i: int, path: str) -> str:
    """A side's name: its engine(s), plus the file name when another side would otherwise look the same."""
    mine = engines[i]
    same = any(other == mine for j, other in enumerate(engines) if j != i)
    return f"{mine} ({Path(path).name})" if same else mine


COMMANDS = [report, compare]

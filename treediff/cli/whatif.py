"""``treediff whatif``: the fail-high rate of the tries a pruning or reduction rule would newly admit."""
from __future__ import annotations

import click

from treediff.render import FORMATS, emit


@click.command("whatif")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--rule", required=True, metavar="EXPR",
              help='Boolean expression over move-try columns (kind, act, depth, new_depth, reduction, mn, ply, '
                   'see, hist, nt, phase), e.g. \'kind == "SEARCH" and mn >= 6 and depth <= 4 and hist < 0\'.')
@click.option("--as", "as_", type=click.Choice(("prune", "reduce")), default="prune", show_default=True,
              help="prune: the rule may change tries first searched (SEARCH, REDUCE, EXTEND); "
                   "reduce: tries searched unreduced (SEARCH, EXTEND).")
@click.option("--by", default="engine", show_default=True,
              help="Comma-separated grouping: engine,source,phase,position,iter,ply,depth,nt.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0),
              help="How many silent misses (admitted tries that failed high) to list, largest subtrees first.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format; default: from -o's extension (.csv .json .jsonl .md .txt), else table.")
@click.option("-o", "--output", type=click.Path(), metavar="FILE|DIR",
              help="Write to FILE (atomically) instead of stdout; with --format csv a DIR gets one CSV per table.")
@click.option("--engine", default="auto", show_default=True, help="Dialect for logs whose header does not say.")
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
@click.option("--width", type=click.IntRange(min=20), metavar="N", help="Fit the table format in N columns.")
def whatif(inputs, rule, as_, by, top, fmt, output, engine, positions, width):
    """Of the tries RULE newly admits for pruning or reduction, how many failed high (`treediff docs reports`, whatif)."""
    from treediff.cli.common import format_from_output, importing
    from treediff.cli.opening import Opening
    from treediff.cli.report import _check_output
    from treediff.store.heap import keep_freed_heap

    keep_freed_heap()  # (numpy temporaries reuse freed memory: store/heap.py; the fork below inherits it)
    # The logs' parse starts in a forked child at once (cli/opening.py: Opening): it imports the parser while
    # this process imports pandas, polars and the tables.
    with Opening(inputs, engine, positions) as opening:
        with importing():
            from treediff.report.whatif import parse_rule, whatif as run_whatif

        parse_rule(rule)  # refuse a bad rule before reading anything
        fmt = format_from_output(fmt, output, choices=FORMATS)
        _check_output(output, [*inputs, *([positions] if positions else [])], fmt)  # never over an input
        source = opening.source()
    emit(run_whatif(source, rule, as_, by, top), fmt, output, width=width)


COMMANDS = [whatif]

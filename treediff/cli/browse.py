"""``treediff browse A B``: the aligned tree of one position in a terminal browser (textual)."""
from __future__ import annotations

from pathlib import Path

import click

from treediff.model.errors import TreediffError

#: --notation choices, as diff's.
NOTATIONS = ["own", "uci", "san"]
_MISSING_TEXTUAL = ("treediff browse needs the textual package, which is not installed: "
                    "pip install 'treediff[browse]' (or pip install textual)")


def build_model(a: str, b: str, position: str | None = None, iteration: int | None = None,
                under: str | None = None, notation: str = "own", engine_a: str | None = None,
                engine_b: str | None = None, dialect: str = "auto", positions: str | None = None):
    """The browser's model and title line for A and B: the alignment :func:`treediff.align.align` makes.

    The searches are paired by position as ``treediff diff`` pairs them (``position``: an id, needed when
    the inputs share several positions; :func:`treediff.align.select.choose_pair`) and only those two are
    read; the iteration is the aligner's choice (``iteration``: default the deepest both completed);
    ``under`` is a typed path (UCI or SAN).  Returns ``(BrowseModel, title)``; raises InputError on bad input.
    """
    from treediff.align import align
    from treediff.align.view import normalize_path
    from treediff.cli.sides import choose_pair, fen_of, open_sides, read_side
    from treediff.render.browse_model import BrowseModel, log_lines_for
    from treediff.render.diffview import side_notation

    source_a, source_b = open_sides(a, b, engine_a, engine_b, dialect=dialect, positions=positions)
    # The one search per side, paired by position as diff pairs them; only those searches are read.
    source_a, source_b, _ = choose_pair(source_a, source_b, position, (a, b))
    records_a, records_b = read_side(source_a, a, "A"), read_side(source_b, b, "B")
    alignment = align(records_a, records_b, iter=iteration)
    fen_a, fen_b = fen_of(records_a, alignment.a.search), fen_of(records_b, alignment.b.search)
    choices = {name: (side_notation(name, alignment.a.engine, fen_a),
                      side_notation(name, alignment.b.engine, fen_b or fen_a)) for name in NOTATIONS}
    scope = normalize_path(under, fen_a) if under is not None else None
    model = BrowseModel(alignment, choices[notation], under=scope, records_a=records_a, records_b=records_b,
                        logs=(log_lines_for(a), log_lines_for(b)), choices=choices,
                        notation_name=notation)
    total_a, total_b = int(model.nodes_a[model.root]), int(model.nodes_b[model.root])
    sides = [f"{tag}: {choice.engine or '?'} ({Path(path).name}) iter {choice.iter}"
             for tag, choice, path in (("A", alignment.a, a), ("B", alignment.b, b))]
    where = f"  under {scope}" if scope else ""
    title = (f"{sides[0]}  │  {sides[1]}  │  position {alignment.position}{where}\n"
             f"nodes A {total_a:,}, B {total_b:,} (Δ {total_a - total_b:+,}); {len(model):,} rows, "
             f"{len(model.divergences):,} divergences")
    for note in alignment.notes:
        title += f"\nnote: {note}"
    return model, title


@click.command("browse")
@click.argument("a", type=click.Path(dir_okay=True, allow_dash=False))
@click.argument("b", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--position", "position", metavar="ID", help="Position to align when an input holds several searches.")
@click.option("--iter", "iteration", type=int, metavar="N",
              help="Iteration (root depth, plies) to align; default: the deepest both completed.")
@click.option("--under", metavar="PATH",
              help="Start at this path: its subtree only, its divergences only (UCI moves joined by /; SAN also read).")
@click.option("--notation", type=click.Choice(NOTATIONS), default="own", show_default=True,
              help="How moves are written: own (each side's dialect: SAN for Crafty), uci or san.")
@click.option("--engine-a", metavar="NAME", help="The engine to take from A when it holds several (e.g. a batch dataset).")
@click.option("--engine-b", metavar="NAME", help="The engine to take from B when it holds several.")
@click.option("--engine", "dialect", default="auto", show_default=True,
              help="Dialect for logs whose header does not say (default: auto).")
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs.")
def browse(a, b, position, iteration, under, notation, engine_a, engine_b, dialect, positions) -> None:
    """Browse A's and B's aligned trees of one position in the terminal.

    The tree is the alignment `treediff diff` shows: each row has both sides'
    decisions, depths (plies) and subtree node counts; children are added as
    a row is expanded.  Keys (also in the footer): n / p next / previous
    divergence by cost (largest |delta| first), g or / go to a path (UCI or
    SAN), u parent, t next notation (own, uci, san), enter / space expand or
    collapse, q quit.  The details
    pane shows the row's raw log lines (line numbers) for log inputs.

    Example: treediff browse typhoon.log stockfish.log --under e2e4
    """
    try:
        import textual  # noqa: F401
    except ImportError:
        raise TreediffError(_MISSING_TEXTUAL) from None
    model, title = build_model(a, b, position, iteration, under, notation, engine_a, engine_b, dialect, positions)
    from treediff.render.browse import BrowseApp

    BrowseApp(model, title).run()


COMMANDS = [browse]

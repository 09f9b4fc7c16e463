"""``treediff diff A B``: the two trees of one position side by side, aligned path by path."""
from __future__ import annotations

import sys

import click
import numpy as np

from treediff.model.errors import InputError

FORMATS = ["table", "text", "json", "csv"]
#: Rows kept around each change when folding identical runs, unless --context says otherwise.
DEFAULT_CONTEXT = 3
#: Divergences listed under the side-by-side view.
TOP_N = 10


def _side(path: str, label: str, engine: str | None):
    """One side as a Source, restricted to ``engine`` when given (nothing is read yet)."""
    from treediff.cli.common import echo_warnings
    from treediff.parse.source import open_source

    source = open_source(path)
    echo_warnings(source.warnings)
    if engine is not None:
        names = source.searches["engine"].astype(str)
        if not (names == engine).any():
            held = ", ".join(dict.fromkeys(names))
            raise InputError(f"{label} holds no engine {engine!r}; it has: {held}")
        source = source.select((names == engine).to_numpy())
    return source


def _read_side(source, path: str, label: str, position: str | None):
    """The side's records (``LOAD_COLUMNS``): only the searches of ``position`` when one is chosen."""
    from treediff.align import LOAD_COLUMNS

    if position is not None:
        if not len(source.rows_of_position(position)):
            held = list(dict.fromkeys(source.searches["position"].astype(str)))
            raise InputError(f"{label} has no records for position {position} ({path} has no search of position "
                             f"{position}; it has: {', '.join(held[:10])}{' ...' if len(held) > 10 else ''})")
        source = source.select_position(position)
    records = source.records(LOAD_COLUMNS)
    if len(records) == 0:
        searches = source.searches
        if position is not None and len(searches):
            raise InputError(f"{label} searched position {position} but recorded no MOVE/RESULT (a 0-node search?)")
        what = f"{len(searches)} search(es), all without MOVE/RESULT records" if len(searches) else "no search"
        raise InputError(f"{label} ({path}) has {what} (a 0-node search?)")
    return records


def _shared_position(source_a, source_b) -> str | None:
    """The one position both sides share when either holds several (else None: the aligner decides)."""
    from treediff.align.summaries import shared_positions

    mine = set(source_a.searches["position"].astype(str))
    theirs = set(source_b.searches["position"].astype(str))
    if len(mine) <= 1 and len(theirs) <= 1:
        return None
    shared = shared_positions(source_a, source_b)
    if len(shared) > 1:
        raise InputError(f"A and B share {len(shared)} positions; choose one with --position: {', '.join(shared)}")
    return shared[0] if shared else None


def _echo_lines(lines, chunk: int = 8192) -> None:
    """Echo lines in chunks: one click.echo per line is the bottleneck of a million-row view."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            click.echo("\n".join(batch))
            batch.clear()
    if batch:
        click.echo("\n".join(batch))


@click.command("diff")
@click.argument("a", type=click.Path(dir_okay=True, allow_dash=False))
@click.argument("b", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--position", "position", metavar="ID", help="Position to align when an input holds several searches.")
@click.option("--iter", "iteration", type=int, metavar="N",
              help="Iteration (root depth, plies) to align; default: the deepest both completed.")
@click.option("--under", metavar="PATH", help="Only this path and its subtree (UCI moves joined by /; SAN also read).")
@click.option("--max-ply", type=click.IntRange(min=0), metavar="N", help="Only rows at most N plies from the root.")
@click.option("--only-diff", is_flag=True, help="Only rows whose status is not 'same' (shown with their full paths).")
@click.option("--context", type=click.IntRange(min=0), metavar="K", default=None,
              help=f"Identical rows kept around each change; longer identical runs are folded (default {DEFAULT_CONTEXT}).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format; default: table on a terminal, text when piped.")
@click.option("--meld", "meld_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write DIR/a.txt and DIR/b.txt, one line per aligned row (gaps are blank lines), for meld or diff -y.")
@click.option("--engine-a", metavar="NAME", help="The engine to take from A when it holds several (e.g. a batch dataset).")
@click.option("--engine-b", metavar="NAME", help="The engine to take from B when it holds several.")
def diff(a, b, position, iteration, under, max_ply, only_diff, context, fmt, meld_dir, engine_a, engine_b) -> None:
    """Show A's and B's search trees of one position side by side, aligned by move path.

    Rows are in depth-first tree order; a path only one side has leaves a gap
    on the other.  The marker between the sides is ' ' (same), '|' (differs),
    '<' (only A) or '>' (only B).  Columns per side: move (indented by ply),
    act(s), depth → new depth in plies, reduction, and the subtree's node
    count (RESULT records at or below the path).  Below the rows: A's kind
    against B's on shared paths, and the divergences that cost the most nodes.
    """
    from treediff.align import align, kind_confusion, top_divergences
    from treediff.render import diffview as render
    from treediff.align.view import fold, normalize_path, select_rows

    source_a, source_b = _side(a, "A", engine_a), _side(b, "B", engine_b)
    chosen = position if position is not None else _shared_position(source_a, source_b)
    records_a = _read_side(source_a, a, "A", chosen)
    records_b = _read_side(source_b, b, "B", chosen)
    alignment = align(records_a, records_b, iter=iteration, position=position)
    under_path = None
    if under is not None:
        fen = None
        if "fen" in records_a.columns and len(records_a):
            match = records_a[records_a["search"] == alignment.a.search]
            fen = str(match["fen"].iloc[0]) if len(match) and match["fen"].notna().iloc[0] else None
        under_path = normalize_path(under, fen)
    rows = select_rows(alignment.rows, under=under_path, max_ply=max_ply, only_diff=only_diff)

    if meld_dir is not None:
        path_a, path_b = render.write_meld(meld_dir, rows)
        click.echo(f"wrote {path_a} and {path_b} ({len(rows):,} lines each)", err=True)
        if fmt is None:
            return

    fmt = fmt or ("table" if sys.stdout.isatty() else "text")
    if fmt in ("json", "table", "text"):
        # Summaries cover the --under/--max-ply scope, --only-diff or not.
        scope = np.zeros(len(alignment.rows), dtype=bool)
        scope[select_rows(alignment.rows, under=under_path, max_ply=max_ply).index.to_numpy()] = True
        confusion = kind_confusion(alignment, within=scope)
        top = top_divergences(alignment, n=TOP_N, under=under_path)
    if fmt == "json":
        click.echo(render.to_json(alignment, rows, confusion, top))
        return
    if fmt == "csv":
        click.echo(render.to_csv(rows), nl=False)
        return
    items = fold(rows, None if only_diff else (DEFAULT_CONTEXT if context is None else context))
    if fmt == "table":
        from rich.console import Console

        console = Console()
        render.print_rich(console, alignment, rows, items, full_paths=only_diff)
        for line in render.summary_lines(confusion, top):
            console.print(line, highlight=False, markup=False)
        return
    _echo_lines(render.text_lines(alignment, rows, items, full_paths=only_diff))
    _echo_lines(render.summary_lines(confusion, top))
    for note in alignment.notes:
        click.echo(f"note: {note}", err=True)


COMMANDS = [diff]

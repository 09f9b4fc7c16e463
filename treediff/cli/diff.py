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


def _load(path: str, label: str, position: str | None = None, other: str | None = None):
    """One side's records; from a dataset directory only the files of the position being aligned are read."""
    from treediff.align import LOAD_COLUMNS
    from treediff.cli.common import echo_warnings
    from treediff.store.dataset import is_dataset_dir
    from treediff.parse.load import load

    if is_dataset_dir(path):
        from treediff.report.partitioned import load_position

        loaded = load_position(path, list(LOAD_COLUMNS), position, other, label)
    else:
        loaded = load([path], columns=list(LOAD_COLUMNS))
        echo_warnings(loaded.warnings)
    if len(loaded.records) == 0:
        searches = loaded.searches
        what = f"{len(searches)} search(es), all without MOVE/RESULT records" if len(searches) else "no search"
        raise InputError(f"{label} ({path}) has {what} (a 0-node search?)")
    return loaded


def _only_engine(loaded, engine: str | None, label: str):
    """The records and searches of one engine of a side (all of them when ``engine`` is None)."""
    if engine is None:
        return loaded
    from treediff.store.dataset import Loaded

    names = loaded.searches["engine"].astype(str)
    if not (names == engine).any():
        held = ", ".join(dict.fromkeys(names))
        raise InputError(f"{label} holds no engine {engine!r}; it has: {held}")
    records = loaded.records[loaded.records["engine"].astype(str) == engine]
    return Loaded(records=records, searches=loaded.searches[names == engine])


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


def _check_recorded(label: str, loaded, position: str) -> None:
    """A clear message for a position that was searched but left no records (a 0-node search)."""
    searched = set(loaded.searches["position"].dropna().astype(str)) if "position" in loaded.searches else set()
    recorded = set(loaded.records["position"].dropna().astype(str)) if "position" in loaded.records else set()
    if position in searched and position not in recorded:
        raise InputError(f"{label} searched position {position} but recorded no MOVE/RESULT (a 0-node search?)")


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

    loaded_a, loaded_b = _load(a, "A", position, b), _load(b, "B", position, a)
    loaded_a, loaded_b = _only_engine(loaded_a, engine_a, "A"), _only_engine(loaded_b, engine_b, "B")
    if position is not None:
        for label, loaded in (("A", loaded_a), ("B", loaded_b)):
            _check_recorded(label, loaded, position)
    alignment = align(loaded_a.records, loaded_b.records, iter=iteration, position=position)
    under_path = None
    if under is not None:
        fen = None
        if "fen" in loaded_a.records.columns and len(loaded_a.records):
            match = loaded_a.records[loaded_a.records["search"] == alignment.a.search]
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
        top = top_divergences(alignment, n=TOP_N, within=scope)
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

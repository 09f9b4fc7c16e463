"""``treediff diff A B``: the two trees of one position side by side, aligned path by path."""
from __future__ import annotations

import sys
from typing import Any

import click

from treediff.cli.common import importing, keep_complete_option
from treediff.cli.sides import memory_limit_option

from treediff.model.errors import InputError

#: --format choices: report's and compare's names (table, markdown, csv, json, jsonl, html); ``text`` is kept as
#: an alias of the plain-text table (what ``table`` gives when piped or written with -o).
FORMATS = ["table", "markdown", "csv", "json", "jsonl", "html", "text"]
#: --notation choices (treediff.render.diffview.NOTATIONS).
NOTATIONS = ["own", "uci", "san"]
#: Rows kept around each change when folding identical runs, unless --context says otherwise.
DEFAULT_CONTEXT = 3
#: Divergences listed under the side-by-side view.
TOP_N = 10


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


def _with_source_lines(alignment, records_a, records_b):
    """The rows with ``line_a`` / ``line_b``: the aligner's when it has them, else from the records' ``line``.

    Fallback: the source line of the path's first MOVE record (in ``seq``
    order) in the aligned search and iteration, the first RESULT's for a
    path without MOVE; missing when the records have no ``line`` column.
    """
    import numpy as np
    import pandas as pd

    rows = alignment.rows
    if "line_a" in rows.columns and "line_b" in rows.columns:
        return rows
    added = {}
    for side, records, choice in (("a", records_a, alignment.a), ("b", records_b, alignment.b)):
        if "line" not in records.columns:
            added[f"line_{side}"] = pd.array([pd.NA] * len(rows), dtype="Int64")
            continue
        keep = records["search"].to_numpy() == choice.search
        if choice.iter != 0 and "iter" in records.columns:
            keep &= records["iter"].to_numpy() == choice.iter
        recs = records.loc[keep, ["path", "tag", "seq", "line"]]
        recs = recs[recs["path"].notna()]
        not_move = (recs["tag"].astype(object) != "MOVE").to_numpy()
        order = np.lexsort((recs["seq"].to_numpy(), not_move))
        first = recs.iloc[order].drop_duplicates("path")
        lines = pd.Series(first["line"].to_numpy(dtype=np.int64), index=first["path"].astype(str).to_numpy())
        added[f"line_{side}"] = pd.array(lines.reindex(rows["path"].astype(str).to_numpy()).to_numpy(),
                                         dtype="Int64")
    return rows.assign(**added)


@click.command("diff")
@click.argument("a", type=click.Path(dir_okay=True, allow_dash=False))
@click.argument("b", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--position", "position", metavar="ID", help="Position to align when an input holds several searches.")
@click.option("--iter", "iteration", type=int, metavar="N",
              help="Iteration (root depth, plies) to align; default: the deepest both completed.")
@click.option("--under", metavar="PATH", help="Only this path and its subtree (UCI moves joined by /; SAN also read).")
@click.option("--drill", metavar="PATH",
              help="Like --under, and the divergences are attributed inside PATH's subtree, PATH itself left out.")
@click.option("--max-ply", type=click.IntRange(min=0), metavar="N", help="Only rows at most N plies from the root.")
@click.option("--only-diff", is_flag=True, help="Only rows whose status is not 'same' (shown with their full paths).")
@click.option("--min-cost", type=click.IntRange(min=0), metavar="N", default=0,
              help="Only rows whose subtrees differ by at least N nodes (|nodes_a - nodes_b|, full paths shown) "
                   "and frontier rows with |delta| >= N.")
@click.option("--context", type=click.IntRange(min=0), metavar="K", default=None,
              help=f"Identical rows kept around each change; longer identical runs are folded (default {DEFAULT_CONTEXT}).")
@click.option("--top", "top_n", type=click.IntRange(min=0), metavar="N", default=TOP_N, show_default=True,
              help="Frontier rows listed (largest |delta|); a (rest) row sums the others.")
@click.option("--visits", type=click.Choice(["main", "all"]), default="main", show_default=True,
              help="main: one row per path, its parent's main visit; all: also a row per other visit of a path "
                   "(labelled verify or re-search after the move).")
@click.option("--notation", type=click.Choice(NOTATIONS), default="own", show_default=True,
              help="How moves are written: own (each side's dialect: SAN for Crafty), uci or san.")
@click.option("--width", type=click.IntRange(min=20), metavar="N",
              help="Fit the table/text view in N columns (default: the terminal's, COLUMNS, else 100).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format; default: from -o's extension (.csv .json .jsonl .md .html .txt), else table "
                   "(rich on a terminal, plain text when piped or written with -o; text is its alias).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write to FILE (atomically) instead of stdout.")
@click.option("--engine", "dialect", default="auto", show_default=True,
              help="Dialect for logs whose header does not say (default: auto).")
@click.option("--positions", type=click.Path(exists=True, dir_okay=False),
              help="EPD file giving position ids and phase labels for logs (--position then takes its ids).")
@click.option("--meld", "meld_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write DIR/a.txt and DIR/b.txt, one line per aligned row (gaps are blank lines), for meld or diff -y.")
@click.option("--engine-a", metavar="NAME", help="The engine to take from A when it holds several (e.g. a batch dataset).")
@click.option("--engine-b", metavar="NAME", help="The engine to take from B when it holds several.")
@memory_limit_option
@keep_complete_option
def diff(a, b, position, iteration, under, drill, max_ply, only_diff, min_cost, context, top_n, visits, notation, width,
         fmt, output, dialect, positions, meld_dir, engine_a, engine_b, keep_complete, memory_limit=None) -> None:
    """Show A's and B's search trees of one position side by side, aligned by move path.

    Rows are in depth-first tree order; a path only one side has leaves a gap
    on the other.  The marker between the sides is ' ' (same), '|' (differs),
    '<' (only A) or '>' (only B).  Columns per side: move (indented by ply),
    act(s), depth → new depth in plies, reduction, the subtree's node count
    (RESULT records at or below the path) and the decision's source line.
    Below the rows: A's kind against B's on shared paths, then the
    divergences: every node counted once, at its topmost differing row
    (`treediff docs align`), the largest, the total and its breakdowns.
    """
    if under is not None and drill is not None:
        raise InputError("use one of --under and --drill (--drill PATH shows PATH's subtree, as --under does)")
    from treediff.cli.common import format_from_output
    from treediff.cli.sides import OpeningSides, check_budget, choose_pair, fen_of, read_side

    fmt = format_from_output(fmt, output, default="", choices=FORMATS)
    if output is not None:
        from treediff.store.files import check_output

        check_output(output, [a, b, *([positions] if positions else [])])
    # Small logs are parsed in a child forked now, while this process imports the aligner (cli/sides.py).
    with OpeningSides(a, b, engine_a, engine_b, keep_complete, dialect, positions) as opening:
        with importing():
            from treediff.align import align, kind_confusion
            from treediff.align.attribution import difference
            from treediff.align.summaries import divergence_summary
            from treediff.align.view import fold, normalize_path, select_rows
            from treediff.render import diffview as render
        source_a, source_b = opening.sides()
    import numpy as np

    source_a, source_b, _ = choose_pair(source_a, source_b, position, (a, b))
    check_budget(source_a, source_b, memory_limit, (a, b))  # only the pair is read (row groups of its searches)
    records_a = read_side(source_a, a, "A")
    records_b = read_side(source_b, b, "B")
    from treediff.render.progress import step

    with step("aligning"):
        alignment = align(records_a, records_b, iter=iteration, visits=visits)
    alignment.rows = _with_source_lines(alignment, records_a, records_b)
    fen_a, fen_b = fen_of(records_a, alignment.a.search), fen_of(records_b, alignment.b.search)
    notations = (render.side_notation(notation, alignment.a.engine, fen_a),
                 render.side_notation(notation, alignment.b.engine, fen_b or fen_a))
    typed = drill if drill is not None else under
    scope_path = None
    if typed is not None:
        try:
            scope_path = normalize_path(typed, fen_a)
        except InputError as exc:
            raise InputError(str(exc).replace("--under", "--drill") if drill is not None else str(exc)) from None
        if drill is not None and not (alignment.rows["path"].to_numpy(dtype=object) == scope_path).any():
            raise InputError(f"--drill {scope_path}: neither side has this path")
    rows = select_rows(alignment.rows, under=scope_path, max_ply=max_ply, only_diff=only_diff)
    if min_cost:
        cost = (rows["nodes_a"] - rows["nodes_b"]).abs().to_numpy()
        rows = rows[cost >= min_cost]
    full_paths = only_diff or bool(min_cost)

    if meld_dir is not None:
        path_a, path_b = render.write_meld(meld_dir, rows, notations)
        click.echo(f"wrote {path_a} and {path_b} ({len(rows):,} lines each)", err=True)
        if fmt == "" and output is None:
            return

    rich_terminal = output is None and sys.stdout.isatty()
    if fmt in ("", "table"):
        fmt = "table" if rich_terminal else "text"
    summaries = None
    if fmt != "csv":
        # Summaries cover the --under/--drill (and, for the kinds, --max-ply) scope, --only-diff or not.
        scope = np.zeros(len(alignment.rows), dtype=bool)
        scope[select_rows(alignment.rows, under=scope_path, max_ply=max_ply).index.to_numpy()] = True
        namer = notations[0]

        def name(path: str) -> str:
            return f"`{render.named_paths(render.pa.array([path], render.pa.string()), namer)[0].as_py() or '(root)'}`"

        with step("attributing the divergences"):
            found = divergence_summary(alignment, n=top_n, under=scope_path, drill=drill is not None,
                                       min_cost=min_cost, name=name)
        scope_sentence = None
        if drill is not None:
            at = int(np.flatnonzero(alignment.rows["path"].to_numpy(dtype=object) == scope_path)[0])
            row = alignment.rows.iloc[at]
            scope_sentence = difference(row, name(scope_path or "")) if str(row["status"]) != "same" else (
                f"{name(scope_path or '')} was decided identically on both sides")
        summaries = render.Summaries(
            confusion=kind_confusion(alignment, within=scope), divergences=found.rows, total=found.total,
            by_kind=found.by_kind, by_ply=found.by_ply, scope=scope_path, drill=drill is not None,
            scope_sentence=scope_sentence, min_cost=min_cost)
    if fmt == "html":
        from treediff.cli.html_output import diff_page

        assert summaries is not None
        with step("writing the HTML page"):
            diff_page(alignment, rows, summaries, notations, output)
        return
    with _Sink(output) as sink:
        if fmt == "json":
            sink.write([render.to_json(alignment, rows, summaries, notations)])
            return
        if fmt == "csv":
            sink.write([render.to_csv(rows, notations).rstrip("\n")])
            return
        if fmt == "jsonl":
            sink.write(_jsonl_lines(rows, notations))
            return
        items = fold(rows, None if full_paths else (DEFAULT_CONTEXT if context is None else context))
        assert summaries is not None
        if fmt == "markdown":
            sink.write(render.markdown_lines(alignment, rows, items, summaries, notations))
            return
        fit = render.view_width(width)
        layout = render.layout_of(rows, items, fit, full_paths, notations)
        if fmt == "table":
            from rich.console import Console

            console = Console(width=fit)
            render.print_rich(console, alignment, rows, items, full_paths, fit, notations)
            for line in [""] + render.legend_lines(layout, notations, fit) + render.summary_lines(summaries, fit):
                console.print(line, highlight=False, markup=False, soft_wrap=True)
            return
        sink.write(render.text_lines(alignment, rows, items, full_paths, fit, notations))
        sink.write(["", *render.legend_lines(layout, notations, fit)])
        sink.write(render.summary_lines(summaries, fit))
    for note in alignment.notes:
        click.echo(f"note: {note}", err=True)


def _jsonl_lines(rows, notations):
    """JSON Lines: one compact object per selected row (``"table": "rows"``), the columns of the CSV."""
    from treediff.render.data import jsonl_lines
    from treediff.render.diffview import export_frame
    from treediff.report.table import Section

    return jsonl_lines([Section("rows", "aligned rows", export_frame(rows, notations))])


class _Sink:
    """Where diff's lines go: stdout (echoed in chunks), or ``-o FILE`` written atomically (streamed to a
    temporary file beside it that replaces FILE only when everything was written)."""

    def __init__(self, output: str | None):
        self.output = output
        self._atomic: Any = None
        self._fh: Any = None

    def __enter__(self) -> "_Sink":
        if self.output is not None:
            from treediff.store.files import atomic_output

            self._atomic = atomic_output(self.output)
            tmp = self._atomic.__enter__()
            self._fh = open(tmp, "w", encoding="utf-8")
        return self

    def write(self, lines) -> None:
        if self._fh is None:
            _echo_lines(lines)
            return
        for line in lines:
            self._fh.write(line)
            self._fh.write("\n")

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._atomic is not None:
            self._atomic.__exit__(*exc)


COMMANDS = [diff]

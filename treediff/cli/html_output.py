"""``--format html`` for report, compare and diff: gathering what the page shows, then writing it.

No commands here.  The page itself is :mod:`treediff.render.html`; this
module makes the library calls the page needs beyond the command's own
(the chart frames, and for compare the alignments of the positions its
divergences name) and writes the file.

Without ``-o`` (or with ``-o -``) the page goes to stdout when stdout is
not a terminal (``treediff diff A B --format html > page.html``), and is
refused on a terminal: thousands of lines of HTML are of no use there.
"""
from __future__ import annotations

import sys
from typing import Sequence

import click


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def write_html(text: str, output: str | None) -> None:
    """``-o FILE`` atomically (store.files); stdout when piped; a usage error on a terminal."""
    if output is None or str(output) == "-":
        if _stdout_is_terminal():
            raise click.UsageError("--format html writes a whole web page: give -o FILE.html (or redirect stdout)")
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from treediff.store.files import write_text_atomic

    write_text_atomic(output, text)
    click.echo(f"wrote {output}", err=True)


def plot_frames(source, target: int):
    """The frames ``report --plot`` draws: acts and EBF by iteration per engine, LMR admission per engine and phase."""
    from treediff.report.core import build_report

    base = build_report(source, ("acts", "ebf"), ("engine",), target)
    by_phase = build_report(source, ("lmr",), ("engine", "phase"), target)
    return base["acts"], base["ebf_iter"], by_phase["lmr"]


def plot_data(sides: Sequence[tuple[object, str | None]], target: int):
    """:class:`~treediff.render.html.PlotData` over ``sides`` (source, label): a label replaces the engine name.

    Engines keep their input order (their colours in the charts).
    """
    import pandas as pd

    from treediff.render.html import PlotData

    acts, ebf, lmr, engines = [], [], [], []
    for source, label in sides:
        frames = plot_frames(source, target)
        if label is not None:
            frames = tuple(f.assign(engine=label) for f in frames)
        a, e, m = frames
        acts.append(a)
        ebf.append(e)
        lmr.append(m)
        names = [label] if label is not None else list(dict.fromkeys(a["engine"].astype(str)))
        engines += [n for n in names if n not in engines]
    return PlotData(pd.concat(acts, ignore_index=True), pd.concat(ebf, ignore_index=True),
                    pd.concat(lmr, ignore_index=True), engines)


def report_page(source, sections, notes: list[str], inputs: Sequence[str], target: int, output: str | None) -> None:
    """report's page; the charts reuse the report's own acts / ebf_iter / lmr frames when it grouped them as
    the charts do (so charts and tables show the same records, ``--under`` included), else build them."""
    from treediff.render.html import PlotData, report_html

    wanted = {"acts": ("engine",), "ebf_iter": ("engine",), "lmr": ("engine", "phase")}
    own = {s.name: s.frame for s in sections if s.name in wanted and tuple(s.keys) == wanted[s.name]}
    if len(own) == len(wanted):
        engines = list(dict.fromkeys(own["acts"]["engine"].astype(str)))
        plots = PlotData(own["acts"], own["ebf_iter"], own["lmr"], engines)
    elif "acts" in own and "ebf_iter" in own:
        from treediff.report.core import build_report

        lmr = build_report(source, ("lmr",), ("engine", "phase"), target)["lmr"]
        plots = PlotData(own["acts"], own["ebf_iter"], lmr, list(dict.fromkeys(own["acts"]["engine"].astype(str))))
    else:
        plots = plot_data([(source, None)], target)
    names = ", ".join(str(i) for i in inputs)
    write_html(report_html(sections, notes, plots, title=f"treediff report: {names}"), output)


def compare_trees(source_a, source_b, positions: Sequence[str], label_a: str, label_b: str,
                  iteration: int | None = None) -> list:
    """One :class:`~treediff.render.html.TreeView` per position in ``positions`` (as compare's divergences
    pair and align them), in that order; positions that cannot be aligned are left out."""
    from treediff.align import LOAD_COLUMNS, align
    from treediff.align.summaries import paired_positions
    from treediff.model.errors import InputError
    from treediff.render.diffview import side_notation
    from treediff.render.html import tree_view

    wanted = list(dict.fromkeys(positions))
    columns = tuple(dict.fromkeys((*LOAD_COLUMNS, "line")))
    views = {}
    for position, rows_a, rows_b in paired_positions(source_a, source_b):
        if position not in wanted:
            continue
        ra = source_a.select(_mask(rows_a, len(source_a.searches))).records(columns)
        rb = source_b.select(_mask(rows_b, len(source_b.searches))).records(columns)
        try:
            alignment = align(ra, rb, iter=iteration)
        except InputError:
            continue  # compare's divergences already noted it
        fen = _fen(ra, alignment.a.search)
        notations = (side_notation("own", alignment.a.engine, fen),
                     side_notation("own", alignment.b.engine, _fen(rb, alignment.b.search) or fen))
        views[position] = tree_view(alignment, notations=notations, position=position,
                                    title=f"Aligned tree, position {position}: A = {label_a}, B = {label_b}")
    return [views[p] for p in wanted if p in views]


def _mask(rows, n: int):
    """A boolean mask over ``n`` searches rows from their indices (what :meth:`Source.select` takes)."""
    import numpy as np

    keep = np.zeros(n, dtype=bool)
    keep[rows] = True
    return keep


def _fen(records, search: int) -> str | None:
    if "fen" not in records.columns or not len(records):
        return None
    match = records["fen"][records["search"].to_numpy() == search]
    return str(match.iloc[0]) if len(match) and match.notna().iloc[0] else None


def compare_page(result, notes: list[str], sides: Sequence[tuple[object, str]], aligned: tuple | None,
                 iteration: int | None, target: int, output: str | None) -> None:
    """compare's page; ``aligned``: (source A, source B) whose divergences were attributed, else None."""
    from treediff.render.html import compare_html

    trees: list = []
    if aligned is not None and result.divergences is not None and len(result.divergences):
        shown = [str(p) for p in result.divergences["position"] if str(p)]
        trees = compare_trees(aligned[0], aligned[1], shown, result.label_a, result.label_b, iteration)
    labels = list(result.all_labels)
    text = compare_html(result.sections(), notes, plot_data(sides, target), trees,
                        title=f"treediff compare: {' vs '.join(labels)}")
    write_html(text, output)


def diff_page(alignment, rows, summaries, notations, output: str | None) -> None:
    """diff's page: the selected rows as the tree, the summaries of its scope."""
    from treediff.render.html import diff_html

    write_html(diff_html(alignment, rows, summaries, notations), output)

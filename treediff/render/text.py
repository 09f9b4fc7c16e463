"""Human formats: rich tables on a terminal, plain aligned text when piped, and markdown.

The input is a list of :class:`treediff.report.core.Section`.  For the human
formats only, the act and kind breakdowns of several engines are laid out
side by side (rank-aligned, like the user's hand-made table) when the report
is grouped by engine alone; CSV and JSON keep the long layout.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from treediff.render.formatting import format_cell

#: Sections shown side by side per engine, and the columns each engine block keeps.
SIDE_BY_SIDE = {"acts": ("act", "count", "pct_of_moves"), "kinds": ("kind", "count", "pct_of_moves"),
                "skips": ("act", "count", "pct_of_moves")}


def side_by_side(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Rank-aligned blocks, one per engine: ``<engine> act``, ``<engine> count``, ``<engine> pct_of_moves``."""
    blocks = []
    for engine, part in frame.groupby("engine", sort=False, observed=True):
        block = part[list(columns)].reset_index(drop=True)
        block.columns = [f"{engine} {c}" for c in columns]
        blocks.append(block)
    if not blocks:
        return frame
    return pd.concat(blocks, axis=1)


def human_view(section) -> pd.DataFrame:
    """The frame as the human formats show it."""
    frame = section.frame
    if (section.name in SIDE_BY_SIDE and tuple(section.keys) == ("engine",) and len(frame)
            and frame["engine"].nunique() > 1):
        return side_by_side(frame, SIDE_BY_SIDE[section.name])
    return frame


def _cells(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = [str(c) for c in frame.columns]
    rows = [[format_cell(c, v) for c, v in zip(header, row)] for row in frame.itertuples(index=False, name=None)]
    return header, rows


def _numeric(frame: pd.DataFrame) -> list[bool]:
    return [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
            for c in frame.columns]


def render_markdown(sections) -> str:
    """Every section as a ``### title`` and a GitHub markdown table (numbers right-aligned)."""
    out = []
    for section in sections:
        frame = human_view(section)
        out.append(f"### {section.title}\n")
        if frame.empty:
            out.append("_(no rows)_\n")
            continue
        header, rows = _cells(frame)
        align = ["---:" if num else "---" for num in _numeric(frame)]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join(align) + "|")
        for row in rows:
            out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        out.append("")
    return "\n".join(out)


def render_plain(sections) -> str:
    """Every section as a title line and space-aligned columns (no colour, no box drawing)."""
    out = []
    for section in sections:
        frame = human_view(section)
        out.append(f"== {section.title} ==")
        if frame.empty:
            out.append("(no rows)\n")
            continue
        header, rows = _cells(frame)
        numeric = _numeric(frame)
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)).rstrip()

        out.append(line(header))
        out.extend(line(r) for r in rows)
        out.append("")
    return "\n".join(out)


def render_rich(sections, console) -> None:
    """Every section as a rich table printed to ``console``."""
    from rich.table import Table

    for section in sections:
        frame = human_view(section)
        table = Table(title=section.title, title_justify="left", header_style="bold")
        numeric = _numeric(frame)
        header, rows = _cells(frame)
        for name, num in zip(header, numeric):
            table.add_column(name, justify="right" if num else "left", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        if frame.empty:
            console.print(f"[bold]{section.title}[/bold]: (no rows)")
            continue
        # Nothing is ever cut: a table wider than the terminal is printed whole (the terminal wraps it).
        natural = sum(max([len(h), *(len(r[i]) for r in rows)]) + 3 for i, h in enumerate(header)) + 1
        if natural <= console.width:
            console.print(table)
            continue
        saved = console.width
        console.width = natural  # rich caps print(width=) at the console's width
        try:
            console.print(table, crop=False)
        finally:
            console.width = saved

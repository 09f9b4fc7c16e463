"""Human formats: rich tables on a terminal, plain aligned text when piped, and markdown.

The input is a list of :class:`treediff.report.core.Section`.  For the human
formats only, the act and kind breakdowns of several engines are laid out
side by side (rank-aligned, like the user's hand-made table) when the report
is grouped by engine alone; CSV and JSON keep the long layout.

Fitting a width (table format only; markdown, CSV and JSON are never cut):
a table wider than the width is shown

1. *transposed* when it has at most :data:`TRANSPOSE_MAX_ROWS` rows and
   then fits: one column per row (e.g. one engine per column, headed by the
   row's key values), one line per column;
2. else in *column groups*, each repeating the key columns (``Section.keys``)
   and holding as many further columns as fit (the per-engine blocks of a
   side-by-side table stay together);
3. else (a single cell wider than the width) as *records*: one
   ``column: value`` line per cell, wrapped.

Titles and notes wrap at word boundaries.  Nothing is ever elided.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from treediff.model.text import printable
from treediff.render.formatting import format_cell
from treediff.report.columns import legend_line

#: A table with at most this many rows is transposed when that makes it fit.
TRANSPOSE_MAX_ROWS = 6
#: A long text column (a sentence) is wrapped when at least this many characters are left for it.
MIN_WRAP = 24

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
    if not frame.columns.is_unique:  # frame[c] is then a frame: judged as such, as before
        return [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
                for c in frame.columns]
    # From the dtypes: frame[c] builds a Series per column (a third of plain rendering's time on a small log).
    return [pd.api.types.is_numeric_dtype(d) and not pd.api.types.is_bool_dtype(d) for d in frame.dtypes]


@dataclass
class Block:
    """One printable piece of a section: a header, rows of cells and which columns are numbers."""

    header: list[str]
    rows: list[list[str]]
    numeric: list[bool]
    #: Records layout (``column: value`` lines) instead of a grid.
    records: bool = False
    #: A line above the grid (the engine of a side-by-side block shown on its own).
    caption: str | None = None
    #: Text columns (index in the block) wrapped at word boundaries to at most that many characters.
    wrap: dict[int, int] = field(default_factory=dict)


def _key_count(section, frame: pd.DataFrame) -> int:
    """How many leading columns name a row: the section's keys and the text columns right after them
    (an act, a kind, a phase); they are repeated in every column group and head a transposed table."""
    numeric = _numeric(frame)
    keys = len(section.keys)
    if keys and list(map(str, frame.columns[:keys])) == list(section.keys) and _blocked(frame.iloc[:, keys:]):
        return keys  # the side-by-side blocks start after the keys (compare's acts: kind, then <label> act ...)
    n = 0
    for name, num in zip(frame.columns, numeric):
        if str(name) in section.keys or not num:
            n += 1
        else:
            break
    return n if n < len(frame.columns) else 0


def _units(section, frame: pd.DataFrame, first: int) -> list[list[int]]:
    """Columns after the keys, in the groups that must stay together (a side-by-side engine block)."""
    cols = list(range(first, len(frame.columns)))
    if _blocked(frame.iloc[:, first:]):
        size = 3
        return [cols[i:i + size] for i in range(0, len(cols), size)]
    return [[c] for c in cols]


def _blocked(frame: pd.DataFrame) -> bool:
    """A rank-aligned side-by-side frame: ``<label> <col>`` triples (compare's acts)."""
    names = [str(c) for c in frame.columns]
    return len(names) % 3 == 0 and len(names) >= 6 and all(
        names[i].rsplit(" ", 1)[0] == names[i + 1].rsplit(" ", 1)[0] == names[i + 2].rsplit(" ", 1)[0]
        for i in range(0, len(names), 3))


def _grid_width(widths: Sequence[int], sep: int, edge: int) -> int:
    return sum(widths) + sep * max(len(widths) - 1, 0) + edge


def plan_blocks(section, frame: pd.DataFrame, width: int | None, sep: int = 2, edge: int = 0) -> list[Block]:
    """The blocks that show ``frame`` within ``width`` characters (None: one block, as wide as it is).

    ``sep``: characters between two columns; ``edge``: characters around the
    whole grid (rich's borders).  See the module docstring for the rules.
    """
    header, rows = _cells(frame)
    numeric = _numeric(frame)
    whole = Block(header, rows, numeric)
    if width is None or not header:
        return [whole]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    if _grid_width(widths, sep, edge) <= width:
        return [whole]
    keys = _key_count(section, frame)
    # 1. Transposed: one column per row, headed by its key values.
    labels = [" ".join(r[:keys]) for r in rows]
    # (Only when the key values name the rows: compare's acts repeat a kind over several rows.)
    if rows and len(rows) <= TRANSPOSE_MAX_ROWS and keys and len(set(labels)) == len(labels):
        t_header = ["column", *labels]
        t_rows = [[header[c], *(r[c] for r in rows)] for c in range(keys, len(header))]
        t_widths = [max(len(h), *(len(r[i]) for r in t_rows)) for i, h in enumerate(t_header)]
        if _grid_width(t_widths, sep, edge) <= width:
            return [Block(t_header, t_rows, [False] + [True] * len(rows))]
    # 2. Column groups repeating the keys; a side-by-side table becomes one captioned block per engine.
    if keys == 0 and _blocked(frame):
        blocks = []
        for unit in _units(section, frame, 0):
            label = header[unit[0]].rsplit(" ", 1)[0]
            sub = [header[c][len(label) + 1:] for c in unit]
            cells = [[r[c] for c in unit] for r in rows]
            sub_w = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(sub)]
            if _grid_width(sub_w, sep, edge) > width:
                return [Block(header, rows, numeric, records=True)]
            blocks.append(Block(sub, cells, [numeric[c] for c in unit], caption=label))
        return blocks
    key_cols = list(range(keys))
    key_w = [widths[c] for c in key_cols]
    groups: list[list[int]] = []
    current: list[int] = []
    wrapped: dict[int, int] = {}
    for unit in _units(section, frame, keys):
        trial = current + unit
        if _grid_width(key_w + [min(widths[c], wrapped.get(c, widths[c])) for c in trial], sep, edge) <= width:
            current = trial
            continue
        if current:
            groups.append(current)
        current = unit
        if _grid_width(key_w + [widths[c] for c in unit], sep, edge) > width:
            room = width - _grid_width(key_w + [0], sep, edge)
            if len(unit) == 1 and not numeric[unit[0]] and room >= MIN_WRAP:
                wrapped[unit[0]] = room  # a long text column (a sentence): wrapped beside the keys
            elif _grid_width([widths[c] for c in unit], sep, edge) > width:
                return [Block(header, rows, numeric, records=True)]  # 3. a cell alone is too wide
    if current:
        groups.append(current)
    blocks = []
    for group in groups:
        fits = _grid_width(key_w + [min(widths[c], wrapped.get(c, widths[c])) for c in group], sep, edge) <= width
        cols = (key_cols if fits else []) + group
        blocks.append(Block([header[c] for c in cols], [[r[c] for c in cols] for r in rows],
                            [numeric[c] for c in cols],
                            wrap={i: wrapped[c] for i, c in enumerate(cols) if c in wrapped}))
    return blocks


def wrap(text: str, width: int | None, indent: str = "  ") -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at word boundaries (continuations indented)."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=True) or [text]


def _record_lines(block: Block, width: int | None) -> list[str]:
    out: list[str] = []
    for i, row in enumerate(block.rows):
        if i:
            out.append("")
        for name, cell in zip(block.header, row):
            out.extend(wrap(f"{name}: {cell}", width, indent="    "))
    return out


def _cell_lines(block: Block, row: list[str]) -> list[list[str]]:
    """A row as one or more lines of cells (wrapped columns continue on the following lines)."""
    parts = [textwrap.wrap(cell, block.wrap[i], break_on_hyphens=False) or [""] if i in block.wrap else [cell]
             for i, cell in enumerate(row)]
    height = max(len(p) for p in parts)
    return [[p[k] if k < len(p) else "" for p in parts] for k in range(height)]


def _grid_lines(block: Block) -> list[str]:
    lines = [block.header, *(cells for r in block.rows for cells in _cell_lines(block, r))]
    widths = [max(len(cells[i]) for cells in lines) for i in range(len(block.header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w)
                         for c, w, num in zip(cells, widths, block.numeric)).rstrip()

    return [line(cells) for cells in lines]


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
        columns = legend_line(section.name, list(frame.columns), code=True)
        if columns:
            out.append(columns + "\n")  # what the non-obvious columns mean (treediff.report.columns)
        out.extend(f"{printable(note)}\n" for note in getattr(section, "notes", ()))
    return "\n".join(out)


def render_plain(sections, width: int | None = None) -> str:
    """Every section as a title line and space-aligned columns (no colour, no box drawing).

    ``width``: fit every line in that many characters (module docstring); None: no limit.
    """
    out: list[str] = []
    for section in sections:
        frame = human_view(section)
        out.extend(wrap(f"== {section.title} ==", width))
        if frame.empty:
            out.append("(no rows)")
        else:
            for i, block in enumerate(plan_blocks(section, frame, width)):
                if i:
                    out.append("")
                if block.caption:
                    out.extend(wrap(f"{block.caption}:", width))
                out.extend(_record_lines(block, width) if block.records else _grid_lines(block))
            columns = legend_line(section.name, list(frame.columns))
            if columns:
                out.extend(wrap(columns, width))
        for note in getattr(section, "notes", ()):
            out.extend(wrap(printable(note), width))
        out.append("")
    return "\n".join(out)


def render_rich(sections, console, width: int | None = None) -> None:
    """Every section as rich table(s) printed to ``console``, fitting ``width`` (default: the console's)."""
    from rich.markup import escape
    from rich.table import Table

    fit = width or console.width
    for section in sections:
        frame = human_view(section)
        if frame.empty:
            console.print(f"[bold]{section.title}[/bold]: (no rows)")
            continue
        # Three characters per column (padding and rule) and one more for the left border.
        for i, block in enumerate(plan_blocks(section, frame, fit, sep=3, edge=4)):
            title = section.title if i == 0 else None
            if block.records:
                console.print(section.title, style="bold", markup=False, width=fit)
                for line in _record_lines(block, fit):
                    console.print(line, markup=False, highlight=False, width=fit, soft_wrap=False)
                continue
            if block.caption:
                title = f"{section.title}: {block.caption}" if i == 0 else block.caption
            table = Table(title=title, title_justify="left", header_style="bold")
            for j, (name, num) in enumerate(zip(block.header, block.numeric)):
                if j in block.wrap:  # rich wraps it at word boundaries within the width
                    table.add_column(name, justify="left", no_wrap=False, max_width=block.wrap[j] + 2)
                else:
                    table.add_column(name, justify="right" if num else "left", no_wrap=True)
            for row in block.rows:
                table.add_row(*(escape(cell) for cell in row))  # a cell's [..] is text, not rich markup
            console.print(table, width=fit)
        columns = legend_line(section.name, list(frame.columns))
        if columns:
            console.print(columns, style="dim", markup=False, highlight=False, width=fit)
        for note in getattr(section, "notes", ()):
            console.print(printable(note), style="dim", markup=False, width=fit)

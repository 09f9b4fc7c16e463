"""Rendering aligned rows: side-by-side text and rich tables, markdown, meld files, JSON and CSV.

Input is always an :class:`~treediff.align.api.Alignment`, the rows a view
selected (:func:`treediff.align.view.select_rows`) and, for the side-by-side
formats, the display items from :func:`treediff.align.view.fold`.

* Moves are written in each side's :class:`Notation` (``--notation``): the
  records' ``path`` is normalized UCI; ``own`` writes what the side's dialect
  writes (SAN for Crafty, ``e7e8Q``/``(null)`` for typhoon, UCI for Stockfish).
  SAN is made with python-chess from the search's FEN, one board per parent
  path, and only for the rows shown.
* The side-by-side view fits a width (:func:`fit`): optional columns are
  dropped first (``line``, then ``red``, then ``depth``), then the move and
  act cells are cut; a legend says what each column is and what was dropped.
"""
from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.api import Alignment
from treediff.align.core import STATUS_VALUES
from treediff.model.text import printable
from treediff.store.files import write_text_atomic

#: diff -y style markers between the two sides.
MARKERS = {"same": " ", "differs": "|", "only-A": "<", "only-B": ">"}
STATUS_ORDER = STATUS_VALUES
EXPORT_COLUMNS = [
    "path", "ply", "status",
    "seq_a", "kind_a", "depth_a", "new_depth_a", "final_depth_a", "reduction_a", "decisions_a", "nodes_a",
    "seq_b", "kind_b", "depth_b", "new_depth_b", "final_depth_b", "reduction_b", "decisions_b", "nodes_b",
]
#: Exported after :data:`EXPORT_COLUMNS` when the rows have them (source lines; node visits).
OPTIONAL_EXPORT_COLUMNS = ["line_a", "line_b", "visits_a", "visits_b", "other_visit_nodes_a",
                           "other_visit_nodes_b", "visit", "visit_label"]
_CELLS = ("tree", "acts", "depth", "red", "nodes", "line")
_HEADINGS = {"tree": "move", "acts": "act", "depth": "depth", "red": "red", "nodes": "nodes", "line": "line"}
_RIGHT = ("nodes", "red", "line")
#: Columns a narrow view drops, first to last.
OPTIONAL_CELLS = ("line", "red", "depth")
#: Width of the side-by-side view when neither --width nor the terminal says (piped without COLUMNS).
DEFAULT_WIDTH = 100
#: The move and act cells are never cut below this many characters.
_MIN_CUT = 10
NOTATIONS = ("own", "uci", "san")


def view_width(width: int | None = None) -> int:
    """The width to fit: ``width`` (``--width``), else the terminal's (``COLUMNS`` first), else 100.

    :func:`shutil.get_terminal_size` semantics, as report and compare use.
    """
    if width:
        return int(width)
    import shutil

    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


# --- notation -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notation:
    """How one side writes moves: ``style`` ``uci``, ``coord`` (typhoon: ``e7e8Q``) or ``san``; its null move."""

    style: str = "uci"
    null: str = "0000"
    fen: str | None = None

    @property
    def label(self) -> str:
        return {"uci": "UCI", "coord": "coordinates", "san": "SAN"}[self.style]


def side_notation(choice: str, engine: str | None, fen: str | None) -> Notation:
    """The notation ``--notation choice`` gives a side whose dialect is ``engine``.

    ``own``: the dialect's notation and null spelling (UCI when the dialect is
    unknown); ``uci``: UCI, null ``0000``; ``san``: SAN, null ``--`` (as PGN).
    SAN needs the FEN; without one, moves stay UCI.
    """
    if choice == "uci":
        return Notation("uci", "0000", fen)
    if choice == "san":
        return Notation("san", "--", fen) if fen else Notation("uci", "0000", fen)
    from treediff.parse.dialects import DIALECTS, Notation as DialectNotation

    dialect = DIALECTS.get(str(engine or "").lower())
    if dialect is None:
        return Notation("uci", "0000", fen)
    null = dialect.null_moves[0] if dialect.null_moves else "0000"
    if dialect.notation == DialectNotation.SAN:
        return Notation("san", null, fen) if fen else Notation("uci", "0000", fen)
    if dialect.notation == DialectNotation.COORD:
        return Notation("coord", null, fen)
    return Notation("uci", null, fen)


class _SanBook:
    """SAN forms of the UCI paths of one search: one board per parent path, each path converted once."""

    def __init__(self, fen: str, null: str):
        import chess

        self._chess = chess
        try:
            root = chess.Board(fen)
        except ValueError:
            root = None
        self._boards: dict[str, object | None] = {"": root}
        self._names: dict[str, str] = {"": ""}
        self._null = null

    def _board(self, path: str):
        """The position after ``path``; None when a move on the way is not legal there."""
        if path in self._boards:
            return self._boards[path]
        parent, _, move = path.rpartition("/")
        board = self._board(parent)
        after = None
        if board is not None:
            mv = self._move(board, move)
            if mv is not None:
                after = board.copy(stack=False)
                after.push(mv)
        self._boards[path] = after
        return after

    def _move(self, board, uci: str):
        chess = self._chess
        try:
            mv = chess.Move.from_uci(uci)
        except ValueError:
            return None
        if mv == chess.Move.null():
            return mv if not board.is_check() else None
        return mv if board.is_legal(mv) else None

    def name(self, path: str) -> str:
        """``path`` in SAN (``/``-joined); moves that cannot be played stay as written, and so do their children."""
        known = self._names.get(path)
        if known is not None:
            return known
        parent, _, move = path.rpartition("/")
        head = self.name(parent)
        board = self._board(parent)
        text = move
        if board is not None:
            mv = self._move(board, move)
            if mv is not None:
                text = self._null if not mv else board.san(mv)
        full = f"{head}/{text}" if head else text
        self._names[path] = full
        return full


def _coord(paths: pa.Array, notation: Notation) -> pa.Array:
    out = paths
    if notation.style == "coord":
        for letter in "qrbn":
            out = pc.replace_substring_regex(out, pattern=rf"([a-h][1-8][a-h][1-8]){letter}(/|$)",
                                             replacement=rf"\1{letter.upper()}\2")
    if notation.null != "0000":
        null = notation.null.replace("\\", "\\\\")
        for _ in range(2):  # consecutive nulls: a match consumes the "/" the next one needs
            out = pc.replace_substring_regex(out, pattern=r"(^|/)0000(/|$)", replacement=r"\1" + null + r"\2")
    return out


def named_paths(paths: pa.Array, notation: Notation | None) -> pa.Array:
    """UCI paths written in ``notation`` (None: as they are).  SAN is made per distinct path."""
    if notation is None or (notation.style == "uci" and notation.null == "0000"):
        return paths
    if notation.style != "san" or not notation.fen:
        return _coord(paths, notation)
    distinct = pc.unique(paths)
    book = _SanBook(notation.fen, notation.null)
    names = pa.array([book.name(p) for p in distinct.to_pylist()], pa.string())
    return names.take(pc.index_in(paths, value_set=distinct))


def last_moves(paths: pa.Array) -> pa.Array:
    return pc.replace_substring_regex(paths, pattern=r"^.*/", replacement="")


# --- cells --------------------------------------------------------------------------------------------------


def _num(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:g}"


def _formatted(values: np.ndarray, fmt, missing: str) -> pa.Array:
    """``fmt`` applied to each distinct value only (few depths, many rows); NaN -> ``missing``."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    table = pa.array([fmt(u) for u in uniques] + [missing], pa.string())
    return table.take(pa.array(np.where(codes < 0, len(uniques), codes)))


def _strings(series: pd.Series) -> pa.Array:
    """A string/categorical column as an Arrow string array without a trip through Python objects."""
    arr = pa.Array.from_pandas(series)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return pc.fill_null(arr.cast(pa.string()), "")


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _lines(rows: pd.DataFrame, side: str) -> np.ndarray:
    col = f"line_{side}"
    if col not in rows.columns:
        return np.full(len(rows), np.nan)
    return pd.to_numeric(rows[col], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def arrow_cells(rows: pd.DataFrame, side: str, base_ply: int = 0, full_paths: bool = False,
                notation: Notation | None = None) -> dict[str, pa.Array]:
    """Display strings of side ``"a"`` or ``"b"``, one Arrow string array per cell ("" in a gap).

    Cells: ``tree`` (move indented by ply, or the full path), ``acts``,
    ``depth`` (depth→new depth, →re-search depth when it changed; the bare
    depth for a path without decision), ``red``, ``nodes`` (thousands
    separated), ``line`` (the source line of the row's decision).  Moves are
    in ``notation``.  Formatting works on distinct values, not rows.
    """
    n = len(rows)
    status = rows["status"].to_numpy(dtype=object)
    gap = pa.array(status == ("only-B" if side == "a" else "only-A"))
    paths = named_paths(_strings(rows["path"]), notation)
    is_root = pc.equal(paths, "")
    if full_paths:
        tree = pc.if_else(is_root, "(root)", paths)
    else:
        moves = pc.if_else(is_root, "(root)", last_moves(paths))
        depth_of = np.maximum(rows["ply"].to_numpy(dtype=np.int64) - base_ply, 0)
        indents = pa.array(["  " * k for k in range(int(depth_of.max(initial=0)) + 1)], pa.string())
        tree = _join(indents.take(pa.array(depth_of)), moves)
    if "visit_label" in rows.columns:
        # diff --visits all: a path's other visits get their own rows, labelled after the move.
        label = rows["visit_label"].astype(object).to_numpy()
        other = pa.array(label != "main")
        tree = pc.if_else(other, _join(tree, pa.scalar(" ["), pa.array(label.astype(str)), pa.scalar("]")), tree)
    acts = _strings(rows[f"seq_{side}"])
    decisions = rows[f"decisions_{side}"].to_numpy()
    depth = rows[f"depth_{side}"].to_numpy(dtype=np.float64)
    nd = rows[f"new_depth_{side}"].to_numpy(dtype=np.float64)
    final = rows[f"final_depth_{side}"].to_numpy(dtype=np.float64)
    red = rows[f"reduction_{side}"].to_numpy(dtype=np.float64)
    d_text = _formatted(depth, _num, "-")
    step = _join(d_text, pa.scalar("→"), _formatted(nd, _num, "-"))
    resumed = (decisions > 1) & ~((final == nd) | (np.isnan(final) & np.isnan(nd)))
    step = pc.if_else(pa.array(resumed), _join(step, pa.scalar("→"), _formatted(final, _num, "-")), step)
    bare = pc.if_else(pa.array(np.isnan(depth)), "", d_text)
    depth_cell = pc.if_else(pa.array(decisions == 0), bare, step)
    red_cell = _formatted(red, _num, "")
    nodes_cell = _formatted(rows[f"nodes_{side}"].to_numpy(), lambda v: f"{int(v):,}", "")
    line_cell = _formatted(_lines(rows, side), lambda v: f"{int(v)}", "")
    cells = {"tree": tree, "acts": acts, "depth": depth_cell, "red": red_cell, "nodes": nodes_cell,
             "line": line_cell}
    empty = pa.scalar("", pa.string())
    return {k: pc.if_else(gap, empty, v.cast(pa.string())) if n else pa.array([], pa.string()) for k, v in cells.items()}


@dataclass(frozen=True)
class SideCells:
    """Display strings of one side for each selected row ("" in a gap)."""

    tree: list[str]
    acts: list[str]
    depth: list[str]
    red: list[str]
    nodes: list[str]
    line: list[str]
    gap: np.ndarray


def side_cells(rows: pd.DataFrame, side: str, base_ply: int = 0, full_paths: bool = False,
               notation: Notation | None = None) -> SideCells:
    """:func:`arrow_cells` as Python lists, plus the gap mask."""
    cells = arrow_cells(rows, side, base_ply, full_paths, notation)
    status = rows["status"].to_numpy(dtype=object)
    gap = status == ("only-B" if side == "a" else "only-A")
    tree, acts, depth, red, nodes, line = (cells[name].to_pylist() for name in _CELLS)
    return SideCells(tree, acts, depth, red, nodes, line, gap)


# --- fitting a width ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Which cells a side-by-side view shows and how wide each is.

    ``dropped``: optional cells left out to fit ``width``; ``cut``: cells cut
    to their width (longer values end in ``…``).  ``width`` None: natural widths.
    """

    cells: tuple[str, ...]
    widths: dict[str, int]
    dropped: tuple[str, ...] = ()
    cut: tuple[str, ...] = ()
    width: int | None = None

    @property
    def total(self) -> int:
        return 2 * _half(self.cells, self.widths) + 3


def _half(cells: Sequence[str], widths: dict[str, int]) -> int:
    return sum(widths[c] for c in cells) + 2 * (len(cells) - 1)


def fit(natural: dict[str, int], width: int | None, empty: Sequence[str] = ()) -> Layout:
    """The layout of cells with ``natural`` widths in ``width`` columns (None: no limit).

    Cells in ``empty`` (no value in any row, e.g. ``line`` without source
    lines) are never shown.  Then :data:`OPTIONAL_CELLS` are dropped in order
    until the view fits; if it still does not, the ``acts`` and then the
    ``tree`` cells are cut (not below 10 characters).
    """
    cells = [c for c in _CELLS if c not in empty]
    widths = dict(natural)
    if width is None:
        return Layout(tuple(cells), widths)
    dropped: list[str] = []
    for name in OPTIONAL_CELLS:
        if 2 * _half(cells, widths) + 3 <= width:
            break
        if name in cells:
            cells.remove(name)
            dropped.append(name)
    cut: list[str] = []
    for name in ("acts", "tree"):
        over = 2 * _half(cells, widths) + 3 - width
        if over <= 0:
            break
        floor = max(_MIN_CUT, len(_HEADINGS[name]) + 2)
        shrink = min((over + 1) // 2, widths[name] - floor)
        if shrink > 0:
            widths[name] -= shrink
            cut.append(name)
    return Layout(tuple(cells), widths, tuple(dropped), tuple(cut), width)


def _cut(cells: pa.Array, width: int) -> pa.Array:
    long = pc.greater(pc.utf8_length(cells), width)
    return pc.if_else(long, _join(pc.utf8_slice_codeunits(cells, 0, max(width - 1, 0)), pa.scalar("…")), cells)


def _cut_text(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _headings(side: str) -> dict[str, str]:
    return {**_HEADINGS, "tree": f"{side.upper()} {_HEADINGS['tree']}"}


def _natural(cells: dict[str, dict[str, list[str]]] | dict[str, dict[str, pa.Array]], arrow: bool) -> tuple[dict[str, int], list[str]]:
    widths: dict[str, int] = {}
    empty: list[str] = []
    for name in _CELLS:
        longest = 0
        for s in "ab":
            values = cells[s][name]
            if arrow:
                longest = max(longest, (pc.max(pc.utf8_length(values)).as_py() or 0) if len(values) else 0)
            else:
                longest = max([longest, *(len(v) for v in values)])
        widths[name] = max(len(_headings("a")[name]), longest)
        if longest == 0 and name in OPTIONAL_CELLS:
            empty.append(name)
    return widths, empty


def legend_lines(layout: Layout, notations: tuple[Notation | None, Notation | None] = (None, None),
                 width: int | None = None) -> list[str]:
    """What the side-by-side columns mean, which were dropped to fit, and each side's notation; wrapped."""
    parts = ["marks: ' ' same, '|' differs, '<' only A, '>' only B."]
    meaning = {"act": "the acts in order", "depth": "node depth→new depth (→re-search depth), plies",
               "red": "reduction, plies", "nodes": "RESULT records in the subtree",
               "line": "source line of the decision"}
    shown = [_HEADINGS[c] for c in layout.cells if c != "tree"]
    parts.append("Columns: " + "; ".join(f"{h}: {meaning[h]}" for h in shown) + ".")
    if layout.dropped:
        parts.append(f"Not shown at width {layout.width}: {', '.join(layout.dropped)} (--width N).")
    if layout.cut:
        parts.append(f"Cut to fit (…): {', '.join(_HEADINGS[c] for c in layout.cut)}.")
    na, nb = notations
    if na is not None and nb is not None:
        parts.append(f"Moves: A in {na.label}, B in {nb.label} (--notation).")
    return wrap("legend: " + " ".join(parts), width, indent="  ")


#: Phrases a wrapped sentence keeps on one line: "(A 3, B 0)", "delta +3 nodes", "3→2 plies".
_UNBROKEN = re.compile(r"\(A [^()]*?, B [^()]*?\)|delta [+-]?[\d,]+ nodes?|\S+ plies|\S+ ply\b|by \S+ pl(?:y|ies)"
                       r"|[\d,]+ times|[\d,]+ nodes? outside")
_NBSP = "\u00a0"


def wrap(text: str, width: int | None, indent: str = "", first: str = "") -> list[str]:
    """``text`` wrapped at word boundaries to ``width`` (None: one line); continuation lines get ``indent``.

    Short phrases (a node count, a depth span) are never split across lines.
    """
    if width is None or len(first + text) <= width:
        return [first + text]
    had = _NBSP in text
    protected = _UNBROKEN.sub(lambda m: m.group(0).replace(" ", _NBSP), text) if not had else text
    lines = textwrap.wrap(protected, width=max(width, 20), initial_indent=first, subsequent_indent=indent,
                          break_long_words=False, break_on_hyphens=False) or [first]
    return lines if had else [line.replace(_NBSP, " ") for line in lines]


# --- the side-by-side view ----------------------------------------------------------------------------------


def header_lines(alignment: Alignment, rows: pd.DataFrame, width: int | None = None) -> list[str]:
    """Two lines (more when wrapped): what is compared, and how the shown rows split by status."""
    a, b = alignment.a, alignment.b

    def side(c) -> str:
        it = f"iteration {c.iter}" if c.iter else "whole search (no ITER)"
        return f"{c.label}: {c.engine or '?'} {it}"

    counts = rows["status"].astype(str).value_counts()
    split = ", ".join(f"{s} {int(counts.get(s, 0)):,}" for s in MARKERS)
    first = f"position {printable(str(alignment.position))}   {side(a)}   vs   {side(b)}"
    second = (f"{len(rows):,} rows ({split}); nodes A {int(alignment.rows['nodes_a'].iloc[0]):,}, "
              f"B {int(alignment.rows['nodes_b'].iloc[0]):,}")
    if width is None or (len(first) <= width and len(second) <= width):
        return [first, second]
    return [*wrap(first, width, "  "), *wrap(second, width, "  ")]


def _base_ply(rows: pd.DataFrame) -> int:
    return int(rows["ply"].min()) if len(rows) else 0


Segment = tuple[str, str]  # (text, rich style; "" for plain)


def _shown(rows: pd.DataFrame, items: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows the items show, and each item's position among them (-1 for a fold)."""
    picked = items["row"].to_numpy()
    at = np.flatnonzero(picked >= 0)
    index = np.full(len(picked), -1, dtype=np.int64)
    index[at] = np.arange(len(at))
    return rows.iloc[picked[at]], index


def layout_of(rows: pd.DataFrame, items: pd.DataFrame, width: int | None, full_paths: bool = False,
              notations: tuple[Notation | None, Notation | None] = (None, None)) -> Layout:
    """The layout :func:`text_lines` and :func:`side_by_side` use for these items."""
    shown, _ = _shown(rows, items)
    base = _base_ply(rows)
    cells = {s: arrow_cells(shown, s, base, full_paths, n) for s, n in zip("ab", notations)}
    natural, empty = _natural(cells, arrow=True)
    return fit(natural, width, empty)


def side_by_side(
    alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False,
    width: int | None = None, notations: tuple[Notation | None, Notation | None] = (None, None),
) -> Iterator[list[Segment]]:
    """The side-by-side view as lines of styled segments: a column heading, then one line per item.

    A's columns, a diff -y marker, B's columns; fold items become one line.
    ``full_paths`` shows whole paths instead of indented moves (for views
    that skip rows, where a move's parent may not be shown).  ``width``: fit
    the view (see :func:`fit`).  Changed cells of ``differs`` rows are styled
    bold yellow, one-sided rows red (only A) or green (only B); unstyled text
    is the plain-text view.
    """
    shown, index = _shown(rows, items)
    base = _base_ply(rows)
    cells = {s: side_cells(shown, s, base, full_paths, n) for s, n in zip("ab", notations)}
    lists = {s: {name: getattr(cells[s], name) for name in _CELLS} for s in "ab"}
    natural, empty = _natural(lists, arrow=False)
    layout = fit(natural, width, empty)
    changes = _changes(shown)
    widths = layout.widths

    def half(values: dict[str, str], styles: dict[str, str]) -> list[Segment]:
        out: list[Segment] = []
        for i, n in enumerate(layout.cells):
            value = _cut_text(values[n], widths[n])
            text = value.rjust(widths[n]) if n in _RIGHT else value.ljust(widths[n])
            out.append((("  " if i else ""), ""))
            out.append((text, styles.get(n, "")))
        return out

    yield half(_headings("a"), {}) + [("   ", "")] + half(_headings("b"), {})
    status = shown["status"].astype(str).to_numpy()
    for row, folded in zip(index, items["folded"].to_numpy()):
        if row < 0:
            yield [(f"... {folded:,} identical row{'s' if folded != 1 else ''} ...", "dim italic")]
            continue
        st = status[row]
        line: list[Segment] = []
        for side in ("a", "b"):
            if st == "only-A":
                styles = {n: "red" for n in _CELLS} if side == "a" else {}
            elif st == "only-B":
                styles = {n: "green" for n in _CELLS} if side == "b" else {}
            else:
                hot = "bold yellow" if st == "differs" else "yellow"
                styles = {n: hot for n in changes if changes[n][row]}
            line += half({n: lists[side][n][row] for n in _CELLS}, styles)
            if side == "a":
                line.append((f" {MARKERS[st]} ", "bold"))
        yield line


def _pad(cells: pa.Array, width: int, right: bool) -> pa.Array:
    return pc.utf8_lpad(cells, width=width) if right else pc.utf8_rpad(cells, width=width)


def text_lines(
    alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False,
    width: int | None = None, notations: tuple[Notation | None, Notation | None] = (None, None),
) -> Iterator[str]:
    """Plain side-by-side lines (for pipes): header, column heading, one line per item.

    Same layout as :func:`side_by_side`, built column-wise so that views of
    millions of rows print in seconds.  Only the rows the items show are
    formatted (and named: SAN costs a board per parent path).
    """
    yield from header_lines(alignment, rows, width)
    shown, index = _shown(rows, items)
    base = _base_ply(rows)
    cells = {s: arrow_cells(shown, s, base, full_paths, n) for s, n in zip("ab", notations)}
    natural, empty = _natural(cells, arrow=True)
    layout = fit(natural, width, empty)
    widths = layout.widths
    headings = {s: _headings(s) for s in "ab"}

    def half_heading(side: str) -> str:
        return "  ".join(
            headings[side][n].rjust(widths[n]) if n in _RIGHT else headings[side][n].ljust(widths[n])
            for n in layout.cells
        )

    yield f"{half_heading('a')}   {half_heading('b')}".rstrip()
    if not len(items):
        return
    parts: list = []
    for side in ("a", "b"):
        for i, n in enumerate(layout.cells):
            if i:
                parts.append(pa.scalar("  "))
            values = _cut(cells[side][n], widths[n]) if n in layout.cut else cells[side][n]
            parts.append(_pad(values, widths[n], n in _RIGHT))
        if side == "a":
            marks = pa.array([f" {MARKERS[st]} " for st in STATUS_ORDER], pa.string())
            parts.append(marks.take(pa.array(shown["status"].cat.codes.to_numpy(dtype=np.int64))))
    lines = pc.utf8_rtrim_whitespace(_join(*parts)) if len(shown) else pa.array([], pa.string())
    shown_lines = lines.take(pa.array(np.maximum(index, 0))) if len(shown) else pa.nulls(len(index), pa.string())
    folded = items["folded"].to_numpy()
    fold_text = _formatted(np.where(index < 0, folded, -1).astype(np.float64),
                           lambda v: f"... {int(v):,} identical row{'s' if v != 1 else ''} ...", "")
    out = pc.if_else(pa.array(index < 0), fold_text, shown_lines)
    for start in range(0, len(out), 65536):
        yield from map(printable, out.slice(start, 65536).to_pylist())  # a path as written in a log, escaped


def print_rich(
    console, alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False,
    width: int | None = None, notations: tuple[Notation | None, Notation | None] = (None, None),
) -> None:
    """The side-by-side view on a terminal, changed cells highlighted, fitted to ``width``."""
    from rich.text import Text

    for line in header_lines(alignment, rows, width):
        console.print(Text(line, style="bold"))
    for i, segments in enumerate(side_by_side(alignment, rows, items, full_paths, width, notations)):
        text = Text(no_wrap=True, overflow="ignore")
        for chunk, style in segments:
            text.append(printable(chunk), style=style or ("bold underline" if i == 0 else ""))
        text.rstrip()
        console.print(text, soft_wrap=True)
    for note in alignment.notes:
        console.print(Text(f"note: {printable(note)}", style="dim"))


def _changes(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """Which cells differ between the sides, per row (for highlighting)."""

    def same(col: str) -> np.ndarray:
        x = rows[f"{col}_a"].to_numpy(dtype=np.float64)
        y = rows[f"{col}_b"].to_numpy(dtype=np.float64)
        return (x == y) | (np.isnan(x) & np.isnan(y))

    return {
        "acts": rows["seq_a"].astype(str).to_numpy() != rows["seq_b"].astype(str).to_numpy(),
        "depth": ~(same("depth") & same("new_depth") & same("final_depth")),
        "red": ~same("reduction"),
        "nodes": rows["nodes_a"].to_numpy() != rows["nodes_b"].to_numpy(),
    }


# --- meld files ---------------------------------------------------------------------------------------------


def gap_filler(row: int, width: int) -> str:
    """A blank-looking filler line unique to ``row``: its number in binary, space = 0, tab = 1.

    Truly empty fillers would make both files share many equal lines ("" on
    A's side of an only-B row, "" on B's side of an only-A row); the
    longest-common-subsequence matchers of meld and ``diff -y`` pair such
    lines across different rows and the two sides drift apart.  Whitespace
    unique per row looks empty and never equals any other line.
    """
    return format(row, f"0{width}b").replace("0", " ").replace("1", "\t")


def _gap_fillers(rows_at: np.ndarray, width: int) -> np.ndarray:
    """:func:`gap_filler` for many rows at once (numpy unicode array)."""
    bits = (rows_at[:, None] >> np.arange(width - 1, -1, -1)) & 1
    chars = np.where(bits == 1, "\t", " ").astype("<U1")
    return np.ascontiguousarray(chars).view(f"<U{width}").ravel()


def meld_lines(rows: pd.DataFrame, side: str, notation: Notation | None = None) -> list[str]:
    """One line per row for one side's meld file; a blank filler where the side has no such path.

    A line reads ``indent move  acts  d depth→new  red r  nodes n  [path]  line L``
    (``line L``: the decision's source line, when known).  Every non-blank
    line holds the full path, so no two rows' lines are equal and a line only
    ever matches the other side's line of the same row.
    """
    n = len(rows)
    if n == 0:
        return []
    cells = arrow_cells(rows, side, _base_ply(rows), notation=notation)
    paths = named_paths(_strings(rows["path"]), notation)
    empty = pa.scalar("", pa.string())

    def labelled(label: str, cell: pa.Array) -> pa.Array:
        return pc.if_else(pc.equal(cell, ""), empty, _join(pa.scalar(f"  {label}"), cell))

    acts = pc.if_else(pc.equal(cells["acts"], ""), pa.scalar("-"), cells["acts"])
    path_label = pc.if_else(pc.equal(paths, ""), pa.scalar("root"), paths)
    lines = _join(
        cells["tree"], pa.scalar("  "), acts, labelled("d ", cells["depth"]), labelled("red ", cells["red"]),
        pa.scalar("  nodes "), cells["nodes"], pa.scalar("  ["), path_label, pa.scalar("]"),
        labelled("line ", cells["line"]),
    )
    out = np.asarray(lines.to_pylist(), dtype=object)
    gap = rows["status"].to_numpy(dtype=object) == ("only-B" if side == "a" else "only-A")
    gap_rows = np.flatnonzero(gap)
    if len(gap_rows):
        out[gap_rows] = _gap_fillers(gap_rows, max(n, 2).bit_length()).astype(object)
    return out.tolist()


def write_meld(directory: str | Path, rows: pd.DataFrame,
               notations: tuple[Notation | None, Notation | None] = (None, None)) -> tuple[Path, Path]:
    """Write ``a.txt`` and ``b.txt`` with one line per aligned row, row for row."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for side, notation in zip(("a", "b"), notations):
        target = directory / f"{side}.txt"
        lines = meld_lines(rows, side, notation)
        write_text_atomic(target, "\n".join(lines) + ("\n" if lines else ""))
        written.append(target)
    return written[0], written[1]


# --- summaries, JSON, CSV, markdown -------------------------------------------------------------------------


@dataclass
class Summaries:
    """What a diff prints under its rows: kind confusion and the divergence attribution of its scope.

    ``divergences``: frontier rows and ``(rest)``
    (:func:`treediff.align.attribution.divergence_rows`); ``total``: the
    ``divergence_total`` record; ``by_kind`` / ``by_ply``: the breakdowns;
    ``scope``: the path attributed inside (None: the whole tree);
    ``drill``: its own row left out; ``scope_sentence``: what differs at that
    row itself (drill only).
    """

    confusion: pd.DataFrame
    divergences: pd.DataFrame
    total: dict
    by_kind: pd.DataFrame
    by_ply: pd.DataFrame
    scope: str | None = None
    drill: bool = False
    scope_sentence: str | None = None
    min_cost: int = 0
    notes: list[str] = field(default_factory=list)


def _signed(n: int) -> str:
    return f"{n:+,}" if n else "0"


def _scope_text(summaries: Summaries) -> str:
    if summaries.scope is None:
        return "the whole tree"
    path = f"`{summaries.scope or '(root)'}`"
    return f"{path}'s subtree, {path} itself left out" if summaries.drill else f"{path}'s subtree"


def summary_lines(summaries: Summaries, width: int | None = None) -> list[str]:
    """The kind x kind table, the divergences, the total and the two breakdowns, as plain lines."""
    confusion = summaries.confusion
    lines = ["", "kinds on shared paths (A's kind down, B's across):"]
    if confusion.empty:
        lines.append("  (no shared decided paths)")
    else:
        text = confusion.to_string(line_width=max((width or 10**6) - 2, 20))
        lines += ["  " + line for line in text.splitlines()]
    total = summaries.total
    lines.append("")
    where = f" in {_scope_text(summaries)}" if summaries.scope is not None else ""
    lines += wrap(f"divergences{where} (every node counted once, at its topmost "
                  f"differing row; delta = A - B"
                  + (f"; |delta| >= {summaries.min_cost:,}" if summaries.min_cost else "") + "):", width, "  ")
    if summaries.scope_sentence:
        lines += wrap(f"at the row itself: {summaries.scope_sentence}", width, "    ", "  ")
    top = summaries.divergences
    if top.empty:
        lines.append("  (no differing row)")
    for i, r in enumerate(top.itertuples(), start=1):
        if r.path == "(rest)":
            lead = f"      [{_signed(int(r.delta))}] (rest) "
        else:
            lead = f"  {i:>2}. [{_signed(int(r.delta))}] "
        lines += wrap(str(r.sentence), width, " " * 8, lead)
    lines += wrap(f"shared residual (nodes under no differing row): {_signed(total['shared_residual'])} "
                  f"(A {total['shared_residual_a']:,}, B {total['shared_residual_b']:,})", width, "    ", "  ")
    lines += wrap(f"total: delta {_signed(total['delta'])} (A {total['nodes_a']:,}, B {total['nodes_b']:,}) = "
                  f"frontier rows {_signed(total['delta'] - total['shared_residual'])} "
                  f"+ shared residual {_signed(total['shared_residual'])}", width, "    ", "  ")
    for title, frame in (("delta by frontier kind (A's kind, B's kind), nodes:", summaries.by_kind),
                         ("delta by frontier ply, nodes:", summaries.by_ply)):
        lines += ["", title]
        lines += ["  " + line for line in frame.to_string(index=False).splitlines()]
    return lines


def _records(frame: pd.DataFrame) -> list[dict]:
    from treediff.render.data import json_records

    return json_records(frame)


def summaries_json(summaries: Summaries) -> dict:
    """The JSON keys of the summaries: ``kind_confusion``, ``divergences``, ``divergence_total`` and breakdowns."""
    confusion = summaries.confusion
    total = dict(summaries.total)
    total["scope"] = summaries.scope
    total["drill"] = summaries.drill
    return {
        "kind_confusion": {a: {b: int(v) for b, v in row.items()} for a, row in confusion.iterrows()},
        "divergences": _records(summaries.divergences),
        "divergence_total": total,
        "divergence_by_kind": _records(summaries.by_kind),
        "divergence_by_ply": _records(summaries.by_ply),
    }


def export_frame(rows: pd.DataFrame,
                 notations: tuple[Notation | None, Notation | None] = (None, None)) -> pd.DataFrame:
    """The selected rows with the exported columns (strings for categoricals).

    :data:`EXPORT_COLUMNS` first (``path`` stays the normalized UCI key),
    then ``path_a`` / ``path_b`` (the path in each side's notation, null
    where the side lacks it), then ``line_a`` / ``line_b`` and the visit
    columns when the rows have them.
    """
    out = rows[EXPORT_COLUMNS + [c for c in OPTIONAL_EXPORT_COLUMNS if c in rows.columns]].copy()
    for col in ("status", "seq_a", "seq_b", "kind_a", "kind_b", "visit_label"):
        if col in out.columns:
            out[col] = out[col].astype(object)
    status = rows["status"].to_numpy(dtype=object)
    paths = _strings(rows["path"])
    for side, notation in zip("ab", notations):
        named = named_paths(paths, notation).to_numpy(zero_copy_only=False).astype(object)
        named[status == ("only-B" if side == "a" else "only-A")] = None
        out.insert(len(EXPORT_COLUMNS) + (side == "b"), f"path_{side}", named)
    for col in ("line_a", "line_b"):
        if col in out.columns:
            out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    return out.reset_index(drop=True)


def to_json(
    alignment: Alignment,
    rows: pd.DataFrame,
    summaries: Summaries | None = None,
    notations: tuple[Notation | None, Notation | None] = (None, None),
) -> str:
    """A JSON document: what was compared, notes, summaries, and the selected rows."""

    def side(c, notation: Notation | None) -> dict:
        return {"engine": c.engine, "position": c.position, "search": c.search, "iter": c.iter,
                "iterations": list(c.iterations), "completed": list(c.completed),
                "notation": notation.style if notation is not None else "uci"}

    doc: dict = {"a": side(alignment.a, notations[0]), "b": side(alignment.b, notations[1]),
                 "notes": alignment.notes + (summaries.notes if summaries is not None else [])}
    if summaries is not None:
        doc.update(summaries_json(summaries))
    # The one serializer of every JSON output (treediff.render.data): counts as ints, NaN as null, UTF-8.
    from treediff.render.data import dumps, json_records

    doc["rows"] = json_records(export_frame(rows, notations))
    return dumps(doc, indent=None)


def to_jsonl(rows: pd.DataFrame, notations: tuple[Notation | None, Notation | None] = (None, None)) -> str:
    """JSON Lines: one object per selected row (the columns of :func:`export_frame`), the one serializer's values."""
    from treediff.render.data import dumps, json_records

    return "".join(dumps(row, indent=None) + "\n" for row in json_records(export_frame(rows, notations)))


def to_csv(rows: pd.DataFrame, notations: tuple[Notation | None, Notation | None] = (None, None)) -> str:
    from treediff.render.data import frame_csv

    return frame_csv(export_frame(rows, notations))


def _md(text: object) -> str:
    return str(text).replace("|", "\\|")


def _md_table(frame: pd.DataFrame, numeric: Sequence[str] = ()) -> list[str]:
    from treediff.render.formatting import format_cell

    header = [str(c) for c in frame.columns]
    out = ["| " + " | ".join(_md(h) for h in header) + " |",
           "|" + "|".join("---:" if h in numeric else "---" for h in header) + "|"]
    for row in frame.itertuples(index=False, name=None):
        out.append("| " + " | ".join(_md(format_cell(h, v)) for h, v in zip(header, row)) + " |")
    return out


def markdown_lines(alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame,
                   summaries: Summaries | None = None,
                   notations: tuple[Notation | None, Notation | None] = (None, None)) -> list[str]:
    """The diff as GitHub markdown: what was compared, the rows (folded as in the text view), the summaries.

    Each side's path is written in full in its notation; markdown is not fitted to a width.
    """
    out = [f"### {header_lines(alignment, rows)[0]}", "", header_lines(alignment, rows)[1], ""]
    shown, index = _shown(rows, items)
    base = _base_ply(rows)
    cells = {s: arrow_cells(shown, s, base, True, n) for s, n in zip("ab", notations)}
    lists = {s: {name: cells[s][name].to_pylist() for name in _CELLS} for s in "ab"}
    _, empty = _natural(lists, arrow=False)
    keep = [c for c in _CELLS if c not in empty]
    heads = [f"{s.upper()} {'path' if c == 'tree' else _HEADINGS[c]}" for s in "ab" for c in keep]
    right = {f"{s.upper()} {_HEADINGS[c]}" for s in "ab" for c in _RIGHT}
    header = [heads[: len(keep)], ["status"], heads[len(keep):]]
    flat = [h for part in header for h in part]
    out.append("| " + " | ".join(flat) + " |")
    out.append("|" + "|".join("---:" if h in right else "---" for h in flat) + "|")
    status = shown["status"].astype(str).to_numpy()
    for row, folded in zip(index, items["folded"].to_numpy()):
        if row < 0:
            out.append(f"| … {int(folded):,} identical row{'s' if folded != 1 else ''} … |"
                       + " |" * (len(flat) - 1))
            continue
        values = [_md(lists["a"][c][row]) for c in keep] + [status[row]] + [_md(lists["b"][c][row]) for c in keep]
        out.append("| " + " | ".join(values) + " |")
    if summaries is None:
        return out
    out += ["", "#### Kinds on shared paths (A's kind down, B's across)", ""]
    confusion = summaries.confusion
    if confusion.empty:
        out.append("_(no shared decided paths)_")
    else:
        frame = confusion.reset_index().rename(columns={"A": "A \\ B"})
        out += _md_table(frame, numeric=[str(c) for c in confusion.columns])
    min_cost = f"; \\|delta\\| ≥ {summaries.min_cost:,}" if summaries.min_cost else ""
    out += ["", f"#### Divergences in {_scope_text(summaries)}", "",
            f"Every node counted once, at its topmost differing row; delta = A − B{min_cost}.", ""]
    if summaries.scope_sentence:
        out += [f"At the row itself: {_md(summaries.scope_sentence)}", ""]
    top = summaries.divergences
    if top.empty:
        out.append("_(no differing row)_")
    for i, r in enumerate(top.itertuples(), start=1):
        if r.path == "(rest)":
            out.append(f"- **(rest)** {_md(r.sentence)}")
        else:
            out.append(f"{i}. **{_signed(int(r.delta))}** {_md(r.sentence)}")
    total = summaries.total
    out += ["", f"Shared residual (nodes under no differing row): {_signed(total['shared_residual'])} "
                f"(A {total['shared_residual_a']:,}, B {total['shared_residual_b']:,}).  "
                f"Total: delta {_signed(total['delta'])} (A {total['nodes_a']:,}, B {total['nodes_b']:,}).", ""]
    numbers = ["rows", "nodes_a", "nodes_b", "delta"]
    out += ["#### Delta by frontier kind (nodes)", ""] + _md_table(summaries.by_kind, numbers)
    out += ["", "#### Delta by frontier ply (nodes)", ""] + _md_table(summaries.by_ply, numbers)
    return out

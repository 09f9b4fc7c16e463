"""Rendering aligned rows: side-by-side text and rich tables, meld files, JSON and CSV.

Input is always an :class:`~treediff.align.api.Alignment`, the rows a view
selected (:func:`treediff.align.view.select_rows`) and, for the side-by-side
formats, the display items from :func:`treediff.align.view.fold`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.api import Alignment
from treediff.align.core import STATUS_VALUES

#: diff -y style markers between the two sides.
MARKERS = {"same": " ", "differs": "|", "only-A": "<", "only-B": ">"}
STATUS_ORDER = STATUS_VALUES
EXPORT_COLUMNS = [
    "path", "ply", "status",
    "seq_a", "kind_a", "depth_a", "new_depth_a", "final_depth_a", "reduction_a", "decisions_a", "nodes_a",
    "seq_b", "kind_b", "depth_b", "new_depth_b", "final_depth_b", "reduction_b", "decisions_b", "nodes_b",
]
_CELLS = ("tree", "acts", "depth", "red", "nodes")
_HEADINGS = {"tree": "move", "acts": "act", "depth": "depth", "red": "red", "nodes": "nodes"}


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


def arrow_cells(rows: pd.DataFrame, side: str, base_ply: int = 0, full_paths: bool = False) -> dict[str, pa.Array]:
    """Display strings of side ``"a"`` or ``"b"``, one Arrow string array per cell ("" in a gap).

    Cells: ``tree`` (move indented by ply, or the full path), ``acts``,
    ``depth`` (depth→new depth, →re-search depth when it changed; the bare
    depth for a path without decision), ``red``, ``nodes`` (thousands
    separated).  Formatting works on distinct values, not rows.
    """
    n = len(rows)
    status = rows["status"].to_numpy(dtype=object)
    gap = pa.array(status == ("only-B" if side == "a" else "only-A"))
    paths = _strings(rows["path"])
    is_root = pc.equal(paths, "")
    if full_paths:
        tree = pc.if_else(is_root, "(root)", paths)
    else:
        moves = pc.if_else(is_root, "(root)", pc.replace_substring_regex(paths, pattern=r"^.*/", replacement=""))
        depth_of = np.maximum(rows["ply"].to_numpy(dtype=np.int64) - base_ply, 0)
        indents = pa.array(["  " * k for k in range(int(depth_of.max(initial=0)) + 1)], pa.string())
        tree = _join(indents.take(pa.array(depth_of)), moves)
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
    cells = {"tree": tree, "acts": acts, "depth": depth_cell, "red": red_cell, "nodes": nodes_cell}
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
    gap: np.ndarray


def side_cells(rows: pd.DataFrame, side: str, base_ply: int = 0, full_paths: bool = False) -> SideCells:
    """:func:`arrow_cells` as Python lists, plus the gap mask."""
    cells = arrow_cells(rows, side, base_ply, full_paths)
    status = rows["status"].to_numpy(dtype=object)
    gap = status == ("only-B" if side == "a" else "only-A")
    tree, acts, depth, red, nodes = (cells[name].to_pylist() for name in _CELLS)
    return SideCells(tree, acts, depth, red, nodes, gap)


def header_lines(alignment: Alignment, rows: pd.DataFrame) -> list[str]:
    """Two lines: what is compared, and how the shown rows split by status."""
    a, b = alignment.a, alignment.b

    def side(c) -> str:
        it = f"iteration {c.iter}" if c.iter else "whole search (no ITER)"
        return f"{c.label}: {c.engine or '?'} {it}"

    counts = rows["status"].astype(str).value_counts()
    split = ", ".join(f"{s} {int(counts.get(s, 0)):,}" for s in MARKERS)
    return [
        f"position {alignment.position}   {side(a)}   vs   {side(b)}",
        f"{len(rows):,} rows ({split}); nodes A {int(alignment.rows['nodes_a'].iloc[0]):,}, "
        f"B {int(alignment.rows['nodes_b'].iloc[0]):,}",
    ]


def _base_ply(rows: pd.DataFrame) -> int:
    return int(rows["ply"].min()) if len(rows) else 0


Segment = tuple[str, str]  # (text, rich style; "" for plain)


def side_by_side(
    alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False
) -> Iterator[list[Segment]]:
    """The side-by-side view as lines of styled segments: a column heading, then one line per item.

    A's columns, a diff -y marker, B's columns; fold items become one line.
    ``full_paths`` shows whole paths instead of indented moves (for views
    that skip rows, where a move's parent may not be shown).
    Changed cells of ``differs`` rows are styled bold yellow, one-sided rows
    red (only A) or green (only B); unstyled text is the plain-text view.
    """
    base = _base_ply(rows)
    cells = {s: side_cells(rows, s, base, full_paths) for s in ("a", "b")}
    changes = _changes(rows)
    headings = {s: {**_HEADINGS, "tree": f"{s.upper()} {_HEADINGS['tree']}"} for s in "ab"}
    widths = {
        name: max([len(headings["a"][name])] + [len(v) for s in "ab" for v in getattr(cells[s], name)])
        for name in _CELLS
    }

    def half(values: dict[str, str], styles: dict[str, str]) -> list[Segment]:
        out: list[Segment] = []
        for i, n in enumerate(_CELLS):
            text = values[n].rjust(widths[n]) if n in ("nodes", "red") else values[n].ljust(widths[n])
            out.append((("  " if i else ""), ""))
            out.append((text, styles.get(n, "")))
        return out

    yield half(headings["a"], {}) + [("   ", "")] + half(headings["b"], {})
    status = rows["status"].astype(str).to_numpy()
    for row, folded in zip(items["row"].to_numpy(), items["folded"].to_numpy()):
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
            line += half({n: getattr(cells[side], n)[row] for n in _CELLS}, styles)
            if side == "a":
                line.append((f" {MARKERS[st]} ", "bold"))
        yield line


def _pad(cells: pa.Array, width: int, right: bool) -> pa.Array:
    return pc.utf8_lpad(cells, width=width) if right else pc.utf8_rpad(cells, width=width)


def text_lines(
    alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False
) -> Iterator[str]:
    """Plain side-by-side lines (for pipes): header, column heading, one line per item.

    Same layout as :func:`side_by_side`, built column-wise so that views of
    millions of rows print in seconds.
    """
    yield from header_lines(alignment, rows)
    base = _base_ply(rows)
    cells = {s: arrow_cells(rows, s, base, full_paths) for s in ("a", "b")}
    headings = {s: {**_HEADINGS, "tree": f"{s.upper()} {_HEADINGS['tree']}"} for s in "ab"}
    widths = {}
    for name in _CELLS:
        longest = [pc.max(pc.utf8_length(cells[s][name])).as_py() or 0 for s in "ab"] if len(rows) else [0]
        widths[name] = max([len(headings["a"][name]), *longest])

    def half_heading(side: str) -> str:
        return "  ".join(
            headings[side][n].rjust(widths[n]) if n in ("nodes", "red") else headings[side][n].ljust(widths[n])
            for n in _CELLS
        )

    yield f"{half_heading('a')}   {half_heading('b')}".rstrip()
    if not len(items):
        return
    parts: list = []
    for side in ("a", "b"):
        for i, n in enumerate(_CELLS):
            if i:
                parts.append(pa.scalar("  "))
            parts.append(_pad(cells[side][n], widths[n], n in ("nodes", "red")))
        if side == "a":
            marks = pa.array([f" {MARKERS[st]} " for st in STATUS_ORDER], pa.string())
            parts.append(marks.take(pa.array(rows["status"].cat.codes.to_numpy(dtype=np.int64))))
    lines = pc.utf8_rtrim_whitespace(_join(*parts))
    picked = items["row"].to_numpy()
    shown = lines.take(pa.array(np.maximum(picked, 0)))
    folded = items["folded"].to_numpy()
    fold_text = _formatted(np.where(picked < 0, folded, -1).astype(np.float64),
                           lambda v: f"... {int(v):,} identical row{'s' if v != 1 else ''} ...", "")
    out = pc.if_else(pa.array(picked < 0), fold_text, shown)
    for start in range(0, len(out), 65536):
        yield from out.slice(start, 65536).to_pylist()


def print_rich(
    console, alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False
) -> None:
    """The side-by-side view on a terminal, changed cells highlighted."""
    from rich.text import Text

    for line in header_lines(alignment, rows):
        console.print(Text(line, style="bold"))
    for i, segments in enumerate(side_by_side(alignment, rows, items, full_paths)):
        text = Text(no_wrap=True, overflow="ignore")
        for chunk, style in segments:
            text.append(chunk, style=style or ("bold underline" if i == 0 else ""))
        text.rstrip()
        console.print(text, soft_wrap=True)
    for note in alignment.notes:
        console.print(Text(f"note: {note}", style="dim"))


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


def meld_lines(rows: pd.DataFrame, side: str) -> list[str]:
    """One line per row for one side's meld file; a blank filler where the side has no such path.

    A line reads ``indent move  acts  d depth→new  red r  nodes n  [path]``.
    Every non-blank line ends with the full path, so no two rows' lines are
    equal and a line only ever matches the other side's line of the same row.
    """
    n = len(rows)
    if n == 0:
        return []
    cells = arrow_cells(rows, side, _base_ply(rows))
    paths = _strings(rows["path"])
    empty = pa.scalar("", pa.string())

    def labelled(label: str, cell: pa.Array) -> pa.Array:
        return pc.if_else(pc.equal(cell, ""), empty, _join(pa.scalar(f"  {label}"), cell))

    acts = pc.if_else(pc.equal(cells["acts"], ""), pa.scalar("-"), cells["acts"])
    path_label = pc.if_else(pc.equal(paths, ""), pa.scalar("root"), paths)
    lines = _join(
        cells["tree"], pa.scalar("  "), acts, labelled("d ", cells["depth"]), labelled("red ", cells["red"]),
        pa.scalar("  nodes "), cells["nodes"], pa.scalar("  ["), path_label, pa.scalar("]"),
    )
    out = np.asarray(lines.to_pylist(), dtype=object)
    gap = rows["status"].to_numpy(dtype=object) == ("only-B" if side == "a" else "only-A")
    gap_rows = np.flatnonzero(gap)
    if len(gap_rows):
        out[gap_rows] = _gap_fillers(gap_rows, max(n, 2).bit_length()).astype(object)
    return out.tolist()


def write_meld(directory: str | Path, rows: pd.DataFrame) -> tuple[Path, Path]:
    """Write ``a.txt`` and ``b.txt`` with one line per aligned row, row for row."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for side in ("a", "b"):
        target = directory / f"{side}.txt"
        tmp = directory / f".{side}.txt.tmp"
        lines = meld_lines(rows, side)
        tmp.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        tmp.replace(target)
        written.append(target)
    return written[0], written[1]


def export_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The selected rows with the exported columns (strings for categoricals)."""
    out = rows[EXPORT_COLUMNS].copy()
    for col in ("status", "seq_a", "seq_b", "kind_a", "kind_b"):
        out[col] = out[col].astype(object)
    return out.reset_index(drop=True)


def summary_lines(confusion: pd.DataFrame, top: pd.DataFrame) -> list[str]:
    """The kind x kind table and the top divergences as plain lines."""
    lines = ["", "kinds on shared paths (A's kind down, B's across):"]
    if confusion.empty:
        lines.append("  (no shared decided paths)")
    else:
        lines += ["  " + line for line in confusion.to_string().splitlines()]
    lines += ["", "divergences (each node counted once, at its topmost differing row; delta = A - B):"]
    if top.empty:
        lines.append("  (none)")
    for i, r in enumerate(top.itertuples(), start=1):
        lines.append(f"  {i:>2}. [{int(r.delta):+,}] {r.sentence}")
    return lines


def to_json(
    alignment: Alignment,
    rows: pd.DataFrame,
    confusion: pd.DataFrame | None = None,
    top: pd.DataFrame | None = None,
) -> str:
    """A JSON document: what was compared, notes, summaries, and the selected rows."""

    def side(c) -> dict:
        return {"engine": c.engine, "position": c.position, "search": c.search, "iter": c.iter,
                "iterations": list(c.iterations), "completed": list(c.completed)}

    doc: dict = {"a": side(alignment.a), "b": side(alignment.b), "notes": alignment.notes}
    if confusion is not None:
        doc["kind_confusion"] = {a: {b: int(v) for b, v in row.items()} for a, row in confusion.iterrows()}
    if top is not None:
        doc["top_divergences"] = [
            {"path": r.path, "status": str(r.status), "nodes_a": int(r.nodes_a), "nodes_b": int(r.nodes_b),
             "delta": int(r.delta), "sentence": r.sentence}
            for r in top.itertuples()
        ]
    head = json.dumps(doc, ensure_ascii=False)
    body = export_frame(rows).to_json(orient="records", force_ascii=False)
    return head[:-1] + ', "rows": ' + body + "}"


def to_csv(rows: pd.DataFrame) -> str:
    return export_frame(rows).to_csv(index=False)

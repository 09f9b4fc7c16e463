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

from treediff.align.api import Alignment

#: diff -y style markers between the two sides.
MARKERS = {"same": " ", "differs": "|", "only-A": "<", "only-B": ">"}
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
    """Cells of side ``"a"`` or ``"b"``: move indented by ply (or the full path), acts, depth→new depth, reduction, nodes."""
    status = rows["status"].to_numpy(dtype=object)
    gap = status == ("only-B" if side == "a" else "only-A")
    paths = rows["path"].astype(str).tolist()
    plies = rows["ply"].to_numpy()
    decisions = rows[f"decisions_{side}"].to_numpy()
    seqs = rows[f"seq_{side}"].astype(str).tolist()
    depth = rows[f"depth_{side}"].to_numpy(dtype=np.float64)
    nd = rows[f"new_depth_{side}"].to_numpy(dtype=np.float64)
    final = rows[f"final_depth_{side}"].to_numpy(dtype=np.float64)
    red = rows[f"reduction_{side}"].to_numpy(dtype=np.float64)
    nodes = rows[f"nodes_{side}"].to_numpy()
    tree, acts, depths, reds, counts = [], [], [], [], []
    for i, path in enumerate(paths):
        if gap[i]:
            for column in (tree, acts, depths, reds, counts):
                column.append("")
            continue
        if full_paths:
            tree.append(path or "(root)")
        else:
            move = path.rsplit("/", 1)[-1] if path else "(root)"
            tree.append("  " * max(int(plies[i]) - base_ply, 0) + move)
        acts.append(seqs[i])
        if decisions[i] == 0:
            depths.append(_num(depth[i]) if not math.isnan(depth[i]) else "")
        else:
            text = f"{_num(depth[i])}→{_num(nd[i])}"
            if decisions[i] > 1 and not (final[i] == nd[i] or (math.isnan(final[i]) and math.isnan(nd[i]))):
                text += f"→{_num(final[i])}"
            depths.append(text)
        reds.append("" if math.isnan(red[i]) else _num(red[i]))
        counts.append(f"{int(nodes[i]):,}")
    return SideCells(tree, acts, depths, reds, counts, gap)


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


def text_lines(
    alignment: Alignment, rows: pd.DataFrame, items: pd.DataFrame, full_paths: bool = False
) -> Iterator[str]:
    """Plain side-by-side lines (for pipes): header, column heading, one line per item."""
    yield from header_lines(alignment, rows)
    for segments in side_by_side(alignment, rows, items, full_paths):
        yield "".join(text for text, _ in segments).rstrip()


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


def meld_lines(rows: pd.DataFrame, side: str) -> list[str]:
    """One line per row for one side's meld file; a blank filler where the side has no such path.

    Every non-blank line ends with the full path, so no two rows' lines are
    equal and a line only ever matches the other side's line of the same row.
    """
    cells = side_cells(rows, side, _base_ply(rows))
    paths = rows["path"].astype(str).tolist()
    width = max(len(paths), 2).bit_length()
    out = []
    for i in range(len(paths)):
        if cells.gap[i]:
            out.append(gap_filler(i, width))
            continue
        parts = [cells.tree[i], cells.acts[i] or "-", f"d {cells.depth[i]}" if cells.depth[i] else ""]
        if cells.red[i]:
            parts.append(f"red {cells.red[i]}")
        parts.append(f"nodes {cells.nodes[i]}")
        parts.append(f"[{paths[i] or 'root'}]")
        out.append("  ".join(p for p in parts if p))
    return out


def write_meld(directory: str | Path, rows: pd.DataFrame) -> tuple[Path, Path]:
    """Write ``a.txt`` and ``b.txt`` with one line per aligned row, row for row."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for side in ("a", "b"):
        target = directory / f"{side}.txt"
        tmp = directory / f".{side}.txt.tmp"
        tmp.write_text("".join(line + "\n" for line in meld_lines(rows, side)), encoding="utf-8")
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
    lines += ["", "top divergences by node cost:"]
    if top.empty:
        lines.append("  (none)")
    for i, r in enumerate(top.itertuples(), start=1):
        lines.append(f"  {i:>2}. [{int(r.cost):,}] {r.sentence}")
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
            {"path": r.path, "cost": int(r.cost), "nodes_a": int(r.nodes_a), "nodes_b": int(r.nodes_b),
             "status": str(r.status), "sentence": r.sentence}
            for r in top.itertuples()
        ]
    head = json.dumps(doc, ensure_ascii=False)
    body = export_frame(rows).to_json(orient="records", force_ascii=False)
    return head[:-1] + ', "rows": ' + body + "}"


def to_csv(rows: pd.DataFrame) -> str:
    return export_frame(rows).to_csv(index=False)

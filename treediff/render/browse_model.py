"""The view model of ``treediff browse``: plain Python/numpy over an Alignment, testable without textual.

:class:`BrowseModel` holds what the terminal browser asks while the user moves
around, each answer computed only for the rows shown:

* the tree: a children index (CSR over the depth-first rows, built once with
  one stable argsort), so a node's children are added when it is expanded;
* the divergences in cost order: the frontier rows of the attribution
  (:mod:`treediff.align.attribution`, the same as ``treediff diff``'s
  divergences), largest |delta| (nodes) first, ties in tree order, and a step
  to the next / previous one from the cursor;
* path lookup: a typed path (UCI, or SAN when the FEN is known) to its row;
* labels (one line per row: both sides' decisions, depths in plies, subtree
  nodes) and the details of one row, with its raw log lines
  (:class:`LogLines`, read from the log by line number).

Only the main-visit rows are browsed (one row per path); the other visits of
a path are counted in the details (``visits_*``, ``other_visit_nodes_*``).
"""
from __future__ import annotations

import itertools
import math
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from treediff.align.api import Alignment
from treediff.align.attribution import attribute, difference, main_rows, shown
from treediff.align.view import normalize_path
from treediff.model.errors import InputError
from treediff.render.diffview import MARKERS, Notation, named_paths, side_cells

#: At most this many raw log lines per side in a row's details (a path visited thousands of times).
MAX_DETAIL_LINES = 40
#: Width the move cell of a label is padded to, in characters.
MOVE_WIDTH = 8


class LogLines:
    """Lines of one log by 1-based line number (the records' ``line``).

    A plain file is memory-mapped and its newline offsets found with numpy
    on the first request (about 1 s per GB); a gzip/zstd log cannot be
    seeked, so it is read from the start up to the highest line asked for,
    and the lines once read are kept.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._starts: np.ndarray | None = None
        self._map: mmap.mmap | None = None
        self._cache: dict[int, str] = {}
        with open(self.path, "rb") as fh:
            head = fh.read(4)
        from treediff.store.magic import is_compressed

        self.compressed = is_compressed(head)

    def _index(self) -> np.ndarray:
        if self._starts is None:
            size = self.path.stat().st_size
            if size == 0:
                self._starts = np.array([0], dtype=np.int64)
            else:
                with open(self.path, "rb") as fh:
                    self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                newlines = np.flatnonzero(np.frombuffer(self._map, dtype=np.uint8) == 10)
                self._starts = np.concatenate(([0], newlines + 1)).astype(np.int64)
        return self._starts

    def get(self, numbers: list[int]) -> dict[int, str]:
        """The text of each line asked for (without its newline); a number past the end is left out."""
        wanted = sorted({int(n) for n in numbers if n >= 1})
        if not wanted:
            return {}
        if self.compressed:
            missing = [n for n in wanted if n not in self._cache]
            if missing:
                from treediff.store.files import open_log

                todo = set(missing)
                with open_log(self.path) as fh:
                    for number, raw in enumerate(itertools.islice(fh, max(missing)), start=1):
                        if number in todo:
                            self._cache[number] = raw.decode("utf-8", "replace").rstrip("\r\n")
            return {n: self._cache[n] for n in wanted if n in self._cache}
        starts = self._index()
        assert self._map is not None or len(starts) == 1
        out = {}
        for n in wanted:  # the few lines of one row
            if n > len(starts) or self._map is None:
                continue
            lo = int(starts[n - 1])
            hi = int(starts[n]) - 1 if n < len(starts) else len(self._map)
            if lo >= len(self._map):
                continue
            out[n] = self._map[lo:hi].decode("utf-8", "replace").rstrip("\r")
        return out


@dataclass(frozen=True)
class SideDetail:
    """One side of a row's details: its decisions and counts, and its raw log lines."""

    name: str            #: the path in the side's notation ("" for the root)
    present: bool        #: the side has a record at or below the path
    seq: str             #: acts in seq order joined by "→" ("" without a decision)
    depth: str           #: depth → new depth (→ re-search depth), plies
    reduction: str       #: plies, "" when none
    nodes: int           #: RESULT records at or below the path
    visits: int | None   #: the path's RESULT records (its visits), when known
    other_visit_nodes: int | None
    line: int | None     #: source line of the row's main decision
    lines: list[tuple[int, str]] = field(default_factory=list)  #: (line number, text) of the path's records
    lines_note: str = ""  #: why there are no lines, or that some were left out


@dataclass(frozen=True)
class RowDetail:
    """What the details pane shows for one row."""

    row: int
    path: str
    ply: int
    status: str
    a: SideDetail
    b: SideDetail
    delta: int                 #: nodes_a - nodes_b of the subtree
    rank: int | None           #: position in the divergences (0: the costliest), None when not a divergence
    sentence: str              #: what differs at the row itself ("" for a same row)


def _present(value) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and math.isnan(value))


class BrowseModel:
    """The aligned tree of one position as the browser sees it.

    ``alignment``: from :func:`treediff.align.align` (rows with ``line_a`` /
    ``line_b`` when known).  ``notations``: how each side writes moves
    (:func:`treediff.render.diffview.side_notation`).  ``under``: a normalized
    path; the tree starts there and the divergences are those inside its
    subtree (the path itself included, as ``diff --under``).  ``records_a`` /
    ``_b`` (the records the alignment was made from, with ``line``) and
    ``logs`` (each side's :class:`LogLines`, None for a Parquet input or a
    dataset) feed the raw lines of the details.  ``choices``: the notations
    :meth:`next_notation` cycles through, by name (``own``, ``uci``, ``san``),
    ``notation_name`` the name of ``notations`` among them.
    """

    def __init__(self, alignment: Alignment, notations: tuple[Notation | None, Notation | None] = (None, None),
                 under: str | None = None, records_a: pd.DataFrame | None = None,
                 records_b: pd.DataFrame | None = None,
                 logs: tuple[LogLines | None, LogLines | None] = (None, None),
                 labels: tuple[str, str] = ("A", "B"),
                 choices: Mapping[str, tuple[Notation | None, Notation | None]] | None = None,
                 notation_name: str = ""):
        self.alignment = alignment
        self.rows = main_rows(alignment.rows).reset_index(drop=True)
        self.notations = notations
        self.choices = dict(choices or {})
        # By name: two choices can be the same notation (own is uci for a UCI dialect).
        self.notation_name = notation_name
        self.labels = labels
        self._records = (records_a, records_b)
        self.logs = logs
        n = len(self.rows)
        self._paths = self.rows["path"].astype(object).to_numpy()
        self.parent = self.rows["parent"].to_numpy(dtype=np.int64)
        self.size = self.rows["subtree_rows"].to_numpy(dtype=np.int64)
        self.status = self.rows["status"].astype(object).to_numpy()
        self.nodes_a = self.rows["nodes_a"].to_numpy(dtype=np.int64)
        self.nodes_b = self.rows["nodes_b"].to_numpy(dtype=np.int64)
        self.root = 0
        if under:
            self.root = self._row_of(under, "--under")
        # Children index: rows are depth-first, so a stable sort by parent keeps each node's children in tree order.
        has_parent = self.parent >= 0
        child_rows = np.flatnonzero(has_parent)
        self._children = child_rows[np.argsort(self.parent[child_rows], kind="stable")]
        counts = np.bincount(self.parent[child_rows], minlength=n)
        self._offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        # Divergences in cost order (attribution frontier rows of the scope, largest |delta| first).
        self.attribution = attribute(self.rows, self.root) if n else None
        if self.attribution is not None:
            order = shown(self.attribution, len(self.attribution.frontier))
            self.divergences = self.attribution.frontier[order]
        else:
            self.divergences = np.zeros(0, dtype=np.int64)
        self._rank = np.full(n, -1, dtype=np.int64)
        self._rank[self.divergences] = np.arange(len(self.divergences))
        self._line_index: list[tuple[np.ndarray, np.ndarray] | None] = [None, None]
        self._path_set: pa.Array | None = None
        self._fen = next((nt.fen for nt in notations if nt is not None and nt.fen), None)

    # --- the tree -----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rows)

    def children(self, row: int) -> np.ndarray:
        """Row numbers of ``row``'s children, in tree order."""
        return self._children[self._offsets[row]:self._offsets[row + 1]]

    def has_children(self, row: int) -> bool:
        return bool(self._offsets[row + 1] > self._offsets[row])

    def ancestors(self, row: int) -> list[int]:
        """The rows from the browsed root down to ``row``'s parent (empty for the root)."""
        out = []
        at = int(self.parent[row]) if row != self.root else -1
        while at >= 0:
            out.append(at)
            if at == self.root:
                break
            at = int(self.parent[at])
        return out[::-1]

    def in_scope(self, row: int) -> bool:
        return self.root <= row < self.root + int(self.size[self.root])

    def _row_of(self, path: str, what: str) -> int:
        hits = np.flatnonzero(self._paths == path)
        if len(hits) == 0:
            raise InputError(f"{what} {path or '(root)'}: neither side has this path")
        return int(hits[0])

    def find(self, text: str) -> int:
        """The row of a typed path (UCI moves joined by ``/``; SAN read in the position when the FEN is known).

        Raises :class:`InputError` with a one-line reason when the path cannot be read, neither side has
        it, or it is outside ``--under``'s subtree.
        """
        path = normalize_path(text.strip(), self._fen)
        row = self._row_of(path, "path")
        if not self.in_scope(row):
            raise InputError(f"path {path}: outside the browsed subtree {self._paths[self.root] or '(root)'}")
        return row

    # --- divergences --------------------------------------------------------------------------------------

    def rank_of(self, row: int) -> int | None:
        rank = int(self._rank[row])
        return None if rank < 0 else rank

    def step_divergence(self, cursor: int | None, last: int | None, forward: bool = True) -> int | None:
        """The divergence rank to go to: after (``forward``) or before the cursor's, else the ``last`` one visited.

        Ranks count from 0 (the costliest).  From no divergence at all, forward goes to rank 0 and backward
        to the cheapest.  None when there is no further divergence that way.
        """
        n = len(self.divergences)
        if n == 0:
            return None
        here = self.rank_of(cursor) if cursor is not None else None
        base = here if here is not None else last
        if base is None:
            return 0 if forward else n - 1
        target = base + 1 if forward else base - 1
        return target if 0 <= target < n else None

    def next_notation(self) -> str:
        """Switch to the next of ``choices`` (in their order, wrapping); returns its name ("" without choices)."""
        names = list(self.choices)
        if not names:
            return ""
        at = names.index(self.notation_name) if self.notation_name in names else -1
        self.notation_name = names[(at + 1) % len(names)]
        self.notations = self.choices[self.notation_name]
        return self.notation_name

    # --- labels and details -------------------------------------------------------------------------------

    def _name(self, paths: list[str], side: int) -> list[str]:
        return named_paths(pa.array(paths, pa.string()), self.notations[side]).to_pylist()

    def labels_of(self, rows: np.ndarray | list[int]) -> list[str]:
        """One label per row: marker, move, each side's acts, depths (plies) and subtree nodes, the delta.

        Computed for the rows asked for only (the children of a node being expanded); moves in each
        side's notation (A's, B's for an only-B row).
        """
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return []
        frame = self.rows.iloc[rows]
        ply = int(frame["ply"].min())
        cells = [side_cells(frame, side, base_ply=ply, full_paths=False, notation=self.notations[i])
                 for i, side in enumerate("ab")]
        parts: list[list[str]] = []
        for k, row in enumerate(rows):
            status = str(self.status[row])
            move = cells[0].tree[k] if status != "only-B" else cells[1].tree[k]
            move = move.strip() or "(root)"
            mine = [f"{MARKERS.get(status, '?')} {move:<{MOVE_WIDTH}}"]
            for i in range(2):
                c = cells[i]
                tag = self.labels[i]
                if c.gap[k]:
                    mine.append(f"{tag}: —")
                    continue
                acts = c.acts[k] or "·"
                red = f" r{c.red[k]}" if c.red[k] else ""
                mine.append(f"{tag}: {acts} {c.depth[k]}{red} n={c.nodes[k]}".replace("  ", " "))
            parts.append(mine)
        # Siblings share an indent in the tree, so padding within the batch lines B's cells up under each other.
        move_width = max(len(p[0]) for p in parts)
        a_width = max(len(p[1]) for p in parts)
        out = []
        for (move, side_a, side_b), row in zip(parts, rows):
            text = f"{move:<{move_width}} {side_a:<{a_width}} │ {side_b}"
            delta = int(self.nodes_a[row] - self.nodes_b[row])
            if delta:
                text += f"  Δ{delta:+,}"
            rank = self.rank_of(int(row))
            if rank is not None:
                text += f"  #{rank + 1}"
            out.append(text)
        return out

    def _record_lines(self, side: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(lines sorted by row then line, offsets per row) of the side's records in the aligned iteration."""
        if self._line_index[side] is not None:
            return self._line_index[side]
        records = self._records[side]
        if records is None or "line" not in records.columns or "path" not in records.columns:
            return None
        choice = self.alignment.a if side == 0 else self.alignment.b
        keep = records["search"].to_numpy() == choice.search
        if choice.iter != 0 and "iter" in records.columns:
            keep &= records["iter"].to_numpy() == choice.iter
        recs = records.loc[keep, ["path", "line"]]
        recs = recs[recs["path"].notna() & recs["line"].notna()]
        if self._path_set is None:
            self._path_set = pa.array(self._paths, pa.string())
        # Each record's row: one hash lookup per record in C (pyarrow), no Python per record.
        found = pc.index_in(pa.Array.from_pandas(recs["path"]).cast(pa.string()), value_set=self._path_set)
        codes = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        lines = recs["line"].to_numpy(dtype=np.int64)
        known = codes >= 0
        codes, lines = codes[known], lines[known]
        order = np.lexsort((lines, codes))
        offsets = np.searchsorted(codes[order], np.arange(len(self.rows) + 1))
        self._line_index[side] = (lines[order], offsets)
        return self._line_index[side]

    def _side_detail(self, row: int, side: int) -> SideDetail:
        s = "ab"[side]
        r = self.rows.iloc[row]
        status = str(r["status"])
        present = status != ("only-B" if side == 0 else "only-A")
        cells = side_cells(self.rows.iloc[[row]], s, notation=self.notations[side], full_paths=True)
        name = cells.tree[0] if cells.tree[0] != "(root)" else ""
        if not present:
            name = self._name([str(r["path"])], side)[0]
        line = int(r[f"line_{s}"]) if f"line_{s}" in r.index and _present(r[f"line_{s}"]) else None
        visits = int(r[f"visits_{s}"]) if f"visits_{s}" in r.index and _present(r[f"visits_{s}"]) else None
        other = (int(r[f"other_visit_nodes_{s}"]) if f"other_visit_nodes_{s}" in r.index
                 and _present(r[f"other_visit_nodes_{s}"]) else None)
        lines: list[tuple[int, str]] = []
        note = ""
        log = self.logs[side]
        index = self._record_lines(side)
        numbers: list[int] = []
        if index is not None:
            sorted_lines, offsets = index
            numbers = [int(x) for x in sorted_lines[offsets[row]:offsets[row + 1]]]
        elif line is not None:
            numbers = [line]
        if len(numbers) > MAX_DETAIL_LINES:
            note = f"first {MAX_DETAIL_LINES} of {len(numbers)} lines shown"
            numbers = numbers[:MAX_DETAIL_LINES]
        if log is None:
            if numbers or line is not None:
                note = "raw lines not available: the input is not a log (Parquet file or dataset)"
            lines = [(n, "") for n in numbers]
        elif numbers:
            text = log.get(numbers)
            lines = [(n, text.get(n, "(past the end of the file)")) for n in numbers]
        return SideDetail(
            name=name, present=present, seq=cells.acts[0], depth=cells.depth[0], reduction=cells.red[0],
            nodes=int(r[f"nodes_{s}"]), visits=visits, other_visit_nodes=other, line=line, lines=lines,
            lines_note=note)

    def detail(self, row: int) -> RowDetail:
        """The details of one row (both sides, the raw log lines of the path's records, the divergence)."""
        r = self.rows.iloc[row]
        status = str(r["status"])
        name = self._name([str(r["path"])], 0)[0] or "(root)"
        sentence = difference(r, f"`{name}`") if status != "same" else ""
        return RowDetail(
            row=row, path=str(r["path"]), ply=int(r["ply"]), status=status,
            a=self._side_detail(row, 0), b=self._side_detail(row, 1),
            delta=int(self.nodes_a[row] - self.nodes_b[row]), rank=self.rank_of(row), sentence=sentence)

    def detail_lines(self, row: int) -> list[str]:
        """The details pane as plain text lines."""
        d = self.detail(row)
        head = f"{d.path or '(root)'}  ply {d.ply}  {d.status}  subtree Δ {d.delta:+,} nodes"
        if d.rank is not None:
            head += f"  divergence #{d.rank + 1} of {len(self.divergences)}"
        out = [head]
        if d.sentence:
            out.append(d.sentence)
        for i, side in enumerate((d.a, d.b)):
            tag = self.labels[i]
            if not side.present:
                out.append(f"{tag}: never reached {side.name or '(root)'}")
                continue
            bits = [side.name or "(root)", side.seq or "(no decision)", f"depth {side.depth or '-'}"]
            if side.reduction:
                bits.append(f"reduction {side.reduction}")
            bits.append(f"nodes {side.nodes:,}")
            if side.visits is not None:
                bits.append(f"visits {side.visits}")
            if side.other_visit_nodes:
                bits.append(f"other visits' nodes {side.other_visit_nodes:,}")
            if side.line is not None:
                bits.append(f"line {side.line}")
            out.append(f"{tag}: " + ", ".join(bits))
            log = self.logs[i]
            where = log.path.name if log is not None else "input"
            for number, text in side.lines:
                mark = "▶" if number == side.line else " "
                out.append(f"  {mark}{where}:{number}: {text}" if text else f"  {mark}line {number}")
            if side.lines_note:
                out.append(f"  ({side.lines_note})")
        return out


def log_lines_for(path: str | os.PathLike[str]) -> LogLines | None:
    """A :class:`LogLines` for a log input, None for a Parquet file or a dataset directory."""
    from treediff.store.magic import is_parquet_file

    p = Path(path)
    if p.is_dir() or not p.is_file() or is_parquet_file(p):
        return None
    return LogLines(p)

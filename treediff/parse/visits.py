"""Node visits: the ``visit`` and ``parent_visit`` columns, and the visit tree (main visits).

Definitions (normative text in ``docs/TREEDUMP_FORMAT.md`` §3 and ``docs/ALIGN.md``):

* A *node* is a path within one iteration of one search (and one context).
  Each RESULT record of a node closes one *visit* of it; visits are numbered
  per node in RESULT order, from 1 (``visit``, on RESULT records).
* A MOVE record decides a move at node P (its path without the last move).
  It belongs to the first following visit of P, in the same iteration, whose
  RESULT ``d`` is ≥ the record's ``d``; the next visit of P if none is (and,
  when P has no later RESULT at all, the visit still open: the number after
  P's last closed one).  That visit's number is ``parent_visit``, on MOVE
  records.  The rule puts a node's records that precede a nested, shallower
  visit of the same node (Stockfish's singular-extension verification search)
  into the outer visit they belong to.
* A value the engine wrote (``visit=`` on a MOVE or RESULT record) is used as is.

Everything is columnar: :func:`visit_numbers` sorts the records by node once
and resolves the rare MOVE whose parent's next visit is shallower in a few
vectorized rounds; the parser uses the compiled equivalent in ``_ctok`` when
it is there (:func:`records_with_visits`).

The *visit tree* (:func:`visit_tree`) links every visit to the visit of the
parent it belongs to (the one its entering decision, the latest MOVE record of
the node before the visit's RESULT, belongs to) and finds the main visits: the
root's (a node without a parent's) is its last visit in the iteration; any
other node's is its deepest visit (largest RESULT ``d``, the last among
equals) among those that belong to its parent's main visit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from treediff.store.arrays import equals, int32_where, numbers

try:  # the compiled post-pass (treediff/parse/_ctok.c); optional, as is the tokenizer's
    from treediff.parse import _ctok  # type: ignore[attr-defined]  # (compiled: no stub)
except ImportError:
    _ctok = None

#: "No value" in the given-visit arrays handed to :func:`visit_numbers` (and to the compiled pass).
NO_VISIT = np.iinfo(np.int32).min


def compiled_available() -> bool:
    """Whether :func:`records_with_visits` runs the compiled pass (``_ctok.visits``)."""
    return _ctok is not None and hasattr(_ctok, "visits")


# ---------------------------------------------------------------------- visit and parent_visit
def visit_numbers(
    node: np.ndarray, is_result: np.ndarray, depth: np.ndarray, given: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``visit`` (meaningful on RESULT records) and ``parent_visit`` (on MOVE records) of every record.

    ``node``: int64, the node each record belongs to: a RESULT's own node, a
    MOVE's parent node; keys must differ between iterations and searches.
    Records are in record order (``seq`` order within a node).  ``depth``:
    the record's ``d`` (any unit; NaN when unknown: never ≥ anything).
    ``given``: the value the engine wrote, :data:`NO_VISIT` where it wrote none.
    """
    n = len(node)
    visit = np.zeros(n, dtype=np.int64)
    parent_visit = np.zeros(n, dtype=np.int64)
    if n == 0:
        return visit, parent_visit
    is_result = np.asarray(is_result, dtype=bool)
    order = np.argsort(node, kind="stable")
    sorted_node = node[order]
    res = is_result[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(sorted_node[1:], sorted_node[:-1], out=first[1:])
    seg = np.cumsum(first) - 1
    seg_start = np.flatnonzero(first)
    seg_end = np.append(seg_start[1:], n)[seg]
    before = np.cumsum(res) - res                      # RESULT records before, over the whole sorted array
    k = before - before[seg_start][seg]                # ... of the same node
    value = k + 1                                      # the RESULT's visit (ordinal, or as written)
    if given is not None:
        g = np.asarray(given, dtype=np.int64)[order]
        written = g != NO_VISIT
        value = np.where(written, g, value)
    # Next RESULT at or after each sorted position (n where none), then kept within the node.
    at = np.where(res, np.arange(n), n)
    nxt = np.minimum.accumulate(at[::-1])[::-1]
    d = np.asarray(depth, dtype=np.float64)[order]
    visit[order[res]] = value[res]

    moves = np.flatnonzero(~res)
    end = seg_end[moves]
    first_next = nxt[moves]
    has_next = first_next < end
    safe = np.minimum(first_next, n - 1)
    # The next visit when there is one, else the one still open.
    pv = np.where(has_next, value[safe], k[moves] + 1)
    d_move = d[moves]
    cand = first_next
    todo = np.flatnonzero(has_next & ~(d[safe] >= d_move))
    while len(todo):
        # The following RESULT of the same node: the first at or after the candidate + 1.
        step = cand[todo] + 1
        c = np.where(step < n, nxt[np.minimum(step, n - 1)], n)
        inside = c < end[todo]
        c_safe = np.minimum(c, n - 1)
        deep = inside & (d[c_safe] >= d_move[todo])
        pv[todo[deep]] = value[c_safe[deep]]
        cand[todo] = c
        todo = todo[inside & ~deep]
    parent_visit[order[moves]] = pv
    if given is not None:
        g_all = np.asarray(given, dtype=np.int64)
        written = (g_all != NO_VISIT) & ~is_result
        parent_visit[written] = g_all[written]
    return visit, parent_visit


def parent_paths(paths: pa.Array) -> pa.Array:
    """Each path without its last move (``""`` for a one-move path or the root)."""
    stripped = pc.replace_substring_regex(paths, pattern=r"/[^/]*$", replacement="")
    return pc.if_else(pc.match_substring(paths, "/"), stripped, pa.scalar("", paths.type))


# ---------------------------------------------------------------------- the parser's post-pass
def records_with_visits(table: pa.Table, primary: dict[int, str | None] | None = None) -> pa.Table:
    """A records table of whole iterations with its ``visit`` and ``parent_visit`` columns computed.

    The table's ``visit`` column holds what the engine wrote (``visit=``, on
    MOVE and RESULT records alike, null where nothing was written); it
    becomes the RESULTs' visit, and the MOVE records' written values their
    ``parent_visit``.  An iteration is a run of records of one search under
    one ITER (a search that repeats an ITER depth numbers the repeat anew).
    ``primary``: with ``--all-contexts``, each search's kept context label (a
    record without ``ctx`` belongs to it); the table then holds whole searches
    and an iteration is told apart by context too.
    """
    if table.num_rows == 0:
        return table
    return _with_visit_columns(table, *visit_columns(table, primary))


def visit_columns(table: pa.Table, primary: dict[int, str | None] | None = None,
                  keys: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(visit, parent_visit) of every record of ``table`` (see :func:`records_with_visits`).

    ``keys``: the records' :func:`iteration_keys`, when the caller has them.
    """
    n = table.num_rows
    key = iteration_keys(table) if keys is None else keys
    ctx = table.column("ctx")
    runs = primary is None or ctx.null_count == n
    group = key if runs else key * 4096 + _context_codes(table, primary or {})
    is_result = equals(table.column("tag"), "RESULT")
    depth = numbers(table.column("depth"), np.float32, np.nan)
    written = table.column("visit")
    given = numbers(written, np.int32, NO_VISIT) if written.null_count != n else None
    path = table.column("path").combine_chunks()
    if compiled_available() and path.type == pa.string():
        return _compiled(path, group, is_result, depth, given, contiguous=runs)
    return _by_sorting(path, group, is_result, depth, given, contiguous=runs)


# Columns go to numpy straight from their Arrow buffers (treediff.store.arrays): pyarrow's to_numpy imports
# pandas (0.15 s of start-up, see tests/test_cli_startup.py), and going through polars costs conversions.
def iteration_keys(table: pa.Table) -> np.ndarray:
    """(search, iter) of each record packed in one int64."""
    search = numbers(table.column("search"), np.int64, -1)
    return (search << 17) | (numbers(table.column("iter"), np.int64, 0) & 0xFFFF)


def _context_codes(table: pa.Table, primary: dict[int, str | None]) -> np.ndarray:
    """Each record's effective context as a small code (a record without ``ctx`` is in its search's kept one)."""
    import polars as pl  # here: a report of a Parquet file reads this module without the parser's polars

    cols = pl.from_arrow(table.select(["search", "ctx"]))
    assert isinstance(cols, pl.DataFrame)  # (a table gives a frame; for mypy)
    kept = cols.get_column("search").replace_strict(
        list(primary), [p or "" for p in primary.values()], default="", return_dtype=pl.String)
    ctx = pl.select(pl.coalesce(cols.get_column("ctx").cast(pl.String), kept)).to_series()
    codes = ctx.cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy()
    return codes % 4096


def _compiled(path: pa.Array, group: np.ndarray, is_result: np.ndarray, depth: np.ndarray,
              given: np.ndarray | None, contiguous: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`visit_numbers` by the compiled pass (``_ctok.visits``), which hashes the paths itself.

    ``group``: each record's iteration key; with ``contiguous`` every run of
    equal keys is an iteration, else equal keys are, wherever they are.
    """
    n = len(path)
    order = None
    if not contiguous:
        order = np.argsort(group, kind="stable")
        if bool(np.all(order == np.arange(n))):
            order = None
        else:
            path = path.take(pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(order)]))
            group, is_result, depth = group[order], is_result[order], depth[order]
            given = given[order] if given is not None else None
    starts = np.concatenate(([0], np.flatnonzero(group[1:] != group[:-1]) + 1, [n])).astype(np.int64)
    _, offsets, data = path.buffers()
    offsets_np = np.frombuffer(offsets, dtype=np.int32, count=n + 1, offset=path.offset * 4)
    visit = np.empty(n, dtype=np.int32)
    parent_visit = np.empty(n, dtype=np.int32)
    _ctok.visits(
        data if data is not None else pa.py_buffer(b""),
        np.ascontiguousarray(offsets_np),
        starts,
        np.ascontiguousarray(is_result).view(np.uint8),
        np.ascontiguousarray(depth, dtype=np.float32),
        np.ascontiguousarray(given if given is not None else np.full(n, NO_VISIT, dtype=np.int32), dtype=np.int32),
        visit,
        parent_visit,
    )
    if order is not None:
        back_v, back_p = np.empty_like(visit), np.empty_like(parent_visit)
        back_v[order], back_p[order] = visit, parent_visit
        visit, parent_visit = back_v, back_p
    return visit, parent_visit


def _by_sorting(path: pa.Array, group: np.ndarray, is_result: np.ndarray, depth: np.ndarray,
                given: np.ndarray | None, contiguous: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The numpy pass: node keys from the paths (a MOVE's parent path), then :func:`visit_numbers`."""
    import polars as pl

    if contiguous:  # runs of equal keys: number them
        group = np.concatenate(([0], np.cumsum(group[1:] != group[:-1]))).astype(np.int64)
    node_paths = pc.if_else(pl.Series(is_result, dtype=pl.Boolean).to_arrow(), path, parent_paths(path))
    encoded = pc.dictionary_encode(node_paths)
    codes = pl.from_arrow(encoded.indices).cast(pl.Int64).to_numpy()
    node = group * (len(encoded.dictionary) + 1) + codes
    return visit_numbers(node, is_result, depth, given)


@dataclass
class _Held:
    """A chunk waiting in :class:`VisitStage`, with the columns the numbering reads, as numpy."""

    table: pa.Table
    keys: np.ndarray          #: :func:`iteration_keys`
    is_result: np.ndarray
    depth: np.ndarray         #: float32, NaN unknown
    given: np.ndarray | None  #: engine-written visit= (NO_VISIT where none); None when the chunk has none
    visit: np.ndarray
    parent_visit: np.ndarray

    @classmethod
    def of(cls, table: pa.Table) -> "_Held":
        n = table.num_rows
        written = table.column("visit")
        given = numbers(written, np.int32, NO_VISIT) if written.null_count != n else None
        return cls(table, iteration_keys(table), equals(table.column("tag"), "RESULT"),
                   numbers(table.column("depth"), np.float32, np.nan), given,
                   np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32))


class VisitStage:
    """Numbers visits over whole iterations although the parser's chunks cut them.

    :meth:`push` takes each chunk's records table in order and returns the
    chunk tables whose every record is in a finished iteration, visits filled
    in (the same tables, in order: row groups and dictionaries stay as the
    chunks made them).  A chunk holding records of the iteration still open
    waits, with its successors, until that iteration ends (with
    ``--all-contexts``: until its search ends, since contexts interleave);
    :meth:`flush` releases everything at the end of a log.  Numbers do not
    depend on where chunks were cut.  Memory held: the chunks that the open
    iteration spans.  Used from one thread at a time.
    """

    def __init__(self, all_contexts: bool = False):
        self._all_contexts = all_contexts
        self._primary: dict[int, str | None] = {}
        self._held: list[_Held] = []
        #: Rows of the held chunks (from the first) whose numbers are final.
        self._done = 0

    def push(self, table: pa.Table, open_search: int | None,
             primary: dict[int, str | None] | None = None) -> list[pa.Table]:
        """Add a chunk's records; ``open_search``: the search that may still get records (None: none)."""
        if primary:
            self._primary.update(primary)
        if table.num_rows:
            self._held.append(_Held.of(table))
        if not self._held:
            return []
        return self._release(self._open_start(open_search))

    def flush(self) -> list[pa.Table]:
        """Every chunk still held (the end of a log: nothing is open any more)."""
        return self._release(sum(h.table.num_rows for h in self._held))

    def _open_start(self, open_search: int | None) -> int:
        """Row (counted over the held chunks) where what must wait starts."""
        total = sum(h.table.num_rows for h in self._held)
        keys = self._held[-1].keys
        if open_search is None or (keys[-1] >> 17) != open_search:
            return total
        before = total - len(keys)
        if self._all_contexts:
            # The open search's first row (search numbers never decrease).
            offset = 0
            for h in self._held:
                hit = np.flatnonzero((h.keys >> 17) == open_search)
                if len(hit):
                    return offset + int(hit[0])
                offset += len(h.keys)
            return total
        # The start of the last run of (search, iter): in the last chunk, or earlier if it spans chunks.
        change = np.flatnonzero(keys[1:] != keys[:-1])
        if len(change):
            return before + int(change[-1] + 1)
        start = before
        for h in reversed(self._held[:-1]):
            change = np.flatnonzero(h.keys != keys[-1])
            if len(change):
                return start - len(h.keys) + int(change[-1] + 1)
            start -= len(h.keys)
        return start

    def _release(self, upto: int) -> list[pa.Table]:
        """Number rows ``_done`` .. ``upto`` (whole iterations) and hand on the chunks now complete."""
        if upto > self._done:
            self._number(self._done, upto)
            self._done = upto
        out = []
        while self._held and len(self._held[0].keys) <= self._done:
            h = self._held.pop(0)
            self._done -= len(h.keys)
            out.append(_with_visit_columns(h.table, h.visit, h.parent_visit, h.is_result))
        return out

    def _number(self, lo: int, hi: int) -> None:
        """Compute the numbers of held rows ``lo`` .. ``hi`` and store them in their chunks' arrays."""
        where, offset = [], 0
        for h in self._held:
            a, b = max(lo - offset, 0), min(hi - offset, h.table.num_rows)
            if a < b:
                where.append((h, a, b))
            offset += h.table.num_rows

        def joined(get) -> np.ndarray:
            parts = [get(h)[a:b] for h, a, b in where]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        keys, is_result, depth = joined(lambda h: h.keys), joined(lambda h: h.is_result), joined(lambda h: h.depth)
        given = None
        if any(h.given is not None for h, _, _ in where):
            given = joined(lambda h: h.given if h.given is not None else np.full(len(h.keys), NO_VISIT, np.int32))
        paths = [h.table.column("path").slice(a, b - a) for h, a, b in where]
        path = pa.chunked_array([c for p in paths for c in p.chunks], type=paths[0].type).combine_chunks()
        runs = not self._all_contexts
        group = keys
        if not runs:
            tables = [h.table.slice(a, b - a) for h, a, b in where]
            region = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            if region.column("ctx").null_count == region.num_rows:
                runs = True
            else:
                group = keys * 4096 + _context_codes(region, self._primary)
        if compiled_available() and path.type == pa.string():
            visit, parent_visit = _compiled(path, group, is_result, depth, given, contiguous=runs)
        else:
            visit, parent_visit = _by_sorting(path, group, is_result, depth, given, contiguous=runs)
        at = 0
        for h, a, b in where:
            h.visit[a:b] = visit[at:at + b - a]
            h.parent_visit[a:b] = parent_visit[at:at + b - a]
            at += b - a


def _with_visit_columns(table: pa.Table, visit: np.ndarray, parent_visit: np.ndarray,
                        is_result: np.ndarray | None = None) -> pa.Table:
    """``table`` with its ``visit`` (RESULT rows) and ``parent_visit`` (MOVE rows) columns replaced."""
    if is_result is None:
        is_result = equals(table.column("tag"), "RESULT")
    i = table.schema.get_field_index("visit")
    table = table.set_column(i, table.schema.field(i), int32_where(visit, is_result))
    j = table.schema.get_field_index("parent_visit")
    return table.set_column(j, table.schema.field(j), int32_where(parent_visit, ~is_result))


# ---------------------------------------------------------------------- the visit tree
@dataclass
class VisitTree:
    """The visits of one iteration's nodes, as arrays over its RESULT records (in record order).

    ``code`` numbers the nodes (paths) as the caller gave them; arrays named
    per RESULT are indexed like ``result`` (the RESULT records' positions).
    """

    result: np.ndarray        #: record index of each RESULT
    code: np.ndarray          #: its node
    visit: np.ndarray         #: its visit number
    entering: np.ndarray      #: record index of its entering decision (latest MOVE of the node before it), -1: none
    parent_visit: np.ndarray  #: the visit of the parent node it belongs to (0 for a node without a parent)
    parent_result: np.ndarray #: RESULT index (into these arrays) of that parent visit; -1 when none closed it
    is_main: np.ndarray       #: whether it is its node's main visit
    anchor: np.ndarray        #: the deepest node on its chain of visits whose visit is main (-1: none)
    nodes: np.ndarray         #: RESULT records under this visit, itself included
    main_visit: np.ndarray    #: per node code: its main visit's number, 0 when it has none


def visit_tree(
    code: np.ndarray,
    parent: np.ndarray,
    ply: np.ndarray,
    is_result: np.ndarray,
    is_move: np.ndarray,
    depth: np.ndarray,
    visit: np.ndarray,
    parent_visit: np.ndarray,
) -> VisitTree:
    """Link one iteration's visits into a tree and find the main visits (see the module docstring).

    Per record (record order): ``code`` (a RESULT's node, a MOVE's decided
    child node, i.e. its own path), ``is_result``, ``is_move``, ``depth``,
    ``visit`` (RESULTs) and ``parent_visit`` (MOVEs; < 1 where unknown).  Per
    node code: ``parent`` (-1 for the root or a node whose parent is not
    known) and ``ply``.

    A visit whose entering decision is missing (a RESULT without a MOVE of its
    path before it) belongs to the first visit of the parent that closes after
    it (the one still open if none does).  A node whose visits all belong to
    other visits of its parent has no main visit, nor has anything below it.
    """
    code = np.asarray(code, dtype=np.int64)
    n = len(code)
    n_codes = len(parent)
    res = np.flatnonzero(is_result)
    mov = np.flatnonzero(is_move)
    r_code = code[res]
    r_visit = np.asarray(visit, dtype=np.int64)[res]
    r_depth = np.asarray(depth, dtype=np.float64)[res]
    r_parent = np.asarray(parent, dtype=np.int64)[r_code] if len(res) else np.zeros(0, dtype=np.int64)
    span = np.int64(n + 1)

    # Entering decision: the latest MOVE of the same path before the RESULT.
    m_key = np.sort(code[mov] * span + mov)
    j = np.searchsorted(m_key, r_code * span + res) - 1
    j_safe = np.maximum(j, 0)
    has_entry = (j >= 0) & (len(m_key) > 0)
    if len(m_key):
        has_entry &= (m_key[j_safe] // span) == r_code
        entering = np.where(has_entry, m_key[j_safe] % span, -1)
    else:
        entering = np.full(len(res), -1, dtype=np.int64)
    pv_all = np.asarray(parent_visit, dtype=np.int64)
    r_pv = np.where(has_entry, pv_all[np.maximum(entering, 0)], 0) if len(res) else np.zeros(0, dtype=np.int64)

    # Without an entering decision (or its parent_visit): the parent's first visit to close after it.
    r_key_sorted_order = np.argsort(r_code * span + res, kind="stable")
    r_key = (r_code * span + res)[r_key_sorted_order]
    lost = np.flatnonzero((r_pv < 1) & (r_parent >= 0))
    if len(lost):
        q = np.searchsorted(r_key, r_parent[lost] * span + res[lost])
        q_safe = np.minimum(q, len(r_key) - 1)
        follows = (q < len(r_key)) & ((r_key[q_safe] // span) == r_parent[lost])
        seg_first = np.searchsorted(r_key, r_parent[lost] * span)
        r_pv[lost] = np.where(follows, r_visit[r_key_sorted_order[q_safe]], q - seg_first + 1)
    r_pv[r_parent < 0] = 0

    # The parent visit's RESULT: RESULTs sorted by (node, visit).
    vmax = np.int64(max(int(r_visit.max(initial=0)), int(r_pv.max(initial=0))) + 2)
    v_order = np.argsort(r_code * vmax + np.clip(r_visit, 0, vmax - 1), kind="stable")
    v_key = (r_code * vmax + np.clip(r_visit, 0, vmax - 1))[v_order]
    parent_result = np.full(len(res), -1, dtype=np.int64)
    linked = np.flatnonzero(r_parent >= 0)
    if len(linked) and len(v_key):
        want = r_parent[linked] * vmax + np.clip(r_pv[linked], 0, vmax - 1)
        q = np.searchsorted(v_key, want)
        q_safe = np.minimum(q, len(v_key) - 1)
        hit = (q < len(v_key)) & (v_key[q_safe] == want)
        parent_result[linked[hit]] = v_order[q_safe[hit]]

    # Main visit of a node without a parent: its last visit, or the one its MOVE records show still open.
    main_visit = np.zeros(n_codes, dtype=np.int64)
    tops = np.asarray(parent, dtype=np.int64) < 0
    np.maximum.at(main_visit, r_code[tops[r_code]], r_visit[tops[r_code]])
    if len(mov):
        m_parent = np.asarray(parent, dtype=np.int64)[code[mov]]
        at_top = np.flatnonzero((m_parent >= 0) & tops[np.maximum(m_parent, 0)])
        if len(at_top):
            np.maximum.at(main_visit, m_parent[at_top], pv_all[mov[at_top]])

    # Top-down, ply by ply: main visits, and each visit's anchor on the main line.
    is_main = np.zeros(len(res), dtype=bool)
    anchor = np.full(len(res), -1, dtype=np.int64)
    r_ply = np.asarray(ply, dtype=np.int64)[r_code] if len(res) else np.zeros(0, dtype=np.int64)
    by_ply = np.argsort(r_ply, kind="stable")
    bounds = np.flatnonzero(np.r_[True, r_ply[by_ply][1:] != r_ply[by_ply][:-1], True]) if len(res) else [0]
    depth_key = np.where(np.isnan(r_depth), -np.inf, r_depth)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx = by_ply[lo:hi]
        top = r_parent[idx] < 0
        t = idx[top]
        if len(t):
            # The last RESULT with the main visit's number.
            m = t[r_visit[t] == main_visit[r_code[t]]]
            if len(m):
                last = np.unique(r_code[m[::-1]], return_index=True)[1]
                is_main[m[::-1][last]] = True
            anchor[t[is_main[t]]] = r_code[t[is_main[t]]]
        o = idx[~top]
        if len(o):
            mv = main_visit[r_parent[o]]
            cand = o[(mv > 0) & (r_pv[o] == mv)]
            if len(cand):
                # Deepest, last among equals: sort by (node, depth, position), take each node's last.
                srt = cand[np.lexsort((res[cand], depth_key[cand], r_code[cand]))]
                last = np.r_[r_code[srt][1:] != r_code[srt][:-1], True]
                chosen = srt[last]
                is_main[chosen] = True
                main_visit[r_code[chosen]] = r_visit[chosen]
            # Anchor: itself if main; else its parent visit's anchor (a main open top visit: the top).
            pr = parent_result[o]
            a = np.where(pr >= 0, anchor[np.maximum(pr, 0)], -1)
            p = r_parent[o]
            open_main_top = (pr < 0) & tops[p] & (r_pv[o] == main_visit[p]) & (main_visit[p] > 0)
            a = np.where(open_main_top, p, a)
            anchor[o] = np.where(is_main[o], r_code[o], a)

    # Bottom-up: RESULT records under each visit.
    nodes = np.ones(len(res), dtype=np.int64)
    for lo, hi in zip(bounds[:-1][::-1], bounds[1:][::-1]):
        idx = by_ply[lo:hi]
        idx = idx[parent_result[idx] >= 0]
        if len(idx):
            np.add.at(nodes, parent_result[idx], nodes[idx])

    return VisitTree(result=res, code=r_code, visit=r_visit, entering=entering, parent_visit=r_pv,
                     parent_result=parent_result, is_main=is_main, anchor=anchor, nodes=nodes,
                     main_visit=main_visit)


# ---------------------------------------------------------------------- main visits without paths
def main_visit_flags(
    group: np.ndarray,
    ply: np.ndarray,
    is_result: np.ndarray,
    is_move: np.ndarray,
    move: np.ndarray,
    depth: np.ndarray,
    visit: np.ndarray,
    parent_visit: np.ndarray,
) -> np.ndarray:
    """Whether each RESULT record closes its node's main visit, from ply, last move and the visit columns.

    For report tables, which read no paths (strings are costly to read).
    Records are in record order; ``group`` numbers iterations (one search, one
    iteration; several per call), ``move`` is a code of the path's last move,
    ``visit`` / ``parent_visit`` are < 1 where unknown.  It gives
    :func:`visit_tree`'s main visits for depth-first traces (what every
    TREEDUMP producer writes): a RESULT's entering decision is the latest MOVE
    before it at its ply with its last move; the visit of the parent it
    belongs to (``parent_visit`` of that decision) is closed by the first
    RESULT one ply up, after it, with that visit number; among the children
    of one visit, a node is its last move.  Iterations where no visit or
    parent visit exceeds 1 are answered at once: every RESULT is main.
    """
    n = len(group)
    is_main = np.asarray(is_result, dtype=bool).copy()
    if n == 0:
        return is_main
    group = np.asarray(group, dtype=np.int64)
    visit = np.asarray(visit, dtype=np.int64)
    parent_visit = np.asarray(parent_visit, dtype=np.int64)
    revisit = (is_result & (visit > 1)) | (is_move & (parent_visit > 1))
    if not revisit.any():
        return is_main
    # Only the iterations with a node visited twice need the work.
    groups = np.unique(group[revisit])
    rows = np.flatnonzero(np.isin(group, groups))
    is_main[rows] = False
    g = np.searchsorted(groups, group[rows]).astype(np.int64)
    p = np.asarray(ply, dtype=np.int64)[rows]
    res = np.asarray(is_result, dtype=bool)[rows]
    mov = np.asarray(is_move, dtype=bool)[rows]
    mv = np.asarray(move, dtype=np.int64)[rows]
    d = np.asarray(depth, dtype=np.float64)[rows]
    v = visit[rows]
    pv_all = parent_visit[rows]
    pos = np.arange(len(rows), dtype=np.int64)
    span = np.int64(len(rows) + 1)
    big_p = np.int64(int(p.max(initial=0)) + 2)
    big_m = np.int64(int(mv.max(initial=0)) + 2)
    big_v = np.int64(max(int(v.max(initial=0)), int(pv_all.max(initial=0))) + 2)

    r = np.flatnonzero(res)
    m = np.flatnonzero(mov)
    r_p, r_v = p[r], np.clip(v[r], 0, big_v - 1)
    # Entering decision: the latest MOVE before the RESULT in its iteration, at its ply, with its last move.
    m_key = np.sort(((g[m] * big_p + p[m]) * big_m + mv[m] + 1) * span + pos[m])
    q_key = ((g[r] * big_p + r_p) * big_m + mv[r] + 1) * span + pos[r]
    j = np.searchsorted(m_key, q_key) - 1
    j_safe = np.maximum(j, 0)
    has_entry = (j >= 0) & (len(m_key) > 0)
    if len(m_key):
        has_entry &= (m_key[j_safe] // span) == (q_key // span)
    entry = np.where(has_entry, m_key[j_safe] % span if len(m_key) else 0, -1)
    r_pv = np.where(has_entry, pv_all[np.maximum(entry, 0)], 0)
    # The parent visit's RESULT: the first RESULT one ply up, after it, with that visit number.
    v_order = np.lexsort((pos[r], r_v, r_p, g[r]))
    v_key = (((g[r] * big_p + r_p) * big_v + r_v) * span + pos[r])[v_order]
    up = r_p >= 1
    lost = up & (r_pv < 1)
    if lost.any():
        # No entering decision (or no parent_visit on it): the parent's first visit to close after it.
        a_order = np.lexsort((pos[r], r_p, g[r]))
        a_key = ((g[r] * big_p + r_p) * span + pos[r])[a_order]
        want = (g[r][lost] * big_p + r_p[lost] - 1) * span + pos[r][lost]
        k = np.searchsorted(a_key, want)
        k_safe = np.minimum(k, len(a_key) - 1)
        ok = (k < len(a_key)) & ((a_key[k_safe] // span) == want // span)
        r_pv[np.flatnonzero(lost)[ok]] = r_v[a_order[k_safe[ok]]]
    parent_res = np.full(len(r), -1, dtype=np.int64)
    want = ((g[r] * big_p + r_p - 1) * big_v + np.clip(r_pv, 0, big_v - 1)) * span + pos[r]
    k = np.searchsorted(v_key, want)
    k_safe = np.minimum(k, len(v_key) - 1)
    ok = up & (r_pv >= 1) & (k < len(v_key)) & ((v_key[k_safe] // span) == want // span)
    parent_res[ok] = v_order[k_safe[ok]]

    # The root's main visit: its last, or the one its MOVE records show still open.
    n_groups = len(groups)
    root_main = np.zeros(n_groups, dtype=np.int64)
    root = r[r_p == 0]
    np.maximum.at(root_main, g[root], np.clip(v[root], 0, None))
    ply1 = m[p[m] == 1]
    np.maximum.at(root_main, g[ply1], np.clip(pv_all[ply1], 0, None))
    main = np.zeros(len(r), dtype=bool)
    # The last root RESULT with the main number.
    at_root = np.flatnonzero(r_p == 0)
    hit = at_root[r_v[at_root] == root_main[g[r][at_root]]]
    if len(hit):
        last = np.unique(g[r][hit][::-1], return_index=True)[1]
        main[hit[::-1][last]] = True
    depth_key = np.where(np.isnan(d[r]), -np.inf, d[r])
    for level in range(1, int(r_p.max(initial=0)) + 1):
        at = np.flatnonzero(r_p == level)
        if not len(at):
            continue
        pr = parent_res[at]
        in_main = np.where(pr >= 0, main[np.maximum(pr, 0)], False)
        if level == 1:  # a root visit that never closed
            in_main |= (pr < 0) & (r_pv[at] >= 1) & (r_pv[at] == root_main[g[r][at]])
        cand = at[in_main]
        if not len(cand):
            continue
        # Per (parent visit, last move): the deepest, the last among equals.
        parent_id = np.where(parent_res[cand] >= 0, parent_res[cand], -1 - g[r][cand])
        srt = cand[np.lexsort((pos[r][cand], depth_key[cand], mv[r][cand], parent_id))]
        sid = np.where(parent_res[srt] >= 0, parent_res[srt], -1 - g[r][srt])
        last = np.r_[(sid[1:] != sid[:-1]) | (mv[r][srt][1:] != mv[r][srt][:-1]), True]
        main[srt[last]] = True
    is_main[rows[r]] = main
    return is_main

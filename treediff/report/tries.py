"""Move tries, node visits and cutoffs of one batch of records: the columnar derivation the analytics tables share.

Definitions (normative text in ``docs/REPORTS.md``, "Move tries and cutoffs"):

* A **move try** is one move at one node visit: all MOVE records with the same
  path and the same ``parent_visit`` (in one iteration of one search), except
  that records of kind NODE_CUT (``PROBCUT``, ``NULLBAILOUT``) form tries of
  their own.  Its *first kind* is the kind of its first record, its *final
  kind* that of its last; its other columns are those of its first record.
* A **node visit** is closed by one RESULT record (its ``visit``); a MOVE
  record belongs to its parent node's visit ``parent_visit``.  A **cutoff
  visit** ends with ``bound=lower``; its **cutoff decision** is its last MOVE
  record of kind SEARCH, REDUCE, RESEARCH, EXTEND, NULL_PROBE or NODE_CUT.
  Class: ``move`` (SEARCH/REDUCE/RESEARCH/EXTEND), ``null`` (NULL_PROBE),
  ``probcut`` (NODE_CUT), ``multicut`` (the node's previous visit is
  shallower, entered by the same decision, ended ``bound=lower``, and no
  decision of this visit follows it; it takes precedence), ``none`` (no
  decision: a TT or static cutoff).
* A try **failed high** when it holds its visit's cutoff decision (classes
  ``move``, ``null``, ``probcut``).
* A try's **subtree nodes** are the RESULT records of the visits it entered
  (the visits of its path whose entering decision, the latest MOVE record of
  that path before the visit's RESULT, is one of the try's records) and of
  everything below them (:func:`treediff.parse.visits.visit_tree`): in a
  depth-first trace, the RESULT records in its span at or below its path.

The derivation runs over the batch's records put in (search, seq) order, in
one of two implementations that give the same :class:`Tries`: the compiled
kernel ``_ctries`` (a few linear passes in C with hash tables; used when it
is built) and numpy (paths dictionary-encoded once by pyarrow, never split in
Python; the fallback, and what ``TREEDIFF_NUMPY_TRIES=1`` or
``derive(..., compiled=False)`` runs).  A path's parent node is its path
without its last move (the text before its last ``/``).
"""
from __future__ import annotations

import importlib
import os
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from treediff.report.table import Batch

if TYPE_CHECKING:  # pandas, polars: imported where they are used, not with the module (start-up, issue 13)
    import pandas as pd
    import polars as pl

try:  # the compiled derivation (treediff/report/_ctries.c); optional: numpy does the same without it
    _ctries: Any = importlib.import_module("treediff.report._ctries")  # (compiled: no stub)
except ImportError:
    _ctries = None

#: Environment variable: set to ``1`` to run the numpy derivation even where the compiled one is built.
NUMPY_ENV = "TREEDIFF_NUMPY_TRIES"

#: Kinds a cutoff decision can have (the searched decisions and the aggregate node tests).
DECISION_KINDS = ("SEARCH", "REDUCE", "RESEARCH", "EXTEND", "NULL_PROBE", "NODE_CUT")
#: Cutoff classes, in display order; a visit's class code indexes this tuple (-1: not a cutoff visit).
CLASSES = ("move", "null", "probcut", "multicut", "none")
MOVE, NULL, PROBCUT, MULTICUT, NONE = range(5)
_CLASS_OF_KIND = {"SEARCH": MOVE, "REDUCE": MOVE, "RESEARCH": MOVE, "EXTEND": MOVE, "NULL_PROBE": NULL,
                  "NODE_CUT": PROBCUT}

#: Records columns the derivation reads; ``bound``, ``visit`` and ``parent_visit`` (else no node visits: see
#: :func:`derive`) are read when present.  A table reads only these and its own columns (each one a
#: table does not use costs reading and converting it, issue 13): a move is its path's last step, so the
#: ``move`` column is never needed.
COLUMNS = ("tag", "kind", "path", "ply", "seq", "iter", "depth")
OPTIONAL = ("bound", "visit", "parent_visit")
#: What :func:`shadow_counts` reads besides: each decision's ``act``; ``fh`` when present.
SHADOW_READS = ("act",)
SHADOW_OPTIONAL = ("fh",)


@dataclass
class Tries:
    """The move tries, visits and cutoffs of one batch.  Every index is a record position in the batch.

    Per try (in trace order of their first records): ``first``, ``last``
    (records), ``fh`` (failed high), ``subtree`` (subtree nodes), ``final_kind``
    (the kind code of the last record, codes of ``batch.codes("kind")``).
    Per closed visit (one per RESULT record): ``v_result`` (the RESULT),
    ``v_class`` (cutoff class code, -1 when the visit is not a cutoff),
    ``v_decision`` (the cutoff decision's record, -1 when none),
    ``v_first`` (the visit's first MOVE record, else its RESULT: where it is
    grouped), ``v_main`` (the node's main visit), ``v_entering`` (entering
    decision record, -1 when none), ``v_parent`` (the RESULT of the parent
    visit it belongs to, -1 when unknown).  ``try_of``: each record's try (-1
    for RESULT records).
    """

    first: np.ndarray
    last: np.ndarray
    fh: np.ndarray
    subtree: np.ndarray
    final_kind: np.ndarray
    try_of: np.ndarray
    v_result: np.ndarray
    v_class: np.ndarray
    v_decision: np.ndarray
    v_first: np.ndarray
    v_main: np.ndarray
    v_entering: np.ndarray
    v_parent: np.ndarray
    v_nodes: np.ndarray
    #: Per record (batch order): its path's code (one dictionary for the batch: equal paths, equal codes),
    #: its run (iteration of a search, numbered in trace order), and, on MOVE records, whether it is in its
    #: parent node's main visit.
    rec_path: np.ndarray
    rec_run: np.ndarray
    rec_in_main: np.ndarray
    #: Per record (batch order): the code of its path without the last move (its parent node's path; a MOVE
    #: record's node), in :attr:`rec_path`'s dictionary; -1 for a record of ply 0.
    rec_parent: np.ndarray
    #: Per closed visit: whether it belongs to its parent node's main visit (False at the root).
    v_in_parent_main: np.ndarray
    #: SHADOW records (typhoon_py's ``--shadow``) and each one's decision: the latest MOVE record of its path
    #: at or before it in its iteration (-1 when there is none).
    shadow: np.ndarray
    shadow_decision: np.ndarray

    @property
    def n(self) -> int:
        return len(self.first)


def _order(batch: Batch) -> tuple[np.ndarray, bool]:
    """Positions of the batch's records in (search row, seq) order, and whether that is the batch's order."""
    seq = np.asarray(batch.records["seq"], dtype=np.int64)
    n = len(seq)
    if n < 2:
        return np.arange(n, dtype=np.int64), True
    key = batch.srow * (int(seq.max()) + 1) + seq
    if np.all(key[1:] >= key[:-1]):
        return np.arange(n, dtype=np.int64), True
    order = np.argsort(key, kind="stable").astype(np.int64)
    return order, _is_identity(order)


def _paths(batch: Batch, order: np.ndarray, identity: bool) -> pa.Array:
    """The records' paths in ``order`` as one Arrow large_string array without nulls (root ``""``)."""
    arr = batch.arrow_strings("path")  # (one array, shared with scope)
    if not identity:  # not already in trace order
        arr = pc.take(arr, pa.array(order))
    return pc.fill_null(arr, "")


def _is_identity(order: np.ndarray) -> bool:
    return bool(order[0] == 0 and np.all(np.diff(order) == 1)) if len(order) else True


def _float(records: pd.DataFrame, column: str, order: np.ndarray, identity: bool) -> np.ndarray:
    if column not in records:
        return np.full(len(order), np.nan)
    values = np.asarray(records[column].to_numpy(dtype=np.float64, na_value=np.nan))
    return values if identity else values[order]


def _visit_numbers(records: pd.DataFrame, column: str, order: np.ndarray, identity: bool,
                   mask: np.ndarray) -> np.ndarray:
    """A visit-number column as int64 in ``order``, 1 where missing or < 1 on the ``mask`` records (0 where
    missing elsewhere)."""
    if column not in records:
        return mask.astype(np.int64)
    raw = records[column]
    raw = raw.to_numpy() if raw.dtype == np.float64 else raw.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):  # a missing value (NaN) casts to some integer: < 1 where it matters
        values = np.asarray(raw).astype(np.int64)
    if not identity:
        values, raw = values[order], raw[order]
    np.copyto(values, 0, where=np.isnan(raw))  # in place: no new arrays of a million records
    np.copyto(values, 1, where=mask & (values < 1))
    return values


def strings_at(records: pd.DataFrame, column: str, index: np.ndarray) -> np.ndarray:
    """``records[column].astype(object).to_numpy()[index]`` converting only the rows asked for (a string column
    of a million records costs a Python object each when converted whole).  An Arrow-backed column is taken
    from chunk by chunk: a take from the whole chunked column first joins its chunks (~3 ms a batch however
    few rows are asked for; residual asks twice a batch)."""
    index = np.asarray(index, dtype=np.int64)
    values = records[column]
    chunked = values.array.__arrow_array__() if hasattr(values.array, "__arrow_array__") else None
    if not isinstance(chunked, pa.ChunkedArray) or not pa.types.is_string(chunked.type) \
            and not pa.types.is_large_string(chunked.type):
        return np.asarray(values.iloc[index].astype(object).to_numpy(), dtype=object)
    out = np.empty(len(index), dtype=object)
    if not len(index):
        return out
    if int(index.min()) < 0 or int(index.max()) >= len(values):
        raise IndexError(f"strings_at: a row outside the {len(values)} records")
    ends = np.cumsum([len(c) for c in chunked.chunks])
    chunk_of = np.searchsorted(ends, index, side="right")
    missing = values.dtype.na_value
    for k in np.unique(chunk_of).tolist():
        rows = np.flatnonzero(chunk_of == k)
        local = index[rows] - (int(ends[k - 1]) if k else 0)
        taken = chunked.chunk(k).take(pa.array(local)).to_pylist()
        out[rows] = [missing if v is None else v for v in taken] if chunked.chunk(k).null_count else taken
    return out


def compiled_available() -> bool:
    """Whether :func:`derive` runs the compiled kernel by default (built, and ``TREEDIFF_NUMPY_TRIES`` not 1)."""
    return _ctries is not None and os.environ.get(NUMPY_ENV, "") != "1"


@dataclass
class _Inputs:
    """What both implementations read, per record in trace order (see :func:`derive`)."""

    order: np.ndarray
    identity: bool
    is_move: np.ndarray
    is_result: np.ndarray
    srow: np.ndarray
    iters: np.ndarray
    ply: np.ndarray
    depth: np.ndarray
    kind: np.ndarray
    k_cats: np.ndarray
    lower: np.ndarray
    pv: np.ndarray
    rv: np.ndarray
    run: np.ndarray
    paths: pa.Array


def _inputs(batch: Batch, compiled: bool = False) -> _Inputs:
    """The derivation's inputs; ``compiled``: the visit columns as they are (float64, NaN where missing, empty
    when the column is), ``run`` left for the kernel to number (numpy does both here)."""
    records = batch.records
    order, identity = _order(batch)
    n = len(order)

    def take(values: np.ndarray) -> np.ndarray:
        return values if identity else values[order]

    is_move, is_result = take(batch.is_move), take(batch.is_result)
    srow, iters = take(batch.srow), take(batch.iters)
    k_codes, k_cats = batch.codes("kind")
    lower = (take(batch.equals("bound", "lower")) if "bound" in records else np.zeros(n, dtype=bool)) & is_result
    if compiled:
        pv, rv = (_float(records, c, order, identity) if c in records else np.zeros(0)
                  for c in ("parent_visit", "visit"))
        run = np.zeros(0, dtype=np.int64)
    else:
        pv = _visit_numbers(records, "parent_visit", order, identity, is_move)
        rv = _visit_numbers(records, "visit", order, identity, is_result)
        # Runs: one iteration of one search (a repeated ITER d starts a new run).
        run = np.zeros(n, dtype=np.int64)
        if n > 1:
            np.cumsum((srow[1:] != srow[:-1]) | (iters[1:] != iters[:-1]), out=run[1:])
    return _Inputs(order, identity, is_move, is_result, srow, iters, take(batch.plies).astype(np.int64),
                   _float(records, "depth", order, identity), np.asarray(take(k_codes), dtype=np.int64),
                   np.asarray(k_cats, dtype=object), lower, pv, rv, run, _paths(batch, order, identity))


def derive(batch: Batch, full: bool = True, compiled: bool | None = None) -> Tries:
    """The :class:`Tries` of a batch (records of whole searches; any order: they are put in trace order).

    ``full=False`` leaves out what only ``whatif`` and ``residual`` read (the visit tree: subtree nodes,
    main visits, parent visits; then ``subtree`` is 0, ``v_main``, ``rec_in_main`` and
    ``v_in_parent_main`` are False, ``v_parent`` is -1 and ``v_nodes`` 1): tries, visits, cutoff classes
    and fail highs are the same.

    Without ``parent_visit``/``visit`` columns every node's records and
    RESULTs are taken as visit 1 (one visit per node and iteration).

    ``compiled``: run the compiled kernel (True; an error when it is not built) or numpy (False); by default
    the kernel when :func:`compiled_available`.  Both give the same :class:`Tries`.
    """
    with _DERIVE_LOCK:  # report's tables may run on two threads: one derivation a batch all the same
        return _derive_once(batch, full, compiled)


def _derive_once(batch: Batch, full: bool, compiled: bool | None) -> Tries:
    use = compiled_available() if compiled is None else compiled
    if use and _ctries is None:
        raise RuntimeError("treediff.report._ctries is not built (reinstall with a C compiler)")
    # One derivation a batch, whatever number of tables read it (cutoffs, fh and residual each ask: three
    # kernel runs a batch cost `report --table all` ~1 CPU-s a million records).  A full derivation answers
    # a ``full=False`` request too: what such a request reads is the same in both.
    done = _DERIVED.setdefault(batch, {})
    full = full or getattr(batch, "wants_full_tries", False)
    for key in ((use, True),) if full else ((use, False), (use, True)):
        if key in done:
            return done[key]
    inp = _inputs(batch, compiled=use)
    if not len(inp.order):
        empty = np.zeros(0, dtype=np.int64)
        none = np.zeros(0, bool)
        tries = Tries(empty, empty, none, empty, empty, empty, empty, empty, empty, empty, none, empty, empty,
                      empty, empty, empty, none, empty, none, empty, empty)
    else:
        tries = _derive_compiled(batch, inp, full) if use else _derive_numpy(batch, inp, full)
    done[(use, full)] = tries
    return tries


#: Each live batch's derivations, by (compiled, full); an entry goes with its batch.  The arrays are shared by
#: every table that reads them: no caller writes into a :class:`Tries`.
_DERIVED: weakref.WeakKeyDictionary[Batch, dict[tuple[bool, bool], Tries]] = weakref.WeakKeyDictionary()
#: Held while a derivation is looked up or made (the kernel runs without the GIL meanwhile, so a table on
#: the other thread that does not read it goes on).
_DERIVE_LOCK = threading.Lock()


def _back(values: np.ndarray, inp: _Inputs) -> np.ndarray:
    """Record positions in trace order -> batch positions (-1 stays -1)."""
    if inp.identity:
        return values
    return np.where(values >= 0, inp.order[np.maximum(values, 0)], -1)


def _derive_compiled(batch: Batch, inp: _Inputs, full: bool) -> Tries:
    """:func:`derive` by the compiled kernel (``_ctries.derive``; the same figures as :func:`_derive_numpy`)."""
    n = len(inp.order)
    n_mov, n_res = int(inp.is_move.sum()), int(inp.is_result.sum())
    k_cats = inp.k_cats
    kind_class = np.asarray([-1, *[_CLASS_OF_KIND.get(str(k), -1) for k in k_cats.tolist()]], dtype=np.int64)
    kind_alone = np.asarray([0, *[k == "NODE_CUT" for k in k_cats.tolist()]], dtype=np.uint8)
    arr = inp.paths
    _, offsets, data = arr.buffers()
    off = np.frombuffer(offsets, dtype=np.int64, count=n + 1, offset=arr.offset * 8)

    def i64(m: int) -> np.ndarray:
        return np.empty(m, dtype=np.int64)

    def u8(m: int) -> np.ndarray:
        return np.empty(m, dtype=np.uint8)

    rec_pcode, rec_node, rec_try, rec_in_main, rec_run, rec_parent = i64(n), i64(n), i64(n), u8(n), i64(n), i64(n)
    t_first, t_last, t_fh, t_subtree = i64(n_mov), i64(n_mov), u8(n_mov), i64(n_mov)
    r_class, r_decision, r_first, r_entering = i64(n_res), i64(n_res), i64(n_res), i64(n_res)
    r_main, r_parent, r_nodes, r_in_parent_main = u8(n_res), i64(n_res), i64(n_res), u8(n_res)
    n_t = _ctries.derive(
        data if data is not None else pa.py_buffer(b""), np.ascontiguousarray(off),
        np.ascontiguousarray(inp.srow, dtype=np.int64), np.ascontiguousarray(inp.iters, dtype=np.int64),
        np.ascontiguousarray(inp.is_move).view(np.uint8), np.ascontiguousarray(inp.is_result).view(np.uint8),
        np.ascontiguousarray(inp.kind), kind_class, kind_alone, np.ascontiguousarray(inp.lower).view(np.uint8),
        np.ascontiguousarray(inp.pv, dtype=np.float64), np.ascontiguousarray(inp.rv, dtype=np.float64),
        np.ascontiguousarray(inp.depth, dtype=np.float64), np.ascontiguousarray(inp.ply), bool(full),
        rec_pcode, rec_node, rec_try, rec_in_main, rec_run, t_first, t_last, t_fh, t_subtree,
        r_class, r_decision, r_first, r_entering, r_main, r_parent, r_nodes, r_in_parent_main, rec_parent)
    t_first, t_last = t_first[:n_t], t_last[:n_t]
    res = np.flatnonzero(inp.is_result)
    mov = np.flatnonzero(inp.is_move)
    sh, sh_dec = _shadows(batch, inp.order, rec_node, mov, n)
    order = inp.order

    def unsort(values: np.ndarray) -> np.ndarray:
        return values if inp.identity else _unsort(values, order)

    def back(values: np.ndarray) -> np.ndarray:
        return values if inp.identity else order[values]

    return Tries(
        first=back(t_first), last=back(t_last), fh=t_fh[:n_t].astype(bool), subtree=t_subtree[:n_t],
        final_kind=inp.kind[t_last], try_of=unsort(rec_try), v_result=back(res), v_class=r_class,
        v_decision=_back(r_decision, inp), v_first=back(r_first), v_main=r_main.astype(bool),
        v_entering=_back(r_entering, inp),
        v_parent=_back(np.where(r_parent >= 0, res[np.maximum(r_parent, 0)], -1), inp),
        v_nodes=r_nodes, rec_path=unsort(rec_pcode), rec_run=unsort(rec_run),
        rec_in_main=unsort(rec_in_main.astype(bool)), rec_parent=unsort(rec_parent),
        v_in_parent_main=r_in_parent_main.astype(bool),
        shadow=back(sh), shadow_decision=_back(sh_dec, inp))


def _derive_numpy(batch: Batch, inp: _Inputs, full: bool) -> Tries:
    """:func:`derive` in numpy (the fallback when the compiled kernel is not built)."""
    import pandas as pd
    import polars as pl

    from treediff.parse.visits import visit_tree

    order = inp.order
    n = len(order)
    is_move, is_result, ply, depth, kind, k_cats = inp.is_move, inp.is_result, inp.ply, inp.depth, inp.kind, \
        inp.k_cats
    lower, pv, rv, run = inp.lower, inp.pv, inp.rv, inp.run

    # Paths: own path and the parent node's path (the path without its last move), one dictionary.
    arr = inp.paths
    move_len = pl.Series(arr).str.split("/").list.last().str.len_bytes().fill_null(0).to_numpy()
    lengths = np.asarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)
    keep = np.maximum(lengths - move_len - 1, 0)
    parent_arr = pl.select(pl.Series(arr).str.head(pl.Series(keep))).to_series().to_arrow()
    has_parent = ply >= 1
    # Numbered as the kernel numbers them: the own paths in trace order, then the parents of records of ply >= 1.
    parents = parent_arr.cast(pa.large_string()).filter(pa.array(has_parent))
    both = pc.dictionary_encode(pa.concat_arrays([arr.cast(pa.large_string()), parents]))
    pcode = np.asarray(both.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    n_paths = np.int64(len(both.dictionary) + 1)
    parent_code = np.full(n, -1, dtype=np.int64)
    parent_code[has_parent] = pcode[n:]
    own_key = run * n_paths + pcode[:n]
    par_key = run * n_paths + parent_code
    # Hash-based numbering (pd.factorize): any order will do, and it costs a fraction of a sort.
    node_codes, node_keys = pd.factorize(np.concatenate([own_key, par_key[has_parent]]))
    node_codes = np.asarray(node_codes, dtype=np.int64)
    own = node_codes[:n]
    par = np.full(n, -1, dtype=np.int64)
    par[has_parent] = node_codes[n:]
    n_codes = len(node_keys)
    parent_of = np.full(n_codes, -1, dtype=np.int64)
    parent_of[own[has_parent]] = par[has_parent]
    ply_of = np.zeros(n_codes, dtype=np.int64)
    ply_of[own] = ply
    ply_of[par[has_parent]] = ply[has_parent] - 1

    # Visits: (node, visit number); a MOVE record belongs to its parent's, a RESULT closes its own node's.
    node = np.where(is_move, par, own)
    vnum = np.where(is_move, pv, rv)
    vmax = np.int64(int(vnum.max(initial=0)) + 2)
    rec_v = np.full(n, -1, dtype=np.int64)
    counted = (is_move | is_result) & (node >= 0)
    vinv, vkeys = pd.factorize(node[counted] * vmax + vnum[counted])
    rec_v[counted] = vinv
    n_v = len(vkeys)
    res = np.flatnonzero(is_result)
    res_of_v = np.full(n_v, -1, dtype=np.int64)
    res_of_v[rec_v[res]] = res  # the last RESULT when an engine wrote a visit number twice

    # Tries: (visit, own path) for MOVE records; NODE_CUT records alone.
    mov = np.flatnonzero(is_move)
    nodecut = np.flatnonzero(k_cats == "NODE_CUT")
    alone = np.isin(kind[mov], nodecut) if len(nodecut) else np.zeros(len(mov), dtype=bool)
    tkey = rec_v[mov] * np.int64(n_codes + 1) + own[mov]
    tkey = np.where(alone, -1 - mov, tkey)
    t_codes, t_uniques = pd.factorize(tkey)  # numbered in order of first appearance: trace order
    t_codes = np.asarray(t_codes, dtype=np.int64)
    n_t = len(t_uniques)
    try_of = np.full(n, -1, dtype=np.int64)
    try_of[mov] = t_codes
    t_first = np.full(n_t, n, dtype=np.int64)
    np.minimum.at(t_first, t_codes, mov)
    t_last = np.full(n_t, -1, dtype=np.int64)
    np.maximum.at(t_last, t_codes, mov)

    # Cutoff decisions: the last decision-kind MOVE record of each visit.
    dec_codes = np.flatnonzero(np.isin(k_cats, DECISION_KINDS))
    dec = mov[np.isin(kind[mov], dec_codes)]
    last_dec = np.full(n_v, -1, dtype=np.int64)
    np.maximum.at(last_dec, rec_v[dec], dec)
    first_move = np.full(n_v, n, dtype=np.int64)
    np.minimum.at(first_move, rec_v[mov], mov)

    # Visit tree: entering decisions, main visits, subtree sizes.
    if full:
        tree = visit_tree(own, parent_of, ply_of, is_result, is_move, depth, np.where(is_result, rv, 0),
                          np.where(is_move, pv, 0))
        entering = tree.entering  # per RESULT (order of res)
    else:  # entering decisions only: the latest MOVE record of the RESULT's path before it
        span = np.int64(n + 1)
        m_key = np.sort(own[mov] * span + mov)
        j = np.searchsorted(m_key, own[res] * span + res) - 1
        j_safe = np.maximum(j, 0)
        hit = (j >= 0) & (len(m_key) > 0)
        if len(m_key):
            hit &= (m_key[j_safe] // span) == own[res]
        entering = np.where(hit, m_key[j_safe] % span if len(m_key) else 0, -1)

    # Class of each closed visit.
    r_v = rec_v[res]
    cut = lower[res]
    dec_r = last_dec[r_v]
    kind_name = np.concatenate([k_cats.astype(object), [None]])
    cls = np.full(len(res), -1, dtype=np.int64)
    lut = np.asarray([_CLASS_OF_KIND.get(str(k), NONE) if k is not None else NONE for k in kind_name.tolist()],
                     dtype=np.int64)
    with_dec = cut & (dec_r >= 0)
    cls[with_dec] = lut[kind[dec_r[with_dec]]]
    cls[cut & (dec_r < 0)] = NONE
    # Multicut: the node's previous RESULT (same run and node) is a shallower cutoff visit entered by the same
    # decision, and no decision of this visit follows it.
    srt = np.lexsort((res, own[res]))
    prev = np.full(len(res), -1, dtype=np.int64)
    same = own[res][srt][1:] == own[res][srt][:-1]
    prev[srt[1:][same]] = srt[:-1][same]
    p_ok = prev >= 0
    p = np.maximum(prev, 0)
    multi = (cut & p_ok & (entering >= 0) & (entering[p] == entering) & lower[res[p]]
             & (depth[res[p]] < depth[res]) & (dec_r < res[p]))
    cls[multi] = MULTICUT

    # Failed high: the try holding a move/null/probcut cutoff decision.
    fh = np.zeros(n_t, dtype=bool)
    held = (cls >= 0) & (cls <= PROBCUT) & (dec_r >= 0)
    fh[try_of[dec_r[held]]] = True

    v_first = np.where(first_move[r_v] < n, first_move[r_v], res)
    decision = np.where(cls >= 0, dec_r, -1)
    decision = np.where(cls == MULTICUT, -1, decision)
    sh, sh_dec = _shadows(batch, order, own_key, mov, n)
    back = order
    if not full:
        none_r = np.zeros(len(res), dtype=bool)
        return Tries(
            first=back[t_first], last=back[t_last], fh=fh, subtree=np.zeros(n_t, dtype=np.int64),
            final_kind=kind[t_last], try_of=_unsort(try_of, order), v_result=back[res], v_class=cls,
            v_decision=np.where(decision >= 0, back[np.maximum(decision, 0)], -1), v_first=back[v_first],
            v_main=none_r, v_entering=np.where(entering >= 0, back[np.maximum(entering, 0)], -1),
            v_parent=np.full(len(res), -1, dtype=np.int64), v_nodes=np.ones(len(res), dtype=np.int64),
            rec_path=_unsort(pcode[:n], order), rec_run=_unsort(run, order), rec_in_main=np.zeros(n, dtype=bool),
            rec_parent=_unsort(parent_code, order), v_in_parent_main=none_r, shadow=back[sh],
            shadow_decision=np.where(sh_dec >= 0, back[np.maximum(sh_dec, 0)], -1))

    # Span ends: the next MOVE record of another move in the same visit, else the visit's RESULT.
    vo = mov[np.argsort(rec_v[mov], kind="stable")]
    vv, pp = rec_v[vo], own[vo]
    starts = np.flatnonzero(np.r_[True, (vv[1:] != vv[:-1]) | (pp[1:] != pp[:-1])]) if len(vo) else vo
    run_of = np.cumsum(np.r_[True, (vv[1:] != vv[:-1]) | (pp[1:] != pp[:-1])]) - 1 if len(vo) else vo
    nxt = np.r_[starts[1:], len(vo)][run_of] if len(vo) else vo
    same_visit = nxt < len(vo)
    same_visit[same_visit] = vv[nxt[same_visit]] == vv[same_visit]
    closing = res_of_v[vv] if len(vo) else vo
    end_at = np.where(same_visit, vo[np.minimum(nxt, max(len(vo) - 1, 0))], np.where(closing >= 0, closing, n))
    span_end = np.full(n, n, dtype=np.int64)
    span_end[vo] = end_at
    t_end = span_end[t_first]  # the span of a try starts at its first record

    def in_span(record: np.ndarray) -> np.ndarray:
        """Whether decision records lie in their own try's span (a move decided again after another move's
        decision in the same visit starts no new span: its subtree is outside the try's)."""
        return np.asarray(record < t_end[try_of[record]], dtype=bool)

    # Subtree nodes: RESULT records under the visits each try entered.
    subtree = np.zeros(n_t, dtype=np.int64)
    ent = entering >= 0
    ent[ent] = in_span(entering[ent])
    np.add.at(subtree, try_of[entering[ent]], tree.nodes[ent])
    # A visit whose parent visit never closed (a truncated iteration) reaches no try above it through the
    # visit tree: its nodes go to every try on its chain of open decisions, each the latest MOVE record of the
    # parent's path before the one below (the span rule, in a depth-first trace).
    orphan = np.flatnonzero((tree.parent_result < 0) & (ply[res] >= 2))
    if len(orphan) and len(mov):
        span = np.int64(n + 1)
        m_sorted = np.sort(own[mov] * span + mov)
        weight = tree.nodes[orphan]
        cur = np.where(entering[orphan] >= 0, entering[orphan], res[orphan])
        while len(cur):
            q = np.searchsorted(m_sorted, par[cur] * span + cur) - 1
            ok = (par[cur] >= 0) & (q >= 0)
            q_safe = np.maximum(q, 0)
            ok &= (m_sorted[q_safe] // span) == par[cur]
            up = m_sorted[q_safe] % span
            counted = ok.copy()
            counted[ok] = in_span(up[ok])
            np.add.at(subtree, try_of[up[counted]], weight[counted])
            keep = ok & (ply[up] >= 2)
            cur, weight = up[keep], weight[keep]

    main_of = tree.main_visit
    in_main = is_move & (par >= 0) & (main_of[np.maximum(par, 0)] > 0) & (pv == main_of[np.maximum(par, 0)])
    r_parent = parent_of[own[res]]
    v_in_parent_main = (r_parent >= 0) & (tree.parent_visit == main_of[np.maximum(r_parent, 0)]) \
        & (main_of[np.maximum(r_parent, 0)] > 0)
    return Tries(
        first=back[t_first], last=back[t_last], fh=fh, subtree=subtree, final_kind=kind[t_last],
        try_of=_unsort(try_of, order), v_result=back[res], v_class=cls,
        v_decision=np.where(decision >= 0, back[np.maximum(decision, 0)], -1), v_first=back[v_first],
        v_main=tree.is_main, v_entering=np.where(entering >= 0, back[np.maximum(entering, 0)], -1),
        v_parent=np.where(tree.parent_result >= 0, back[res[np.maximum(tree.parent_result, 0)]], -1),
        v_nodes=tree.nodes, rec_path=_unsort(pcode[:n], order), rec_run=_unsort(run, order),
        rec_in_main=_unsort(in_main, order), rec_parent=_unsort(parent_code, order),
        v_in_parent_main=v_in_parent_main, shadow=back[sh],
        shadow_decision=np.where(sh_dec >= 0, back[np.maximum(sh_dec, 0)], -1))


def _shadows(batch: Batch, order: np.ndarray, own_key: np.ndarray, mov: np.ndarray,
             n: int) -> tuple[np.ndarray, np.ndarray]:
    """SHADOW records (positions in trace order) and the decision each follows: the latest MOVE record of
    its path, in its iteration, at or before it (-1 when none)."""
    sh = np.flatnonzero(batch.equals("tag", "SHADOW")[order])
    sh_dec = np.full(len(sh), -1, dtype=np.int64)
    if len(sh) and len(mov):
        span = np.int64(n + 1)
        m_key = np.sort(own_key[mov] * span + mov)
        q = np.searchsorted(m_key, own_key[sh] * span + sh, side="right") - 1
        hit = (q >= 0) & (m_key[np.maximum(q, 0)] // span == own_key[sh])
        sh_dec[hit] = m_key[q[hit]] % span
    return sh, sh_dec


def _unsort(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per-record values given in ``order`` back in batch order."""
    out = np.empty_like(values)
    out[order] = values
    return out


# ---------------------------------------------------------------------- bands (docs/REPORTS.md "fh")
MN_BANDS = ((1, 1, "1"), (2, 2, "2"), (3, 4, "3-4"), (5, 8, "5-8"), (9, 16, "9-16"), (17, None, "17+"))
SEE_BANDS = ("< -200", "-200..-1", "0", "1..200", "> 200")


def mn_band(mn: np.ndarray) -> np.ndarray:
    """Band labels of move numbers (1, 2, 3-4, 5-8, 9-16, 17+; None for a missing or < 1 number)."""
    mn = np.asarray(mn, dtype=np.float64)
    out = np.full(len(mn), None, dtype=object)
    for lo, hi, label in MN_BANDS:
        out[(mn >= lo) & ((mn <= hi) if hi is not None else True)] = label
    return out


#: Each mn band label's place in display order.
_MN_BAND_PLACE: dict[object, int] = {label: i for i, (_, _, label) in enumerate(MN_BANDS)}


def mn_band_order(label: object) -> int:
    """A band label's place in display order (:data:`MN_BANDS`); after them all for anything else (None)."""
    try:
        return _MN_BAND_PLACE.get(label, len(MN_BANDS))
    except TypeError:  # (an unhashable value is no label)
        return len(MN_BANDS)


def see_band(see: np.ndarray) -> np.ndarray:
    """Band labels of SEE values in centipawns (< -200, -200..-1, 0, 1..200, > 200; None when missing)."""
    see = np.asarray(see, dtype=np.float64)
    out = np.full(len(see), None, dtype=object)
    out[see < -200] = SEE_BANDS[0]
    out[(see >= -200) & (see < 0)] = SEE_BANDS[1]
    out[see == 0] = SEE_BANDS[2]
    out[(see > 0) & (see <= 200)] = SEE_BANDS[3]
    out[see > 200] = SEE_BANDS[4]
    return out


def wilson(k: np.ndarray, n: np.ndarray, z: float = 1.959963984540054) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (95 % by default) of k successes in n trials, in percent (NaN where n is 0)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        lo, hi = centre - half, centre + half
    bad = n <= 0
    # At k = 0 and k = n the closed form gives 0 and 1 up to rounding: write them exactly.
    lo = np.where(bad, np.nan, np.where(k <= 0, 0.0, np.clip(lo, 0, 1))) * 100
    hi = np.where(bad, np.nan, np.where(k >= n, 1.0, np.clip(hi, 0, 1))) * 100
    return lo, hi


def pct(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """100 · k / n (NaN where n is 0)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, 100.0 * k / np.where(n > 0, n, 1), np.nan)


#: Per-try columns :func:`try_columns` gives (and ``whatif`` rules may name), besides fh, subtree and the cell.
TRY_COLUMNS = ("kind", "act", "depth", "new_depth", "reduction", "mn", "ply", "see", "hist", "nt", "phase", "why")
#: Where each try column comes from in the records table, when it is not the same name.
_SOURCE_COLUMN = {"nt": "node_type"}


_STRING_COLUMNS = ("kind", "act", "nt", "phase", "why")


SHADOW_COLUMNS = ("act", "shadow_tries", "shadow_fail_highs")


def shadow_counts(batch: Batch, t: Tries) -> pd.DataFrame:
    """Per (cell, act of the decision): SHADOW records (``shadow_tries``) and those with ``fh=1``
    (``shadow_fail_highs``); a SHADOW record is counted in its decision's cell, under its decision's act."""
    ok = t.shadow_decision >= 0
    dec = t.shadow_decision[ok]
    sh = t.shadow[ok]
    fh = batch.flag("fh")[sh]  # (the batch's fh flags, read once for every table: missing -> False)
    a_codes, a_cats = batch.codes("act")
    cell = batch.record_groups.record_group[dec]
    na = len(a_cats) + 1
    key = cell * na + a_codes[dec] + 1
    tries = np.bincount(key, minlength=batch.n_cells * na)
    fhs = np.bincount(key[fh], minlength=batch.n_cells * na)
    used = np.flatnonzero(tries)
    acts = np.concatenate([[None], np.asarray(a_cats, dtype=object)])
    return batch.cell_frame(used // na, act=acts[used % na], shadow_tries=tries[used].astype(np.int64),
                            shadow_fail_highs=fhs[used].astype(np.int64))


def shadow_frame(partials: list[pd.DataFrame], grouping) -> pd.DataFrame | None:
    """The per-group, per-act shadow figures (tries, fail highs, rate, Wilson 95 %); None without SHADOW records."""
    import pandas as pd

    from treediff.report.grouping import key_frame
    from treediff.report.table import concat

    frames = [p for p in partials if p is not None and len(p)]
    if not frames:
        return None
    merged = concat(frames, ["srow", "iter", "key", *SHADOW_COLUMNS])
    work = pd.DataFrame({"_group": grouping.group_of(merged), "act": merged["act"].to_numpy(dtype=object),
                         "shadow_tries": merged["shadow_tries"].to_numpy(dtype=np.int64),
                         "shadow_fail_highs": merged["shadow_fail_highs"].to_numpy(dtype=np.int64)})
    body = work.groupby(["_group", "act"], sort=True, dropna=False, as_index=False)[
        ["shadow_tries", "shadow_fail_highs"]].sum()
    body["shadow_fh_pct"] = pct(body["shadow_fail_highs"].to_numpy(), body["shadow_tries"].to_numpy())
    body["shadow_fh_lo"], body["shadow_fh_hi"] = wilson(body["shadow_fail_highs"].to_numpy(),
                                                        body["shadow_tries"].to_numpy())
    keys = key_frame(grouping.groups, body["_group"].to_numpy(dtype=np.int64))
    cols = ["act", "shadow_tries", "shadow_fail_highs", "shadow_fh_pct", "shadow_fh_lo", "shadow_fh_hi"]
    return pd.concat([keys, body[cols].reset_index(drop=True)], axis=1)


SHADOW_TITLE = ("Shadow searches (--shadow): what the engine pruned or reduced, searched at full depth "
                "aside -- silent-miss rate per act")


@dataclass
class TryColumns:
    """Per-try values without Python objects: string columns as codes into ``cats`` (-1: missing), numbers
    as float64 (NaN: missing); ``first`` (first record), ``cell``, ``fh``, ``subtree``."""

    codes: dict[str, np.ndarray]
    cats: dict[str, np.ndarray]
    numbers: dict[str, np.ndarray]
    first: np.ndarray
    cell: np.ndarray
    fh: np.ndarray
    subtree: np.ndarray

    def strings(self, name: str) -> pl.Series:
        """A string column as a polars Series (null where missing), gathered without Python objects."""
        import polars as pl

        cats = pl.Series(name, [*[str(c) for c in self.cats[name].tolist()], None], dtype=pl.String)
        codes = self.codes[name]
        return cats.gather(np.where(codes < 0, len(cats) - 1, codes))

    def labels(self, name: str, index: np.ndarray) -> np.ndarray:
        """A string column's values (object, None where missing) at some tries."""
        codes = self.codes[name][index]
        values = np.concatenate([np.asarray(self.cats[name], dtype=object), [None]])
        return values[np.where(codes < 0, len(values) - 1, codes)]


def try_columns(batch: Batch, t: Tries, columns: tuple[str, ...] = TRY_COLUMNS) -> TryColumns:
    """The tries' first-record ``columns`` (see :class:`TryColumns`)."""
    records = batch.records
    first = t.first
    codes: dict[str, np.ndarray] = {}
    cats: dict[str, np.ndarray] = {}
    numbers: dict[str, np.ndarray] = {}
    for name in columns:
        source = _SOURCE_COLUMN.get(name, name)
        if name in _STRING_COLUMNS:
            if source in records:
                c, k = batch.codes(source)
                codes[name], cats[name] = c[first], np.asarray(k, dtype=object)
            else:
                codes[name], cats[name] = np.full(len(first), -1, dtype=np.int64), np.zeros(0, dtype=object)
        elif source in records:
            numbers[name] = np.asarray(records[source].to_numpy(dtype=np.float64, na_value=np.nan))[first]
        else:
            numbers[name] = np.full(len(first), np.nan)
    return TryColumns(codes, cats, numbers, first, batch.record_groups.record_group[first], t.fh, t.subtree)

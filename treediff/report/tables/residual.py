"""The ``residual`` table: does a move's remaining depth grow with the iterations, and is the root's choice stable?

Definitions (``docs/REPORTS.md``, "residual"; visits and main visits are :mod:`treediff.report.tries`):

* A real move's (not a null move's) **residual depth** in an iteration is the
  new depth (plies, clamped at 0) of its last decision in its parent node's
  main visit, 0 when that decision is a prune (kind PRUNE).  NULL_PROBE and
  NODE_CUT records are not decisions here, nor are records without ``nd``
  (other than prunes).  A move is a (search, path).
* ``residual`` section, per group, over the moves decided in 3 or more
  iterations: ``paths``, ``stalled`` (residual depth in its last iteration ≤
  in its first), ``stalled_pct``, ``median_growth`` (median over those moves
  of (last − first residual depth) / (last − first iteration), plies per root
  ply).  A move is counted in the cell of its last decision.
* ``residual_iter`` section: per group and iteration, the mean residual depth
  of those moves (``paths`` decided in that iteration, ``mean_residual``).
* ``residual_stalled``: the stalled moves with the most subtree nodes (summed
  over the iterations, of the try holding each iteration's decision), top 10.
* ``pv_stability``, per search: the root best move of each iteration (the root
  move whose last RESULT in the root's main visit has the lowest score, child
  scores being from the child's side to move; among equal scores a RESULT
  with bound exact or upper before one with lower, then the earliest; an
  iteration with no root-move RESULT has none and is left out of the
  sequence), ``final_best`` (the last one), ``stable_from`` (the iteration
  from which the final best move stayed best), ``changes`` (times the best
  move changed from one iteration to the next), ``best_moves`` (the
  sequence, ``iter:move``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from treediff.report.grouped import group_rows, isin_small, lexsort_ints
from treediff.report.grouping import key_frame
from treediff.report.table import Batch, Grouping, Section, concat
from treediff.report.tries import COLUMNS, OPTIONAL, derive, pct, strings_at

TITLES = {
    "residual": "Residual depth of moves decided in 3+ iterations: stalled share, median growth per root ply",
    "residual_iter": "Mean residual depth (plies) per iteration of those moves",
    "residual_stalled": "Stalled moves with the most subtree nodes",
    "pv_stability": "Root best move per iteration: the iteration it stayed best from, and its changes",
}
MIN_ITERATIONS = 3
TOP = 10
_BOUND_RANK = {"exact": 0, "upper": 0, "lower": 1}


@dataclass
class ResidualPartial:
    paths: pd.DataFrame    #: srow, iter, key, stalled, growth, subtree, path, n_iter, first, last, line
    per_iter: pd.DataFrame #: srow, iter, key, res_iter, paths, res_sum
    pv: pd.DataFrame       #: srow, iter (the run's), best (path), per search and run with a best move


def _residual(batch: Batch) -> ResidualPartial:
    rec = batch.records
    t = derive(batch)
    n = len(rec)
    is_move = batch.is_move
    null = batch.flag("null_move")
    k_codes, k_cats = batch.codes("kind")
    kinds = np.asarray(k_cats, dtype=object)
    prune = batch.kind_mask("PRUNE")
    excluded = isin_small(k_codes, np.flatnonzero(np.isin(kinds, ("NULL_PROBE", "NODE_CUT"))))
    nd = np.asarray(rec["new_depth"].to_numpy(dtype=np.float64, na_value=np.nan)) if "new_depth" in rec \
        else np.full(n, np.nan)
    usable = is_move & t.rec_in_main & ~null & ~excluded & (prune | ~np.isnan(nd))
    sel = np.flatnonzero(usable)
    dec = _last_decisions(sel, t.rec_run[sel], t.rec_path[sel])  # one decision per (run, path)
    # max(nan_to_num(nd), 0): NaN and -inf as 0, +inf as the largest float (fmax skips NaN; in two passes, not
    # nan_to_num's copies and masks).
    residual = np.where(prune[dec], 0.0, np.minimum(np.fmax(nd[dec], 0.0), np.finfo(np.float64).max))
    subtree = t.subtree[t.try_of[dec]]
    srow = batch.srow[dec]
    iters = batch.iters[dec]
    # Moves across iterations: (search row, path), iterations in run order.
    mkey = srow * np.int64(int(t.rec_path.max(initial=0)) + 1) + t.rec_path[dec]
    m_order = lexsort_ints((t.rec_run[dec], mkey))
    d = dec[m_order]
    mk = mkey[m_order]
    res_o, it_o, sub_o = residual[m_order], iters[m_order], subtree[m_order]
    starts = np.flatnonzero(np.r_[True, mk[1:] != mk[:-1]]) if len(d) else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(d)] if len(d) else np.zeros(0, np.int64)
    count = ends - starts
    keep = count >= MIN_ITERATIONS
    st, en = starts[keep], ends[keep] - 1
    first_res, last_res = res_o[st], res_o[en]
    span = (it_o[en] - it_o[st]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        growth = np.where(span > 0, (last_res - first_res) / np.where(span > 0, span, 1), np.nan)
    sub_sum = np.add.reduceat(sub_o, starts)[keep] if len(starts) else np.zeros(0, np.int64)
    last_rec = d[en]
    cell = batch.record_groups.record_group
    paths = batch.cell_frame(cell[last_rec], stalled=(last_res <= first_res), growth=growth,
                             subtree=sub_sum.astype(np.int64), path=strings_at(rec, "path", last_rec),
                             n_iter=count[keep], first=first_res, last=last_res,
                             line=rec["line"].to_numpy()[last_rec] if "line" in rec else np.full(len(last_rec), -1))
    # Residual depth per iteration of the kept moves.
    member = np.repeat(keep, count)
    g, res_iter = cell[d[member]], it_o[member]
    by_iter = group_rows(g, res_iter)
    per_iter = batch.cell_frame(by_iter.take(g), res_iter=by_iter.take(res_iter).astype(np.int64),
                                paths=by_iter.sizes(), res_sum=by_iter.sums(res_o[member]))
    return ResidualPartial(paths, per_iter, _root_best(batch, t))


def _last_decisions(rows: np.ndarray, run: np.ndarray, path: np.ndarray) -> np.ndarray:
    """The last of ``rows`` (ascending record positions) of each (run, path): in row order by one compiled pass
    where runs come one after the other (records in trace order: the usual batch), else sorted by (run, path)
    (a stable sort of the packed keys).  Callers order the decisions themselves: either order gives the same
    table."""
    from treediff.report import tries  # (which loads the compiled module)

    kernel = getattr(tries._ctries, "last_in_runs", None) if tries.compiled_available() else None
    if kernel is not None and len(rows) and bool(np.all(run[1:] >= run[:-1])):
        last = np.empty(len(rows), dtype=np.uint8)
        try:
            kernel(np.ascontiguousarray(run, dtype=np.int64), np.ascontiguousarray(path, dtype=np.int64),
                   int(path.max()) + 1, last)
            return rows[last.view(bool)]
        except ValueError:  # (a path without a code: the sort below groups it all the same)
            pass
    order = lexsort_ints((rows, path, run))
    key = run[order] * np.int64(int(path.max(initial=0)) + 1) + path[order]
    last = np.r_[key[1:] != key[:-1], True] if len(rows) else np.zeros(0, bool)
    return rows[order][last]


def _root_best(batch: Batch, t) -> pd.DataFrame:
    """Per (search row, run): the root best move (see the module docstring)."""
    rec = batch.records
    res = t.v_result
    ply = batch.plies[res]
    at1 = (ply == 1) & t.v_in_parent_main
    r = res[at1]
    none = pd.DataFrame({"srow": np.zeros(0, np.int64), "run": np.zeros(0, np.int64),
                         "iter": np.zeros(0, np.int64), "best": np.zeros(0, object)})
    if not len(r):
        return none
    score = np.asarray(rec["score"].to_numpy(dtype=np.float64, na_value=np.nan))[r]
    b_codes, b_cats = batch.codes("bound") if "bound" in rec else (np.full(len(rec), -1), np.zeros(0, object))
    rank_of = np.asarray([_BOUND_RANK.get(str(b), 0) for b in b_cats.tolist()] + [0], dtype=np.int64)
    brank = rank_of[b_codes[r]]
    run, path = t.rec_run[r], t.rec_path[r]
    # Each root move's last RESULT in the root's main visit.
    o = lexsort_ints((r, path, run))
    lastm = np.r_[(run[o][1:] != run[o][:-1]) | (path[o][1:] != path[o][:-1]), True]
    cand = o[lastm]
    ok = ~np.isnan(score[cand])
    cand = cand[ok]
    if not len(cand):  # no root-move RESULT with a score
        return none
    # Best per run: lowest score, then bound rank, then earliest.
    pick = cand[np.lexsort((r[cand], brank[cand], score[cand], run[cand]))]
    first = np.r_[True, run[pick][1:] != run[pick][:-1]]
    best = pick[first]
    return pd.DataFrame({"srow": batch.srow[r[best]], "run": run[best], "iter": batch.iters[r[best]],
                         "best": strings_at(rec, "path", r[best])})


def pv_frame(searches: pd.DataFrame, grouping: Grouping, pv: pd.DataFrame) -> pd.DataFrame:
    cols = ["position", "search", "iterations", "final_best", "stable_from", "changes", "best_moves"]
    if not len(pv):
        return pd.DataFrame({c: [] for c in ["engine", *cols]})
    pv = pv.sort_values(["srow", "run"], kind="stable")
    # Per search (its rows consecutive, runs in order): the final best move, the changes from one run to the
    # next, and the run from which the final move stayed best (the last change, else the first run).  In
    # numpy over all searches at once: a loop over pandas groups took 0.3 s for 2,479 searches.
    srow_all = pv["srow"].to_numpy(dtype=np.int64)
    best = pv["best"].to_numpy(dtype=object)
    iters = pv["iter"].to_numpy(dtype=np.int64)
    n = len(pv)
    starts = np.flatnonzero(np.r_[True, srow_all[1:] != srow_all[:-1]])
    ends = np.r_[starts[1:], n]
    changed = np.zeros(n, dtype=bool)
    changed[1:] = best[1:] != best[:-1]
    changed[starts] = False
    last_change = np.maximum.reduceat(np.where(changed, np.arange(n), -1), starts)
    stable = np.where(last_change >= 0, last_change, starts)
    steps = [f"{i}:{m}" for i, m in zip(iters.tolist(), best.tolist())]
    body = pd.DataFrame({"srow": srow_all[starts], "iterations": (ends - starts).astype(np.int64),
                         "final_best": best[ends - 1], "stable_from": iters[stable],
                         "changes": np.add.reduceat(changed.astype(np.int64), starts),
                         "best_moves": [" ".join(steps[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]})
    srows = body["srow"].to_numpy(dtype=np.int64)
    sg = grouping.search_groups
    keys = key_frame(sg.groups, sg.search_group[srows])
    body.insert(0, "search", searches["search"].to_numpy()[srows])
    body.insert(0, "position", searches["position"].astype(object).to_numpy()[srows])
    keys = keys.loc[:, [c for c in keys.columns if c != "position"]]
    return pd.concat([keys, body[cols].reset_index(drop=True)], axis=1)


class ResidualTable:
    """``--table residual``: the ``residual``, ``residual_iter``, ``residual_stalled`` and ``pv_stability`` sections."""

    name = "residual"
    #: Main-thread CPU-s of its partial per 1M records (stockfish bench log, besides the shared derivation):
    #: the order core runs a batch's partials in on two threads (longest first).
    cost = 0.3
    #: Reads the batch's move-try derivation (treediff.report.tries.derive): core runs it first, on its own.
    reads_tries = True
    columns = (*COLUMNS, "line", "score")
    #: Reads the full move-try derivation (subtree nodes, main visits): see Batch.wants_full_tries.
    full_tries = True
    optional_columns = (*OPTIONAL, "new_depth", "null_move")

    def partial(self, batch: Batch) -> ResidualPartial:
        return _residual(batch)

    def finish(self, partials: Sequence[ResidualPartial], grouping: Grouping) -> list[Section]:
        paths = concat([p.paths for p in partials], ["srow", "iter", "key", "stalled", "growth", "subtree", "path",
                                                     "n_iter", "first", "last", "line"])
        g = grouping.group_of(paths) if len(paths) else np.zeros(0, np.int64)
        n = grouping.n
        count = np.bincount(g, minlength=n).astype(np.int64)
        stalled = np.bincount(g, weights=paths["stalled"].to_numpy(dtype=np.float64), minlength=n).astype(np.int64)
        median = np.full(n, np.nan)
        if len(paths):
            med = pd.Series(paths["growth"].to_numpy(dtype=np.float64)).groupby(g).median()
            median[med.index.to_numpy(dtype=np.int64)] = med.to_numpy()
        summary = pd.concat([grouping.groups.reset_index(drop=True),
                             pd.DataFrame({"paths": count, "stalled": stalled, "stalled_pct": pct(stalled, count),
                                           "median_growth": median})], axis=1)
        per_iter = concat([p.per_iter for p in partials], ["srow", "iter", "key", "res_iter", "paths", "res_sum"])
        if len(per_iter):
            it = pd.DataFrame({"_group": grouping.group_of(per_iter), "iteration": per_iter["res_iter"].to_numpy(),
                               "paths": per_iter["paths"].to_numpy(), "res_sum": per_iter["res_sum"].to_numpy()})
            it = it.groupby(["_group", "iteration"], sort=True, as_index=False)[["paths", "res_sum"]].sum()
            it["mean_residual"] = it["res_sum"] / it["paths"]
            iter_frame = pd.concat([key_frame(grouping.groups, it["_group"].to_numpy(dtype=np.int64)),
                                    it[["iteration", "paths", "mean_residual"]]], axis=1)
        else:
            iter_frame = pd.DataFrame({c: [] for c in [*grouping.keys, "iteration", "paths", "mean_residual"]})
        top = paths[paths["stalled"].astype(bool)] if len(paths) else paths
        if len(top):
            top = top.assign(_group=grouping.group_of(top)).sort_values(
                ["subtree", "srow", "line"], ascending=[False, True, True], kind="stable").head(TOP)
            srows = top["srow"].to_numpy(dtype=np.int64)
            stalled_frame = pd.concat([key_frame(grouping.groups, top["_group"].to_numpy(dtype=np.int64)),
                                       pd.DataFrame({
                                           "position": grouping.searches["position"].astype(object).to_numpy()[srows],
                                           "path": top["path"].to_numpy(), "iterations": top["n_iter"].to_numpy(),
                                           "first_residual": top["first"].to_numpy(),
                                           "last_residual": top["last"].to_numpy(),
                                           "subtree_nodes": top["subtree"].to_numpy(),
                                           "line": top["line"].to_numpy()})], axis=1)
            stalled_frame = stalled_frame.loc[:, ~stalled_frame.columns.duplicated()]
        else:
            stalled_frame = pd.DataFrame({c: [] for c in ["engine", "position", "path", "iterations", "first_residual",
                                                          "last_residual", "subtree_nodes", "line"]})
        pv = pd.concat([p.pv for p in partials if p is not None and len(p.pv)], ignore_index=True) \
            if any(p is not None and len(p.pv) for p in partials) else pd.DataFrame(
                {"srow": [], "run": [], "iter": [], "best": []})
        keys = tuple(grouping.keys)
        return [Section("residual", TITLES["residual"], summary, keys),
                Section("residual_iter", TITLES["residual_iter"], iter_frame, keys),
                Section("residual_stalled", TITLES["residual_stalled"], stalled_frame.reset_index(drop=True), ()),
                Section("pv_stability", TITLES["pv_stability"], pv_frame(grouping.searches, grouping, pv), ())]


RESIDUAL = ResidualTable()

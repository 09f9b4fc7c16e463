"""Straightforward, record-by-record statements of issue 13's definitions, to check the columnar code
(treediff/report/tries.py and the cutoffs, fh, whatif and residual tables) and as the benchmark's baseline.

Each figure is computed from its definition in docs/REPORTS.md ("Move tries, node visits and cutoffs"), with
Python dicts and loops over records, not from the code under test; in particular a try's subtree nodes are
counted over its *span* (RESULT records from its first record to the next decision of another move of its
parent visit, or that visit's RESULT, whose path is at or below the try's path), not through the visit tree.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

DECISION = {"SEARCH", "REDUCE", "RESEARCH", "EXTEND", "NULL_PROBE", "NODE_CUT"}
CLASS_OF = {"SEARCH": "move", "REDUCE": "move", "RESEARCH": "move", "EXTEND": "move", "NULL_PROBE": "null",
            "NODE_CUT": "probcut"}


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


@dataclass
class Try:
    first: int
    path: str
    run: int
    visit_key: tuple
    records: list[int] = field(default_factory=list)
    fh: bool = False
    subtree: int = 0


@dataclass
class Reference:
    rows: list[dict]
    tries: list[Try]
    classes: dict[int, str]   #: RESULT index -> cutoff class (cutoff visits only)
    cutoff_mn: dict[int, float]
    results: list[int]


def _value(v):
    return None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else v


def rows_of(records: pd.DataFrame) -> list[dict]:
    """Records as dicts in (search, seq) order, missing values as None."""
    cols = [c for c in ("search", "iter", "seq", "line", "tag", "path", "ply", "kind", "act", "mn", "depth",
                        "new_depth", "bound", "visit", "parent_visit", "score", "null_move", "engine")
            if c in records]
    frame = records.sort_values(["search", "seq"], kind="stable")
    out = []
    for rec in frame[cols].astype(object).itertuples(index=False):
        out.append({c: _value(v) for c, v in zip(cols, rec)})
    for r in out:
        r["path"] = r.get("path") or ""
    return out


def derive(rows: list[dict]) -> Reference:
    run = 0
    prev = None
    for r in rows:
        key = (r["search"], r["iter"])
        if key != prev:
            run += 1
            prev = key
        r["run"] = run
    tries: dict[tuple, Try] = {}
    order: list[Try] = []
    try_of: dict[int, Try] = {}
    visit_moves: dict[tuple, list[int]] = defaultdict(list)
    visit_result: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        if r["tag"] == "MOVE":
            vk = (r["run"], parent_of(r["path"]), r["parent_visit"] or 1)
            visit_moves[vk].append(i)
            key = ("alone", i) if r["kind"] == "NODE_CUT" else (vk, r["path"])
            t = tries.get(key)
            if t is None:
                t = tries[key] = Try(i, r["path"], r["run"], vk)
                order.append(t)
            t.records.append(i)
            try_of[i] = t
        elif r["tag"] == "RESULT":
            visit_result[(r["run"], r["path"], r["visit"] or 1)] = i
    # Entering decision of each RESULT and the previous RESULT of its node.
    last_move: dict[tuple, int] = {}
    last_result: dict[tuple, int] = {}
    entering: dict[int, int | None] = {}
    previous: dict[int, int | None] = {}
    results = []
    for i, r in enumerate(rows):
        k = (r["run"], r["path"])
        if r["tag"] == "MOVE":
            last_move[k] = i
        elif r["tag"] == "RESULT":
            entering[i] = last_move.get(k)
            previous[i] = last_result.get(k)
            last_result[k] = i
            results.append(i)
    classes: dict[int, str] = {}
    cutoff_mn: dict[int, float] = {}
    for i in results:
        r = rows[i]
        if r.get("bound") != "lower":
            continue
        vk = (r["run"], r["path"], r["visit"] or 1)
        decisions = [j for j in visit_moves.get(vk, []) if rows[j]["kind"] in DECISION]
        dec = decisions[-1] if decisions else None
        p = previous[i]
        if (p is not None and entering[i] is not None and entering[p] == entering[i]
                and rows[p].get("bound") == "lower" and rows[p]["depth"] < r["depth"]
                and (dec is None or dec < p)):
            classes[i] = "multicut"
        elif dec is None:
            classes[i] = "none"
        else:
            classes[i] = CLASS_OF[rows[dec]["kind"]]
            try_of[dec].fh = True
            if classes[i] == "move" and rows[dec]["mn"] is not None and rows[dec]["mn"] >= 1:
                cutoff_mn[i] = rows[dec]["mn"]
    # Spans and subtree nodes.
    n = len(rows)
    by_path: dict[tuple, list[tuple[int, int, Try]]] = defaultdict(list)
    for t in order:
        moves = visit_moves[t.visit_key]
        end = next((j for j in moves if j > t.first and rows[j]["path"] != t.path), None)
        if end is None:
            end = visit_result.get(t.visit_key)
        if end is None:  # the visit never closed: to the end of its run
            end = next((j for j in range(t.first, n) if rows[j]["run"] != t.run), n)
        by_path[(t.run, t.path)].append((t.first, end, t))
    for i in results:
        r = rows[i]
        parts = r["path"].split("/") if r["path"] else []
        for k in range(1, len(parts) + 1):
            for first, end, t in by_path.get((r["run"], "/".join(parts[:k])), ()):
                if first <= i < end:
                    t.subtree += 1
    return Reference(rows, order, classes, cutoff_mn, results)


def cutoffs(ref: Reference) -> dict:
    out = {"visits": len(ref.results), "all": len(ref.classes)}
    for c in ("move", "null", "probcut", "multicut", "none"):
        out[c] = sum(1 for v in ref.classes.values() if v == c)
    mns = list(ref.cutoff_mn.values())
    out["mn1"] = sum(m == 1 for m in mns)
    out["mn2"] = sum(m == 2 for m in mns)
    out["mn_known"] = len(mns)
    out["mean_mn"] = sum(mns) / len(mns) if mns else float("nan")
    return out


def fh_by_kind(ref: Reference) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in ref.tries:
        kind = ref.rows[t.first]["kind"]
        out[kind][0] += 1
        out[kind][1] += t.fh
    return {k: (v[0], v[1]) for k, v in out.items()}


def whatif(ref: Reference, rule, eligible=("SEARCH", "REDUCE", "EXTEND")) -> dict:
    """``rule``: a Python predicate over the try's first record (a dict): the reference's own statement."""
    base = [t for t in ref.tries if ref.rows[t.first]["kind"] in eligible]
    admitted = [t for t in base if rule(ref.rows[t.first])]
    return {"all_tries": len(ref.tries), "tries": len(admitted), "fail_highs": sum(t.fh for t in admitted),
            "baseline_tries": len(base), "baseline_fail_highs": sum(t.fh for t in base),
            "subtree_nodes": sum(t.subtree for t in admitted)}


def main_visits(rows: list[dict]) -> dict[tuple, int]:
    """(run, path) -> main visit number, from the definition (docs/ALIGN.md "Node visits")."""
    last_move: dict[tuple, int] = {}
    belongs: dict[tuple, list[tuple]] = defaultdict(list)  # (run, path) -> [(pv of entering, depth, i, visit)]
    root: dict[int, int] = {}
    for i, r in enumerate(rows):
        k = (r["run"], r["path"])
        if r["tag"] == "MOVE":
            last_move[k] = i
            if "/" not in r["path"]:
                root[r["run"]] = max(root.get(r["run"], 0), r["parent_visit"] or 1)
        elif r["tag"] == "RESULT":
            if r["path"] == "":
                root[r["run"]] = max(root.get(r["run"], 0), r["visit"] or 1)
            else:
                e = last_move.get(k)
                if e is not None:
                    belongs[k].append((rows[e]["parent_visit"] or 1, r["depth"], i, r["visit"] or 1))
    main: dict[tuple, int] = {(run, ""): v for run, v in root.items()}
    for k in sorted(belongs, key=lambda k: (k[1].count("/"), k)):
        parent = (k[0], parent_of(k[1]))
        if parent not in main:
            continue
        cands = [(d, i, v) for pv, d, i, v in belongs[k] if pv == main[parent]]
        if cands:
            main[k] = max(cands)[2]
    return main


def residual(ref: Reference) -> dict:
    rows = ref.rows
    main = main_visits(rows)
    last: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        if r["tag"] != "MOVE" or r.get("null_move") or r["kind"] in ("NULL_PROBE", "NODE_CUT"):
            continue
        if r["kind"] != "PRUNE" and r["new_depth"] is None:
            continue
        if main.get((r["run"], parent_of(r["path"]))) != (r["parent_visit"] or 1):
            continue
        last[(r["run"], r["path"])] = i
    per_move: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    for (run, path), i in sorted(last.items(), key=lambda kv: kv[1]):
        r = rows[i]
        res = 0.0 if r["kind"] == "PRUNE" else max(r["new_depth"], 0.0)
        per_move[(r["search"], path)].append((run, r["iter"], res))
    kept = {k: sorted(v) for k, v in per_move.items() if len(v) >= 3}
    stalled = sum(1 for v in kept.values() if v[-1][2] <= v[0][2])
    growth = sorted((v[-1][2] - v[0][2]) / (v[-1][1] - v[0][1]) for v in kept.values() if v[-1][1] > v[0][1])
    median = float(pd.Series(growth, dtype=float).median()) if growth else float("nan")
    return {"paths": len(kept), "stalled": stalled, "median_growth": median, "growth": growth}

"""The scope table's path-free algorithm against a plain path-based definition, on random search trees.

The reference below reads paths: a MOVE belongs to the node named by its
parent path, a RESULT closes the visit of the node named by its path, and a
prune "continued" when a later MOVE of the same visit exists.  Trees are
random depth-first traces with prunes that skip one move or abandon the node,
re-searched moves (LMR then LMR-RESEARCH: two visits of one node), null-move
probes with subtrees, and several iterations and searches.
"""
from __future__ import annotations

from collections import defaultdict

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from treediff.report.core import report_frames

PRUNES = ("LMP", "FP-QUIET")


@st.composite
def node_script(draw, depth: int):
    """A node's decisions: list of (kind, payload) where payload is a child script or None."""
    items = []
    if depth > 1 and draw(st.booleans()):
        items.append(("NMP", draw(node_script(depth - 1)) if draw(st.booleans()) else None))
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["FULL", "LMR2", "LMP", "FP-QUIET", "BREAK"]))
        if kind in ("FULL", "LMR2"):
            child = draw(node_script(depth - 1)) if depth > 1 and draw(st.booleans()) else None
            second = draw(node_script(depth - 1)) if kind == "LMR2" and depth > 1 and draw(st.booleans()) else None
            items.append((kind, (child, second)))
        elif kind == "BREAK":
            items.append((draw(st.sampled_from(PRUNES)) + "!", None))
            break
        else:
            items.append((kind, None))
    return items


def emit(script, path: str, ply: int, out: list, it: int, counter: list) -> None:
    prefix = path + "/" if path else ""
    for i, (kind, payload) in enumerate(script):
        move = f"m{i}" if kind != "NMP" else "0000"
        child = prefix + move
        row = dict(iter=it, path=child, ply=ply + 1, null_move=kind == "NMP")
        if kind == "NMP":
            out.append({**row, "tag": "MOVE", "act": "NMP", "kind": "NULL_PROBE"})
            if payload is not None:
                emit(payload, child, ply + 1, out, it, counter)
        elif kind.rstrip("!") in PRUNES:
            out.append({**row, "tag": "MOVE", "act": kind.rstrip("!"), "kind": "PRUNE"})
        elif kind == "FULL":
            out.append({**row, "tag": "MOVE", "act": "FULL", "kind": "SEARCH"})
            if payload[0] is not None:
                emit(payload[0], child, ply + 1, out, it, counter)
        else:  # reduced, then re-searched: the child node is visited twice
            out.append({**row, "tag": "MOVE", "act": "LMR", "kind": "REDUCE", "reduction": 1.0})
            if payload[0] is not None:
                emit(payload[0], child, ply + 1, out, it, counter)
            out.append({**row, "tag": "MOVE", "act": "LMR-RESEARCH", "kind": "RESEARCH"})
            if payload[1] is not None:
                emit(payload[1], child, ply + 1, out, it, counter)
    out.append({"iter": it, "path": path, "ply": ply, "null_move": False, "tag": "RESULT"})


def build(searches_scripts) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, srch = [], []
    for s, iterations in enumerate(searches_scripts):
        out: list = []
        for it, script in enumerate(iterations, start=1):
            emit(script, "", 0, out, it, [0])
        for seq, r in enumerate(out):
            rows.append({"engine": "e", "search": s, "seq": seq, "depth": 1.0, **r})
        srch.append({"engine": "e", "search": s, "position": f"p{s}", "fen": "x", "phase": "middlegame",
                     "max_iter": len(iterations), "result_nodes": sum(r["tag"] == "RESULT" for r in out),
                     "end_nodes": None, "node_source": "result", "source": "t"})
    records = pd.DataFrame(rows)
    for col in ("reduction", "act", "kind"):
        if col not in records:
            records[col] = None
    for col in ("engine", "tag", "act", "kind"):
        records[col] = records[col].astype("category")
    searches = pd.DataFrame(srch)
    for col in ("engine", "position", "phase"):
        searches[col] = searches[col].astype("string")
    return records, searches


def reference_scope(records: pd.DataFrame) -> dict:
    visits = defaultdict(int)  # (search, iter, node) -> visit number
    first = {}                 # (act, search, iter, node, visit) -> seq of the act's first prune
    last_move = {}             # (search, iter, node, visit) -> seq of its last MOVE
    for r in records.sort_values(["search", "seq"]).itertuples():
        if r.tag == "RESULT":
            visits[(r.search, r.iter, r.path)] += 1
            continue
        node = r.path.rsplit("/", 1)[0] if "/" in r.path else ""
        key = (r.search, r.iter, node)
        visit = (*key, visits[key])
        last_move[visit] = r.seq
        if r.kind == "PRUNE":
            first.setdefault((r.act, *visit), r.seq)
    out = defaultdict(lambda: [0, 0])
    for (act, *visit), seq in first.items():
        out[act][0] += 1
        out[act][1] += last_move[tuple(visit)] > seq
    return {a: tuple(v) for a, v in out.items()}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(node_script(4), min_size=1, max_size=3), min_size=1, max_size=3))
def test_scope_matches_path_based_reference(searches_scripts):
    records, searches = build(searches_scripts)
    scope = report_frames(records, searches, tables=["scope"])["scope"]
    ours = {r.act: (r.nodes, r.continued) for r in scope.itertuples() if r.act != "(all)"}
    assert ours == reference_scope(records)

"""Straightforward, record-by-record statements of the node-visit definitions, to check the columnar code.

Quadratic on purpose: each value is computed from its definition in
docs/TREEDUMP_FORMAT.md §3 and docs/ALIGN.md ("Node visits"), not from
the code under test.
"""
from __future__ import annotations

import random


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def visits(records: list[dict]) -> list[int | None]:
    """``visit`` of each RESULT (None for a MOVE).

    ``records``: dicts with ``iter``, ``tag``, ``path`` (``""`` the root), ``d``
    and optionally ``given`` (an engine-written ``visit=``), in record order.
    """
    out: list[int | None] = []
    for i, r in enumerate(records):
        if r["tag"] != "RESULT":
            out.append(None)
            continue
        if r.get("given") is not None:
            out.append(r["given"])
            continue
        earlier = [q for q in records[:i] if q["tag"] == "RESULT" and q["iter"] == r["iter"] and q["path"] == r["path"]]
        out.append(len(earlier) + 1)
    return out


def parent_visits(records: list[dict]) -> list[int | None]:
    """``parent_visit`` of each MOVE (None for a RESULT)."""
    numbers = visits(records)
    out: list[int | None] = []
    for i, r in enumerate(records):
        if r["tag"] != "MOVE":
            out.append(None)
            continue
        if r.get("given") is not None:
            out.append(r["given"])
            continue
        node = parent_of(r["path"])

        def of_node(q: dict) -> bool:
            return q["tag"] == "RESULT" and q["iter"] == r["iter"] and q["path"] == node

        later = [j for j in range(i + 1, len(records)) if of_node(records[j])]
        deep = [j for j in later if records[j]["d"] >= r["d"]]
        if deep:
            out.append(numbers[deep[0]])
        elif later:
            out.append(numbers[later[0]])
        else:
            out.append(sum(of_node(q) for q in records[:i]) + 1)
    return out


def main_visits(records: list[dict]) -> dict[str, int]:
    """Each node's main visit (path -> visit number) in one iteration's records; nodes without one absent.

    Records need ``visit`` (RESULT) and ``parent_visit`` (MOVE) as the parser
    gives them.  The root's main visit is its last; any other node's is its
    deepest visit (last among equals) among those belonging to its parent's
    main visit, a visit belonging to the visit its entering decision (the
    latest MOVE of its path before it) belongs to.
    """
    result_of: dict[str, list[tuple[int, dict]]] = {}
    for i, r in enumerate(records):
        if r["tag"] == "RESULT":
            result_of.setdefault(r["path"], []).append((i, r))
    main: dict[str, int] = {}
    root = [r for _, r in result_of.get("", [])]
    root_moves = [r["parent_visit"] for r in records if r["tag"] == "MOVE" and "/" not in r["path"]]
    if root or root_moves:
        main[""] = max([r["visit"] for r in root] + root_moves)
    for path in sorted(result_of, key=lambda p: (p.count("/") + (p != ""), p)):
        if path == "" or parent_of(path) not in main:
            continue
        belongs = []
        for i, r in result_of[path]:
            entering = [q for q in records[:i] if q["tag"] == "MOVE" and q["path"] == path]
            if not entering:
                continue
            if entering[-1]["parent_visit"] == main[parent_of(path)]:
                belongs.append((r["d"], i, r["visit"]))
        if belongs:
            main[path] = max(belongs)[2]
    return main


def random_search(rng: random.Random) -> list[dict]:
    """A depth-first trace with re-searches, nested verification visits and aspiration re-searches."""
    out: list[dict] = []
    moves = ["a", "b", "c", "d"]

    def node(path: str, d: int) -> None:
        if d >= 3 and path and rng.random() < 0.2:  # verification: the same path, half depth, nested
            node(path, d // 2)
        for m in rng.sample(moves, rng.randint(0, 3)):
            child = f"{path}/{m}" if path else m
            out.append({"tag": "MOVE", "path": child, "d": d})
            if d > 1 and rng.random() < 0.8:
                nd = d - 1 - (rng.random() < 0.4)
                node(child, nd)
                if nd < d - 1 and rng.random() < 0.5:  # reduced, then re-searched
                    out.append({"tag": "MOVE", "path": child, "d": d})
                    node(child, d - 1)
        out.append({"tag": "RESULT", "path": path, "d": d})

    for it in (1, 2, 3, 4):
        start = len(out)
        for attempt in range(rng.randint(1, 2)):
            node("", it - attempt if it > 1 else it)
        for r in out[start:]:
            r["iter"] = it
    for r in out:
        if rng.random() < 0.03:
            r["given"] = rng.randint(1, 4)
    return out

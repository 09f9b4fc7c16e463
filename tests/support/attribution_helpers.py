"""An independent, record-by-record attribution for checking treediff.align.attribution, and random traces.

:func:`brute_attribution` walks every RESULT record of both sides and follows
its path's prefixes from the root down, stopping at the first (topmost) row
whose status is not ``same``: straight from the definition, with dicts and no
use of the aligner's subtree counts.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

MOVES = ["e2e4", "d2d4", "0000", "g1f3"]
ACTS = {"FULL": "SEARCH", "LMR": "REDUCE", "LMR-RESEARCH": "RESEARCH", "FP-QUIET": "PRUNE", "NMP": "NULL_PROBE"}

#: One random record: (path, MOVE?, act, depth, new depth, reduction, move number).
record = st.tuples(
    st.lists(st.sampled_from(MOVES), min_size=0, max_size=3).map("/".join),
    st.booleans(),
    st.sampled_from(list(ACTS)),
    st.sampled_from([1.0, 2.0, 1.75]),
    st.sampled_from([0.0, 1.0, np.nan]),
    st.sampled_from([np.nan, 1.0]),
    st.sampled_from([None, 0, 1, 2]),
)


def frame_of(records: list[tuple], seqs: "np.ndarray | None" = None) -> pd.DataFrame:
    """A records table (the aligner's columns) from :data:`record` tuples, in the given order.

    ``seqs``: each record's ``seq`` (default: its position), e.g. a permutation so that file order is
    not seq order."""
    rows = []
    if seqs is None:
        seqs = np.arange(len(records))
    for (path, is_move, act, d, nd, red, mn), seq in zip(records, seqs):
        if not path and is_move:
            is_move = False  # the root has no MOVE
        rows.append({
            "tag": "MOVE" if is_move else "RESULT", "path": path, "seq": int(seq),
            "act": act if is_move else None, "kind": ACTS[act] if is_move else None,
            "depth": d, "new_depth": nd if is_move else np.nan, "reduction": red if is_move else np.nan,
            "mn": mn if is_move else None,
        })
    frame = pd.DataFrame(rows, columns=["tag", "path", "seq", "act", "kind", "depth", "new_depth", "reduction", "mn"])
    for col in ("tag", "act", "kind"):
        frame[col] = frame[col].astype("category")
    frame["mn"] = frame["mn"].astype("Int16")
    frame["path"] = frame["path"].astype("str")
    for col in ("depth", "new_depth", "reduction"):
        frame[col] = frame[col].astype("float32")
    return frame


def _prefixes(path: str) -> list[str]:
    if not path:
        return [""]
    moves = path.split("/")
    return [""] + ["/".join(moves[: k + 1]) for k in range(len(moves))]


def brute_attribution(records_a: pd.DataFrame, records_b: pd.DataFrame, rows: pd.DataFrame,
                      scope: str = "", drill: bool = False) -> tuple[dict[str, list[int]], list[int]]:
    """({frontier path: [nodes A, nodes B]}, [residual A, residual B]) of ``scope``'s subtree, record by record.

    ``drill``: ``scope`` itself is never a frontier row.
    """
    status = dict(zip(rows["path"].astype(str), rows["status"].astype(str)))
    frontier: dict[str, list[int]] = {}
    residual = [0, 0]
    depth = 0 if not scope else scope.count("/") + 1
    for side, records in enumerate((records_a, records_b)):
        results = records[(records["tag"].astype(str) == "RESULT") & records["path"].notna()]
        for path in results["path"].astype(str):
            chain = _prefixes(path)
            if len(chain) <= depth or chain[depth] != scope:
                continue  # outside the scope
            candidates = chain[depth + (1 if drill else 0):]
            top = next((p for p in candidates if status[p] != "same"), None)
            if top is None:
                residual[side] += 1
            else:
                frontier.setdefault(top, [0, 0])[side] += 1
    # Frontier rows whose subtree holds no RESULT on either side still are frontier rows (delta 0).
    for path in status:
        chain = _prefixes(path)
        if len(chain) <= depth or chain[depth] != scope:
            continue
        candidates = chain[depth + (1 if drill else 0):]
        top = next((p for p in candidates if status[p] != "same"), None)
        if top == path:
            frontier.setdefault(path, [0, 0])
    return frontier, residual

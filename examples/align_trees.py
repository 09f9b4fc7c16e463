"""Align two engines' trees of one position, path by path (what `treediff diff A B` shows).

    python examples/align_trees.py [A B]        # default: the bundled typhoon and stockfish tactical traces

`align(records_a, records_b)` picks the search and iteration (the deepest both
completed) and returns an Alignment: `rows` has one row per move path in
depth-first order with its status and both sides' subtree node counts.
Prints JSON: the chosen iterations, the row count per status, the root's
nodes on each side, and A's kind against B's on shared paths.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from treediff.align import LOAD_COLUMNS, align, kind_confusion
from treediff.parse.source import open_source

ROOT = Path(__file__).resolve().parent.parent
a, b = sys.argv[1:3] if len(sys.argv) > 2 else (str(ROOT / "fixtures/traces/typhoon_tactical-f6f7.log"),
                                                str(ROOT / "fixtures/traces/stockfish_tactical-f6f7.log"))

records_a = open_source(a).records(LOAD_COLUMNS)   # the columns the aligner needs
records_b = open_source(b).records(LOAD_COLUMNS)
alignment = align(records_a, records_b)            # iter=N, position=ID to choose; visits="all" for every visit
rows = alignment.rows
root = rows.iloc[0]                                # the root row: the whole tree's node counts

print(json.dumps({
    "position": alignment.position,
    "iter_a": alignment.iter_a, "iter_b": alignment.iter_b,
    "rows": len(rows),
    "status": {str(k): int(v) for k, v in rows["status"].astype(str).value_counts().sort_index().items()},
    "nodes_a": int(root["nodes_a"]), "nodes_b": int(root["nodes_b"]),
    "kinds": {f"{ka} / {kb}": int(n) for ka, row in kind_confusion(alignment).iterrows()
              for kb, n in row.items() if n},
}, indent=1, ensure_ascii=False))

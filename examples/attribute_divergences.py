"""Attribute every node of both trees to the divergence it belongs to (diff's and compare's divergences).

    python examples/attribute_divergences.py [A B]   # default: the bundled tactical traces

Every node goes to its topmost row whose status is not `same` (a frontier
row); nodes under no such row are the shared residual.  So the frontier rows'
deltas plus the shared residual add up to nodes_a - nodes_b exactly.  Prints
JSON: the total, the `top` costliest frontier rows with their sentence, the
delta by A's kind x B's kind, and the check of the identity.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from treediff.align import LOAD_COLUMNS, align
from treediff.align.summaries import divergence_summary
from treediff.parse.source import open_source

ROOT = Path(__file__).resolve().parent.parent
a, b = sys.argv[1:3] if len(sys.argv) > 2 else (str(ROOT / "fixtures/traces/typhoon_tactical-f6f7.log"),
                                                str(ROOT / "fixtures/traces/stockfish_tactical-f6f7.log"))
top = 5

alignment = align(open_source(a).records(LOAD_COLUMNS), open_source(b).records(LOAD_COLUMNS))
found = divergence_summary(alignment, n=top)        # under="e2e4" for one subtree; drill=True inside it
att = found.attribution                             # every frontier row, not only the shown ones

rows = found.rows                                   # the top rows and a "(rest)" row summing the others
print(json.dumps({
    "total": found.total,                           # nodes_a, nodes_b, delta, shared_residual, frontier_rows
    "top": [{"path": r.path, "delta": int(r.delta), "sentence": r.sentence} for r in rows.itertuples()],
    "by_kind": [{"kind_a": r.kind_a, "kind_b": r.kind_b, "delta": int(r.delta)} for r in found.by_kind.itertuples()],
    "adds_up": int(att.delta.sum()) + att.shared_residual == att.total_delta,
}, indent=1, ensure_ascii=False))

"""Open any input (a log, a `treediff parse` Parquet pair, a dataset) as a Source and list its searches.

    python examples/open_source.py [INPUT]      # default: the bundled typhoon tactical trace

Prints one JSON object per search: the engine, the position id, the iterations
(root depths, plies) and the RESULT records of the search (its nodes), then the
number of MOVE and RESULT records read back with `Source.records`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from treediff.parse.source import open_source

ROOT = Path(__file__).resolve().parent.parent
path = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "fixtures/traces/typhoon_tactical-f6f7.log")

source = open_source(path)          # a log is parsed here; nothing else is read yet
for warning in source.warnings:     # what parsing found odd (also printed by the CLI)
    print(f"warning: {warning}", file=sys.stderr)

for search in source.searches.itertuples():   # one row per search (pandas)
    print(json.dumps({"engine": search.engine, "position": search.position, "iterations": int(search.iterations),
                      "result_nodes": int(search.result_nodes)}))

records = source.records(["tag", "path", "ply"])  # every batch as one frame, only these columns (+ engine, search)
tags = records["tag"].astype(str).value_counts()
print(json.dumps({"records": len(records), "MOVE": int(tags.get("MOVE", 0)), "RESULT": int(tags.get("RESULT", 0))}))

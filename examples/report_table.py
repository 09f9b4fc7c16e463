"""Build report tables with the library (what `treediff report --table nodes,acts` prints).

    python examples/report_table.py [INPUT...]  # default: the bundled typhoon tactical trace

`build_report(source, tables, by)` folds each table over the source's batches;
`report[name]` is one table as a pandas DataFrame.  Prints JSON: per engine
the nodes (RESULT records) and the count of every act.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from treediff.parse.source import open_sources
from treediff.report.core import build_report

ROOT = Path(__file__).resolve().parent.parent
paths = sys.argv[1:] or [str(ROOT / "fixtures/traces/typhoon_tactical-f6f7.log")]

source = open_sources(paths)                            # several inputs are one Source
report = build_report(source, tables=["nodes", "acts"], by="engine")
nodes = report["nodes"]                                 # one row per engine
acts = report["acts"]                                   # one row per (engine, act)

out = {}
for row in nodes.itertuples():
    mine = acts[acts["engine"] == row.engine]
    out[str(row.engine)] = {
        "nodes": int(row.nodes),
        "acts": {str(a): int(c) for a, c in zip(mine["act"], mine["count"])},
    }
print(json.dumps(out, indent=1, sort_keys=True))

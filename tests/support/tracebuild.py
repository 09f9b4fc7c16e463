"""A tiny, test-only TREEDUMP reader that builds records/searches frames following the schema.

It exists so the report tests do not depend on the real parser; it handles
only the well-formed hand-written fixtures (no SAN resolution: paths are kept
as written).  End-to-end tests through the real parser live in test_cli.py.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from treediff.parse.dialects import crafty, stockfish, typhoon
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA

DIALECTS = {d.DIALECT.name: d.DIALECT for d in (typhoon, stockfish, crafty)}
NULLS = {"0000", "(null)", "null", "--"}


def _kv(tokens: list[str]) -> dict[str, str]:
    out = {}
    for t in tokens:
        k, _, v = t.partition("=")
        out[k] = v
    return out


def read_trace(text: str, source: str = "trace.log") -> tuple[pd.DataFrame, pd.DataFrame]:
    records, searches = [], []
    search = -1
    cur: dict = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tag, *rest = line.split(" ")
        if tag == "TREEDUMP":
            head, _, fen = line.partition(" fen=")
            kv = _kv(head.split(" ")[1:])
            search += 1
            dialect = DIALECTS[kv["engine"]]
            cur = {"engine": dialect.name, "search": search, "position": kv.get("id"), "fen": fen,
                   "phase": kv.get("phase"), "unit": int(kv.get("unit", dialect.unit)), "dialect": dialect,
                   "iter": 0, "seq": 0, "iterations": 0, "max_iter": 0, "moves": 0, "results": 0,
                   "end_nodes": None, "first_line": lineno}
            searches.append(cur)
            continue
        kv = _kv(rest)
        if tag == "ITER":
            cur["iter"] = int(kv["d"])
            cur["iterations"] += 1
            cur["max_iter"] = max(cur["max_iter"], cur["iter"])
            continue
        if tag == "END":
            cur["end_nodes"] = int(kv["nodes"])
            continue
        unit = cur["unit"]
        path = kv["path"]
        path = "" if path == "-" else path
        move = path.split("/")[-1] if path else None
        rec = {
            "engine": cur["engine"], "search": search, "position": cur["position"], "fen": cur["fen"],
            "phase": cur["phase"], "iter": cur["iter"], "seq": cur["seq"], "line": lineno, "tag": tag,
            "path": path, "ply": int(kv["ply"]), "move": move, "null_move": move in NULLS if move else False,
            "mn": int(kv["mn"]) if "mn" in kv else None,
            "depth": int(kv["d"]) / unit,
            "new_depth": int(kv["nd"]) / unit if "nd" in kv else None,
            "reduction": int(kv["red"]) / unit if "red" in kv else None,
            "act": kv.get("act"),
            "kind": cur["dialect"].kind_of(kv["act"]).value if tag == "MOVE" else None,
            "score": int(kv["score"]) if "score" in kv else None,
        }
        cur["seq"] += 1
        cur["moves" if tag == "MOVE" else "results"] += 1
        records.append(rec)
    rec_cols = {name: [r.get(name) for r in records] for name in RECORDS_SCHEMA.names}
    rec_table = pa.Table.from_pydict(rec_cols, schema=RECORDS_SCHEMA)
    s_rows = [{
        "engine": s["engine"], "search": s["search"], "position": s["position"], "fen": s["fen"],
        "phase": s["phase"], "phase_source": "header", "unit": s["unit"], "producer": None, "source": source,
        "first_line": s["first_line"], "contexts": None, "kept_context": None, "iterations": s["iterations"],
        "max_iter": s["max_iter"], "records": s["moves"] + s["results"], "moves": s["moves"],
        "result_nodes": s["results"], "end_nodes": s["end_nodes"], "end_best": None, "end_score": None,
        "node_source": "result", "warnings": None,
    } for s in searches]
    s_table = pa.Table.from_pylist(s_rows, schema=SEARCHES_SCHEMA)
    srch = s_table.to_pandas()
    for col in ("engine", "position", "phase"):
        srch[col] = srch[col].astype("string")
    return rec_table.to_pandas(), srch


def read_fixture(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return read_trace(Path(path).read_text(), source=str(path))


def concat(*pairs: tuple[pd.DataFrame, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Several inputs as io.load would combine them: search numbers renumbered to stay unique."""
    recs, srchs, offset = [], [], 0
    for rec, srch in pairs:
        rec, srch = rec.copy(), srch.copy()
        rec["search"] = (rec["search"] + offset).astype("int32")
        srch["search"] = (srch["search"] + offset).astype("int32")
        offset += len(srch)
        recs.append(rec)
        srchs.append(srch)
    records = pd.concat(recs, ignore_index=True)
    for col in ("engine", "act", "kind", "tag", "phase", "position"):
        records[col] = records[col].astype("category")
    return records, pd.concat(srchs, ignore_index=True)

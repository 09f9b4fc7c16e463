"""Build records tables the way the parser outputs them, from TREEDUMP text, for aligner tests.

A deliberately small reader (not the project's parser): coordinate/UCI moves
only (promotion lower-cased, null spellings -> ``0000``), ``-`` root -> ``""``,
depths divided by the header's ``unit`` (default 64 for typhoon, else 1), kinds
from the dialect modules.  SAN is not supported here; end-to-end tests use
``treediff.parse.core`` for that.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from treediff.parse.dialects import crafty, stockfish, typhoon

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "hand"
_DIALECTS = {d.DIALECT.name: d.DIALECT for d in (typhoon, stockfish, crafty)}
_NULLS = {"0000", "(null)", "null", "--"}


def _move(token: str) -> str:
    if token in _NULLS:
        return "0000"
    return token.lower()


def _path(text: str) -> str:
    if text == "-":
        return ""
    return "/".join(_move(t) for t in text.split("/"))


def records_from_text(text: str) -> pd.DataFrame:
    rows = []
    search = -1
    header: dict[str, str] = {}
    it = 0
    seq = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tag, _, rest = line.partition(" ")
        if tag == "TREEDUMP":
            fen = rest.split("fen=", 1)[1] if "fen=" in rest else ""
            header = dict(t.split("=", 1) for t in rest.split("fen=", 1)[0].split())
            header["fen"] = fen
            search += 1
            it = 0
            seq = 0
            continue
        kv = dict(t.split("=", 1) for t in rest.split())
        if tag == "ITER":
            it = int(kv["d"])
            continue
        if tag not in ("MOVE", "RESULT"):
            continue
        dialect = _DIALECTS[header["engine"]]
        unit = float(header.get("unit", dialect.unit))
        path = _path(kv["path"])

        def plies(key: str) -> float:
            return float(kv[key]) / unit if key in kv else np.nan

        act = kv.get("act")
        rows.append(
            {
                "engine": header["engine"],
                "search": search,
                "position": header.get("id", ""),
                "fen": header["fen"],
                "iter": it,
                "seq": seq,
                "line": line_no,
                "tag": tag,
                "path": path,
                "ply": 0 if path == "" else path.count("/") + 1,
                "move": path.rsplit("/", 1)[-1] if path else None,
                "null_move": path.rsplit("/", 1)[-1] == "0000" if path else False,
                "mn": int(kv["mn"]) if "mn" in kv else None,
                "depth": plies("d"),
                "new_depth": plies("nd"),
                "reduction": plies("red"),
                "act": act,
                "kind": dialect.kind_of(act).value if act else None,
            }
        )
        seq += 1
    frame = pd.DataFrame(rows)
    for col in ("engine", "position", "fen", "tag", "act", "kind"):
        frame[col] = frame[col].astype("category")
    frame["search"] = frame["search"].astype("int32")
    frame["iter"] = frame["iter"].astype("int16")
    frame["ply"] = frame["ply"].astype("int16")
    frame["mn"] = frame["mn"].astype("Int16")
    for col in ("depth", "new_depth", "reduction"):
        frame[col] = frame[col].astype("float32")
    frame["path"] = frame["path"].astype("str")
    return frame


def records_from_fixture(name: str) -> pd.DataFrame:
    return records_from_text((FIXTURES / name).read_text())


"""The straightforward per-line Python parser that `treediff parse` is measured against.

It does what a scratch script does: split each line, build a dict per record,
collect them in a list and write one Parquet file with pandas.  UCI dialects
only (paths lower-cased, depths divided by the unit); no SAN, no contexts.
"""
from __future__ import annotations

import pandas as pd

INT_KEYS = {"ply", "mn", "d", "nd", "red", "a", "b", "see", "hist", "score"}


def parse_baseline(path: str, out: str) -> int:
    rows = []
    search = -1
    unit = 1
    iteration = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            tag, _, rest = line.rstrip("\n").partition(" ")
            if tag == "TREEDUMP":
                search += 1
                head = rest.split(" fen=")[0]
                fields = dict(tok.split("=", 1) for tok in head.split())
                unit = int(fields.get("unit", 1))
                iteration = 0
                continue
            fields = dict(tok.split("=", 1) for tok in rest.split() if "=" in tok)
            if tag == "ITER":
                iteration = int(fields["d"])
                continue
            if tag not in ("MOVE", "RESULT"):
                continue
            row = {"search": search, "iter": iteration, "line": line_no, "tag": tag}
            for key, value in fields.items():
                row[key] = int(value) if key in INT_KEYS else value
            row["path"] = row.get("path", "").lower().replace("-", "")
            for key in ("d", "nd", "red"):
                if key in row:
                    row[key] = row[key] / unit
            rows.append(row)
    pd.DataFrame(rows).to_parquet(out)
    return len(rows)


if __name__ == "__main__":
    import sys

    print(parse_baseline(sys.argv[1], sys.argv[2]))

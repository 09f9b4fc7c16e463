"""Benchmark: the vectorized aligner against a straightforward dict-based Python aligner.

    python benchmarks/bench_align.py                 # 2M + 2M records (the target size)
    python benchmarks/bench_align.py --records 200000 --check
    python benchmarks/bench_align.py --positions A.log B.log   # compare's per-position alignment, C vs numpy

Two synthetic trees (support.synthetic: same game tree, typhoon-like vs
stockfish-like pruning; deterministic) are written to Parquet; each aligner
then runs in its own fresh child process that reads them, so time and peak
RSS (ru_maxrss, loaded records included) are the aligner's alone.  Both
results are compared row by row (order, status, node counts, decision
sequences) and the speed ratio is reported.

The vectorized run includes what ``treediff diff`` computes next: node visits
(the synthetic records carry no ``visit`` columns, so the aligner works them
out) and the divergence attribution (every node to its frontier row, the top
10 with sentences), timed separately.

Targets (issues 5 and 12): >= 5x the baseline, <= 20 s and <= 2 GB peak for 2M + 2M
with visits and attribution.

``--positions A B`` (issue 17) times what ``treediff compare``'s divergences spend aligning: every
position pair of two inputs (logs or Parquet) read as compare reads them, then ``align_arrays`` over all
of them, with the compiled per-path passes (treediff/align/_calign.c) and with the numpy fallback
(TREEDIFF_NO_CALIGN=1) alternating in one process; thread CPU seconds per pass (min and all).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
# The synthetic tree generator is test support code (tests/support/synthetic.py), not part of the package.
sys.path.insert(0, str(ROOT / "tests"))

_NO_MN = 4095


def baseline_align(records_a: pd.DataFrame, records_b: pd.DataFrame) -> pd.DataFrame:
    """The straightforward aligner: Python dicts, prefix walks and an explicit DFS.

    Same rules as treediff.align (status, sibling order, subtree node counts),
    written the obvious way; the reference both for speed and for results.
    """
    sides = []
    for records in (records_a, records_b):
        records = records.sort_values("seq", kind="stable")
        decisions: dict[str, list] = defaultdict(list)
        own_results: dict[str, int] = defaultdict(int)
        own_records: dict[str, int] = defaultdict(int)
        result_depth: dict[str, float] = {}
        columns = [records[c].tolist() for c in ("tag", "path", "seq", "act", "kind", "depth", "new_depth", "reduction", "mn")]
        for tag, path, seq, act, kind, depth, nd, red, mn in zip(*columns):
            if path is None or path != path:
                continue
            own_records[path] += 1
            if tag == "MOVE":
                decisions[path].append((act, kind, depth, nd, red, mn, seq))
            elif tag == "RESULT":
                own_results[path] += 1
                result_depth.setdefault(path, depth)
        sides.append((decisions, own_results, own_records, result_depth))

    paths = set([""])
    for decisions, _, own_records, _ in sides:
        paths.update(own_records)
    for path in list(paths):
        while path:
            path = path.rpartition("/")[0]
            if path in paths:
                break
            paths.add(path)

    def nan(x) -> bool:
        return x is None or x is pd.NA or x != x

    # Subtree sums by walking every path's ancestors.
    sub = {p: [0, 0, 0, 0] for p in paths}
    for i, (_, own_results, own_records, _) in enumerate(sides):
        for path, count in own_results.items():
            p = path
            while True:
                sub[p][i] += count
                if not p:
                    break
                p = p.rpartition("/")[0]
        for path, count in own_records.items():
            p = path
            while True:
                sub[p][2 + i] += count
                if not p:
                    break
                p = p.rpartition("/")[0]

    children: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path:
            children[path.rpartition("/")[0]].append(path)
    dec_a, dec_b = sides[0][0], sides[1][0]
    undecided = sorted(p for p in paths if p not in dec_a and p not in dec_b)
    undecided_rank = {p: i for i, p in enumerate(undecided)}

    def sibling_key(path: str):
        if path in dec_a:
            mn, rank, seq = dec_a[path][0][5], 0, dec_a[path][0][6]
        elif path in dec_b:
            mn, rank, seq = dec_b[path][0][5], 1, dec_b[path][0][6]
        else:
            mn, rank, seq = None, 2, undecided_rank[path]
        return (_NO_MN if nan(mn) else min(max(int(mn), 0), _NO_MN), rank, seq)

    def same_float(x, y) -> bool:
        return (nan(x) and nan(y)) or x == y

    out = []
    stack = [""]
    while stack:
        path = stack.pop()
        da, db = dec_a.get(path, []), dec_b.get(path, [])
        present_a, present_b = sub[path][2] > 0, sub[path][3] > 0
        if present_a and present_b:
            same = len(da) == len(db) and all(
                x[0] == y[0] and same_float(x[2], y[2]) and same_float(x[3], y[3]) and same_float(x[4], y[4])
                for x, y in zip(da, db)
            )
            status = "same" if same else "differs"
        else:
            status = "only-A" if present_a else "only-B"
        out.append(
            (path, status, "→".join(d[0] for d in da), "→".join(d[0] for d in db), sub[path][0], sub[path][1])
        )
        stack.extend(sorted(children.get(path, []), key=sibling_key, reverse=True))
    return pd.DataFrame(out, columns=["path", "status", "seq_a", "seq_b", "nodes_a", "nodes_b"])


def _peak_rss() -> int:
    """Peak resident set size of this process, bytes.

    VmHWM rather than ru_maxrss: ru_maxrss survives exec, so a child forked
    from the (large) generating parent would report the parent's size.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(kind: str, a: str, b: str, out: str) -> None:
    from treediff.align import LOAD_COLUMNS

    # The columns `treediff diff` loads.
    columns = list(dict.fromkeys(["engine", "search", *LOAD_COLUMNS]))
    records_a, records_b = pd.read_parquet(a, columns=columns), pd.read_parquet(b, columns=columns)
    start = time.perf_counter()
    attribution_seconds = 0.0
    if kind == "vectorized":
        from treediff.align import align
        from treediff.align.summaries import divergence_summary

        alignment = align(records_a, records_b)
        rows = alignment.rows
        # What `treediff diff` computes next: every node attributed to its frontier row, top 10 with sentences.
        mid = time.perf_counter()
        summary = divergence_summary(alignment, n=10)
        attribution_seconds = time.perf_counter() - mid
        total = summary.total
        if int(total["delta"]) != int(total["nodes_a"]) - int(total["nodes_b"]):
            raise SystemExit("attribution does not add up")
    else:
        rows = baseline_align(records_a, records_b)
    seconds = time.perf_counter() - start
    peak = _peak_rss()
    result = rows[["path", "status", "seq_a", "seq_b", "nodes_a", "nodes_b"]].astype(
        {"path": str, "status": str, "seq_a": str, "seq_b": str}
    )
    result.to_parquet(out)
    print(json.dumps({"seconds": seconds, "attribution_seconds": attribution_seconds, "peak_rss": peak,
                      "rows": len(rows)}))


def _run_child(kind: str, a: Path, b: Path, out: Path, timeout: float) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--a", str(a), "--b", str(b), "--out", str(out)],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} aligner failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def positions(path_a: str, path_b: str, repeats: int) -> None:
    """``align_arrays`` over every position pair of two inputs, compiled and numpy passes alternating."""
    from treediff.align import core
    from treediff.align.api import align_arrays
    from treediff.align.stream import MemoryBudget, position_pairs
    from treediff.align.summaries import paired_positions
    from treediff.parse.source import open_source

    source_a, source_b = open_source(path_a), open_source(path_b)
    paired = paired_positions(source_a, source_b)
    labels = [position for position, _, _ in paired]
    pairs = [(ra, rb) for _, ra, rb in position_pairs(source_a, source_b, [(ma, mb) for _, ma, mb in paired],
                                                       core.LOAD_COLUMNS, MemoryBudget(), labels, ("A", "B"))]
    print(f"{len(pairs)} position pairs, {sum(len(ra) + len(rb) for ra, rb in pairs):,} records")
    modes = ["compiled", "numpy"] if core._calign is not None else ["numpy"]
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    saved = os.environ.get(core.NO_CALIGN_ENV)
    try:
        for _ in range(repeats):
            for mode in modes:
                os.environ[core.NO_CALIGN_ENV] = "1" if mode == "numpy" else ""
                start = time.thread_time()
                for ra, rb in pairs:
                    align_arrays(ra, rb)
                seconds[mode].append(time.thread_time() - start)
    finally:
        if saved is None:
            os.environ.pop(core.NO_CALIGN_ENV, None)
        else:
            os.environ[core.NO_CALIGN_ENV] = saved
    for mode, values in seconds.items():
        print(f"{mode:>9}: min {min(values):.3f} s CPU a pass ({' '.join(f'{v:.3f}' for v in values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", nargs=2, metavar=("A", "B"),
                        help="time compare's per-position alignment of two inputs instead (compiled vs numpy)")
    parser.add_argument("--repeats", type=int, default=3, help="passes per mode with --positions")
    parser.add_argument("--records", type=int, default=2_000_000, help="records per side (default 2M)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per aligner run")
    parser.add_argument("--workdir", help="keep the generated Parquet pair here and reuse it when present")
    parser.add_argument("--child", choices=["vectorized", "baseline"], help=argparse.SUPPRESS)
    parser.add_argument("--a", help=argparse.SUPPRESS)
    parser.add_argument("--b", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.positions:
        positions(args.positions[0], args.positions[1], args.repeats)
        return
    if args.child:
        _child(args.child, args.a, args.b, args.out)
        return

    from support.synthetic import synthetic_pair

    with tempfile.TemporaryDirectory(prefix="bench_align.") as tmp:
        tmpdir = Path(tmp)
        where = Path(args.workdir) if args.workdir else tmpdir
        where.mkdir(parents=True, exist_ok=True)
        a, b = where / f"a.{args.records}.{args.seed}.parquet", where / f"b.{args.records}.{args.seed}.parquet"
        if a.exists() and b.exists():
            print(f"reusing {a} and {b}")
        else:
            start = time.perf_counter()
            records_a, records_b, depth = synthetic_pair(args.records, seed=args.seed)
            print(f"generated 2 x {args.records:,} records (root depth {depth}) in "
                  f"{time.perf_counter() - start:.1f} s")
            records_a.to_parquet(a)
            records_b.to_parquet(b)
            del records_a, records_b
        runs = {}
        for kind in ("vectorized", "baseline"):
            runs[kind] = _run_child(kind, a, b, tmpdir / f"{kind}.out.parquet", args.timeout)
            r = runs[kind]
            extra = f" (attribution {r['attribution_seconds']:.2f} s of it)" if kind == "vectorized" else ""
            print(f"{kind:>10}: {r['seconds']:7.2f} s{extra}   peak RSS {r['peak_rss'] / 2**30:5.2f} GiB   "
                  f"{r['rows']:,} rows")
        vec = pd.read_parquet(tmpdir / "vectorized.out.parquet")
        base = pd.read_parquet(tmpdir / "baseline.out.parquet")
    identical = vec.reset_index(drop=True).equals(base.reset_index(drop=True))
    print(f"results identical: {identical}")
    print("statuses: " + ", ".join(f"{k} {v:,}" for k, v in vec["status"].value_counts().items()))
    ratio = runs["baseline"]["seconds"] / runs["vectorized"]["seconds"]
    v = runs["vectorized"]
    print(f"speed-up: {ratio:.1f}x (target >= 5x)")
    print(
        f"targets: {'OK' if ratio >= 5 else 'MISSED'} ratio, "
        f"{'OK' if v['seconds'] <= 20 else 'MISSED'} time <= 20 s, "
        f"{'OK' if v['peak_rss'] <= 2 * 2**30 else 'MISSED'} peak <= 2 GB"
    )
    if not identical:
        raise SystemExit("vectorized and baseline results differ")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()

"""Benchmark: `treediff parse` against the per-line Python baseline, in the same run.

    python benchmarks/bench_parse.py              # 5M and 20M lines, stockfish + typhoon; SAN 1M
    python benchmarks/bench_parse.py --quick      # 1M lines
    python benchmarks/bench_parse.py --dialects crafty   # one dialect
    python benchmarks/bench_parse.py --baseline-tree /tmp/wt-parse   # also parse with another checkout

With ``--baseline-tree DIR`` (e.g. ``git worktree add DIR <commit>``, with the compiled
``treediff/parse/_ctok*.so`` built or copied in), every log is also parsed by the treediff of DIR
right after this tree's run, and the ratios (wall, CPU) between the two are printed: the figure to
read for a change, since both parse the same file under the same load.

For the UCI dialects two limits are measured beside, on the same log: the parse into a spill (Arrow
IPC, what compare and report of a log run; no Parquet; timed without the imports) and the Parquet
writer alone, rewriting the records `treediff parse` wrote in the parser's chunks (the bound of
`parse`: its writer thread is the critical path, docs/PERFORMANCE.md, twelfth session).  The summary
gives each as a ratio to issue 17's targets.

Each parse runs in its own subprocess so its peak RSS (ru_maxrss) is its own; treediff's with one BLAS
thread, as the CLI runs.  The baseline parses the first 5M lines of each log (``--baseline-lines``; it
is slow and holds everything in memory, ~1.6 GB per million lines, so 20M
lines would not fit) and treediff parses the same lines, so the speed-up is
measured on identical input in the same run; each time includes the
interpreter's imports.  Ratios are what
to read, since the machine is shared: every row also gives the CPU time
(all threads, and the SAN worker process) and the 1-minute load average
when the run started.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Issue 17's parser targets (UCI dialects, on this 2-core machine): the ratios the summary prints.
TARGET_MLINES_S = 4.0
TARGET_CPU_US = 0.4
sys.path.insert(0, str(HERE))

from gen_logs import generate  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {here!r})
kind, log, out, tree = sys.argv[1:5]
if tree:
    sys.path.insert(0, tree)  # the other checkout's treediff comes first
if kind != "baseline":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI runs (run.environment.quiet_blas)
t = time.perf_counter()
if kind == "treediff":
    from treediff.parse.core import parse_to_parquet
    parse_to_parquet([log], out)
elif kind == "spill":
    # Timed without the imports (a limit, not a command: the spill parse runs inside compare and report).
    from treediff.parse.pipeline import parse_to_spill
    import treediff.store.spill
    t, cpu = time.perf_counter(), time.process_time()
    parse_to_spill([log], out)
    print(json.dumps({{"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - cpu,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
    sys.exit(0)
elif kind == "writer":
    # The Parquet writer alone, on the records `treediff parse` wrote (``log``), in the parser's chunks: the
    # bound of `parse`, whose writer thread is its critical path.  Timed: the writing only.
    import pyarrow as pa, pyarrow.parquet as pq
    from treediff.parse.pipeline import RECORDS_PARQUET_OPTIONS
    table = pq.read_table(log)
    batches = table.to_batches(max_chunksize=110_000)  # (~an 8 MiB chunk's records)
    t = time.perf_counter()
    cpu = time.process_time()
    with pq.ParquetWriter(out, table.schema, **RECORDS_PARQUET_OPTIONS) as writer:
        for batch in batches:
            writer.write_table(pa.Table.from_batches([batch]))
    print(json.dumps({{"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - cpu,
                      "records": table.num_rows}}))
    sys.exit(0)
else:
    from baseline_parser import parse_baseline
    parse_baseline(log, out)
elapsed = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_SELF)
# The SAN worker's CPU (reaped by now).  Not its ru_maxrss: a child inherits the parent's
# high-water mark from before its exec, so that figure is meaningless.
workers = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({{"seconds": elapsed,
                  "cpu_seconds": usage.ru_utime + usage.ru_stime + workers.ru_utime + workers.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024}}))
"""


def run_child(kind: str, log: str, out: str, tree: str = "") -> dict:
    """One parse in a fresh interpreter: wall and CPU seconds, peak RSS (MB), load average at the start.

    ``tree``: a checkout whose treediff is imported instead of this one's ("" for this one)."""
    code = CHILD.format(here=str(HERE))
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, "-c", code, kind, log, out, tree], capture_output=True, text=True,
                          check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load"] = load
    return result


def head_lines(src: str, dst: str, n: int) -> int:
    count = 0
    with open(src) as fin, open(dst, "w") as fout:
        for line in fin:
            fout.write(line)
            count += 1
            if count >= n:
                break
    return count


def settle(path: str) -> None:
    """Write the just-generated log out and read it once, so no run pays for disk writeback or a cold cache.

    (A first run right after generating a 5M-line log measured 1.18 M lines/s, the next one 1.59.)
    """
    os.sync()
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def median_runs(runs: list[dict]) -> dict:
    """The median of each figure over ``runs`` (each figure on its own), with the runs' count and spread."""
    out = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    out["runs"] = len(runs)
    out["cpu_range"] = (min(r["cpu_seconds"] for r in runs), max(r["cpu_seconds"] for r in runs))
    return out


def bench(dialect: str, lines: int, workdir: str, baseline_lines: int, baseline_tree: str = "",
          repeat: int = 1) -> dict:
    log = os.path.join(workdir, f"{dialect}_{lines}.log")
    n = generate(dialect, lines, log)
    settle(log)
    if baseline_tree and repeat > 1:
        # Alternating runs, this tree then the other, so both see the same load; medians of each.
        mine, theirs = [], []
        for _ in range(repeat):
            mine.append(run_child("treediff", log, os.path.join(workdir, "td.parquet")))
            theirs.append(run_child("treediff", log, os.path.join(workdir, "tree.parquet"), baseline_tree))
        td, other = median_runs(mine), median_runs(theirs)
    else:
        td = run_child("treediff", log, os.path.join(workdir, "td.parquet"))
        other = run_child("treediff", log, os.path.join(workdir, "tree.parquet"), baseline_tree) if baseline_tree else {}
    result = {"dialect": dialect, "lines": n, "treediff_s": td["seconds"],
              "treediff_mlines_s": n / td["seconds"] / 1e6, "treediff_peak_mb": td["peak_rss_mb"],
              "treediff_cpu_us_per_line": td["cpu_seconds"] / n * 1e6, "load": td["load"]}
    result["out_bytes"] = os.path.getsize(os.path.join(workdir, "td.parquet"))
    if dialect != "crafty":
        # The two limits of issue 17's parser targets, in the same run: the parse into a spill (what compare
        # and report of a log run: no Parquet), and the Parquet writer alone (the bound of `parse`).
        spill_dir = tempfile.mkdtemp(dir=workdir)
        spill = run_child("spill", log, spill_dir)
        shutil.rmtree(spill_dir)
        writer = run_child("writer", os.path.join(workdir, "td.parquet"), os.path.join(workdir, "rewritten.parquet"))
        os.unlink(os.path.join(workdir, "rewritten.parquet"))
        result.update({"spill_s": spill["seconds"], "spill_mlines_s": n / spill["seconds"] / 1e6,
                       "spill_cpu_us_per_line": spill["cpu_seconds"] / n * 1e6, "spill_peak_mb": spill["peak_rss_mb"],
                       "writer_cpu_us_per_record": writer["cpu_seconds"] / writer["records"] * 1e6,
                       "writer_max_mrecords_s": writer["records"] / writer["cpu_seconds"] / 1e6})
    if "runs" in td:
        result.update({"runs": td["runs"], "cpu_range": td["cpu_range"], "tree_cpu_range": other["cpu_range"]})
    if baseline_tree:
        result["tree_out_bytes"] = os.path.getsize(os.path.join(workdir, "tree.parquet"))
        result.update({"tree_mlines_s": n / other["seconds"] / 1e6,
                       "tree_cpu_us_per_line": other["cpu_seconds"] / n * 1e6, "tree_peak_mb": other["peak_rss_mb"],
                       "tree_load": other["load"], "wall_ratio_vs_tree": td["seconds"] / other["seconds"],
                       "cpu_ratio_vs_tree": td["cpu_seconds"] / other["cpu_seconds"]})
    if dialect != "crafty":
        if baseline_lines >= n:
            # The baseline parses the whole log: compare with the treediff run above, same input.
            m, small, td_small = n, log, td
        else:
            small = os.path.join(workdir, "slice.log")
            m = head_lines(log, small, baseline_lines)
            settle(small)
            td_small = run_child("treediff", small, os.path.join(workdir, "td_small.parquet"))
        base = run_child("baseline", small, os.path.join(workdir, "base.parquet"))
        result.update({"baseline_lines": m, "baseline_mlines_s": m / base["seconds"] / 1e6,
                       "treediff_same_slice_mlines_s": m / td_small["seconds"] / 1e6,
                       "baseline_cpu_us_per_line": base["cpu_seconds"] / m * 1e6,
                       "speedup_same_slice": base["seconds"] / td_small["seconds"],
                       "baseline_peak_mb": base["peak_rss_mb"]})
    os.unlink(log)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1M lines only")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--baseline-lines", type=int, default=5_000_000,
                    help="lines the baseline parses (default 5M: all of a 5M log, the first 5M of a 20M one; "
                         "it holds every record in memory, about 1.6 GB per million lines)")
    ap.add_argument("--dialects", default="stockfish,typhoon,crafty", help="comma-separated (default: all three)")
    ap.add_argument("--baseline-tree", default="",
                    help="another checkout (e.g. a git worktree of the previous commit, _ctok built in it): "
                         "each log is parsed by it too and the ratios printed")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --baseline-tree: parse each log this many times with each tree, alternating, and "
                         "report the medians (the machine is shared: single runs scatter by 10-15%%)")
    ap.add_argument("--sizes", default=None, help="comma-separated line counts for the UCI dialects "
                                                   "(default 5M,20M; --quick: 1M)")
    args = ap.parse_args()
    sizes = [1_000_000] if args.quick else [5_000_000, 20_000_000]
    if args.sizes:
        sizes = [int(float(x)) for x in args.sizes.split(",")]
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    from trees import compile_package

    for tree in [Path(__file__).resolve().parent.parent, *([Path(args.baseline_tree)] if args.baseline_tree else [])]:
        compile_package(tree)  # (both trees load their modules from .pyc: see benchmarks/trees.py)
    from treediff.parse.tokenizer import ctok_available  # the children see the same install and environment

    print(f"tokenizer: {'compiled (_ctok)' if ctok_available() else 'polars regex'}"
          " (TREEDIFF_TOKENIZER=regex forces the regex)", flush=True)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        results = []
        dialects = args.dialects.split(",")
        for dialect in [d for d in ("stockfish", "typhoon") if d in dialects]:
            for size in sizes:
                results.append(bench(dialect, size, workdir, baseline_lines=args.baseline_lines,
                                     baseline_tree=args.baseline_tree, repeat=args.repeat))
                print(json.dumps(results[-1]), flush=True)
        if "crafty" in dialects:
            results.append(bench("crafty", 1_000_000 if not args.quick else 300_000, workdir, 0,
                                 baseline_tree=args.baseline_tree, repeat=args.repeat))
            print(json.dumps(results[-1]), flush=True)
    print("\nsummary")
    for r in results:
        line = (f"{r['dialect']:>9} {r['lines']:>11,} lines: treediff {r['treediff_mlines_s']:.2f} M lines/s "
                f"({r['treediff_cpu_us_per_line']:.2f} CPU-us/line), peak {r['treediff_peak_mb']:.0f} MB, load {r['load']:.1f}")
        if "spill_mlines_s" in r:
            line += (f"; into a spill, imports excluded, {r['spill_mlines_s']:.2f} M lines/s"
                     f" ({r['spill_cpu_us_per_line']:.2f} CPU-us/line,"
                     f" x{r['spill_mlines_s'] / TARGET_MLINES_S:.2f} and x{TARGET_CPU_US / r['spill_cpu_us_per_line']:.2f}"
                     f" of the {TARGET_MLINES_S:g} M lines/s and {TARGET_CPU_US:g} CPU-us targets); the Parquet writer"
                     f" alone {r['writer_cpu_us_per_record']:.2f} CPU-us/record (at most"
                     f" {r['writer_max_mrecords_s']:.2f} M records/s on its one thread)")
        if "speedup_same_slice" in r:
            line += (f"; baseline {r['baseline_mlines_s']:.3f} M lines/s; treediff {r['treediff_same_slice_mlines_s']:.2f}"
                     f" -> speed-up x{r['speedup_same_slice']:.1f} on the same {r['baseline_lines']:,} lines")
        if "wall_ratio_vs_tree" in r:
            line += (f"; {args.baseline_tree}: {r['tree_mlines_s']:.2f} M lines/s ({r['tree_cpu_us_per_line']:.2f}"
                     f" CPU-us/line, peak {r['tree_peak_mb']:.0f} MB) -> this tree's wall x{r['wall_ratio_vs_tree']:.2f},"
                     f" CPU x{r['cpu_ratio_vs_tree']:.2f} of it; output {r['out_bytes']:,} bytes against"
                     f" {r['tree_out_bytes']:,}")
            if "runs" in r:
                line += f" (medians of {r['runs']} alternating runs each)"
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark `treediff batch`: -j 2 against -j 1 on the same batch, and the runner's own cost per search.

    python benchmarks/bench_batch.py [--depth 5] [--engine typhoon_py] [--epd fixtures/positions20.epd]

1. The batch of ``fixtures/positions20.epd`` (20 positions, one engine) run
   with ``-j 1`` (in-process) and ``-j 2`` (two worker processes), in this
   one run, interleaved ``--repeat`` times, best of each (other work on a
   shared machine only slows runs down).  Target: speed-up >= 1.7x.  The
   machine's own ceiling (two CPU-bound loops vs one) is printed beside it.
2. The runner's overhead per search: each task's wall time minus the
   engine's lifetime (started -> reaped).  It covers the temporary working
   directory, trace parsing (reported apart: it grows with the trace), the
   Parquet and log writes.  Measured on the
   -j 1 run (steady state: the first search, which imports the parser, is
   reported apart) and on a trivial fake engine that answers at once.
   Target: < 50 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from treediff.run.batch import LocalExecutor, SerialExecutor, plan_batch, run_batch  # noqa: E402
from treediff.run.engines import parse_engine_arg, presets  # noqa: E402
from treediff.model.positions import read_positions as read_epd  # noqa: E402
from treediff.run.search import Limits  # noqa: E402


def _batch(positions, engines, depth, dataset, jobs):
    plan = plan_batch(positions, engines, depth, dataset, Limits(timeout=120))
    executor = SerialExecutor() if jobs == 1 else LocalExecutor(jobs)
    t0 = time.perf_counter()
    summary = run_batch(plan, executor)
    return time.perf_counter() - t0, summary


def _overheads(summary) -> list[float]:
    return [r.overhead_seconds * 1000 for r in summary.results]


def _driving(summary) -> list[float]:
    return [r.driving_seconds * 1000 for r in summary.results]


def _parsing(summary) -> list[float]:
    return [r.parse_seconds * 1000 for r in summary.results]


def _spin(n: int = 6_000_000) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i & 7
    return time.perf_counter() - t0


def _machine_ceiling() -> float:
    """What two CPU-bound processes gain over one on this machine right now (the ideal -j 2 speed-up)."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(2) as pool:
        pool.map(_spin, [100_000, 100_000])  # start both workers
        t0 = time.perf_counter()
        pool.map(_spin, [6_000_000])
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        pool.map(_spin, [6_000_000, 6_000_000])
        two = time.perf_counter() - t0
    return 2 * one / two


def _describe(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"median {statistics.median(values):6.1f} ms, p90 {p90:6.1f} ms, max {values[-1]:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epd", default=str(ROOT / "fixtures" / "positions20.epd"))
    parser.add_argument("--engine", default="typhoon_py")
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--fake-runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each; the best counts")
    args = parser.parse_args()

    known = presets()
    positions, _ = read_epd(args.epd)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cpus} CPUs; load average before the run {os.getloadavg()[0]:.2f} "
          "(other work on the machine lowers the -j 2 speed-up)")
    engines = [parse_engine_arg(args.engine, known)]
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        tmp = Path(tmp)
        # Warm-up: imports, the fork server, the engine's own first start.
        _batch(positions[:2], engines, 1, tmp / "warm", 2)

        # Interleaved repeats, best of each: other work on a shared machine only ever slows a run down.
        runs1, runs2 = [], []
        for rep in range(args.repeat):
            runs1.append(_batch(positions, engines, args.depth, tmp / f"j1-{rep}", 1))
            runs2.append(_batch(positions, engines, args.depth, tmp / f"j2-{rep}", 2))
        t1, s1 = min(runs1, key=lambda r: r[0])
        t2, s2 = min(runs2, key=lambda r: r[0])
        assert s1.failed == 0 and s2.failed == 0, (s1.failures(), s2.failures())
        nodes1 = sorted((r.key, r.nodes) for r in s1.results)
        nodes2 = sorted((r.key, r.nodes) for r in s2.results)
        assert nodes1 == nodes2, "the two runs disagree"
        engine_time = sum(r.engine_seconds for r in s1.results)
        print(f"batch: {len(positions)} positions x {args.engine} at depth {args.depth} "
              f"({sum(n for _, n in nodes1):,} nodes in all)")
        print(f"  -j 1: {t1:6.2f} s   (best of {args.repeat}: {', '.join(f'{t:.2f}' for t, _ in runs1)}; "
              f"engine lifetimes {engine_time:.2f} s)")
        busy2 = sum(r.total_seconds for r in s2.results) / t2
        slowdown = sum(r.total_seconds for r in s2.results) / sum(r.total_seconds for r in s1.results)
        print(f"  -j 2: {t2:6.2f} s   (best of {args.repeat}: {', '.join(f'{t:.2f}' for t, _ in runs2)}; "
              f"workers busy on average: {busy2:.2f} of 2;")
        print(f"        each search took {slowdown:.2f}x its -j 1 time with both cores in use)")
        print(f"  load average after the runs: {os.getloadavg()[0]:.2f}")
        ceiling = _machine_ceiling()
        print(f"  this machine's own ceiling right now: two CPU-bound loops run {ceiling:.2f}x faster than one")
        speedup = t1 / t2
        print(f"  speed-up -j 2 / -j 1: {speedup:.2f}x   (target >= 1.7x) {'OK' if speedup >= 1.7 else 'BELOW TARGET'}")

        ov, dr, pa = _overheads(s1), _driving(s1), _parsing(s1)
        print(f"runner overhead per search, {args.engine} (-j 1; first search, which imports the parser: {ov[0]:.1f} ms):")
        print(f"  total (all but the engine's lifetime): {_describe(ov[1:])}")
        print(f"  of which parsing the trace:            {_describe(pa[1:])}")
        print(f"  driving (dirs, processes, writes):     {_describe(dr[1:])}   (target < 50 ms)")

        fake = f"{sys.executable} {ROOT / 'fixtures' / 'engines' / 'fake_engine.py'}"
        fake_engines = [parse_engine_arg(f"fake@stockfish-treedump={fake}", known)]
        fake_positions = (positions * ((args.fake_runs + len(positions) - 1) // len(positions)))[: args.fake_runs]
        fake_positions = [p.__class__(f"{p.id}-{i}", p.fen, p.phase, p.line) for i, p in enumerate(fake_positions)]
        _, sf = _batch(fake_positions, fake_engines, 2, tmp / "fake", 1)
        ovf = _overheads(sf)
        eng = [r.engine_seconds * 1000 for r in sf.results]
        print(f"runner overhead per search, instant fake engine ({len(ovf)} runs, 22-line traces):")
        print(f"  total: {_describe(ovf)}   (target < 50 ms) {'OK' if statistics.median(ovf) < 50 else 'ABOVE TARGET'}")
        print(f"  engine lifetime (python start-up, handshake, exit): {_describe(eng)}")


if __name__ == "__main__":
    main()

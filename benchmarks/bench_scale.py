#!/usr/bin/env python3
"""Benchmark scaling: out-of-core reports over a large dataset, and batches on a Dask cluster.

    python benchmarks/bench_scale.py                      # (a) 50M records / 1,000 searches, then (b)
    python benchmarks/bench_scale.py --records 2000000    # a quick run of (a)
    python benchmarks/bench_scale.py --skip-batch | --skip-report

(a) A synthetic dataset laid out as ``treediff batch`` writes it (``records/
    engine=NAME/KEY.parquet`` in the records schema minus ``engine``, one
    searches row per search), generated deterministically with numpy/pyarrow
    under ``benchmarks/data/`` (git-ignored; reused when present).
    ``treediff report DS --table all --by phase`` runs in a subprocess
    (out-of-core, the default for datasets) and its peak RSS (``ru_maxrss``)
    and wall time are compared with ``--in-memory`` (everything loaded into
    one pandas DataFrame) in another subprocess, whose address space is capped
    (``--cap-gb``, RLIMIT_AS) so it cannot take the machine down; a run killed
    by the cap is reported as such.  When both finish, their outputs must be
    identical.  Target: out-of-core peak RSS <= 2 GB.
(b) The 20-position batch of ``fixtures/positions20.epd`` (typhoon_py,
    ``--depth``) on a 2-worker ``LocalCluster`` against the local executor with
    ``-j 2``, interleaved ``--repeat`` times, best of each: the whole run
    (cluster start and stop included) and the tasks alone (first submit to
    last result).  Target: overhead <= 20 %.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from treediff.store.layout import DATASET_RECORDS_SCHEMA, DATASET_SEARCHES_SCHEMA  # noqa: E402

GENERATOR_VERSION = 3
DATA = ROOT / "benchmarks" / "data"

#: Two engine-like act mixes: (act, kind, share of MOVE decisions).
PROFILES = {
    "typhoon": [("FULL", "SEARCH", .34), ("LMR", "REDUCE", .30), ("LMR-RESEARCH", "RESEARCH", .03),
                ("LMP", "PRUNE", .14), ("FP-QUIET", "PRUNE", .07), ("NMP", "NULL_PROBE", .04),
                ("NULLBAILOUT", "NODE_CUT", .02), ("CHECK-EXT", "EXTEND", .06)],
    "stockfish": [("FULL", "SEARCH", .40), ("LMR", "REDUCE", .27), ("LMR-RESEARCH", "RESEARCH", .04),
                  ("SEE-QUIET", "PRUNE", .06), ("FP-QUIET", "PRUNE", .05), ("SEE-CAP", "PRUNE", .04),
                  ("HIST-PRUNE", "PRUNE", .03), ("NMP", "NULL_PROBE", .04), ("SINGULAR", "EXTEND", .07)],
}
PHASES = ("opening", "middlegame", "endgame")


# -- (a) the synthetic dataset ------------------------------------------------------------------------------

def _dict_array(indices: np.ndarray, values: list[str], mask: np.ndarray | None = None) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32), mask=mask), pa.array(values, pa.string()))


def _search_tables(engine: str, number: int, key: str, position: str, phase: str, n: int, depth: int,
                   rng: np.random.Generator) -> tuple[pa.Table, dict]:
    """One search: ``n`` records over iterations 1..depth (the last holds most), and its searches row."""
    weights = 3.0 ** np.arange(1, depth + 1)
    per_iter = np.floor(n * weights / weights.sum()).astype(np.int64)
    per_iter[-1] += n - per_iter.sum()
    iters = np.repeat(np.arange(1, depth + 1, dtype=np.int16), per_iter)
    is_result = rng.random(n) < 0.36
    plies = np.minimum((iters * np.sqrt(rng.random(n))).astype(np.int16), iters - 1)
    # A MOVE record sits at its child's ply (>= 1); a RESULT at its node's (root RESULT: ply 0).
    plies = np.where(is_result, plies, np.maximum(plies, 1)).astype(np.int16)
    profile = PROFILES[engine]
    acts = [a for a, _, _ in profile]
    kinds = sorted({k for _, k, _ in profile})
    act_idx = rng.choice(len(profile), size=n, p=np.array([p for *_, p in profile]) / sum(p for *_, p in profile))
    kind_of_act = np.array([kinds.index(k) for _, k, _ in profile])
    lmr = (act_idx == acts.index("LMR")) & ~is_result
    reduction = np.where(lmr, rng.integers(2, 13, n) / 4.0, np.nan).astype(np.float32)
    null_move = act_idx == acts.index("NMP")
    depth_left = (iters - plies).astype(np.float32)
    cols = {
        "search": pa.array(np.full(n, number, dtype=np.int32)),
        "position": _dict_array(np.zeros(n), [position]),
        "fen": _dict_array(np.zeros(n), [f"synthetic {position}"]),
        "phase": _dict_array(np.zeros(n), [phase]),
        "iter": pa.array(iters),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "line": pa.array(np.arange(1, n + 1, dtype=np.int64)),
        "tag": _dict_array(is_result.astype(np.int32), ["MOVE", "RESULT"]),
        "ply": pa.array(plies),
        "null_move": pa.array(null_move, mask=is_result),
        "depth": pa.array(depth_left),
        "reduction": pa.array(reduction, mask=np.isnan(reduction)),
        "act": _dict_array(act_idx, acts, mask=is_result),
        "kind": _dict_array(kind_of_act[act_idx], kinds, mask=is_result),
    }
    arrays = [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in DATASET_RECORDS_SCHEMA]
    table = pa.Table.from_arrays(arrays, schema=DATASET_RECORDS_SCHEMA)
    nodes = int(is_result.sum())
    row = {"search": number, "position": position, "fen": f"synthetic {position}", "phase": phase,
           "phase_source": "epd", "unit": 1, "producer": "bench_scale", "source": "synthetic", "iterations": depth,
           "max_iter": depth, "records": n, "moves": n - nodes, "result_nodes": nodes, "end_nodes": nodes,
           "node_source": "result", "dialect": engine, "requested_depth": depth, "task": key}
    return table, row


def generate(records: int, searches: int, seed: int = 20261129) -> Path:
    """The dataset of about ``records`` records in ``searches`` searches (two engines), reused when present."""
    dest = DATA / f"scale_{records}_{searches}_v{GENERATOR_VERSION}"
    if (dest / "batch.json").exists():
        return dest
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=DATA))
    engines = list(PROFILES)
    n_positions = (searches + len(engines) - 1) // len(engines)
    # Sizes vary ±50 % around the mean and add up to exactly ``records``.
    shares = np.random.default_rng(seed).uniform(0.5, 1.5, n_positions * len(engines))
    sizes = np.maximum(100, np.floor(shares / shares.sum() * records)).astype(np.int64)
    sizes[-1] += max(0, records - int(sizes.sum()))
    t0 = time.perf_counter()
    total = 0
    for p in range(n_positions):
        key, position, phase = f"{p:06d}", f"pos{p:05d}", PHASES[p % 3]
        for e, engine in enumerate(engines):
            rng = np.random.default_rng([seed, p, e])
            n = int(sizes[p * len(engines) + e])
            depth = int(rng.integers(6, 10))
            table, row = _search_tables(engine, p * len(engines) + e, key, position, phase, n, depth, rng)
            for name, data in (("records", table), ("searches", pa.Table.from_pylist(
                    [{k: row.get(k) for k in DATASET_SEARCHES_SCHEMA.names}], schema=DATASET_SEARCHES_SCHEMA))):
                path = tmp / name / f"engine={engine}" / f"{key}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(data, path, compression="zstd")
            total += n
    (tmp / "batch.json").write_text(json.dumps({"format": "treediff-batch", "version": 1, "synthetic": True,
                                                "records": total, "searches": n_positions * len(engines)}))
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    print(f"generated {total:,} records in {n_positions * len(engines):,} searches in "
          f"{time.perf_counter() - t0:.1f} s -> {dest}")
    return dest


_CHILD = """
import json, resource, sys, time
cap = int(sys.argv[1])
if cap > 0:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from treediff.cli import main
t0 = time.perf_counter()
code = 0
try:
    code = main(sys.argv[3:], standalone_mode=False) or 0   # treediff's own errors come back as exit codes
except MemoryError:
    code = 99
except SystemExit as exc:
    code = exc.code or 0
with open(sys.argv[2], "w") as fh:
    json.dump({"seconds": time.perf_counter() - t0, "code": code,
               "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, fh)
"""


def _run_child(args: list[str], cap_bytes: int = 0) -> dict:
    """Run ``treediff ARGS`` in a fresh interpreter; its time, peak RSS, exit status and output digest."""
    with tempfile.TemporaryDirectory() as tmp:
        stats_path, out_path = Path(tmp) / "stats.json", Path(tmp) / "out"
        with open(out_path, "wb") as out:
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(cap_bytes), str(stats_path), *args],
                                  stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else {"code": proc.returncode}
        stats["returncode"] = proc.returncode
        stats["stderr"] = proc.stderr.decode(errors="replace")[-300:]
        output = out_path.read_bytes()
        stats["digest"] = hashlib.sha256(output).hexdigest()
        stats["head"] = output.decode(errors="replace").splitlines()
    return stats


def bench_report(records: int, searches: int, cap_gb: float) -> None:
    dataset = generate(records, searches)
    meta = json.loads((dataset / "batch.json").read_text())
    size = sum(f.stat().st_size for f in dataset.rglob("*.parquet"))
    print(f"\n(a) report --table all --by phase on {meta['records']:,} records / {meta['searches']:,} searches "
          f"({size / 1e6:,.0f} MB of Parquet)")
    args = ["report", str(dataset), "--table", "all", "--by", "phase", "--format", "csv"]
    ooc = _run_child(args)
    whole = _run_child([*args, "--in-memory"], int(cap_gb * 2**30))

    def show(label: str, s: dict) -> str:
        if s.get("returncode") != 0 or s.get("code") not in (0, None):
            why = ("MemoryError" if s.get("code") == 99 or "MemoryError" in s.get("stderr", "")
                   else f"exit {s.get('code', s.get('returncode'))}: {s.get('stderr', '')[-160:]!r}")
            rss = f", peak RSS {s['maxrss_mb']:,.0f} MB" if "maxrss_mb" in s else ""
            return f"{label:34s} FAILED ({why}; address space capped at {cap_gb:g} GB{rss})"
        return f"{label:34s} {s['seconds']:7.1f} s   peak RSS {s['maxrss_mb']:8,.0f} MB"

    print(show("out-of-core (default)", ooc))
    print(show("one pandas DataFrame (--in-memory)", whole))
    ok_ooc = ooc.get("returncode") == 0 and ooc.get("code") in (0, None)
    ok_whole = whole.get("returncode") == 0 and whole.get("code") in (0, None)
    if ok_ooc and ok_whole:
        same = ooc["digest"] == whole["digest"]
        print(f"outputs identical: {same}; time ratio out-of-core / in-memory {ooc['seconds'] / whole['seconds']:.2f}; "
              f"memory ratio {ooc['maxrss_mb'] / whole['maxrss_mb']:.2f}")
        if not same:
            diffs = [(a, b) for a, b in zip(ooc["head"], whole["head"]) if a != b][:5]
            raise SystemExit(f"the two paths disagree ({len(ooc['head'])} vs {len(whole['head'])} lines): {diffs}")
    if ok_ooc:
        print(f"target peak RSS <= 2,048 MB: {'met' if ooc['maxrss_mb'] <= 2048 else 'MISSED'}")


# -- (b) batches: Dask LocalCluster vs the local executor ---------------------------------------------------

def _batch_once(kind: str, positions, engines, depth: int) -> tuple[float, float]:
    """(whole run, tasks alone) seconds of one batch of ``kind`` (``local`` or ``dask``) with 2 workers."""
    from treediff.run.batch import LocalExecutor, plan_batch, run_batch
    from treediff.run.search import Limits

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        plan = plan_batch(positions, engines, depth, Path(tmp) / "ds", Limits(timeout=120), keep_logs="none")
        if kind == "dask":
            from treediff.run.dask_executor import DaskExecutor

            executor = DaskExecutor(2)
        else:
            executor = LocalExecutor(2)
        t_ready = time.perf_counter()
        last = [t_ready]
        summary = run_batch(plan, executor, on_result=lambda r: last.__setitem__(0, time.perf_counter()))
        t_end = time.perf_counter()
        if summary.failed or summary.ok != len(plan.tasks):
            raise SystemExit(f"{kind} batch: {summary.failed} failed")
    return t_end - t0, last[0] - t_ready


def _cli_batch_once(kind: str, depth: int) -> float:
    """Wall seconds of ``treediff batch`` in a fresh interpreter (what a user waits for), ``kind`` executor."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-c", "from treediff.cli import main; main()", "batch",
                str(ROOT / "fixtures" / "positions20.epd"), "--engine", "typhoon_py", "--depth", str(depth),
                "-o", str(Path(tmp) / "ds"), "-j", "2", "--logs", "none", "--executor", kind]
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, cwd=ROOT)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"treediff batch --executor {kind} failed: {proc.stderr.decode()[-300:]}")
    return seconds


def bench_batch(depth: int, repeat: int) -> None:
    from treediff.run.engines import presets
    from treediff.model.positions import read_positions as read_epd

    positions, _ = read_epd(ROOT / "fixtures" / "positions20.epd")
    engines = [presets()["typhoon_py"]]
    print(f"\n(b) batch: {len(positions)} positions x typhoon_py, depth {depth}, 2 workers, best of {repeat}, "
          "interleaved")
    runs: dict[str, list[tuple[float, float]]] = {"local": [], "dask": []}
    for _ in range(repeat):
        for kind in ("local", "dask"):
            runs[kind].append(_batch_once(kind, positions, engines, depth))
    for kind, label in (("local", "local executor -j 2"), ("dask", "Dask LocalCluster, 2 workers")):
        whole = min(r[0] for r in runs[kind])
        tasks = min(r[1] for r in runs[kind])
        print(f"{label:30s} whole run {whole:6.2f} s   tasks alone {tasks:6.2f} s")
    w = min(r[0] for r in runs["dask"]) / min(r[0] for r in runs["local"]) - 1
    t = min(r[1] for r in runs["dask"]) / min(r[1] for r in runs["local"]) - 1
    print(f"Dask overhead: tasks alone {100 * t:+.1f} % (target <= 20 %: {'met' if t <= 0.20 else 'MISSED'}); "
          f"whole run, cluster start and stop included {100 * w:+.1f} %")
    cli: dict[str, list[float]] = {"local": [], "dask": []}
    for _ in range(repeat):
        for kind in ("local", "dask"):
            cli[kind].append(_cli_batch_once(kind, depth))
    best = {k: min(v) for k, v in cli.items()}
    print(f"`treediff batch` end to end, fresh interpreter each: local {best['local']:.2f} s, dask {best['dask']:.2f} s "
          f"({100 * (best['dask'] / best['local'] - 1):+.1f} %: interpreter, cluster start and stop included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000_000, help="records in the synthetic dataset")
    parser.add_argument("--searches", type=int, default=1000, help="searches in the synthetic dataset")
    parser.add_argument("--cap-gb", type=float, default=16.0, help="address-space cap of the in-memory run")
    parser.add_argument("--depth", type=int, default=5, help="typhoon_py depth of the batch benchmark")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each executor (best counts)")
    parser.add_argument("--skip-report", action="store_true")
    parser.add_argument("--skip-batch", action="store_true")
    args = parser.parse_args()
    print("load:", os.getloadavg(), "cpus:", os.cpu_count())
    if not args.skip_report:
        bench_report(args.records, args.searches, args.cap_gb)
    if not args.skip_batch:
        bench_batch(args.depth, args.repeat)
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()

"""Benchmark: compare, diff and report end to end on logs of 1M, 5M and 20M lines (100M with --huge).

    python benchmarks/bench_e2e.py                       # 1M, 5M, 20M lines per side
    python benchmarks/bench_e2e.py --sizes 1m,5m         # a quicker run
    python benchmarks/bench_e2e.py --sizes 1m --baseline /tmp/wt-base   # same-run ratios to another tree

Per size the two logs (typhoon and stockfish dialects, every search its own position:
``gen_logs.py --distinct-positions``, made once in ``--data``) are read by, each in a fresh interpreter
(``/usr/bin/time``: wall seconds, CPU seconds, peak RSS of the largest process; and the peak of the
summed PSS of the command's process tree, sampled from /proc: compare aligns in a forked child):

* the reading limits: ``cat A B > /dev/null``, ``wc -l A B`` (what any reader of the two files pays) and,
  when a C compiler is found, ``benchmarks/limits/min_tokenizer.c`` over A and B (every line cut into its
  tag and key=value tokens, nothing kept: the least a parser of the format does);
* ``treediff compare A B --allow-different-positions`` (JSON to a file), ``treediff diff A B --position gen7``
  and ``treediff report A --table all``;

and every figure is printed with its ratio to ``cat`` and to the minimal tokenizer.  Then, per command, the growth from one size to the
next per doubling of the input: time x2.0 is linear, memory x1.0 is flat (bounded).  ``--baseline DIR`` also runs each command from another checkout (e.g. a ``git worktree`` of the
code before issue 17) in the same run, and prints new / old.  ``--repeat N`` times each command N times, the
two checkouts alternating (who goes first swaps each round) and the inputs read again before each run (a
shared machine's memory reclaim drops them from the page cache between runs: ``cat`` of the 20M pair took
8.6 s once instead of ~0.8), and prints the medians.  Targets (issue 17): compare and diff of
20M + 20M lines <= 30 s and <= 2 GB; compare 1M + 1M <= 2 s; 100M + 100M completes under the default
--memory-limit.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trees import compile_package  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"1m": 1_000_000, "2m": 2_000_000, "5m": 5_000_000, "10m": 10_000_000, "20m": 20_000_000,
         "100m": 100_000_000}
DIALECTS = ("typhoon", "stockfish")
#: The console script's own entry (``treediff.cli.run``; ``main`` in a checkout from before it existed).
TREEDIFF = "import treediff.cli as cli; getattr(cli, 'run', cli.main)()"


def _lines(label: str) -> int:
    if label in SIZES:
        return SIZES[label]
    match = re.fullmatch(r"(\d+)([km]?)", label.lower())
    if not match:
        raise SystemExit(f"--sizes: {label!r} is not a size (e.g. 1m, 500k, 20m)")
    return int(match.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2)]


def make_logs(label: str, data: Path) -> tuple[Path, Path]:
    """The size's two logs in ``data`` (generated once, with nice: slow, every search's tree is walked)."""
    paths = []
    for dialect in DIALECTS:
        path = data / f"e2e_{dialect}_{label}.log"
        if not path.exists():
            print(f"generating {path} ...", file=sys.stderr, flush=True)
            subprocess.run(["nice", sys.executable, str(ROOT / "benchmarks" / "gen_logs.py"), "--dialect", dialect,
                            "--lines", str(_lines(label)), "--distinct-positions", "-o", str(path) + ".part"],
                           check=True)
            os.replace(str(path) + ".part", path)
        paths.append(path)
    return paths[0], paths[1]


def timed(argv: list[str], cwd: Path | None = None,
          stdout: str | None = None) -> tuple[float, float, float, float]:
    """(wall s, CPU s, peak RSS MB, peak tree MB) of ``argv`` in a fresh process: GNU time's own counters
    (its peak RSS is the largest single process's), and the peak of the summed PSS of the command and every
    process under it, sampled every 50 ms from /proc (compare forks a child for its divergences: the two
    share pages copy-on-write, which PSS counts once; 0 where /proc has no ``smaps_rollup``)."""
    with open(stdout or os.devnull, "wb") as sink:
        proc = subprocess.Popen(["/usr/bin/time", "-f", "TIME %e %U %S %M", *argv], cwd=cwd, stdout=sink,
                                stderr=subprocess.PIPE, text=True)
        tree_kb = 0
        while proc.poll() is None:
            tree_kb = max(tree_kb, sum(_pss_kb(pid) for pid in _descendants(proc.pid)))
            time.sleep(0.05)
        err = proc.stderr.read() if proc.stderr is not None else ""
        proc.wait()
    match = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)", err)
    if proc.returncode != 0 or match is None:
        tail = err.strip().splitlines()[-3:]
        raise SystemExit(f"{' '.join(argv[:6])} failed ({proc.returncode}): {' | '.join(tail)}")
    wall, user, system, kb = match.groups()
    return float(wall), float(user) + float(system), int(kb) / 1024, tree_kb / 1024


def _descendants(pid: int) -> list[int]:
    """``pid``'s children, their children... (not ``pid``: here GNU time itself)."""
    found: list[int] = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = [int(c) for c in fh.read().split()]
    except OSError:
        return found
    for child in children:
        found += [child, *_descendants(child)]
    return found


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def warm(*paths: Path) -> None:
    """Read ``paths`` once (into the page cache), so that no timed run pays the disk for its inputs."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def median_run(runs: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    """The median of each of (wall, CPU, peak RSS, peak tree PSS) over ``runs`` (each figure on its own)."""
    wall, cpu, rss, tree = (statistics.median(values) for values in zip(*runs))
    return wall, cpu, rss, tree


def build_min_tokenizer(where: Path) -> Path | None:
    """``benchmarks/limits/min_tokenizer.c`` compiled into ``where`` (None without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    binary = where / "min_tokenizer"
    built = subprocess.run([cc, "-O2", "-o", str(binary), str(ROOT / "benchmarks" / "limits" / "min_tokenizer.c")],
                           capture_output=True, text=True)
    return binary if built.returncode == 0 else None


def commands(a: Path, b: Path, out: Path) -> dict[str, list[str]]:
    py = [sys.executable, "-c", TREEDIFF]
    return {
        "compare": [*py, "compare", str(a), str(b), "--allow-different-positions", "-o", str(out / "compare.json")],
        "diff": [*py, "diff", str(a), str(b), "--position", "gen7", "-o", str(out / "diff.txt")],
        "report": [*py, "report", str(a), "--table", "all", "-o", str(out / "report.json")],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1m,5m,20m", help="comma-separated lines per side (1m, 5m, 20m, 500k)")
    parser.add_argument("--huge", action="store_true", help="also 100m (generates 2 x ~7.5 GB of logs)")
    parser.add_argument("--data", default=str(ROOT / "benchmarks" / "data"), help="where the logs are kept")
    parser.add_argument("--only", default="compare,diff,report", help="which commands (comma-separated)")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout to run in the same run (ratios)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="time each command N times, the two checkouts alternating (the order swapped each "
                             "round), the inputs read again before each run; medians are printed")
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat: at least 1")
    labels = [s.strip() for s in args.sizes.split(",") if s.strip()] + (["100m"] if args.huge else [])
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    out = data / "e2e_out"
    out.mkdir(exist_ok=True)
    only = [c for c in args.only.split(",") if c]
    for tree in [ROOT, *([Path(args.baseline)] if args.baseline else [])]:
        compile_package(tree)  # (both trees load their modules from .pyc: see benchmarks/trees.py)
    results: dict[tuple[str, str, str], tuple[float, float, float, float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    try:
        tokenizer = build_min_tokenizer(scratch)
        if tokenizer is None:
            print("(no C compiler: the minimal tokenizer limit is left out)")
        run_sizes(args, labels, data, out, only, results, tokenizer)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_sizes(args: argparse.Namespace, labels: list[str], data: Path, out: Path, only: list[str],
              results: dict[tuple[str, str, str], tuple[float, float, float, float]], tokenizer: Path | None) -> None:
    """Every size's limits and commands, printed as they finish, then the growth per doubling."""
    print(f"{'size':>6} {'what':<18} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} {'tree MB':>8} {'x cat':>7} "
          f"{'x tok':>7}")
    for label in labels:
        a, b = make_logs(label, data)
        limits = {"cat": ["cat", str(a), str(b)], "wc -l": ["wc", "-l", str(a), str(b)]}
        if tokenizer is not None:
            limits["tokenize"] = [str(tokenizer), str(a), str(b)]
        for name, argv in limits.items():
            results[(label, name, "")] = timed(argv)
        cat = results[(label, "cat", "")][0] or 1e-3
        tok = (results[(label, "tokenize", "")][0] or 1e-3) if tokenizer is not None else float("nan")
        runs = [("", None)] + ([("base", Path(args.baseline))] if args.baseline else [])
        same: dict[str, bool] = {}
        for name in only:
            times: dict[str, list[tuple[float, float, float, float]]] = {tag: [] for tag, _ in runs}
            for round_ in range(args.repeat):
                for tag, cwd in (runs if round_ % 2 == 0 else runs[::-1]):
                    where = out / (tag or "new")
                    where.mkdir(exist_ok=True)
                    argv = commands(a, b, where)[name]
                    warm(a, b)  # (a shared machine's memory reclaim may have dropped them since the last run)
                    times[tag].append(timed(argv, cwd=cwd or ROOT))
            for tag, _ in runs:
                results[(label, name, tag)] = median_run(times[tag])
        if args.baseline:  # the outputs of both checkouts, byte for byte
            for name in only:
                files = [sorted((out / d).glob(f"{name}.*")) for d in ("new", "base")]
                same[name] = all(f.read_bytes() == g.read_bytes() for f, g in zip(*files)) and len(files[0]) > 0
        for (size, name, tag), (wall, cpu, rss, tree) in results.items():
            if size == label:
                what = f"{name}{' (base)' if tag else ''}"
                print(f"{label:>6} {what:<18} {wall:8.2f} {cpu:8.2f} {rss:8.0f} {tree:8.0f} {wall / cat:7.1f} "
                      f"{wall / tok:7.1f}", flush=True)
        if args.baseline:
            for name in only:
                new, old = results[(label, name, "")], results[(label, name, "base")]
                tree_ratio = new[3] / old[3] if old[3] else float("nan")
                print(f"{label:>6} {name + ' new/base':<18} {new[0] / old[0]:8.2f} {new[1] / old[1]:8.2f} "
                      f"{new[2] / old[2]:8.2f} {tree_ratio:8.2f}  output {'identical' if same[name] else 'DIFFERS'}")
    if len(labels) > 1:
        print("\ngrowth per doubling of the input (time x2.0 = linear; memory x1.0 = flat)")
        for name in ["cat", *(["tokenize"] if tokenizer is not None else []), *only]:
            for small, big in zip(labels, labels[1:]):
                doublings = math.log2(_lines(big) / _lines(small))
                (w0, c0, r0, _), (w1, c1, r1, _) = results[(small, name, "")], results[(big, name, "")]
                per = lambda x0, x1: (x1 / x0) ** (1 / doublings) if x0 > 0 and x1 > 0 else float("nan")  # noqa: E731
                print(f"  {name:<8} {small}->{big}: wall x{per(w0, w1):.2f}, CPU x{per(c0, c1):.2f}, "
                      f"RSS x{per(r0, r1):.2f} per doubling")


if __name__ == "__main__":
    main()

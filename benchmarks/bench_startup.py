"""Start-up cost of the ``treediff`` command line (issue 17 item 4).

Runs each command line N times in a fresh interpreter (``python -m treediff.cli``-equivalent: the
console script's two lines, without the pyenv/venv shim), and prints the median wall time and the
median peak RSS (``ru_maxrss`` of the child).  ``python -c pass`` is measured in the same run as
the floor.  Targets: ``--help`` <= 0.25 s and <= 80 MB; a command on a small log <= 0.4 s.

    python benchmarks/bench_startup.py [--runs 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL_LOG = ROOT / "fixtures" / "traces" / "typhoon_start.log"
SMALL_B = ROOT / "fixtures" / "traces" / "stockfish_start.log"
ENTRY = "import sys; from treediff.cli import main; sys.argv[0] = 'treediff'; sys.exit(main())"


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child process."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: exec the command with its output discarded
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def measure(argv: list[str], runs: int) -> tuple[float, float]:
    results = [run_once(argv) for _ in range(runs)]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "o.parquet")
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "treediff --help": [py, "-c", ENTRY, "--help"],
            "treediff --version": [py, "-c", ENTRY, "--version"],
            "treediff report --help": [py, "-c", ENTRY, "report", "--help"],
            "treediff info small.log": [py, "-c", ENTRY, "info", str(SMALL_LOG)],
            "treediff parse small.log": [py, "-c", ENTRY, "parse", str(SMALL_LOG), "-o", out],
            "treediff report small.log": [py, "-c", ENTRY, "report", str(SMALL_LOG)],
            "treediff compare small A B": [py, "-c", ENTRY, "compare", str(SMALL_LOG), str(SMALL_B)],
        }
        print(f"{'command':32} {'median s':>9} {'median MB':>10}   ({args.runs} runs each)")
        for name, argv in cases.items():
            wall, rss = measure(argv, args.runs)
            print(f"{name:32} {wall:9.3f} {rss:10.1f}")


if __name__ == "__main__":
    main()

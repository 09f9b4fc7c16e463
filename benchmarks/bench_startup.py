"""Start-up cost of the ``treediff`` command line (issue 17 item 4).

Runs each command line N times in a fresh interpreter (the console script's two lines, without the
pyenv/venv shim) and prints the median wall time and the median peak RSS (``ru_maxrss`` of the
child).  ``python -c pass`` is measured in the same run as the floor.  With ``--baseline DIR`` (a
checkout of an older commit, e.g. ``git worktree add /tmp/base <hash>`` plus its compiled
``treediff/parse/_ctok*.so``) every run of the current tree alternates with one of the baseline
(``PYTHONPATH=DIR``), so both see the same machine load, and the ratio is printed.

Targets: ``--help`` <= 0.25 s and <= 80 MB; a command on a small log <= 0.4 s.

    python benchmarks/bench_startup.py [--runs 10] [--baseline /tmp/base]
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
SMALL_LOG = ROOT / "fixtures" / "traces" / "typhoon_start.log"
SMALL_B = ROOT / "fixtures" / "traces" / "crafty_start.log"
ENTRY = "import sys; from treediff.cli import main; sys.argv[0] = 'treediff'; sys.exit(main())"


def run_once(argv: list[str], pythonpath: str | None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child process."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: exec the command with its output discarded
        # Outside the checkout: `python -c` puts the working directory first on sys.path, before PYTHONPATH.
        os.chdir(tempfile.gettempdir())
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {os.waitstatus_to_exitcode(status)}")
    # ru_maxrss (KiB on Linux) keeps the forking process's high-water mark across exec: this script stays
    # small (about python -c pass's 13 MB), so figures above that are the command's own.
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", help="checkout of the commit to compare with (run with PYTHONPATH=DIR)")
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
        sides = [("now", None)] + ([("base", args.baseline)] if args.baseline else [])
        head = f"{'command':28}" + "".join(f" {s + ' s':>9} {s + ' MB':>9}" for s, _ in sides)
        print(head + ("   ratio s" if args.baseline else "") + f"   (median of {args.runs} runs each)")
        for name, argv in cases.items():
            results: dict[str, list[tuple[float, float]]] = {s: [] for s, _ in sides}
            for _ in range(args.runs):
                for side, path in sides:  # alternated: both sides see the same load
                    results[side].append(run_once(argv, path))
            line = f"{name:28}"
            medians = {}
            for side, _ in sides:
                wall = statistics.median(r[0] for r in results[side])
                rss = statistics.median(r[1] for r in results[side])
                medians[side] = wall
                line += f" {wall:9.3f} {rss:9.1f}"
            if args.baseline:
                line += f"   {medians['now'] / medians['base']:7.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()

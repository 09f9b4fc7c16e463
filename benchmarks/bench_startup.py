"""Start-up cost of the ``treediff`` command line (issue 17 item 4).

Runs each command line N times in a fresh interpreter (the console script's two lines, without the
pyenv/venv shim) and prints the median wall time, the median CPU time (user + system, all threads:
steadier than the wall time on a shared machine) and the median peak RSS (``ru_maxrss`` of the
child).  The floors are measured in the same run: ``python -c pass``, and ``import polars, pyarrow``
(what any command reading a table imports) and with pandas and numpy (what report and compare
import today); every line's ``/floor`` column is its time over ``import polars, pyarrow``.  With
``--baseline DIR`` (a checkout of an older commit plus its compiled ``treediff/*/_c*.so``) or
``--baseline-commit REV`` (made here: a ``git worktree`` of REV in a temporary directory, its C
extensions compiled when a C compiler is found, removed at the end) every run of the current tree
alternates with one of the baseline (``PYTHONPATH=DIR``), so both see the same machine load, and
the ratio is printed.  ``--bytecode-cache`` runs every command with Python's bytecode cache on (in a
temporary ``PYTHONPYCACHEPREFIX``, filled by one run first), as an ordinary install has it: with
``PYTHONDONTWRITEBYTECODE=1`` and an editable install every treediff module is compiled again by each run.

Targets: ``--help`` <= 0.25 s and <= 80 MB; a command on a small log <= 0.4 s.

    python benchmarks/bench_startup.py [--runs 10] [--baseline /tmp/base | --baseline-commit HEAD~5] [--bytecode-cache]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
SMALL_LOG = ROOT / "fixtures" / "traces" / "typhoon_start.log"
SMALL_B = ROOT / "fixtures" / "traces" / "crafty_start.log"  # SAN: its paths are replayed on python-chess boards
#: The console script's own entry (``treediff.cli.run``; ``main`` in a checkout from before it existed).
ENTRY = "import sys; import treediff.cli as cli; sys.argv[0] = 'treediff'; sys.exit(getattr(cli, 'run', cli.main)())"


def run_once(argv: list[str], pythonpath: str | None, extra_env: dict[str, str] | None = None,
             pycache: str | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB) of one child process."""
    env = {**os.environ, **(extra_env or {})}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
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
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


@contextlib.contextmanager
def baseline_worktree(rev: str) -> Iterator[str]:
    """A ``git worktree`` of ``rev`` in a temporary directory, its C extensions compiled (when ``cc`` is
    found; else the baseline runs its fallback tokenizer, which the report says), removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="treediff-base-")
    tree = str(Path(tmp) / "tree")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", tree, rev], check=True,
                   capture_output=True)
    try:
        cc = shutil.which("cc") or shutil.which("gcc")
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = []
        for source in sorted((Path(tree) / "treediff").glob("*/_c*.c")):  # _ctok, _cmoves, _ctries
            if cc is None:
                break
            target = source.with_name(source.stem + suffix)
            done = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                                   str(source), "-o", str(target)], capture_output=True)
            if done.returncode == 0:
                built.append(source.stem)
        print(f"baseline: {rev} in {tree} (compiled: {', '.join(built) or 'none, fallback tokenizer'})")
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tree], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--baseline", help="checkout of the commit to compare with (run with PYTHONPATH=DIR)")
    group.add_argument("--baseline-commit", metavar="REV", help="git revision to compare with (a temporary worktree)")
    parser.add_argument("--bytecode-cache", action="store_true",
                        help="run with the bytecode cache on (a temporary PYTHONPYCACHEPREFIX), as an ordinary install")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.baseline_commit:
            args.baseline = stack.enter_context(baseline_worktree(args.baseline_commit))
        pycache = stack.enter_context(tempfile.TemporaryDirectory(prefix="treediff-pyc-")) if args.bytecode_cache else None
        measure(args.runs, args.baseline, pycache)


FLOOR = "import polars, pyarrow"


def _completion(words: str) -> dict[str, str]:
    """The environment click's bash completion reads: what a TAB after ``words`` runs."""
    return {"_TREEDIFF_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}


def measure(runs: int, baseline: str | None, pycache: str | None = None) -> None:
    """Print the table of medians (see the module docstring)."""
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "o.parquet")
        small_parquet = str(Path(tmp) / "small.parquet")  # the small log parsed, for `info small.parquet`
        run_once([py, "-c", ENTRY, "parse", str(SMALL_LOG), "-o", small_parquet], None)
        cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python -c pass": ([py, "-c", "pass"], None),
            # (with one OpenBLAS thread, as the command line asks for since 2026-12-06: run/environment.py)
            FLOOR: ([py, "-c", FLOOR], {"OPENBLAS_NUM_THREADS": "1"}),
            "import ... pandas, numpy": ([py, "-c", FLOOR + ", pandas, numpy"], {"OPENBLAS_NUM_THREADS": "1"}),
            "treediff --help": ([py, "-c", ENTRY, "--help"], None),
            "treediff --version": ([py, "-c", ENTRY, "--version"], None),
            "treediff report --help": ([py, "-c", ENTRY, "report", "--help"], None),
            "TAB: treediff report --ta": ([py, "-c", ENTRY], _completion("treediff report --ta")),
            "treediff docs reports": ([py, "-c", ENTRY, "docs", "reports"], None),
            "treediff info small.log": ([py, "-c", ENTRY, "info", str(SMALL_LOG)], None),
            "treediff info small.parquet": ([py, "-c", ENTRY, "info", small_parquet], None),
            "treediff parse small.log": ([py, "-c", ENTRY, "parse", str(SMALL_LOG), "-o", out], None),
            "treediff parse small SAN": ([py, "-c", ENTRY, "parse", str(SMALL_B), "-o", out], None),
            "treediff report small.log": ([py, "-c", ENTRY, "report", str(SMALL_LOG)], None),
            "treediff compare small A B": ([py, "-c", ENTRY, "compare", str(SMALL_LOG), str(SMALL_B)], None),
        }
        sides = [("now", None)] + ([("base", baseline)] if baseline else [])
        if pycache:  # fill the caches (each side its own: a source file's cache entry is keyed by its path)
            for _, (argv, env) in cases.items():
                for _, path in sides:
                    run_once(argv, path, env, pycache)
        head = f"{'command':28}" + "".join(f" {s + ' s':>8} {s + ' cpu':>9} {s + ' MB':>8}" for s, _ in sides)
        print(head + "   /floor" + ("   now/base" if baseline else "") + f"   (median of {runs} runs each"
              + (", bytecode cache on)" if pycache else ")"))
        floor = None
        for name, (argv, env) in cases.items():
            results: dict[str, list[tuple[float, float, float]]] = {s: [] for s, _ in sides}
            for _ in range(runs):
                for side, path in sides:  # alternated: both sides see the same load
                    results[side].append(run_once(argv, path, env, pycache))
            line = f"{name:28}"
            medians = {}
            for side, _ in sides:
                wall = statistics.median(r[0] for r in results[side])
                cpu = statistics.median(r[1] for r in results[side])
                rss = statistics.median(r[2] for r in results[side])
                medians[side] = wall
                line += f" {wall:8.3f} {cpu:9.3f} {rss:8.1f}"
            if name == FLOOR:
                floor = medians["now"]
            line += f"   {medians['now'] / floor:6.2f}" if floor else "         "
            if baseline:
                line += f"   {medians['now'] / medians['base']:8.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()

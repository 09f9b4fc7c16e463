"""Benchmark: opening ``treediff browse`` on a large alignment (target: 50k rows open in <= 2 s).

    python benchmarks/bench_browse.py                  # about 50k aligned rows
    python benchmarks/bench_browse.py --rows 5000 --repeat 1

Two synthetic trees (tests/support/synthetic.py, the same generator as
bench_align.py: one game tree, typhoon-like vs stockfish-like pruning, with
``line`` columns) are aligned once (the aligner's time, which ``treediff
diff`` pays too, is printed separately).  Then, ``--repeat`` times:

* open: the view model (:class:`~treediff.render.browse_model.BrowseModel`:
  children index, attribution, divergence order), the textual app started
  headless (``App.run_test``) until its first screen is drawn, including the
  details pane of the root (which builds the path -> record lines index);
* first ``n``: the cursor to the costliest divergence (its ancestors expanded
  and their children built);
* jump: ``g``, a path put in the box, enter timed (a deep row: the last row of the tree).

With ``--log-lines N`` (default 45,000: about 51k aligned rows) the same open is also timed end to
end: two logs written with benchmarks/gen_logs.py (typhoon and stockfish
dialects, one search of depth 6 each, N lines a side), then
``treediff.cli.browse.build_model`` (parse, align, model) and the app to its
first screen, as ``treediff browse A B`` does (in this process: the imports of
pandas, polars, pyarrow and textual are paid once, before the first repeat);
then ``treediff browse A B`` itself in a pseudo-terminal, a fresh process each
time, until its first screen is written.

Times are wall clock on this machine (2 cores shared); the best and the
median of the repeats are printed.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The synthetic tree generator is test support code (tests/support/synthetic.py), not part of the package.
sys.path.insert(0, str(ROOT / "tests"))


def _one_run(alignment, records_a, records_b, deep_path: str) -> dict[str, float]:
    from treediff.render.browse import BrowseApp
    from treediff.render.browse_model import BrowseModel
    from treediff.render.diffview import Notation

    times: dict[str, float] = {}

    async def run() -> None:
        start = time.perf_counter()
        model = BrowseModel(alignment, (Notation("uci"), Notation("uci")), records_a=records_a, records_b=records_b)
        times["model"] = time.perf_counter() - start
        app = BrowseApp(model, "bench")
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            times["open"] = time.perf_counter() - start
            t = time.perf_counter()
            await pilot.press("n")
            await pilot.pause()
            times["first_n"] = time.perf_counter() - t
            assert app.cursor_row == int(model.divergences[0])
            await pilot.press("g")
            app.query_one("#jump").value = deep_path  # typed at once: the pilot's per-key pauses are not browse's
            t = time.perf_counter()
            await pilot.press("enter")
            await pilot.pause()
            times["jump"] = time.perf_counter() - t
            assert str(model.rows["path"].iloc[app.cursor_row]) == deep_path
            times["built_nodes"] = float(len(app.nodes))

    asyncio.run(run())
    return times


def _write_logs(directory: Path, lines: int, seed: int) -> tuple[str, str]:
    """A typhoon and a stockfish log of one search each (benchmarks/gen_logs.py: depth 6, one middlegame FEN)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_logs import FENS, UNIT, search_lines

    fen = FENS[2]
    out = []
    for dialect in ("typhoon", "stockfish"):
        body = search_lines(dialect, fen, 6, seed, max_lines=lines)
        path = directory / f"{dialect}.log"
        path.write_text(f"TREEDUMP engine={dialect} v=1 unit={UNIT[dialect]} id=bench producer=gen_logs fen={fen}\n"
                        + "\n".join(body) + "\n")
        out.append(str(path))
    return out[0], out[1]


def _cli_in_pty(a: str, b: str, timeout: float = 60.0) -> float:
    """Seconds from starting ``treediff browse A B`` in a pseudo-terminal (a fresh process: imports included)
    until its first screen (the title's node counts and the footer) has been written; the app is then quit."""
    import fcntl
    import os
    import pty
    import select
    import shutil
    import struct
    import termios

    exe = shutil.which("treediff")
    if exe is None:
        raise SystemExit("bench_browse: no treediff executable on PATH (pip install -e .)")
    argv = [exe, "browse", a, b]
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, as a user's terminal runs it
        os.environ["TERM"] = "xterm-256color"
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    seen, out = float("nan"), b""
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.02)
            if ready:
                out += os.read(fd, 1 << 16)
                if b"nodes A" in out and b"divergence" in out.rsplit(b"nodes A", 1)[-1]:
                    seen = time.perf_counter() - start
                    break
        os.write(fd, b"q")
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline:  # drain until the app has quit
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    if not os.read(fd, 1 << 16):
                        break
                except OSError:
                    break
    finally:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if not done:
            os.kill(pid, 15)
            os.waitpid(pid, 0)
        os.close(fd)
    return seen


def _from_logs(lines: int, seed: int, repeat: int) -> None:
    """End to end: treediff browse's build_model (parse both logs, align, model) and the app's first screen."""
    import tempfile

    from treediff.cli.browse import build_model
    from treediff.render.browse import BrowseApp

    with tempfile.TemporaryDirectory() as tmp:
        a, b = _write_logs(Path(tmp), lines, seed)
        totals, builds, size = [], [], 0
        for _ in range(repeat):
            start = time.perf_counter()
            model, title = build_model(a, b)
            builds.append(time.perf_counter() - start)
            size = len(model)

            async def run() -> None:
                async with BrowseApp(model, title).run_test(size=(160, 50)) as pilot:
                    await pilot.pause()

            asyncio.run(run())
            totals.append(time.perf_counter() - start)
        terminal = [_cli_in_pty(a, b) for _ in range(repeat)]
    print(f"from logs ({lines:,} lines a side, {size:,} aligned rows): parse + align + model best {min(builds):.2f} s, "
          f"to the first screen best {min(totals):.2f} s, median {statistics.median(totals):.2f} s "
          f"(target <= 2 s: {'ok' if min(totals) <= 2.0 else 'OVER'})")
    print(f"treediff browse in a pseudo-terminal (fresh process, imports included): first screen best "
          f"{min(terminal):.2f} s, median {statistics.median(terminal):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000, help="records per side (about as many aligned rows)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-lines", type=int, default=45_000,
                        help="lines a side of the end-to-end run from two generated logs (0 skips it)")
    args = parser.parse_args()
    if args.log_lines:
        _from_logs(args.log_lines, args.seed, args.repeat)

    from support.synthetic import synthetic_pair
    from treediff.align import align

    records_a, records_b, depth = synthetic_pair(args.rows, seed=args.seed)
    t = time.perf_counter()
    alignment = align(records_a, records_b)
    align_s = time.perf_counter() - t
    rows = alignment.rows
    deep = str(rows["path"].iloc[len(rows) - 1])
    print(f"aligned rows: {len(rows):,} (records A {len(records_a):,}, B {len(records_b):,}, root depth {depth}); "
          f"align {align_s:.2f} s")
    runs = [_one_run(alignment, records_a, records_b, deep) for _ in range(args.repeat)]
    for key in ("model", "open", "first_n", "jump"):
        values = [r[key] for r in runs]
        print(f"{key:8s} best {min(values):.3f} s  median {statistics.median(values):.3f} s")
    print(f"tree nodes built after open + n + jump: {int(runs[-1]['built_nodes']):,} of {len(rows):,} rows")
    best_open = min(r["open"] for r in runs)
    print(f"open {best_open:.2f} s (target <= 2 s): {'ok' if best_open <= 2.0 else 'OVER'}")


if __name__ == "__main__":
    main()

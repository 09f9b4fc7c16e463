"""Benchmark: the one-file HTML page (``--format html``), made and opened.

    python benchmarks/bench_html.py                      # tactical pair + a 50k-row diff page
    python benchmarks/bench_html.py --rows 10000 --repeat 1

1. The bundled tactical pair (fixtures/traces/typhoon_tactical-f6f7.log vs
   stockfish_tactical-f6f7.log): wall time of ``treediff diff|compare|report
   ... --format html -o FILE``, each a fresh process (start-up, parsing,
   aligning and rendering included), median of ``--repeat`` runs.
2. A synthetic alignment of about ``--rows`` rows (tests/support/synthetic.py:
   same game tree, typhoon-like vs stockfish-like pruning): the time to make
   the page (tree data + HTML, aligning excluded), its size, and the time
   headless chromium takes to open it: DOMContentLoaded and the first render
   of the tree (``window.treediffRendered``, set by page.js when every tree
   is built), both in ms from the start of navigation, median of ``--repeat``
   page loads.

Targets (issue 16): tactical pair HTML <= 2 s; a 50k-row diff page opens
(DOMContentLoaded + first render) in < 2 s.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # support.synthetic, support.html_helpers (test support code)

TACTICAL = (ROOT / "fixtures/traces/typhoon_tactical-f6f7.log", ROOT / "fixtures/traces/stockfish_tactical-f6f7.log")


def _cli_seconds(args: list[str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of a fresh ``treediff`` process (CPU: robust to load)."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def bench_tactical(out: Path, repeat: int) -> None:
    a, b = (str(p) for p in TACTICAL)
    for verb, inputs in (("diff", [a, b]), ("compare", [a, b]), ("report", [a, b])):
        target = out / f"{verb}.html"
        wall, cpu = _cli_seconds([verb, *inputs, "--format", "html", "-o", str(target)], repeat)
        text_wall, text_cpu = _cli_seconds([verb, *inputs, "-o", str(out / f"{verb}.txt")], repeat)
        print(f"tactical pair: treediff {verb} --format html: {wall:.2f} s wall, {cpu:.2f} s CPU "
              f"(median of {repeat}; the table format: {text_wall:.2f} s wall, {text_cpu:.2f} s CPU), "
              f"{target.stat().st_size / 1e3:,.0f} kB")


def synthetic_page(rows: int, out: Path) -> tuple[Path, int, float]:
    """A diff page of a synthetic alignment with about ``rows`` rows: (file, rows, seconds to make the page)."""
    from support.synthetic import synthetic_pair

    from treediff.align import align, kind_confusion
    from treediff.align.summaries import divergence_summary
    from treediff.render import diffview
    from treediff.render.html import diff_html

    a, b, _ = synthetic_pair(rows)  # about 1.03 rows a record
    alignment = align(a, b)
    start = time.perf_counter()
    found = divergence_summary(alignment, n=10)
    summaries = diffview.Summaries(confusion=kind_confusion(alignment), divergences=found.rows, total=found.total,
                                   by_kind=found.by_kind, by_ply=found.by_ply)
    notations = (diffview.side_notation("own", alignment.a.engine, None),
                 diffview.side_notation("own", alignment.b.engine, None))
    page = diff_html(alignment, alignment.rows, summaries, notations)
    path = out / "synthetic.html"
    path.write_text(page, encoding="utf-8")
    return path, len(alignment.rows), time.perf_counter() - start


def bench_open(path: Path, repeat: int) -> None:
    from support.html_helpers import chromium_paths, start_chromium

    if chromium_paths() is None:
        print("open: skipped (chromium and chromedriver not installed)")
        return
    driver = start_chromium()
    try:
        loaded, rendered, shown = [], [], 0
        for _ in range(repeat):
            driver.get("about:blank")
            driver.get(path.as_uri())
            deadline = time.monotonic() + 60
            while driver.execute_script("return window.treediffRendered === undefined"):
                assert time.monotonic() < deadline, "the page never rendered"
                time.sleep(0.02)
            dcl, first = driver.execute_script(
                "var n = performance.getEntriesByType('navigation')[0];"
                "return [n.domContentLoadedEventEnd, window.treediffRendered];")
            loaded.append(dcl)
            rendered.append(first)
            shown = driver.execute_script("return document.querySelectorAll('table.tree tbody tr').length")
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, errors
        print(f"open in chromium: DOMContentLoaded {statistics.median(loaded):,.0f} ms, first render of the tree "
              f"{statistics.median(rendered):,.0f} ms from navigation start (median of {repeat}; {shown} rows built "
              f"at first)")
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000, help="rows of the synthetic alignment (default 50000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-tactical", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if not args.skip_tactical:
            bench_tactical(out, args.repeat)
        path, rows, seconds = synthetic_page(args.rows, out)
        print(f"synthetic: {rows:,} rows, page made in {seconds:.2f} s, {path.stat().st_size / 1e6:.1f} MB")
        bench_open(path, args.repeat)


if __name__ == "__main__":
    main()

"""Benchmark typhoon_py's ``--shadow``: CPU seconds with the shadow searches on against off, per profile.

    python benchmarks/bench_shadow.py                      # depth 5, the 20 positions, traced
    python benchmarks/bench_shadow.py --depth 6 --profiles typhoon --no-trace

Each position is searched with shadow off and on back to back in the same process (CPU time,
``time.process_time``), so machine load affects both alike; the ratio is on / off.  Traced runs write the
trace to memory (the shadow searches write only their SHADOW lines; the main search's tracing is in both
runs).  Also printed: the main search's nodes (quiescence included; equal in both runs, asserted: the
shadow changes nothing), the shadow searches' nodes, tries and fail-highs.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engines"))

from typhoon_py import make_config, read_epd, run_search  # noqa: E402

EPD = ROOT / "fixtures" / "positions20.epd"


def measure(profile: str, depth: int, positions, trace: bool) -> dict:
    """CPU seconds off and on, and the node and shadow counts, over ``positions``."""
    config = make_config(profile)
    cpu = {False: 0.0, True: 0.0}
    nodes = {False: 0, True: 0}
    shadow_nodes = tries = fail_highs = 0
    for pos in positions:
        for shadow in (False, True):
            buf = io.StringIO() if trace else None
            t0 = time.process_time()
            outcome = run_search(pos.board, depth, dataclasses.replace(config, shadow=shadow), buf, pos.id,
                                 pos.phase)
            cpu[shadow] += time.process_time() - t0
            nodes[shadow] += outcome.nodes + outcome.qnodes
            if shadow and outcome.shadow is not None:
                shadow_nodes += outcome.shadow_nodes
                tries += sum(t for t, _ in outcome.shadow.values())
                fail_highs += sum(f for _, f in outcome.shadow.values())
    assert nodes[False] == nodes[True], "the shadow searches changed the main search"
    return {"profile": profile, "off_s": cpu[False], "on_s": cpu[True], "ratio": cpu[True] / cpu[False],
            "nodes": nodes[False], "shadow_nodes": shadow_nodes, "tries": tries, "fail_highs": fail_highs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--positions", type=int, default=20, help="the first N positions of positions20.epd")
    ap.add_argument("--profiles", default="typhoon,stockfish,crafty")
    ap.add_argument("--no-trace", action="store_true", help="search without a trace (counters only)")
    args = ap.parse_args()
    positions = read_epd(EPD)[:args.positions]
    print(f"depth {args.depth}, {len(positions)} positions, {'untraced' if args.no_trace else 'traced'}")
    print(f"{'profile':10s} {'off CPU-s':>9s} {'on CPU-s':>9s} {'ratio':>6s} {'nodes':>8s} {'shadow nodes':>13s}"
          f" {'tries':>7s} {'fh':>6s}")
    for profile in args.profiles.split(","):
        r = measure(profile, args.depth, positions, not args.no_trace)
        print(f"{r['profile']:10s} {r['off_s']:9.2f} {r['on_s']:9.2f} {r['ratio']:6.2f} {r['nodes']:8d}"
              f" {r['shadow_nodes']:13d} {r['tries']:7d} {r['fail_highs']:6d}", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark typhoon_py: nodes/s per profile with tracing off and on, and the 20 x 3 batch time.

    python benchmarks/bench_engine.py                 # depth 5, 20 positions, 2 processes for the batch
    python benchmarks/bench_engine.py --depth 4 --positions 5 --processes 1

Nodes/s counts every node, quiescence included.  Tracing off and on run
interleaved position by position in the same process (tracing on writes a
real file), so machine load affects both alike; the overhead is the ratio.
A bare python-chess negamax (material only, no pruning) is timed in the same
process as a reference for the cost of python-chess itself.  The batch is the
user's scenario: 20 positions x 3 profiles at the given depth, traced to
files, spread over ``--processes`` worker processes.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "engines"))

from typhoon_py import make_config, read_epd, run_search  # noqa: E402

EPD = ROOT / "fixtures" / "positions20.epd"
PROFILES = ("typhoon", "stockfish", "crafty")
_VALUES = {chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330, chess.ROOK: 500, chess.QUEEN: 950,
           chess.KING: 0}


def bare_negamax(board: chess.Board, depth: int, counter: list[int]) -> int:
    """Material-only negamax without pruning: the python-chess cost floor (nodes in ``counter[0]``)."""
    counter[0] += 1
    if depth == 0:
        score = sum(_VALUES[p.piece_type] * (1 if p.color else -1) for p in board.piece_map().values())
        return score if board.turn else -score
    best = -100000
    for move in board.generate_legal_moves():
        board.push(move)
        best = max(best, -bare_negamax(board, depth - 1, counter))
        board.pop()
    return best if best > -100000 else 0


def speed(profile: str, depth: int, positions) -> dict:
    """Interleaved tracing-off / tracing-on runs of every position; nodes/s of each."""
    config = make_config(profile)
    totals = {"off": [0, 0.0], "on": [0, 0.0], "bytes": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for k, pos in enumerate(positions):
            for mode in ("off", "on"):
                path = Path(tmp) / f"{k}.log"
                fh = open(path, "w", encoding="utf-8", buffering=1 << 16) if mode == "on" else None
                t0 = time.perf_counter()
                outcome = run_search(pos.board, depth, config, fh, pos.id, pos.phase)
                if fh is not None:
                    fh.close()
                dt = time.perf_counter() - t0
                totals[mode][0] += outcome.nodes + outcome.qnodes
                totals[mode][1] += dt
                if mode == "on":
                    totals["bytes"] += path.stat().st_size
    off = totals["off"][0] / totals["off"][1]
    on = totals["on"][0] / totals["on"][1]
    return {"profile": profile, "nodes": totals["off"][0], "off_nps": off, "on_nps": on,
            "overhead": totals["on"][1] / totals["off"][1] - 1.0, "trace_mb": totals["bytes"] / 1e6}


def _batch_job(args: tuple[str, int, str]) -> tuple[str, float]:
    profile, depth, out_dir = args
    positions = read_epd(EPD)
    t0 = time.perf_counter()
    with open(Path(out_dir) / f"{profile}.log", "w", encoding="utf-8", buffering=1 << 16) as fh:
        for pos in positions:
            run_search(pos.board, depth, make_config(profile), fh, pos.id, pos.phase)
    return profile, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=5, help="search depth in plies (default 5)")
    ap.add_argument("--positions", type=int, default=20, help="positions for the speed runs (default 20)")
    ap.add_argument("--processes", type=int, default=2, help="worker processes for the batch (default 2)")
    args = ap.parse_args()
    positions = read_epd(EPD)[: args.positions]

    counter = [0]
    t0 = time.perf_counter()
    for pos in positions[:4]:
        bare_negamax(pos.board.copy(), 3, counter)
    bare_nps = counter[0] / (time.perf_counter() - t0)
    print(f"baseline: bare python-chess negamax (material only, depth 3, 4 positions): {bare_nps:,.0f} nodes/s")
    print(f"\nspeed, depth {args.depth}, {len(positions)} positions (nodes incl. quiescence):")
    print(f"{'profile':10s} {'nodes':>8s} {'off n/s':>9s} {'on n/s':>9s} {'overhead':>9s} {'vs bare':>8s} {'trace':>8s}")
    for profile in PROFILES:
        r = speed(profile, args.depth, positions)
        print(f"{profile:10s} {r['nodes']:8d} {r['off_nps']:9,.0f} {r['on_nps']:9,.0f} {r['overhead']:8.1%} "
              f"{r['off_nps'] / bare_nps:8.2f} {r['trace_mb']:6.1f}MB")

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.processes) as pool:
            per = list(pool.map(_batch_job, [(p, args.depth, tmp) for p in PROFILES]))
        wall = time.perf_counter() - t0
    print(f"\nbatch: {len(read_epd(EPD))} positions x {len(PROFILES)} profiles at depth {args.depth}, traced, "
          f"{args.processes} processes: {wall:.1f} s wall "
          f"({', '.join(f'{p} {t:.1f} s' for p, t in per)}); cpu count {os.cpu_count()}")


if __name__ == "__main__":
    main()

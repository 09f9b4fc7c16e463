"""Deterministic generator of large synthetic TREEDUMP logs (any dialect, N lines).

A realistic search tree (legal moves from python-chess, depth-first order,
the dialect's act= vocabulary, ITER markers, RESULT per node, END) is built
once per seed and position; the log repeats such searches, each under its own
header, until it holds N lines.  Same arguments, same bytes.

    python benchmarks/gen_logs.py --dialect stockfish --lines 5000000 -o /tmp/sf5m.log
"""
from __future__ import annotations

import argparse
import random

import chess

FENS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8",
    "8/5pk1/6p1/3R4/5P2/6PK/r7/8 w - - 0 50",
]

PRUNE_ACTS = {
    "stockfish": ["FP-QUIET", "SEE-QUIET", "FP-CAP", "SEE-CAP", "HIST-PRUNE"],
    "typhoon": ["LMP"],
    "crafty": ["LMP", "FP-QUIET"],
}
UNIT = {"stockfish": 1, "typhoon": 64, "crafty": 1}
NULL = {"stockfish": "0000", "typhoon": "(null)", "crafty": "null"}


def _notation(dialect: str, board: chess.Board, move: chess.Move) -> str:
    if dialect == "crafty":
        return board.san(move)
    uci = move.uci()
    return uci[:4] + uci[4:].upper() if dialect == "typhoon" else uci


def search_lines(dialect: str, fen: str, depth: int, seed: int, max_lines: int) -> list[str]:
    """One search: ITER 1..depth, each a depth-first tree walk."""
    rng = random.Random(seed)
    unit = UNIT[dialect]
    prunes = PRUNE_ACTS[dialect]
    out: list[str] = []
    nodes = 0

    def walk(board: chess.Board, path: list[str], d: int) -> None:
        nonlocal nodes
        if len(out) >= max_lines:
            return
        ply = len(path)
        prefix = "/".join(path)
        if d >= 3 and ply > 0 and rng.random() < 0.3:
            out.append(f"MOVE path={prefix}/{NULL[dialect]} ply={ply + 1} mn=0 d={d * unit} nd={(d - 3) * unit} act=NMP")
        moves = list(board.legal_moves)
        rng.shuffle(moves)
        for mn, move in enumerate(moves[: 4 + rng.randint(0, 12)], start=1):
            token = _notation(dialect, board, move)
            child = f"{prefix}/{token}" if prefix else token
            r = rng.random()
            if mn > 3 and r < 0.45:
                out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d * unit} act={rng.choice(prunes)} a=-30 b=-29 nt=ALL")
                continue
            if mn > 2 and r < 0.7 and d > 2:
                red = 1 + (mn > 8)
                out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d * unit} nd={(d - 1 - red) * unit} act=LMR red={red * unit} a=-30 b=-29 nt=CUT see=0 hist={rng.randint(-900, 900)}")
            else:
                out.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d * unit} nd={(d - 1) * unit} act=FULL a=-30 b=-29 nt=PV")
            if d > 1:
                board.push(move)
                walk(board, path + [token], d - 1 - (r < 0.7 and mn > 2))
                board.pop()
        nodes += 1
        out.append(f"RESULT path={prefix or '-'} ply={ply} d={d * unit} score={rng.randint(-200, 200)} bound=exact")

    for iteration in range(1, depth + 1):
        out.append(f"ITER d={iteration}")
        walk(chess.Board(fen), [], iteration)
    out.append(f"END nodes={nodes}")
    return out


def distinct_fen(n: int, seed: int) -> str:
    """Search ``n``'s own position: a base FEN after 2-7 random legal plies (deterministic in n and seed)."""
    rng = random.Random(seed * 1_000_003 + n)
    board = chess.Board(FENS[n % len(FENS)])
    for _ in range(2 + rng.randint(0, 5)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board.fen()


def generate_distinct(dialect: str, lines: int, out_path: str, seed: int = 1, depth: int = 5,
                      per_search: int = 8_500) -> int:
    """Like :func:`generate`, but every search is of its own position (a batch of distinct positions, as
    a real EPD batch is): the search numbers ``n`` are the same on every dialect, so two such logs
    share their positions search by search.  Slower to make: every search's tree is walked."""
    written = 0
    n = 0
    with open(out_path, "w") as fh:
        while written < lines:
            fen = distinct_fen(n, seed)
            block = search_lines(dialect, fen, depth, seed + n, max_lines=per_search)
            fh.write(f"TREEDUMP engine={dialect} v=1 unit={UNIT[dialect]} id=gen{n} producer=gen_logs fen={fen}\n")
            fh.write("\n".join(block) + "\n")
            written += len(block) + 1
            n += 1
    return written


def generate(dialect: str, lines: int, out_path: str, seed: int = 1, depth: int = 5) -> int:
    """Write ``lines`` lines (searches repeated under fresh headers); returns the lines written.

    The searches cycle through :data:`FENS`: four positions under many ids (``--distinct-positions``
    gives every search its own position)."""
    blocks = []
    for i, fen in enumerate(FENS):
        block = search_lines(dialect, fen, depth, seed + i, max_lines=200_000)
        blocks.append((fen, "\n".join(block) + "\n", len(block)))
    written = 0
    n = 0
    with open(out_path, "w") as fh:
        while written < lines:
            fen, text, count = blocks[n % len(blocks)]
            fh.write(f"TREEDUMP engine={dialect} v=1 unit={UNIT[dialect]} id=gen{n} producer=gen_logs fen={fen}\n")
            fh.write(text)
            written += count + 1
            n += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialect", choices=sorted(UNIT), default="stockfish")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--distinct-positions", action="store_true",
                        help="every search of its own position (compare/diff pair searches by position)")
    args = parser.parse_args()
    make = generate_distinct if args.distinct_positions else generate
    n = make(args.dialect, args.lines, args.output, args.seed)
    print(f"{args.output}: {n} lines")


if __name__ == "__main__":
    main()

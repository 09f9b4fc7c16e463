"""Test helpers for typhoon_py: a tiny independent TREEDUMP reader and a brute-force mate checker.

Deliberately written without importing typhoon_py's tracing code, so the tests
check the engine's trace against an independent reading of the format.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

import chess

CTX = r"(?: ctx=(?P<ctx>\S+))?"
RE = {
    "TREEDUMP": re.compile(r"^TREEDUMP engine=(?P<engine>typhoon|stockfish|crafty) v=1 unit=(?P<unit>1|64)"
                           r"(?: id=(?P<id>\S+))?(?: phase=(?P<phase>opening|middlegame|endgame))?"
                           r" producer=typhoon_py" + CTX + r" fen=(?P<fen>.+)$"),
    "ITER": re.compile(r"^ITER d=(?P<d>\d+)" + CTX + "$"),
    "MOVE": re.compile(r"^MOVE path=(?P<path>\S+) ply=(?P<ply>\d+) mn=(?P<mn>\d+) d=(?P<d>\d+)"
                       r"(?: nd=(?P<nd>\d+))? act=(?P<act>[A-Z-]+)(?: red=(?P<red>\d+))?"
                       r" a=(?P<a>-?\d+) b=(?P<b>-?\d+) nt=(?P<nt>PV|CUT|ALL)"
                       r"(?: see=(?P<see>-?\d+) hist=(?P<hist>-?\d+))?(?: why=(?P<why>[a-z-]+))?" + CTX + "$"),
    "SHADOW": re.compile(r"^SHADOW path=(?P<path>\S+) ply=(?P<ply>\d+) d=(?P<d>\d+) score=(?P<score>-?\d+)"
                         r" fh=(?P<fh>[01])" + CTX + "$"),
    "RESULT": re.compile(r"^RESULT path=(?P<path>\S+) ply=(?P<ply>\d+) d=(?P<d>\d+) score=(?P<score>-?\d+)"
                         r" bound=(?P<bound>exact|lower|upper)" + CTX + "$"),
    "END": re.compile(r"^END nodes=(?P<nodes>\d+)(?: best=(?P<best>\S+))? score=(?P<score>-?\d+)" + CTX + "$"),
}
NULL_TOKEN = {"typhoon": "(null)", "stockfish": "0000", "crafty": "null"}


@dataclass
class Search:
    """One search block of a trace, read line by line."""

    header: dict
    lines: list = field(default_factory=list)  # (tag, groupdict) in order

    def tagged(self, tag: str, ctx: Optional[str] = "*") -> list[dict]:
        return [g for t, g in self.lines if t == tag and (ctx == "*" or g.get("ctx") == ctx)]

    def acts(self, ctx: Optional[str] = "*") -> Counter:
        return Counter(g["act"] for g in self.tagged("MOVE", ctx))


def read_trace(text: str) -> list[Search]:
    """Split a trace into searches; raise AssertionError on any line that does not parse."""
    searches: list[Search] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        tag = line.split(" ", 1)[0]
        rx = RE.get(tag)
        assert rx is not None, f"line {lineno}: unknown tag: {line!r}"
        m = rx.match(line)
        assert m is not None, f"line {lineno}: malformed {tag}: {line!r}"
        if tag == "TREEDUMP":
            searches.append(Search(m.groupdict()))
        else:
            assert searches, f"line {lineno}: record before any header"
            searches[-1].lines.append((tag, m.groupdict()))
    assert text.endswith("\n"), "trace does not end with a newline"
    return searches


def resolve_path(root: chess.Board, path: str, dialect: str, cache: dict) -> chess.Board:
    """Replay ``path`` (dialect notation) from ``root``; assert every move is legal and well spelled."""
    if path == "-":
        return root
    if path in cache:
        return cache[path]
    parent_path, _, move_text = path.rpartition("/")
    parent = resolve_path(root, parent_path or "-", dialect, cache)
    board = parent.copy(stack=False)
    if move_text == NULL_TOKEN[dialect]:
        board.push(chess.Move.null())
    elif dialect == "crafty":
        move = board.parse_san(move_text)
        assert board.san(move) == move_text, f"SAN {move_text!r} is not python-chess's {board.san(move)!r}"
        board.push(move)
    else:
        if dialect == "typhoon":
            assert len(move_text) == 4 or move_text[4].isupper(), f"typhoon promotion not upper-case: {move_text}"
        else:
            assert move_text == move_text.lower(), f"stockfish move not lower-case: {move_text}"
        move = chess.Move.from_uci(move_text.lower())
        assert move in board.legal_moves, f"illegal move {move_text} in {board.fen()}"
        board.push(move)
    cache[path] = board
    return board


def mates_within(board: chess.Board, moves: int) -> bool:
    """Brute force: the side to move can force mate within ``moves`` of its own moves."""
    for m in list(board.legal_moves):
        board.push(m)
        try:
            if move_forces_mate_after(board, moves):
                return True
        finally:
            board.pop()
    return False


def move_forces_mate_after(board: chess.Board, moves: int) -> bool:
    """After the attacker's move (already on ``board``): mate now, or every reply allows mate in ``moves - 1``."""
    if board.is_checkmate():
        return True
    if moves <= 1:
        return False
    replies = list(board.legal_moves)
    if not replies:
        return False  # stalemate
    for r in replies:
        board.push(r)
        try:
            if not mates_within(board, moves - 1):
                return False
        finally:
            board.pop()
    return True

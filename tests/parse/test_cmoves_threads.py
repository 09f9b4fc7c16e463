"""The compiled move checker runs without the GIL on long calls (treediff/parse/_cmoves.c, ``scan_paths``).

compare parses two logs at once, each parse checking its searches' paths on its own thread: while one
checks, the other's Python steps must be able to run.  Shown here by what only a released GIL allows: a
second thread running Python (and being refused the same checker, which is busy) while a long ``check`` or
``legal_counts`` call is in progress; and two checkers on two threads giving the codes they give alone.
"""
from __future__ import annotations

import random
import threading

import chess
import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("treediff.parse._cmoves")

from treediff.parse.paths import _string_views, compiled_checker  # noqa: E402


def _three_ply_paths() -> list[str]:
    """Every legal 3-ply path from the start (8,902 of them), as UCI."""
    board, out = chess.Board(), []
    for m1 in list(board.legal_moves):
        board.push(m1)
        for m2 in list(board.legal_moves):
            board.push(m2)
            out += [f"{m1.uci()}/{m2.uci()}/{m3.uci()}" for m3 in board.legal_moves]
            board.pop()
        board.pop()
    return out


PATHS = _three_ply_paths()
# Shuffled: consecutive paths share no prefix, so each is replayed from the root (a longer call).
SHUFFLED = random.Random(17).sample(PATHS, len(PATHS))
# How many times over a call checks them: ~0.2 s or more on this project's machine.
REPEAT = {"check": 200, "legal_counts": 40}
# Illegal ones mixed in, so the codes are not all the same.
MIXED = PATHS[:500] + ["e2e4/e7e5/e1e3", "e2e5", "a1a8/e7e5"] + PATHS[500:1000]


def _run(kind: str, checker, views, data) -> np.ndarray:
    n = len(views) // 16
    if kind == "check":
        out = np.zeros(n, np.uint8)
        checker.check(views, data, out, None)
    else:
        out = np.zeros(n, np.int32)
        checker.legal_counts(views, data, out, None)
    return out


def _refusals_during_a_long_call(kind: str, checker, views, data) -> tuple[int, np.ndarray]:
    """Run one long call on a thread while this one tries the same checker: (times it was refused, the
    call's output)."""
    finished = threading.Event()
    result: dict[str, np.ndarray] = {}

    def long_call():
        try:
            result["out"] = _run(kind, checker, views, data)
        finally:
            finished.set()

    worker = threading.Thread(target=long_call)
    refused = 0
    worker.start()
    # With the GIL held through the call, this loop could not run while it lasts, and would never find the
    # checker busy (a call sets busy and clears it before giving the GIL back).
    while not finished.is_set():
        try:
            checker.check_one("e2e4")
        except RuntimeError as exc:
            assert "another thread" in str(exc)
            refused += 1
            if refused >= 3:
                break
    worker.join()
    return refused, result["out"]


@pytest.mark.parametrize("kind", ["check", "legal_counts"])
def test_a_long_call_lets_other_threads_run(kind):
    views, data, _ = _string_views(pa.array(SHUFFLED * REPEAT[kind], pa.string()), None)
    checker = compiled_checker(chess.Board())
    # (Up to three calls, in case this thread was not scheduled during one: a held GIL refuses in none.)
    for _ in range(3):
        refused, out = _refusals_during_a_long_call(kind, checker, views, data)
        if refused:
            break
    assert refused >= 1
    assert len(out) == len(SHUFFLED) * REPEAT[kind]
    if kind == "check":
        assert not out.any()  # every path legal
    else:
        assert (out > 0).all()  # (a legal 3-ply path from the start leaves the side to move a legal move)


@pytest.mark.parametrize("kind", ["check", "legal_counts"])
def test_two_checkers_on_two_threads_give_the_codes_they_give_alone(kind):
    sets = [MIXED * 200, list(reversed(MIXED)) * 200]
    inputs = [_string_views(pa.array(paths, pa.string()), None)[:2] for paths in sets]
    alone = [_run(kind, compiled_checker(chess.Board()), v, d) for v, d in inputs]
    together: list[np.ndarray | None] = [None, None]

    def work(i):
        together[i] = _run(kind, compiled_checker(chess.Board()), *inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(together, alone):
        np.testing.assert_array_equal(got, want)
    # The illegal paths are found in both orders (the codes are not all zero or all the same).
    assert len(np.unique(alone[0])) > 1
    assert (alone[0][500:503] != 0).all() if kind == "check" else (alone[0][500:503] == -1).all()

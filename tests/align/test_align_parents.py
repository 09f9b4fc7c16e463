"""The aligner's ply and parent of every path, read from the Arrow string buffers, against Python's own split."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from treediff.align.core import _ply_and_parents

MOVES = ["e2e4", "e7e5", "g1f3", "0000", "e7e8q", "a1a2", "é"]  # (a multi-byte character: "/" is still one byte)


def _reference(path: str) -> tuple[int, str]:
    """Ply (moves in the path, 0 for the root ``""``) and the path without its last move."""
    return (0 if path == "" else path.count("/") + 1), path.rpartition("/")[0]


def _paths(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [""] + ["/".join(rng.choice(MOVES) for _ in range(rng.randint(1, 7))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(3))
def test_ply_and_parent_of_random_paths(seed):
    paths = _paths(seed, 2_000)
    ply, parents = _ply_and_parents(pa.array(paths, pa.large_string()))
    assert [(int(p), s) for p, s in zip(ply, parents.to_pylist())] == [_reference(p) for p in paths]


def test_slices_empty_arrays_and_plain_strings():
    paths = _paths(7, 300)
    whole = pa.array(paths, pa.large_string())
    for array, expected in ((whole.slice(11, 200), paths[11:211]), (whole.slice(0, 0), []),
                            (pa.array(["", ""], pa.large_string()), ["", ""]),
                            (pa.array(paths[:50], pa.string()), paths[:50])):
        ply, parents = _ply_and_parents(array)
        assert [(int(p), s) for p, s in zip(ply, parents.to_pylist())] == [_reference(p) for p in expected]
        assert parents.type == pa.large_string()

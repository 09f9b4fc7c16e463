"""The compiled move-try derivation (treediff/report/_ctries.c) gives the same Tries as the numpy one, field by
field, on every fixture trace, the hand-written analytics traces and random traces (with truncated iterations,
records out of trace order, no visit columns, RESULT records without a move); and the switch to numpy works."""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support import analytics_traces
from support.analytics_traces import source_of
from test_analytics_reference import random_log
from treediff.parse.source import open_source
from treediff.report import tries
from treediff.report.core import _row_of
from treediff.report.table import Batch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures" / "traces").glob("*.log")) + sorted((ROOT / "fixtures" / "hand").glob("*.log"))
HAND = ("CUTOFF_CASES", "DEPTH_CASES", "RESIDUAL_CASES", "SHADOW_CASES")
COLUMNS = ["engine", "search", "iter", "seq", "line", "tag", "kind", "act", "path", "move", "ply", "mn", "depth",
           "bound", "visit", "parent_visit", "fh"]

compiled = pytest.mark.skipif(tries._ctries is None, reason="treediff.report._ctries is not built")


def records_of(source) -> pd.DataFrame:
    wanted = [c for c in COLUMNS if c in source.records().columns]
    return source.records(wanted)


def batch_of(records: pd.DataFrame, searches: pd.DataFrame) -> Batch:
    return Batch(records.reset_index(drop=True), searches, _row_of(searches), ())


def assert_same(batch: Batch) -> None:
    for full in (False, True):
        c = tries.derive(batch, full=full, compiled=True)
        p = tries.derive(batch, full=full, compiled=False)
        for f in dataclasses.fields(tries.Tries):
            a, b = getattr(c, f.name), getattr(p, f.name)
            assert a.shape == b.shape and np.array_equal(a, b), (f.name, full)


def _variants(records: pd.DataFrame, seed: int):
    """The records as parsed, shuffled (not in trace order), without visit columns, without RESULT moves."""
    yield records
    rng = np.random.default_rng(seed)
    yield records.iloc[rng.permutation(len(records))]
    yield records.drop(columns=[c for c in ("visit", "parent_visit") if c in records])
    if "move" in records:
        no_move = records.copy()
        no_move.loc[no_move["tag"].astype(str) == "RESULT", "move"] = None
        yield no_move


@compiled
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_same_tries_on_fixtures(path):
    source = open_source(path)
    records = records_of(source)
    for variant in _variants(records, 1):
        assert_same(batch_of(variant, source.searches))


@compiled
@pytest.mark.parametrize("name", HAND)
def test_same_tries_on_the_hand_traces(tmp_path, name):
    source = source_of(tmp_path, getattr(analytics_traces, name), f"{name}.log")
    for variant in _variants(records_of(source), 2):
        assert_same(batch_of(variant, source.searches))


@compiled
@pytest.mark.parametrize("seed, truncate", [(s, t) for s in range(1, 9) for t in (False, True)])
def test_same_tries_on_random_traces(tmp_path, seed, truncate):
    source = source_of(tmp_path, random_log(seed, searches=3, truncate=truncate), f"r{seed}.log")
    for variant in _variants(records_of(source), seed):
        assert_same(batch_of(variant, source.searches))


@compiled
def test_same_tries_on_odd_paths(tmp_path):
    """Moves of every length (the kernel looks a path up by its parent and last move up to 7 bytes, else as a
    whole string), repeated moves under one node."""
    rng = random.Random(7)
    moves = ["e2e4", "Nf3", "exd8=Q+", "verylongmovename", "0000", "O-O-O"]
    lines = [f"TREEDUMP engine=stockfish v=1 unit=1 id=x fen={analytics_traces.START}", "ITER d=2"]

    def node(path: str, ply: int, d: int) -> None:
        for mn in range(1, rng.randint(1, 4) + 1):
            child = (path + "/" if path else "") + rng.choice(moves)
            lines.append(f"MOVE path={child} ply={ply + 1} mn={mn} d={d} nd={max(d - 1, 0)} act=FULL")
            if d > 1:
                node(child, ply + 1, d - 1)
            lines.append(f"RESULT path={child} ply={ply + 1} d={max(d - 1, 0)} score=0 "
                         f"bound={rng.choice(['lower', 'upper', 'exact'])}")

    node("", 0, 3)
    lines.append("RESULT path=- ply=0 d=2 score=0 bound=exact")
    source = source_of(tmp_path, "\n".join(lines) + "\n", "odd.log")
    for variant in _variants(records_of(source), 3):
        assert_same(batch_of(variant, source.searches))


@compiled
@pytest.mark.parametrize("width", [15, 16, 17, 18, 40])
def test_same_tries_on_wide_nodes(tmp_path, width):
    """Nodes with about as many children as the kernel keeps in a node's list (16) and more: the root and
    one of its children get ``width`` children each, the nodes below them a few; a second iteration comes
    back to them in the reverse order and adds as many new ones, so lookups run before, across and after a
    node's children move from its list to the pair table."""
    lines = [f"TREEDUMP engine=stockfish v=1 unit=1 id=x fen={analytics_traces.START}"]

    def node(path: str, ply: int, children: list[str], below: int) -> None:
        for mn, move in enumerate(children, start=1):
            child = (path + "/" if path else "") + move
            lines.append(f"MOVE path={child} ply={ply + 1} mn={mn} d=2 nd=1 act=FULL")
            if below:
                node(child, ply + 1, [f"x{k}" for k in range(below)], 0)
            lines.append(f"RESULT path={child} ply={ply + 1} d=1 score=0 bound=upper")

    for it, moves in ((1, [f"m{k}" for k in range(width)]),
                      (2, [f"m{k}" for k in reversed(range(2 * width))])):
        lines.append(f"ITER d={it}")
        node("", 0, moves, 3)
        node("m1", 1, [f"w{k}" for k in range(width * it)], 2)  # a wide node below the root, visited again
        lines.append(f"RESULT path=- ply=0 d={it} score=0 bound=exact")
    source = source_of(tmp_path, "\n".join(lines) + "\n", "wide.log")
    records = records_of(source)
    paths = records["path"].astype(str)
    assert paths[paths.str.fullmatch(r"m\d+")].nunique() == 2 * width  # the root's children
    assert paths[paths.str.fullmatch(r"m1/w\d+")].nunique() == 2 * width
    for variant in _variants(records, 4):
        assert_same(batch_of(variant, source.searches))


def test_the_numpy_switch(monkeypatch):
    """TREEDIFF_NUMPY_TRIES=1 turns the compiled kernel off; derive(compiled=True) without it is an error."""
    monkeypatch.setenv(tries.NUMPY_ENV, "1")
    assert not tries.compiled_available()
    monkeypatch.delenv(tries.NUMPY_ENV)
    assert tries.compiled_available() == (tries._ctries is not None)
    if tries._ctries is None:
        source = open_source(FIXTURES[0])
        with pytest.raises(RuntimeError, match="not built"):
            tries.derive(batch_of(records_of(source), source.searches), compiled=True)

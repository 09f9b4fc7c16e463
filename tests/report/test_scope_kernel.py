"""scope's compiled visit kernel (``_ctries.scope_visits``) gives what its numpy path gives: the same prunes,
visits, decided-move counts, follow-ups, cutoffs and first prunes, field by field, batch by batch, and the
same scope table; on every fixture log, random traces (nested re-visits, cut-short iterations) and records
out of trace order.  And when a visit's node has no shared path code, numpy does the work."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support.analytics_traces import source_of
from test_analytics_reference import random_log
from treediff.parse.source import open_source
from treediff.report import tries
from treediff.report.core import build_report
from treediff.report.tables import scope
from treediff.store.source import FrameSource

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures" / "traces").glob("*.log")) + sorted((ROOT / "fixtures" / "real").glob("*.log")) \
    + sorted((ROOT / "fixtures" / "hand").glob("*.log"))

compiled = pytest.mark.skipif(tries._ctries is None, reason="treediff.report._ctries is not built")


def _run(source, monkeypatch, kernel: bool) -> tuple[list, pd.DataFrame]:
    """The scope table of ``source`` (with cutoffs: the batches carry the shared derivation) and the prunes
    each batch's path made (None where the kernel declined)."""
    made: list = []
    name = "_prunes_compiled" if kernel else "_prunes_numpy"
    real = getattr(scope, name)

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        made.append(result)
        return result

    with monkeypatch.context() as m:
        m.setattr(scope, name, spy)
        if not kernel:
            m.setattr(scope, "_scope_kernel", lambda: None)
        table = build_report(source, ["scope", "cutoffs"], by="position", target=2_000)["scope"]
    return made, table


def _assert_same(source, monkeypatch) -> int:
    """The kernel's prunes equal numpy's; returns how many batches the kernel answered."""
    by_kernel, table_k = _run(source, monkeypatch, kernel=True)
    by_numpy, table_n = _run(source, monkeypatch, kernel=False)
    pd.testing.assert_frame_equal(table_k, table_n)
    answered = [p for p in by_kernel if p is not None]
    assert len(answered) == len(by_numpy)  # (every batch with prunes went through the kernel)
    for got, want in zip(answered, by_numpy):
        for f in dataclasses.fields(scope._Prunes):
            a, b = getattr(got, f.name), getattr(want, f.name)
            assert a.dtype == b.dtype and np.array_equal(a, b), f.name
    return len(answered)


@compiled
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_same_prunes_on_the_fixtures(path, monkeypatch):
    _assert_same(open_source(path), monkeypatch)


@compiled
@pytest.mark.parametrize("seed", range(1, 9))
def test_same_prunes_on_random_traces(tmp_path, seed, monkeypatch):
    source = source_of(tmp_path, random_log(seed, searches=3, truncate=seed % 2 == 0), f"r{seed}.log")
    assert _assert_same(source, monkeypatch) >= 1


@compiled
def test_records_out_of_trace_order(monkeypatch):
    source = open_source(ROOT / "fixtures" / "real" / "mid_a_d7.log")
    records = source.records(None)
    shuffled = records.iloc[np.random.default_rng(5).permutation(len(records))].reset_index(drop=True)
    assert _assert_same(FrameSource(shuffled, source.searches), monkeypatch) >= 1


@compiled
def test_a_node_without_a_shared_code_goes_to_numpy(tmp_path, monkeypatch):
    """A prune record of ply 0 (no parent path: its node has no code in the shared derivation): the kernel
    declines the batch and numpy, cutting the paths itself, gives the table."""
    log = """TREEDUMP engine=stockfish v=1 unit=1 id=k fen=4k3/8/8/8/8/8/4P3/4K3 w - - 0 1
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
MOVE path=e2e3 ply=1 mn=2 d=1 act=FP-QUIET
MOVE path=e1d1 ply=1 mn=3 d=1 nd=0 act=FULL
RESULT path=- ply=0 d=1 score=10 bound=exact
"""
    source = source_of(tmp_path, log, "k.log")
    records = source.records(None).copy()
    prune = np.flatnonzero(records["act"].astype(str) == "FP-QUIET")
    records.loc[records.index[prune], "ply"] = 0
    odd = FrameSource(records, source.searches)
    by_kernel, table_k = _run(odd, monkeypatch, kernel=True)
    assert by_kernel == [None]
    _, table_n = _run(odd, monkeypatch, kernel=False)
    pd.testing.assert_frame_equal(table_k, table_n)
    _, plain = _run(source, monkeypatch, kernel=True)  # the same log as parsed: the kernel answers
    assert int(plain.loc[plain["act"] == "FP-QUIET", "prunes"].iloc[0]) == 1


@compiled
def test_an_iteration_in_two_stretches(tmp_path, monkeypatch):
    """``ITER d=1``, ``d=2``, then ``d=1`` again: scope keys a visit by (search, iteration), so the root's
    visit 1 of the first and third stretches is one visit; the kernel numbers (iteration, node) pairs through
    its table then, not its per-stretch stamps.  By hand: iteration 1's visit holds e2e3 (followed by e1d1
    and e1f1) and e1d1 (followed by e1f1), iteration 2's holds e2e3 (not followed): 3 prunes, 2 nodes, 2
    followed.  Counted as two visits, iteration 1 would give 3 nodes and 1 followed."""
    stretch = """MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
MOVE path=e2e3 ply=1 mn=2 d=1 act=FP-QUIET
"""
    log = ("TREEDUMP engine=stockfish v=1 unit=1 id=k fen=4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\n"
           "ITER d=1\n" + stretch + "ITER d=2\n" + stretch + "RESULT path=- ply=0 d=2 score=10 bound=exact\n"
           "ITER d=1\nMOVE path=e1d1 ply=1 mn=3 d=1 act=FP-QUIET\nMOVE path=e1f1 ply=1 mn=4 d=1 nd=0 act=FULL\n"
           "RESULT path=- ply=0 d=1 score=10 bound=exact\n")
    source = source_of(tmp_path, log, "again.log")
    records = source.records(None)
    assert records["iter"].tolist()[:2] == [1, 1] and 2 in records["iter"].tolist()
    assert records.loc[records["act"].astype(str) == "FP-QUIET", "parent_visit"].tolist() == [1, 1, 1]
    assert _assert_same(source, monkeypatch) == 1
    table = build_report(source, ["scope", "cutoffs"])["scope"]
    row = table[table["act"] == "FP-QUIET"].iloc[0]
    assert (int(row["prunes"]), int(row["nodes"]), int(row["followed"])) == (3, 2, 2)


@compiled
def test_the_kernel_refuses_a_read_record_without_a_node_code():
    """The kernel indexes by node code: a record it reads with code -1 is an error, not a write out of
    bounds (scope itself sends such a batch to numpy first)."""
    def u8(*v):
        return np.array(v, dtype=np.uint8)

    def i64(*v):
        return np.array(v, dtype=np.int64)

    def f64(*v):
        return np.array(v, dtype=np.float64)

    # A MOVE at a level with a parent_visit but node -1; a RESULT closing the visit.
    inputs = [u8(1, 0), u8(0, 1), u8(1, 1), i64(1, 1), i64(-1, 0), f64(1, np.nan), f64(np.nan, 1),
              u8(0, 0), u8(1, 0), u8(0, 0), u8(0, 0), i64(0, -1), i64(0, -1)]
    outputs = [np.empty(1, np.int64) for _ in range(4)] + [np.empty(1, np.uint8) for _ in range(4)] \
        + [np.empty(1, np.int64)]
    with pytest.raises(ValueError, match="without a node code"):
        tries._ctries.scope_visits(*inputs, *outputs)
    inputs[4] = i64(0, 0)  # the same call with a node code gives one prune in one visit
    assert tries._ctries.scope_visits(*inputs, *outputs) == (1, 1)

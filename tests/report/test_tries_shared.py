"""The tables that read a batch's move tries share one derivation a batch, with the same numbers as alone.

`cutoffs` and `fh` ask for the light derivation, `residual` (and whatif) for the full one; the full one
answers light requests too.  The figures must not depend on which table asked first or on what else ran.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from treediff.parse.source import open_source
from treediff.report import tries
from treediff.report.core import _row_of, build_report
from treediff.report.table import Batch
from treediff.report.tables import scope

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "mid_a_d7.log"  # one search of real Stockfish 15.1
BATCH3 = FIXTURES / "traces" / "crafty_batch3.log"  # three searches: several batches at a small target


def _count_kernel_runs(monkeypatch) -> list[bool]:
    calls: list[bool] = []
    for name in ("_derive_compiled", "_derive_numpy"):
        real = getattr(tries, name)

        def counted(batch, inp, full, _real=real):
            calls.append(full)
            return _real(batch, inp, full)

        monkeypatch.setattr(tries, name, counted)
    return calls


@pytest.mark.parametrize("log", [REAL, BATCH3], ids=["stockfish-real", "crafty-3-searches"])
@pytest.mark.parametrize("order", [("cutoffs", "fh", "residual"), ("residual", "fh", "cutoffs")])
def test_tables_together_equal_tables_alone(log: Path, order: tuple[str, ...]) -> None:
    together = build_report(open_source(log), list(order), by="position", target=2_000)
    alone = {name: build_report(open_source(log), [name], by="position", target=2_000).sections for name in order}
    want = [s for name in ("cutoffs", "fh", "residual") for s in alone[name]]  # sections come in registry order
    assert [s.name for s in together.sections] == [s.name for s in want]
    for got, alone in zip(together.sections, want):
        pd.testing.assert_frame_equal(got.frame, alone.frame)


def test_one_kernel_run_per_batch_and_kind(monkeypatch) -> None:
    calls = _count_kernel_runs(monkeypatch)
    source = open_source(BATCH3)
    n_batches = sum(1 for _ in source.batches(["search"], 2_000))
    assert n_batches > 1
    build_report(source, ["cutoffs", "fh"], target=2_000)
    assert calls == [False] * n_batches  # fh reuses what cutoffs derived
    calls.clear()
    build_report(source, ["residual", "cutoffs", "fh"], target=2_000)
    # residual reads the full derivation (full_tries): cutoffs, folded first, derives it for all three.
    assert calls == [True] * n_batches
    calls.clear()
    batch_source = open_source(BATCH3)
    for records in batch_source.batches(None, 2_000):
        batch = Batch(records, batch_source.searches, _row_of(batch_source.searches))
        full = tries.derive(batch)
        assert tries.derive(batch, full=False) is full  # the full derivation answers a light request
    assert calls == [True] * n_batches


@pytest.mark.parametrize("log", [REAL, BATCH3], ids=["stockfish-real", "crafty-3-searches"])
@pytest.mark.parametrize("by", [None, "position", "depth"])
def test_scope_nodes_from_the_shared_derivation_equal_its_own(log: Path, by, monkeypatch) -> None:
    """scope numbers node visits by path codes from the shared derivation when the batch has its columns; the
    figures equal those of cutting and hashing the node paths itself (two independent ways to the nodes)."""
    def run() -> list[pd.DataFrame]:
        report = build_report(open_source(log), ["scope", "cutoffs"], by=by, target=2_000)
        return [s.frame for s in report.sections if s.name.startswith("scope")]

    real = scope._shared_path_codes
    used: list[bool] = []

    def spy(batch, take):
        codes = real(batch, take)
        used.append(codes is not None)
        return codes

    monkeypatch.setattr(scope, "_shared_path_codes", spy)
    shared = run()
    assert used and all(used)  # the shared codes were there for every batch
    monkeypatch.setattr(scope, "_shared_path_codes", lambda batch, take: None)
    own = run()
    assert len(shared) == len(own) >= 1 and any(len(f) > 1 for f in shared)
    for got, want in zip(shared, own):
        pd.testing.assert_frame_equal(got, want)


def test_scope_alone_and_with_the_tries_tables_agree() -> None:
    alone = build_report(open_source(REAL), ["scope"], by="position").sections
    together = [s for s in build_report(open_source(REAL), ["scope", "cutoffs", "fh"], by="position").sections
                if s.name.startswith("scope")]
    assert [s.name for s in alone] == [s.name for s in together]
    for got, want in zip(together, alone):
        pd.testing.assert_frame_equal(got.frame, want.frame)


def test_a_table_that_reads_the_derivation_reads_its_columns():
    """A table marked ``reads_tries`` asks for every column the derivation needs, so that alone (``--table
    scope``) it derives as it does beside the others: scope without ``depth`` cut and hashed every node's path
    in numpy instead (twice its CPU), with the same numbers."""
    from treediff.report.tables import TABLES

    readers = [name for name, table in TABLES.items() if getattr(table, "reads_tries", False)]
    assert {"scope", "cutoffs", "fh", "residual"} <= set(readers)
    for name in readers:
        missing = [c for c in tries.COLUMNS if c not in TABLES[name].columns]
        assert not missing, (name, missing)


@pytest.mark.skipif(not tries.compiled_available(), reason="the compiled kernels are not built")
def test_scope_alone_uses_the_shared_derivation(monkeypatch):
    calls = _count_kernel_runs(monkeypatch)
    cut_here: list[int] = []
    real = scope._visits_by_parent_visit

    def spied(*args, **kwargs):
        cut_here.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scope, "_visits_by_parent_visit", spied)
    build_report(open_source(str(REAL)), ["scope"])
    assert calls and not cut_here  # derived once a batch; the numpy visits (and their path cuts) not run

"""report's partials computed on two threads (core._partials) equal the sequential ones, byte for byte.

TREEDIFF_REPORT_THREADS=1 runs every table of a batch on the calling thread, in order (the loop before the
threads); 2 runs the batch's move-try derivation first, beside the tables that do not read it, then the rest.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pandas as pd
import pytest

from treediff.parse.source import open_source
from treediff.report import core, tries
from treediff.report.core import TABLES, build_report
from treediff.report.tables import TABLES as REGISTRY

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = [FIXTURES / "real" / "mid_a_d7.log", FIXTURES / "traces" / "crafty_batch3.log",
        FIXTURES / "traces" / "typhoon_batch3.log", FIXTURES / "traces" / "stockfish_batch3.log"]


def _report(monkeypatch, threads: int, log: Path, by: str, target: int):
    monkeypatch.setenv("TREEDIFF_REPORT_THREADS", str(threads))
    return build_report(open_source(log), TABLES, by=by, target=target)


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
@pytest.mark.parametrize("by,target", [("engine", 1_000_000), ("position,iter", 2_000), ("ply,nt", 700)])
def test_two_threads_equal_one(monkeypatch, log: Path, by: str, target: int) -> None:
    one = _report(monkeypatch, 1, log, by, target)
    two = _report(monkeypatch, 2, log, by, target)
    assert one.names == two.names
    for a, b in zip(one.sections, two.sections):
        pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
        assert a.notes == b.notes


def test_tables_really_run_on_two_threads(monkeypatch) -> None:
    """With 2 threads some partial runs off the calling thread (else the test above proves nothing)."""
    seen: set[int] = set()
    caller = threading.get_ident()
    helped = threading.Event()  # a spied partial ran off the calling thread
    held: list[bool] = []  # the calling thread waits for the helper once (a broken pool fails in 60 s, not 4 x 60)

    for name in ("nodes", "acts", "depths", "why"):
        spec = REGISTRY[name]
        real = type(spec).partial

        def spy(self, batch, _real=real):
            seen.add(threading.get_ident())
            if threading.get_ident() != caller:
                helped.set()
            elif os.environ.get("TREEDIFF_REPORT_THREADS") == "2" and not held:
                held.append(True)
                # On a loaded machine the calling thread could take every job before the helper is scheduled
                # (CI saw it once); holding the first spied job here lets the helper take the other three.
                helped.wait(timeout=60)
            return _real(self, batch)

        monkeypatch.setattr(type(spec), "partial", spy)
    _report(monkeypatch, 2, LOGS[1], "engine", 2_000)
    # (off the calling thread: the pool's worker, which a loaded machine may replace, so its ident may vary)
    assert seen - {threading.get_ident()}
    seen.clear()
    _report(monkeypatch, 1, LOGS[1], "engine", 2_000)
    assert seen == {threading.get_ident()}
    seen.clear()
    monkeypatch.delenv("TREEDIFF_REPORT_THREADS")  # the default: one thread (two doubled the 20M peak)
    build_report(open_source(LOGS[1]), TABLES, by="engine", target=2_000)
    assert seen == {threading.get_ident()}


def test_one_derivation_a_batch_with_threads(monkeypatch) -> None:
    calls: list[bool] = []
    real = tries._derive_compiled if tries.compiled_available() else tries._derive_numpy
    name = "_derive_compiled" if tries.compiled_available() else "_derive_numpy"

    def counted(batch, inp, full, _real=real):
        calls.append(full)
        return _real(batch, inp, full)

    monkeypatch.setattr(tries, name, counted)
    source = open_source(LOGS[1])
    n_batches = sum(1 for _ in source.batches(["search"], 2_000))
    monkeypatch.setenv("TREEDIFF_REPORT_THREADS", "2")
    build_report(source, ["scope", "cutoffs", "fh", "residual"], target=2_000)
    assert calls == [True] * n_batches


def test_first_error_in_task_order_is_raised(monkeypatch) -> None:
    class Boom(Exception):
        pass

    def fail(label):
        def partial(self, batch):
            raise Boom(label)
        return partial

    monkeypatch.setattr(type(REGISTRY["acts"]), "partial", fail("acts"))
    monkeypatch.setattr(type(REGISTRY["why"]), "partial", fail("why"))
    for threads in (1, 2):
        monkeypatch.setenv("TREEDIFF_REPORT_THREADS", str(threads))
        with pytest.raises(Boom, match="acts"):
            build_report(open_source(LOGS[1]), ["acts", "why", "nodes"], target=2_000)


def test_bad_thread_count(monkeypatch) -> None:
    monkeypatch.setenv("TREEDIFF_REPORT_THREADS", "two")
    with pytest.raises(core.InputError, match="TREEDIFF_REPORT_THREADS"):
        build_report(open_source(LOGS[1]), ["acts"], target=2_000)

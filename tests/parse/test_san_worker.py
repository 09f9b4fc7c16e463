"""The SAN worker process: same rows as resolving in-process, reaped on success, failure and Ctrl-C."""
from pathlib import Path

import pytest

from treediff.parse import chunks, paths
from treediff.parse.pipeline import parse_logs, parse_to_parquet
from treediff.parse.san_worker import SanWorker, SanWorkerError

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"
TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
SAN_LOGS = [TRACES / "crafty_batch3.log", HAND / "minimal_crafty.log", HAND / "align_promo_crafty.log"]


@pytest.fixture
def workers(monkeypatch):
    """Split every search's paths with the worker, and remember every worker started.

    The python-chess path (the compiled resolver, when built, needs no worker: tests/parse/test_san_parse.py).
    """
    monkeypatch.setenv(paths.SAN_ENV, "python")
    started: list[SanWorker] = []

    class Recorded(SanWorker):
        def __init__(self):
            super().__init__()
            started.append(self)

    monkeypatch.setattr(paths, "SanWorker", Recorded)
    monkeypatch.setattr(paths, "SAN_WORKER_AFTER_PATHS", 0)
    monkeypatch.setattr(paths, "SAN_SPLIT_MIN_PATHS", 2)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 2000)
    return started


def _in_process(monkeypatch, logs):
    monkeypatch.setattr(paths, "SAN_WORKER_AFTER_PATHS", 10**12)
    result = parse_logs(logs)
    monkeypatch.setattr(paths, "SAN_WORKER_AFTER_PATHS", 0)
    return result


def test_worker_gives_the_same_rows(monkeypatch, workers):
    logs = [SAN_LOGS[0], SAN_LOGS[2]]  # a batch of three searches; promotions
    alone = _in_process(monkeypatch, logs)
    assert not workers
    with_worker = parse_logs(logs)
    assert len(workers) == 2  # one per file, each stopped at the end of its file
    assert with_worker.records.to_pylist() == alone.records.to_pylist()
    assert with_worker.searches.to_pylist() == alone.searches.to_pylist()
    assert with_worker.warnings == alone.warnings
    assert all(w._proc.poll() is not None for w in workers)  # every worker exited and was reaped


def test_a_dying_worker_falls_back_to_in_process(monkeypatch, workers):
    def dead(self):
        self._proc.kill()
        self._proc.wait()
        raise SanWorkerError("killed")

    alone = _in_process(monkeypatch, [SAN_LOGS[0]])
    monkeypatch.setattr(SanWorker, "result", dead)
    broken = parse_logs([SAN_LOGS[0]])
    assert broken.records.to_pylist() == alone.records.to_pylist()
    assert len(workers) == 1 and workers[0]._proc.poll() is not None


def test_ctrl_c_reaps_the_worker_and_leaves_no_output(tmp_path, monkeypatch, workers):
    real = paths.PathNormalizer._resolve_many
    calls = {"n": 0}

    def interrupted(self, *args):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(paths.PathNormalizer, "_resolve_many", interrupted)
    out = tmp_path / "o.parquet"
    with pytest.raises(KeyboardInterrupt):
        parse_to_parquet([SAN_LOGS[0]], out)
    assert list(tmp_path.iterdir()) == []
    assert workers and all(w._proc.poll() is not None for w in workers)


def test_unresolved_moves_from_the_worker_are_flagged_and_counted_in_order(tmp_path, monkeypatch, workers):
    # Every 23rd MOVE gets a move that cannot be played (a king leap): the rows the worker resolved
    # and the ones resolved here must be flagged alike, and the warnings must name the first lines.
    lines = SAN_LOGS[0].read_text().splitlines(keepends=True)
    moves = 0
    corrupted = set()
    for i, line in enumerate(lines):
        if line.startswith("MOVE "):
            moves += 1
            if moves % 23 == 0:
                head, _, rest = line.partition("path=")
                path, _, tail = rest.partition(" ")
                lines[i] = f"{head}path={path.rpartition('/')[0] + '/' if '/' in path else ''}Ka5 {tail}"
                corrupted.add(i + 1)
    log = tmp_path / "broken_crafty.log"
    log.write_text("".join(lines))
    alone = _in_process(monkeypatch, [log])
    flagged_alone = [r["line"] for r in alone.records.to_pylist() if r["problem"] == "unresolved-move"]
    assert set(flagged_alone) <= corrupted and len(flagged_alone) >= len(corrupted) // 2  # most leaps are illegal
    with_worker = parse_logs([log])
    assert workers
    assert with_worker.records.to_pylist() == alone.records.to_pylist()
    assert with_worker.warnings == alone.warnings
    first_five = ", ".join(str(n) for n in sorted(flagged_alone)[:5])
    assert any("does not resolve" in w and first_five in w for w in with_worker.warnings), with_worker.warnings

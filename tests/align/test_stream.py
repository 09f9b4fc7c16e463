"""compare's streaming path (align/stream.py): same tables whatever --memory-limit, spills, clear limits, no
scratch directory left behind.

The logs are made by benchmarks/gen_logs.py (every search its own position); B lists its searches in the
reverse order, so with a small budget every position of B waits for A and is spilled.  The node totals are
counted from the log text itself (RESULT lines of each search's last iteration), not from treediff.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from treediff.align import stream
from treediff.align.stream import MemoryBudget, parse_memory_limit
from treediff.align.summaries import divergences
from treediff.cli import main as cli
from treediff.model.errors import InputError
from treediff.parse.source import open_source
from support.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
SEARCHES = 6


def _searches(dialect: str) -> list[list[str]]:
    """SEARCHES searches of distinct positions (the same positions on every dialect), each a list of lines."""
    gen = load_benchmark("gen_logs")
    out = []
    for n in range(SEARCHES):
        fen = gen.distinct_fen(n, 1)
        body = gen.search_lines(dialect, fen, 3, 1 + n + (dialect == "stockfish"), max_lines=2_000)
        out.append([f"TREEDUMP engine={dialect} v=1 unit={gen.UNIT[dialect]} id=gen{n} fen={fen}", *body])
    return out


def _last_iteration_results(search: list[str]) -> int:
    """RESULT lines after the search's last ITER line: its nodes at the deepest iteration."""
    last = max(i for i, line in enumerate(search) if line.startswith("ITER "))
    return sum(line.startswith("RESULT ") for line in search[last:])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    base = tmp_path_factory.mktemp("stream")
    a, b = _searches("typhoon"), _searches("stockfish")
    path_a, path_b = base / "a.log", base / "b.log"
    path_a.write_text("\n".join(line for s in a for line in s) + "\n")
    path_b.write_text("\n".join(line for s in reversed(b) for line in s) + "\n")  # positions in reverse order
    return path_a, path_b, sum(map(_last_iteration_results, a)), sum(map(_last_iteration_results, b))


def test_memory_limit_sizes():
    assert parse_memory_limit("2GB") == 2 * 1024**3
    assert parse_memory_limit("512MB") == 512 * 1024**2
    assert parse_memory_limit("1.5g") == 3 * 1024**3 // 2
    assert parse_memory_limit("800") == 800
    for bad in ("lots", "2 parsecs", "0", "-1GB", ""):
        with pytest.raises(InputError, match="--memory-limit"):
            parse_memory_limit(bad)


def test_bad_memory_limit_is_a_usage_error(logs):
    result = CliRunner().invoke(cli, ["compare", str(logs[0]), str(logs[1]), "--memory-limit", "lots"])
    assert result.exit_code == 2
    assert "--memory-limit" in result.output and "Traceback" not in result.output


def test_same_tables_with_a_tiny_limit_and_spills(logs, monkeypatch):
    path_a, path_b, nodes_a, nodes_b = logs
    spills = []
    real_spill = stream._Side.spill
    monkeypatch.setattr(stream._Side, "spill", lambda self, d: (spills.append(d), real_spill(self, d))[1])
    runner = CliRunner()
    outputs = []
    for limit in ("2GB", "1MB"):  # 1MB: ~1,700 records, batches of one search, B's positions all spilled
        result = runner.invoke(cli, ["compare", str(path_a), str(path_b), "--memory-limit", limit,
                                     "--format", "json"])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.stdout))
    assert spills, "the small limit never spilled"
    assert outputs[0] == outputs[1]
    tables = {t["name"]: t for t in outputs[0]["tables"]}
    total = tables["divergence_total"]["rows"][0]
    assert total["positions"] == SEARCHES
    assert (total["nodes_a"], total["nodes_b"]) == (nodes_a, nodes_b)
    # The spill directory was removed with the run.
    assert not any(Path(d).exists() for d in spills)


def test_library_divergences_same_at_any_budget(logs):
    path_a, path_b, nodes_a, nodes_b = logs
    sa, sb = open_source(path_a), open_source(path_b)
    big = divergences(sa, sb, n=5)
    small = divergences(sa, sb, n=5, budget=MemoryBudget(parse_memory_limit("1MB")))
    assert big.rows.equals(small.rows) and big.total.equals(small.total)
    assert big.by_kind.equals(small.by_kind) and big.by_ply.equals(small.by_ply) and big.kinds.equals(small.kinds)
    assert int(big.total["nodes_a"].iloc[0]) == nodes_a


def test_a_position_pair_beyond_the_limit_is_an_error_naming_it(logs):
    path_a, path_b, _, _ = logs
    for command in (["compare"], ["diff", "--position", "gen0"]):
        result = CliRunner().invoke(cli, [*command, str(path_a), str(path_b), "--memory-limit", "100KB"])
        assert result.exit_code == 2, result.output
        message = result.output.strip().splitlines()[-1]
        assert str(path_a) in message and str(path_b) in message and "position gen" in message
        assert "--memory-limit" in message and "Traceback" not in result.output


def _scratch_dirs(tmpdir: Path) -> list[str]:
    return [p.name for p in tmpdir.iterdir() if p.name.startswith("treediff-")]


@pytest.mark.parametrize("failure", ["missing", "cut-short"])
def test_scratch_directory_removed_after_an_error(logs, tmp_path, failure):
    path_a, _, _, _ = logs
    bad = tmp_path / "b.log.gz"
    if failure == "cut-short":  # fails mid-parse: B's own scratch directory exists when the error comes
        import gzip

        data = gzip.compress(path_a.read_bytes())
        bad.write_bytes(data[: len(data) // 2])
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    # A parses (its scratch directory exists), then B fails: exit 2, one line naming B, nothing left in TMPDIR.
    run = subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", "compare", str(path_a),
                          str(bad)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and str(bad) in run.stderr
    assert _scratch_dirs(tmpdir) == []


def test_scratch_directory_removed_after_sigterm(tmp_path):
    gen = load_benchmark("gen_logs")
    log = tmp_path / "big.log"
    gen.generate("stockfish", 400_000, str(log))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen([sys.executable, "-c", "from treediff.cli import main; main()", "compare", str(log), str(log)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _scratch_dirs(tmpdir) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _scratch_dirs(tmpdir), "compare never made its scratch directory"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert re.search("Traceback", err) is None
    assert _scratch_dirs(tmpdir) == []


def test_pending_slices_are_counted_whole_and_copied_out_of_their_batch(logs):
    """A pending position's records are a slice of their Arrow batch and keep the whole batch alive: held()
    counts the batch, and compact() makes copies that share no record buffer with it (a slice pickled or
    kept would still pin it), after which only the copies count."""
    from treediff.align.core import LOAD_COLUMNS
    from treediff.align.summaries import paired_positions

    sa, sb = open_source(logs[0]), open_source(logs[1])
    paired = paired_positions(sa, sb)
    side = stream._Side(sa, [rows_a for _, rows_a, _ in paired], LOAD_COLUMNS, target=10**9)  # one batch
    completed = side.pull()
    assert sorted(completed) == list(range(SEARCHES))  # every position of A, waiting for B
    frames = [side.pending[p].frames[0] for p in completed]
    assert sum(f.num_rows for f in frames) == side._batch_rows[0]  # the slices cover the batch
    assert side.held() == side._batch_bytes[0] > 0
    for p in completed[1:]:
        side.take(p)
    last = side.pending[completed[0]].frames[0]
    assert side.held() == side._batch_bytes[0] > 3 * last.nbytes  # one slice still pins it all
    side.compact()
    copy = side.pending[completed[0]].frames[0]
    assert copy.equals(last) and copy.schema == last.schema
    assert side.held() == stream.frame_bytes(copy) < side._batch_bytes.get(0, 0) + 3 * stream.frame_bytes(copy)
    assert 0 not in side._batch_bytes  # the batch is no longer counted
    for name in copy.column_names:
        new, old = copy.column(name), last.column(name)
        if pa.types.is_dictionary(new.type):  # (the dictionary itself may be shared: its indices are new)
            new, old = (pa.chunked_array([c.indices for c in col.chunks]) for col in (new, old))
        old_buffers = {b.address for c in old.chunks for b in c.buffers() if b is not None}
        assert not {b.address for c in new.chunks for b in c.buffers() if b is not None} & old_buffers, name


def _peak_rss_kb(args: list[str], cwd: Path) -> int:
    """Peak RSS (KB) of one treediff run in a fresh interpreter, from RUSAGE_CHILDREN around that child alone."""
    code = ("import resource, subprocess, sys; "
            "r = subprocess.run([sys.executable, '-c', 'from treediff.cli import main; main()', *sys.argv[1:]]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")
    run = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return int(run.stdout.strip().splitlines()[-1])


def test_compare_peak_rss_stays_within_a_small_memory_limit(tmp_path):
    """compare at --memory-limit 300MB on two generated 400k-line inputs (Parquet, so the parser's own memory
    is not in the figure): the peak RSS stays under the limit plus the floor, the peak of the same compare of
    a two-search pair (interpreter, libraries, thread pools) measured here; same JSON as at the default."""
    gen = load_benchmark("gen_logs")
    for name, lines in (("big", 400_000), ("tiny", 17_000)):
        for dialect in ("typhoon", "stockfish"):
            log = tmp_path / f"{name}_{dialect}.log"
            gen.generate_distinct(dialect, lines, str(log))
            result = CliRunner().invoke(cli, ["parse", str(log), "-o", str(tmp_path / f"{name}_{dialect}.parquet")])
            assert result.exit_code == 0, result.output
    limit = 300 * 1024**2

    def compare(name: str, *extra: str) -> tuple[int, dict]:
        out = tmp_path / f"{name}{'_'.join(extra)}.json"
        peak = _peak_rss_kb(["compare", f"{name}_typhoon.parquet", f"{name}_stockfish.parquet",
                             "--allow-different-positions", "-o", str(out), *extra], tmp_path)
        return peak * 1024, json.loads(out.read_text())

    floor, _ = compare("tiny")
    peak, small = compare("big", "--memory-limit", "300MB")
    _, default = compare("big")
    assert small == default
    positions = {t["name"]: t for t in small["tables"]}["divergence_total"]["rows"][0]["positions"]
    assert positions > 40  # (400k lines: ~47 positions, each aligned)
    assert peak < limit + floor, f"peak {peak >> 20} MB, limit 300 MB + floor {floor >> 20} MB"


def test_compact_frees_each_batch_before_it_copies_the_next(monkeypatch):
    """Two batches, each sliced into two positions' frames, interleaved (position 0 holds a slice of each,
    so does position 1).  Copying entry by entry keeps both batches until the third copy (both batches and
    three half-batch copies); batch by batch, the first batch is freed before the second one's slices are
    copied, so the peak is a half batch less.  Counted in Arrow's pool, after every copy."""
    rows = 1 << 20  # 8 MiB of int64 a batch
    pool_now = pa.total_allocated_bytes

    def batch(offset: int) -> pa.Table:  # (computed, so that its buffer is the pool's, not numpy's)
        return pa.table({"x": pc.add(pa.array(np.arange(rows, dtype=np.int64)), offset)})

    side = stream._Side.__new__(stream._Side)
    b0, b1 = batch(0), batch(rows)
    half = rows // 2
    side.pending = {0: stream._Pending(frames=[b0.slice(0, half), b1.slice(0, half)], pins=[0, 1]),
                    1: stream._Pending(frames=[b0.slice(half), b1.slice(half)], pins=[0, 1])}
    side._batch_bytes = {0: stream.frame_bytes(b0), 1: stream.frame_bytes(b1)}
    side._batch_rows = {0: rows, 1: rows}
    expected = [[f.column("x").to_pylist()[:3] for f in e.frames] for e in side.pending.values()]
    del b0, b1
    start = pool_now()
    peaks: list[int] = []
    real = stream._owned

    def owned(frame):
        copy = real(frame)
        peaks.append(pool_now() - start)
        return copy

    monkeypatch.setattr(stream, "_owned", owned)
    side.compact()
    batch_bytes = rows * 8
    assert len(peaks) == 4
    # at most both batches' memory beyond the start: one copy of each half of the first batch, then the first
    # batch freed (entry by entry: a batch and a half, 12 MiB, after the second copy)
    assert max(peaks) <= batch_bytes + batch_bytes // 16, [p >> 20 for p in peaks]
    assert [[f.column("x").to_pylist()[:3] for f in e.frames] for e in side.pending.values()] == expected
    assert all(pin == -1 for e in side.pending.values() for pin in e.pins) and side._batch_bytes == {}

"""A log's scratch spill as Arrow IPC parts (treediff/store/spill.py) reads back exactly as the Parquet pair did.

The reference is the old code path: the same log parsed with ``parse_to_parquet`` and read through
``parquet_source``.  Frames are compared whole (``assert_frame_equal``: values, dtypes, categories and their
order, which decide group orders downstream), batch by batch, for batch sizes small enough to cut inside
searches, with ``select``/``with_searches``, column subsets and a column the file lacks.
"""
from __future__ import annotations

import errno
import gc
import gzip
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from treediff.model.errors import InputError
from treediff.model.schema import RECORDS_SCHEMA, searches_path_for
from treediff.parse import chunks
from treediff.parse.core import parse_to_parquet
from treediff.parse.pipeline import parse_to_spill
from treediff.parse.source import open_source
from treediff.store.files import OutputError
from treediff.store.source import BATCH_RECORDS, parquet_source
from treediff.store import spill as spill_module
from treediff.store.spill import (META_MAX_SEARCH, META_MIN_SEARCH, META_ROWS, SPILL_PLAIN_BYTES, SpillWriter,
                                  plain_allowance, spill_source)
from support.parquet_spill import parts_of

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
LOGS = [TRACES / name for name in ("typhoon_batch3.log", "stockfish_batch3.log", "crafty_batch3.log")]
#: Chunk sizes of the parse: small ones give many parts (a search over several), cut mid-search.
CHUNK_SIZES = (8192, 50_000, chunks.CHUNK_BYTES)
TARGETS = (1, 97, 1000, 5000, BATCH_RECORDS)
COLUMN_SETS = (None, ["kind", "path"], ["depth", "no_such_column", "visit", "move"], ["search"])


def _pair(log: Path, base: Path, **options):
    """The log parsed both ways: (Parquet source, IPC spill source)."""
    parquet = base / "p.parquet"
    parse_to_parquet([log], parquet, **options)
    spill = base / "spill"
    parse_to_spill([log], spill, **options)
    return parquet_source(parquet), spill_source(spill)


def _same_frame(new: pd.DataFrame, old: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(new, old, check_categorical=True, check_exact=True)
    for name in old.columns:
        if isinstance(old[name].dtype, pd.CategoricalDtype):
            assert new[name].cat.categories.tolist() == old[name].cat.categories.tolist(), name


def _same_batches(new, old, columns, target) -> int:
    got, want = list(new.batches(columns, target)), list(old.batches(columns, target))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same_frame(a, b)
    return len(got)


#: The spill's uncompressed allowance (SPILL_PLAIN_BYTES): every part lz4, the first parts plain and the
#: rest lz4, every part plain (a small log under the default).
PLAIN_MODES = {"lz4": 0, "mixed": 60_000, "plain": SPILL_PLAIN_BYTES}

#: The magic number an LZ4 frame starts with (every lz4-compressed buffer of an IPC body is one frame).
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def _compressed(part: Path) -> bool:
    """Whether an IPC part holds lz4 buffers, read from its bytes (not from the writer's count)."""
    return LZ4_FRAME_MAGIC in part.read_bytes()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
@pytest.mark.parametrize("plain", PLAIN_MODES)
def test_batches_equal_the_parquet_pairs(log, chunk_bytes, plain, tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(spill_module, "SPILL_PLAIN_BYTES", PLAIN_MODES[plain])
    old, new = _pair(log, tmp_path)
    packed = [_compressed(part) for part in parts_of(tmp_path / "spill")]
    if plain == "lz4":
        assert all(packed)
    elif plain == "plain":
        assert not any(packed)
    elif chunk_bytes == CHUNK_SIZES[0]:  # (many small parts: the allowance runs out after a few)
        first = packed.index(True)
        assert first > 0 and all(packed[first:]), packed
    _same_frame(new.searches, old.searches)
    assert new._spans == [(r, lo, hi) for r, lo, hi in old._spans]  # a part per row group, same spans
    if chunk_bytes == CHUNK_SIZES[0]:
        assert len(new._spans) > 5
    counts = set()
    for columns in COLUMN_SETS:
        for target in TARGETS:
            counts.add(_same_batches(new, old, columns, target))
        _same_frame(new.records(columns), old.records(columns))
    if chunk_bytes == CHUNK_SIZES[0]:
        assert max(counts) == len(old.searches)  # (target 1: a batch a search, cut inside parts)


@pytest.mark.parametrize("log", LOGS[:2], ids=lambda p: p.stem)
def test_select_and_with_searches_read_what_the_parquet_pair_reads(log, tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 8192)
    old, new = _pair(log, tmp_path)
    n = len(old.searches)
    for rows in ([0], [n - 1], [0, n - 1], list(range(1, n))):
        keep = np.zeros(n, dtype=bool)
        keep[rows] = True
        for columns in (None, COLUMN_SETS[2]):
            for target in (1, 500, BATCH_RECORDS):
                _same_batches(new.select(keep), old.select(keep), columns, target)
    renamed = old.searches.copy()
    renamed["position"] = [f"p{i}" for i in range(n)]
    for a, b in ((new.with_searches(renamed), old.with_searches(renamed)),
                 (new.with_searches(renamed).select(np.arange(n) != 1),
                  old.with_searches(renamed).select(np.arange(n) != 1))):
        _same_frame(a.searches, b.searches)
        for target in (1, 700, BATCH_RECORDS):
            _same_batches(a, b, ["kind", "ply"], target)


def test_keep_complete_and_the_held_search_give_the_same_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    old, new = _pair(LOGS[0], tmp_path, keep_complete=True)
    for target in (1, 1000, BATCH_RECORDS):
        _same_batches(new, old, None, target)


def test_a_log_without_records(tmp_path):
    log = tmp_path / "zero.log"
    log.write_text("TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\nITER d=1\nEND nodes=0\n")
    old, new = _pair(log, tmp_path)
    assert parts_of(tmp_path / "spill") == []
    for columns in (None, ["kind"]):
        _same_batches(new, old, columns, BATCH_RECORDS)
        _same_frame(new.records(columns), old.records(columns))
        _same_batches(new.select(np.zeros(1, dtype=bool)), old.select(np.zeros(1, dtype=bool)), columns, 10)


def test_a_column_the_file_lacks_is_left_out_as_the_parquet_pair_does(tmp_path, monkeypatch):
    """A spill written without ``visit``/``parent_visit`` (as an older file lacks them) reads like a Parquet
    file without them: the columns asked for that are missing are simply not there."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    full, _ = _pair(LOGS[1], tmp_path)
    whole = pq.read_table(tmp_path / "p.parquet")
    lacking = whole.drop_columns(["visit", "parent_visit"])
    spans = full._spans
    old_path = tmp_path / "old.parquet"
    with pq.ParquetWriter(old_path, lacking.schema) as writer:
        at = 0
        for rows, _, _ in spans:
            writer.write_table(lacking.slice(at, rows))
            at += rows
    Path(searches_path_for(str(old_path))).write_bytes((tmp_path / "p.searches.parquet").read_bytes())
    spill = tmp_path / "old-spill"
    with SpillWriter(spill, lacking.schema) as writer:
        at = 0
        for rows, _, _ in spans:
            writer.write(lacking.slice(at, rows).combine_chunks())
            at += rows
    (spill / "records.searches.parquet").write_bytes((tmp_path / "p.searches.parquet").read_bytes())
    old, new = parquet_source(old_path), spill_source(spill)
    for target in (1, 2000, BATCH_RECORDS):
        assert _same_batches(new, old, ["visit", "parent_visit", "kind"], target)
    assert "visit" not in new.records(["visit"]).columns


def test_each_part_says_its_rows_and_search_range(tmp_path, monkeypatch):
    """The span metadata against the part's own search column (counted by numpy here, not by the writer)."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    parse_to_spill([LOGS[0]], tmp_path)
    parts = parts_of(tmp_path)
    assert len(parts) > 5
    for part in parts:
        with pa.memory_map(str(part)) as mapped:
            reader = pa.ipc.open_file(mapped)
            assert reader.num_record_batches == 1
            search = reader.get_batch(0).column("search").to_numpy()
            meta = reader.schema.metadata
        assert (int(meta[META_ROWS]), int(meta[META_MIN_SEARCH]), int(meta[META_MAX_SEARCH])) == (
            len(search), search.min(), search.max())


def test_a_table_of_several_batches_is_one_part_each(tmp_path):
    table = pq.read_table(parquet_of(tmp_path))
    pieces = pa.concat_tables([table.slice(0, 10), table.slice(10, 15)])
    with SpillWriter(tmp_path / "s", table.schema) as writer:
        writer.write(pieces)
        writer.write(table.slice(25, 0))  # (an empty table: no part)
    assert len(parts_of(tmp_path / "s")) == 2


def test_parts_are_plain_up_to_the_allowance_then_compressed(tmp_path):
    """The first parts, while their bytes fit the allowance, are written uncompressed; the rest lz4; and the
    frames read back are the same either way."""
    table = pq.read_table(parquet_of(tmp_path))
    pieces = [table.slice(i * 150, 150) for i in range(5)] + [table.slice(750, 2)]  # (the last one small)
    allowance = sum(p.nbytes for p in pieces[:2]) + pieces[2].nbytes // 2  # (two parts and half a third)
    for name, plain_bytes in (("mixed", allowance), ("lz4", 0)):
        with SpillWriter(tmp_path / name, table.schema, plain_bytes=plain_bytes) as writer:
            for piece in pieces:
                writer.write(piece)
    assert [_compressed(p) for p in parts_of(tmp_path / "mixed")] == [False, False, True, True, True, True]
    assert all(_compressed(p) for p in parts_of(tmp_path / "lz4"))
    for part_a, part_b in zip(parts_of(tmp_path / "mixed"), parts_of(tmp_path / "lz4")):
        size_a, size_b = part_a.stat().st_size, part_b.stat().st_size
        assert size_a > size_b if not _compressed(part_a) else size_a == size_b
        assert pa.ipc.open_file(str(part_a)).read_all().equals(pa.ipc.open_file(str(part_b)).read_all())


def test_the_allowance_is_at_most_an_eighth_of_the_free_space(tmp_path, monkeypatch):
    class Stat:
        f_frsize = 4096
        f_bavail = 0

    def statvfs(path):
        assert Path(path) == tmp_path
        return Stat

    monkeypatch.setattr(spill_module.os, "statvfs", statvfs)
    monkeypatch.setattr(spill_module, "available_memory", lambda: 1 << 40)
    Stat.f_bavail = (1 << 40) // 4096  # 1 TiB free: the constant
    assert plain_allowance(tmp_path) == SPILL_PLAIN_BYTES == 4 << 30
    Stat.f_bavail = (800 << 20) // 4096  # 800 MiB free: 100 MiB
    assert plain_allowance(tmp_path) == 100 << 20
    Stat.f_bavail = 0
    assert plain_allowance(tmp_path) == 0
    Stat.f_bavail = (1 << 40) // 4096
    monkeypatch.setattr(spill_module, "available_memory", lambda: 8 << 30)  # 8 GiB available: 1 GiB
    assert plain_allowance(tmp_path) == 1 << 30
    monkeypatch.setattr(spill_module, "available_memory", lambda: 0)  # (not known: every part compressed)
    assert plain_allowance(tmp_path) == 0

    def fails(path):
        raise OSError("no such file system")

    monkeypatch.setattr(spill_module.os, "statvfs", fails)
    assert plain_allowance(tmp_path) == 0


def _memory_files(tmp_path: Path, monkeypatch, meminfo: str | None, v2: tuple[str, ...] | None,
                  v1: tuple[str, ...] | None) -> None:
    """Point available_memory at files under tmp_path (None: the file is absent); a cgroup's figures are
    (limit, usage) or (limit, usage, memory.stat)."""
    def at(name: str, text: str | None) -> Path:
        path = tmp_path / name
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
        return path

    def cgroup(name: str, figures: tuple[str, ...] | None, key: str) -> tuple:
        limit, usage, stat = (*figures, None)[:3] if figures else (None, None, None)
        return (at(f"{name}.limit", limit), at(f"{name}.usage", usage), at(f"{name}.stat", stat), key)

    monkeypatch.setattr(spill_module, "_MEMINFO", at("meminfo", meminfo))
    monkeypatch.setattr(spill_module, "_CGROUP_V2", cgroup("v2", v2, "inactive_file"))
    monkeypatch.setattr(spill_module, "_CGROUP_V1", cgroup("v1", v1, "total_inactive_file"))


MEMINFO = "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\nBuffers: 1 kB\n"


def test_available_memory_is_the_kernels_figure_or_the_cgroups_room_whichever_is_less(tmp_path, monkeypatch):
    _memory_files(tmp_path, monkeypatch, MEMINFO, None, None)
    assert spill_module.available_memory() == 20_000_000 * 1024  # (meminfo's figures are KiB)
    # cgroup v2 without a limit ("max") and v1's "unlimited" (a huge number) change nothing
    _memory_files(tmp_path, monkeypatch, MEMINFO, ("max\n", "5000000\n"), ("9223372036854771712\n", "4040237056\n"))
    assert spill_module.available_memory() == 20_000_000 * 1024
    # a v2 limit of 4 GiB with 1 GiB used leaves 3 GiB; a v1 limit likewise
    _memory_files(tmp_path, monkeypatch, MEMINFO, (f"{4 << 30}\n", f"{1 << 30}\n"), None)
    assert spill_module.available_memory() == 3 << 30
    _memory_files(tmp_path, monkeypatch, MEMINFO, None, (f"{2 << 30}", f"{(2 << 30) + 5}"))  # (over: none left)
    assert spill_module.available_memory() == 0
    # the usage's inactive page cache is not memory taken: 4 GiB used of 4, 3 GiB of it inactive file pages
    v2_stat = f"anon 123\nfile {3 << 30}\ninactive_file {3 << 30}\nactive_file 0\n"
    _memory_files(tmp_path, monkeypatch, MEMINFO, (f"{4 << 30}", f"{4 << 30}", v2_stat), None)
    assert spill_module.available_memory() == 3 << 30
    v1_stat = f"cache 99\ninactive_file 1\ntotal_inactive_file {1 << 30}\n"  # (v1: the hierarchy's total)
    _memory_files(tmp_path, monkeypatch, MEMINFO, None, (f"{4 << 30}", f"{4 << 30}", v1_stat))
    assert spill_module.available_memory() == 1 << 30
    # no meminfo (not Linux) but a cgroup: the cgroup's room; neither: 0, nothing counted on
    _memory_files(tmp_path, monkeypatch, None, (f"{4 << 30}", f"{3 << 30}"), None)
    assert spill_module.available_memory() == 1 << 30
    _memory_files(tmp_path, monkeypatch, None, None, None)
    assert spill_module.available_memory() == 0
    _memory_files(tmp_path, monkeypatch, "MemTotal: 1 kB\nMemAvailable: lots\n", None, None)  # (unreadable)
    assert spill_module.available_memory() == 0


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="Linux")
def test_available_memory_on_this_machine_is_within_its_memory(tmp_path):
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < spill_module.available_memory() <= total


def parquet_of(tmp_path: Path) -> Path:
    out = tmp_path / "x.parquet"
    parse_to_parquet([LOGS[1]], out)
    return out


# ------------------------------------------------------------------ the scratch directory

@pytest.fixture
def scratch_root(tmp_path, monkeypatch) -> Path:
    """TMPDIR for this test (tempfile's cached choice; scratch_dir makes its directories there)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _scratch(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.name.startswith("treediff-")]


def test_the_spill_is_under_tmpdir_and_goes_with_the_last_source(scratch_root):
    source = open_source(LOGS[0])
    (directory,) = _scratch(scratch_root)
    assert parts_of(directory) and (directory / "records.searches.parquet").exists()
    chosen = source.select(np.array([True, False, False]))
    del source
    gc.collect()
    assert directory.exists()  # a selection still reads it
    assert len(chosen.records(["kind"])) > 0
    del chosen
    gc.collect()
    assert _scratch(scratch_root) == []


def test_batches_alive_after_the_source_keep_their_memory(scratch_root):
    """The parts are memory-mapped: a frame read from them stays valid after its directory is removed."""
    source = open_source(LOGS[1])
    frames = list(source.batches(None, target=100))
    expected = [f.copy(deep=True) for f in frames]
    del source
    gc.collect()
    assert _scratch(scratch_root) == []
    for frame, copy in zip(frames, expected):
        _same_frame(frame, copy)


def test_an_error_mid_parse_removes_the_spill(scratch_root, tmp_path):
    cut = tmp_path / "cut.log.gz"
    data = gzip.compress(LOGS[0].read_bytes())
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError):
        open_source(cut)
    assert _scratch(scratch_root) == []


def test_a_disk_full_while_spilling_is_an_output_error_and_removes_the_spill(scratch_root, monkeypatch):
    import treediff.store.spill as spill_module

    real = pa.OSFile
    opened = []

    def full(path, mode="rb"):
        opened.append(path)
        if mode == "wb" and len(opened) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, mode)

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(spill_module.pa, "OSFile", full)
    with pytest.raises(OutputError, match="records-000002.arrow"):
        open_source(LOGS[0])
    assert _scratch(scratch_root) == []


def test_records_schema_is_what_the_parser_writes(tmp_path):
    """The spill's schema is the records schema: every column a Parquet pair has, in order."""
    parse_to_spill([LOGS[2]], tmp_path)
    source = spill_source(tmp_path)
    assert list(source.records().columns) == RECORDS_SCHEMA.names

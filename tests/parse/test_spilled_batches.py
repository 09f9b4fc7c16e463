"""A log is read back from its scratch spill in bounded batches of whole searches, each part read once.

The log is assembled from benchmarks/gen_logs.py searches, so each search's record count is known from
the text (its MOVE and RESULT lines).  The parse is cut into small chunks, so the spill has many parts and
most searches span several of them.

Until 2026-12-06 the spill was read through ``SearchChunks`` (each batch a ``select`` of consecutive
searches), which read every part holding the end of one batch and the start of the next twice;
compare 20M + 20M spent 77.7 CPU-s with it and 70.4 without (docs/PERFORMANCE.md).
"""
from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from treediff.parse import chunks
from treediff.parse.source import open_source
from treediff.report.core import build_report
from treediff.store import spill as spill_module
from treediff.store.source import GroupedSource, plan_row_groups
from support.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CHUNK_BYTES = chunks.CHUNK_BYTES
#: The parse's chunk size here: a part every few hundred records.
SMALL_CHUNK_BYTES = 8192


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", SMALL_CHUNK_BYTES)


def _log(tmp_path: Path, searches: int = 8) -> tuple[Path, list[int]]:
    gen = load_benchmark("gen_logs")
    lines, counts = [], []
    for n in range(searches):
        fen = gen.distinct_fen(n, 3)
        body = gen.search_lines("stockfish", fen, 3, 7 + n, max_lines=3_000)
        lines += [f"TREEDUMP engine=stockfish v=1 id=g{n} fen={fen}", *body]
        counts.append(sum(line.startswith(("MOVE ", "RESULT ")) for line in body))
    path = tmp_path / "g.log"
    path.write_text("\n".join(lines) + "\n")
    return path, counts


def _spill(source, many_parts: bool = True) -> GroupedSource:
    (part, _, _), = source._parts  # CombinedSource of one input
    assert isinstance(part, GroupedSource)  # the spill itself, read part by part
    if many_parts:
        assert len(part._spans) > 2 * len(part.searches)  # (searches span several parts)
    return part


def _count_part_reads(monkeypatch) -> collections.Counter:
    """From now on, how many times each spill part is read (by file name)."""
    reads: collections.Counter = collections.Counter()
    read_parts = spill_module.read_parts

    def counting(paths, schema, columns):
        reads.update(p.name for p in paths)
        return read_parts(paths, schema, columns)

    monkeypatch.setattr(spill_module, "read_parts", counting)
    return reads


def _searches_of(batch) -> list[int]:
    return sorted(np.unique(batch["search"].to_numpy()).tolist())


@pytest.mark.parametrize("target", [1, 500, 4_000, 10**9])
def test_batches_are_whole_consecutive_searches_about_the_target(tmp_path, target):
    path, counts = _log(tmp_path)
    batches = list(open_source(path).batches(["tag"], target=target))
    seen: list[int] = []
    for k, batch in enumerate(batches):
        ids = _searches_of(batch)
        assert not set(ids) & set(seen)  # a search is never split over two batches
        seen += ids
        assert len(batch) <= target or len(ids) == 1  # at most the target, or one search alone
        if k < len(batches) - 1:  # the next search did not fit (nothing nearer the target was left out)
            assert len(batch) + counts[ids[-1] + 1] > target or len(ids) == 1
    assert seen == sorted(seen) == list(range(len(counts)))
    if target == 1:
        assert len(batches) == len(counts)  # a search a batch
    if target == 10**9:
        assert len(batches) == 1
    sizes = [int((b["search"] == s).sum()) for b in batches for s in _searches_of(b)]
    assert sizes == counts  # every record of every search, counted from the log text


def test_each_part_is_read_once(tmp_path, monkeypatch):
    path, counts = _log(tmp_path)
    source = open_source(path)
    parts = len(_spill(source)._spans)
    reads = _count_part_reads(monkeypatch)
    for target in (1, 500, 4_000):
        reads.clear()
        batches = list(source.arrow_batches(["tag", "kind"], target=target))
        assert sum(b.num_rows for b in batches) == sum(counts)
        assert len(reads) == parts and set(reads.values()) == {1}, (target, reads)


def test_a_spill_of_one_part_is_cut_to_the_target(tmp_path, monkeypatch):
    """A small log spills as one part: batches are still at most the target (or one longer search), as a
    small --memory-limit sizes them, not the whole part."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", DEFAULT_CHUNK_BYTES)
    path, counts = _log(tmp_path)
    spilled = _spill(open_source(path), many_parts=False)
    assert len(spilled._spans) == 1
    for target in (1, max(counts) + 1, sum(counts) // 2):
        batches = list(spilled.batches(["tag"], target=target))
        assert sum(len(b) for b in batches) == sum(counts)
        for batch in batches:
            assert len(batch) <= target or len(_searches_of(batch)) == 1
        assert len(batches) > 1
    assert len(list(spilled.batches(["tag"], target=sum(counts)))) == 1


def test_report_same_with_one_search_a_batch(tmp_path):
    path, counts = _log(tmp_path)
    source = open_source(path)
    tables = ("nodes", "acts", "lmr", "ebf", "skips", "scope")
    small = build_report(source, tables, ("engine", "position"), 1)
    whole = build_report(source, tables, ("engine", "position"), 2**62)
    for name in tables:
        assert small[name].equals(whole[name]), name


def test_a_selection_reads_its_searches_only_in_bounded_batches(tmp_path, monkeypatch):
    path, counts = _log(tmp_path)
    spilled = _spill(open_source(path))
    keep = np.zeros(len(counts), dtype=bool)
    keep[[1, 2, 5]] = True
    chosen = spilled.select(keep)
    frames = list(chosen.batches(["tag"], target=1))
    assert [_searches_of(f) for f in frames] == [[1], [2], [5]]
    assert [len(f) for f in frames] == [counts[1], counts[2], counts[5]]
    # Only the parts holding those searches are read (each once).
    reads = _count_part_reads(monkeypatch)
    list(chosen.arrow_batches(["tag"], target=1))
    holding = sum(1 for _, lo, hi in spilled._spans if any(lo <= s <= hi for s in (1, 2, 5)))
    assert set(reads.values()) == {1} and len(reads) == holding < len(spilled._spans)


#: Every kind of log the fixtures hold: three dialects, batches of positions, a real Stockfish trace,
#: aspiration re-searches and verification visits.
FIXTURE_LOGS = sorted((ROOT / "fixtures" / "traces").glob("*.log")) + [
    ROOT / "fixtures" / "real" / "mid_a_d7.log",
    *sorted((ROOT / "fixtures" / "hand").glob("visits_*.log")),
]


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda p: p.stem)
def test_a_spill_can_be_cut_between_any_two_searches(log):
    """What reading part by part rests on: a parser's parts hold searches in increasing order (a record's
    search is the last header before it), so no part goes back to a search an earlier part went past, and
    batches can be cut at every search boundary (else the spill would be read as one batch)."""
    spilled = _spill(open_source(log), many_parts=False)
    spans = spilled._spans
    assert plan_row_groups(spans, 1) is not None
    assert all(lo <= hi for _, lo, hi in spans)
    assert all(prev_hi <= lo for (_, _, prev_hi), (_, lo, _) in zip(spans, spans[1:]))
    batches = list(spilled.arrow_batches(["tag"], target=1))
    assert len(batches) == int((spilled.searches["records"].fillna(0) > 0).sum())  # a search a batch

"""A log is read in bounded batches of whole searches (parse/source.py SearchChunks over the scratch Parquet pair).

The log is assembled from benchmarks/gen_logs.py searches, so each search's record count is known from
the text (its MOVE and RESULT lines).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from treediff.parse.source import SearchChunks, open_source
from treediff.report.core import build_report
from support.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


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


def _chunked(source):
    (part, _, _), = source._parts  # CombinedSource of one input
    assert isinstance(part, SearchChunks)
    return part


def test_batches_are_whole_consecutive_searches(tmp_path):
    path, counts = _log(tmp_path)
    source = open_source(path)
    target = max(counts) + 1  # about one search a batch
    batches = list(source.batches(["tag"], target=target))
    assert len(batches) > 1
    seen: list[int] = []
    for batch in batches:
        ids = np.unique(batch["search"].to_numpy())
        assert not set(ids) & set(seen)  # a search is never split over two batches
        seen += ids.tolist()
    assert seen == sorted(seen) == list(range(len(counts)))
    sizes = [int((b["search"] == s).sum()) for b in batches for s in np.unique(b["search"])]
    assert sizes == counts  # every record of every search, counted from the log text


def test_report_same_with_one_search_a_batch(tmp_path):
    path, counts = _log(tmp_path)
    source = open_source(path)
    tables = ("nodes", "acts", "lmr", "ebf", "skips", "scope")
    small = build_report(source, tables, ("engine", "position"), max(counts) + 1)
    whole = build_report(source, tables, ("engine", "position"), 2**62)
    for name in tables:
        assert small[name].equals(whole[name]), name


def test_select_keeps_chunking(tmp_path):
    path, counts = _log(tmp_path)
    source = _chunked(open_source(path))
    keep = np.zeros(len(counts), dtype=bool)
    keep[[1, 2, 5]] = True
    chosen = source.select(keep)
    assert isinstance(chosen, SearchChunks)
    frames = list(chosen.batches(["tag"], target=1))
    assert [sorted(np.unique(f["search"]).tolist()) for f in frames] == [[1], [2], [5]]
    assert [len(f) for f in frames] == [counts[1], counts[2], counts[5]]

"""The parser's output for SAN (Crafty) logs is the same whether the compiled ``_cmoves.SanResolver`` or
python-chess (``TREEDIFF_SAN=python``: :class:`~treediff.parse.moves.PathResolver`, partly in the worker
process) resolves the paths: records, searches and warnings, including the records whose move does not
resolve (flagged, counted, their first lines named), across chunk boundaries and interleaved contexts."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from treediff.parse import chunks, paths
from treediff.parse.moves import PathResolver
from treediff.parse.pipeline import parse_logs

pytest.importorskip("treediff.parse._cmoves")
if not paths.compiled_san_available():  # pragma: no cover - a stale build, or the env var set for the run
    pytest.skip("the compiled SAN resolver is not in use", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
SAN_LOGS = sorted((ROOT / "fixtures").rglob("*crafty*.log"))

#: Replacement last moves: illegal, ambiguous, odd but readable spellings, and unreadable ones.
ODD_LAST_MOVES = ["Ka5", "Qd3", "Nd2", "O-O", "O-O-O", "0-0", "0-0-0+", "e8", "exd5", "dxe6", "Z0", "--", "z0",
                  "Nf3!?", "Bb5+", "Rd1", "Rad1", "N1f3", "e2e4", "E2E4", "e4e5", "xx", "", "-", "Pe4", "e4#"]


def _both(monkeypatch, logs, **kwargs):
    monkeypatch.delenv(paths.SAN_ENV, raising=False)
    compiled = parse_logs(logs, **kwargs)
    monkeypatch.setenv(paths.SAN_ENV, "python")
    python = parse_logs(logs, **kwargs)
    monkeypatch.delenv(paths.SAN_ENV)
    return compiled, python


def _assert_same(compiled, python):
    assert compiled.records.to_pylist() == python.records.to_pylist()
    assert compiled.records.schema == python.records.schema
    assert compiled.searches.to_pylist() == python.searches.to_pylist()
    assert compiled.warnings == python.warnings


def _corrupted(tmp_path: Path, source: Path, seed: int, every: int = 7) -> Path:
    """``source`` with the last move of every ``every``-th MOVE/RESULT path replaced by an odd one."""
    rng = random.Random(seed)
    lines = source.read_text().splitlines(keepends=True)
    n = 0
    for i, line in enumerate(lines):
        if line.startswith(("MOVE ", "RESULT ")) and " path=" in line:
            n += 1
            if n % every == 0:
                head, _, rest = line.partition("path=")
                path, _, tail = rest.partition(" ")
                parent = path.rpartition("/")[0]
                odd = rng.choice(ODD_LAST_MOVES)
                lines[i] = f"{head}path={parent + '/' if parent else ''}{odd} {tail}"
    out = tmp_path / f"odd_{seed}_{source.name}"
    out.write_text("".join(lines))
    return out


def test_the_crafty_fixtures_parse_the_same(monkeypatch):
    assert len(SAN_LOGS) >= 6, SAN_LOGS
    for log in SAN_LOGS:
        _assert_same(*_both(monkeypatch, [log]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_odd_moves_are_flagged_and_counted_the_same(monkeypatch, tmp_path, seed):
    logs = [_corrupted(tmp_path, log, seed) for log in SAN_LOGS]
    compiled, python = _both(monkeypatch, logs)
    _assert_same(compiled, python)
    flagged = [r for r in compiled.records.to_pylist() if r["problem"] == "unresolved-move"]
    assert flagged and len(flagged) < compiled.records.num_rows  # some resolve, some do not
    assert any("does not resolve" in w for w in compiled.warnings)


def test_chunk_boundaries_and_many_chunks(monkeypatch, tmp_path):
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 700)
    logs = [_corrupted(tmp_path, log, 4, every=5) for log in SAN_LOGS[:3]]
    _assert_same(*_both(monkeypatch, logs))
    _assert_same(*_both(monkeypatch, logs, strict=False, all_contexts=True))


def test_interleaved_contexts(monkeypatch, tmp_path):
    """Two contexts' lines interleaved by ``ctx=`` (the second header's search gets both; ``--all-contexts``
    keeps both): paths from two root positions' subtrees alternate, more than FIRST_LINES_SHOWN of them
    do not resolve."""
    first = (
        "TREEDUMP engine=crafty v=1 id=a ctx=0 fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n"
        "TREEDUMP engine=crafty v=1 id=b ctx=1 fen=r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1\n"
        "ITER d=2 ctx=0\nITER d=2 ctx=1\n")
    body = []
    for a, b in [("e4", "O-O"), ("e4/e5", "O-O/O-O-O"), ("d4", "Ka5"), ("d4/Nf6", "O-O-O"), ("Nf3", "O-O-O/Kg8"),
                 ("Nf3/Ke2", "Rb1"), ("e4/e5/Ke2", "Kd2")]:
        body.append(f"MOVE path={a} ply={a.count('/') + 1} mn=1 d=2 nd=1 act=FULL ctx=0\n")
        body.append(f"MOVE path={b} ply={b.count('/') + 1} mn=1 d=2 nd=1 act=FULL ctx=1\n")
    for i in range(6):
        body.append(f"MOVE path=e4/e5/Ke2/Kb{i + 3} ply=4 mn=1 d=2 nd=1 act=FULL ctx=0\n")
        body.append(f"MOVE path=Ka{i + 2} ply=1 mn=1 d=2 nd=1 act=FULL ctx=1\n")
    tail = ("RESULT path=- ply=0 d=2 score=0 ctx=1\nRESULT path=- ply=0 d=2 score=0 ctx=0\n"
            "END nodes=5 ctx=0\nEND nodes=5 ctx=1\n")
    log = tmp_path / "ctx_crafty.log"
    log.write_text(first + "".join(body) + tail)
    for all_contexts in (False, True):
        compiled, python = _both(monkeypatch, [log], all_contexts=all_contexts)
        _assert_same(compiled, python)
    rows = compiled.records.to_pylist()
    assert {r["path"] for r in rows if r["ctx"] == "1" and r["problem"] is None} >= {"e1g1", "e1g1/e8c8"}
    assert {r["line"] for r in rows if r["problem"] == "unresolved-move"} >= {10, 14}  # Ka5, Nf3/Ke2


def test_the_compiled_resolver_is_what_resolves(monkeypatch):
    """Without TREEDIFF_SAN=python, python-chess resolves no SAN path nor END ``best=`` (but the positions it
    must: several kings of a side, a refused FEN, none here); with it, it resolves them all.  Not a test that
    passes whoever resolves."""
    calls = []
    real = PathResolver.resolve_many

    def spy(self, p):
        calls.append(len(p))
        return real(self, p)

    monkeypatch.setattr(PathResolver, "resolve_many", spy)
    log = ROOT / "fixtures" / "traces" / "crafty_batch3.log"
    monkeypatch.delenv(paths.SAN_ENV, raising=False)
    result = parse_logs([log])
    assert result.searches.num_rows and calls == []  # nor the END best= moves (paths.resolve_root_move)
    calls.clear()
    monkeypatch.setenv(paths.SAN_ENV, "python")
    assert not paths.compiled_san_available()
    parse_logs([log])
    assert sum(calls) > result.records.num_rows // 2
    monkeypatch.delenv(paths.SAN_ENV)
    monkeypatch.setenv(paths.MOVE_CHECK_ENV, "python")
    assert not paths.compiled_san_available()


def test_several_kings_and_bad_fens_go_to_python_chess(monkeypatch, tmp_path):
    log = tmp_path / "kings_crafty.log"
    log.write_text(
        "TREEDUMP engine=crafty v=1 id=k fen=4k3/8/8/8/8/8/8/K3K2R w K - 0 1\nITER d=1\n"
        "MOVE path=Kb2 ply=1 mn=1 d=1 nd=0 act=FULL\nMOVE path=O-O ply=1 mn=2 d=1 nd=0 act=FULL\n"
        "MOVE path=Kd2 ply=1 mn=3 d=1 nd=0 act=FULL\nRESULT path=- ply=0 d=1 score=0\nEND nodes=3\n"
        "TREEDUMP engine=crafty v=1 id=bad fen=4k3/8/8/8/8/8/8/4K2 w - - 0 1\nITER d=1\n"
        "MOVE path=Kd2 ply=1 mn=1 d=1 nd=0 act=FULL\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n")
    compiled, python = _both(monkeypatch, [log])
    _assert_same(compiled, python)


def test_searches_out_of_order_in_a_chunk_resolve_as_grouped(monkeypatch):
    """``_resolve_on_boards`` takes a chunk's searches in their order of first appearance, each search's rows in
    chunk order (what ``group_by(maintain_order=True)`` gave): the order the unresolved lines are counted in,
    so which lines a warning names.  The parser's searches come in order; this guards the other case."""
    import polars as pl

    from treediff.parse.problems import Problems

    class SearchState:  # what the resolution reads and writes of treediff.parse.state.SearchState
        def __init__(self, search: int, fen: str):
            self.search, self.fen, self.resolver = search, fen, PathResolver(fen)
            self.unresolved: list[int] = []
            self.unresolved_count = 0

    fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    searches = [5, 5, 2, 5, 2, 9, 2, 9, 5]
    tokens = ["e4", "Ka5", "Kb4", "d4", "Nf3", "Kc3", "Kd6", "e4/e5", "Ke3"]
    hard = pl.DataFrame({"search": searches, "path": tokens, "_i": list(range(9))},
                        schema={"search": pl.Int64, "path": pl.String, "_i": pl.UInt32})
    line_col = pl.Series("line", [100 + i for i in range(9)])
    for env in (None, "python"):
        if env:
            monkeypatch.setenv(paths.SAN_ENV, env)
        normalizer = paths.PathNormalizer()
        by_id = {s: SearchState(s, fen) for s in (2, 5, 9)}
        problems = Problems()
        index, parts = normalizer._resolve_on_boards(hard, line_col, by_id, problems)
        normalizer.account_unresolved(wait=True)
        assert index.to_list() == [0, 1, 3, 8, 2, 4, 6, 5, 7]  # search 5's rows, then 2's, then 9's
        assert paths._parts_series(parts).to_list() == ["e2e4", None, "d2d4", None, None, "g1f3", None, None, "e2e4/e7e5"]
        assert problems.first[paths.UNRESOLVED_REASON] == [101, 108, 102, 106, 105]
        assert by_id[5].unresolved == [101, 108] and by_id[9].unresolved_count == 1
        normalizer.close()

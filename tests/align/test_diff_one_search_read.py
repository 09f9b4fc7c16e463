"""``treediff diff`` of a log of several searches parses only the chosen search's lines (treediff/parse/index.py).

Every output (text, json, csv) is compared byte for byte with the full parse's (``TREEDIFF_DIFF_FULL_PARSE=1``,
the code path diff had before), on the multi-search fixtures, the real Stockfish traces concatenated, logs of
gen_logs.py with several searches per position, hand-written logs (a cut search before the chosen one, CRLF
line ends, no newline at the end, garbage lines, bad headers).  A spy on the parser's chunks counts the lines
parsed: the chosen searches' lines (counted from the text), not the files'.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.benchmark_scripts import load_benchmark
from treediff.cli import main
from treediff.parse import index as log_index
from treediff.parse import pipeline

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "fixtures" / "traces"
HAND = ROOT / "fixtures" / "hand"
#: The real Stockfish traces (shared/real-traces/stockfish, beside the clone in CI).
REAL = next((p for p in (ROOT.parent / "shared" / "real-traces" / "stockfish",
                         Path("/work/shared/real-traces/stockfish")) if p.is_dir()), None)


@pytest.fixture
def spy(monkeypatch):
    """Every call of the parser's chunk step and the lines it was given, and every one-search read."""
    seen = {"lines": 0, "spans": []}
    prepare, parse_span = pipeline.prepare_chunk, log_index.parse_span

    def counted(tail, block, cut):
        chunk = prepare(tail, block, cut)
        seen["lines"] += chunk.n_lines
        return chunk

    def spans(index, span, out, progress=None):
        seen["spans"].append((Path(index.path).name, span.search))
        return parse_span(index, span, out, progress)

    monkeypatch.setattr(pipeline, "prepare_chunk", counted)
    monkeypatch.setattr(log_index, "parse_span", spans)
    return seen


def diff(*args: str, full: bool):
    env = {"COLUMNS": "100", log_index.FULL_PARSE_ENV: "1" if full else ""}
    return CliRunner().invoke(main, ["diff", *map(str, args)], env=env)


def same_both_ways(a, b, *args: str, formats=("text", "json", "csv")) -> dict:
    """Run diff with the shortcut and with the full parse in every format; assert identical bytes and exit."""
    outputs = {}
    for fmt in formats:
        quick = diff(a, b, *args, "--format", fmt, full=False)
        whole = diff(a, b, *args, "--format", fmt, full=True)
        assert quick.exit_code == whole.exit_code == 0, (quick.stderr, whole.stderr)
        assert quick.stdout_bytes == whole.stdout_bytes, fmt
        outputs[fmt] = (quick, whole)
    return outputs


def chosen_warnings(stderr: str, path, search: int) -> list[str]:
    """The warning lines about search ``search`` of ``path``."""
    return [line for line in stderr.splitlines() if line.startswith(f"warning: {path}: search {search} (")]


# ------------------------------------------------------------------ fixtures
BATCH3 = {d: TRACES / f"{d}_batch3.log" for d in ("typhoon", "stockfish", "crafty")}


@pytest.mark.parametrize("a, b", [("typhoon", "stockfish"), ("stockfish", "crafty"), ("crafty", "typhoon")])
@pytest.mark.parametrize("position", ["start", "kiwipete", "rook-endgame"])
def test_batch3_fixtures(spy, a, b, position):
    out = same_both_ways(BATCH3[a], BATCH3[b], "--position", position)
    number = ["start", "kiwipete", "rook-endgame"].index(position)  # their order in each log
    doc = json.loads(out["json"][0].stdout)
    assert (doc["a"]["search"], doc["b"]["search"]) == (number, number)
    # The shortcut read one search a side, each time (3 formats), and no fallback parsed a whole log.
    assert spy["spans"].count((BATCH3[a].name, number)) == 3 and spy["spans"].count((BATCH3[b].name, number)) == 3


@pytest.mark.parametrize("a, b, position", [
    ("align_multi.log", "align_multi.log", "kiwi"),
    ("align_multi.log", "align_multi.log", "start"),
    ("report_stockfish.log", "report_crafty.log", "p1"),
    ("report_stockfish.log", "report_crafty.log", "p2"),
    ("report_typhoon.log", "report_stockfish.log", "p1"),  # A has one search: parsed whole, as before
])
def test_hand_fixtures(spy, a, b, position):
    same_both_ways(HAND / a, HAND / b, "--position", position)
    assert (b, 0 if position in ("kiwi", "p1") else 1) in spy["spans"]


@pytest.mark.skipif(REAL is None, reason="shared/real-traces/stockfish is not there")
def test_real_stockfish_traces_concatenated(tmp_path, spy):
    files = sorted(REAL.glob("*.log"))
    forward, backward = tmp_path / "forward.log", tmp_path / "backward.log"
    forward.write_bytes(b"".join(f.read_bytes() for f in files))
    backward.write_bytes(b"".join(f.read_bytes() for f in reversed(files)))
    ids = [f.read_text().split(" id=", 1)[1].split()[0] for f in files]
    for k, pid in enumerate(ids):
        if k not in (0, 2, len(ids) - 1):  # the first, one in the middle, the last
            continue
        formats = ("text", "json", "csv") if k == 0 else ("json",)
        out = same_both_ways(forward, backward, "--position", pid, formats=formats)
        doc = json.loads(out["json"][0].stdout)
        assert (doc["a"]["search"], doc["b"]["search"]) == (k, len(files) - 1 - k)
        # Line numbers are the concatenated files': the backward log's first lines are the last file's.
        assert (forward.name, k) in spy["spans"] and (backward.name, len(files) - 1 - k) in spy["spans"]
        lines_a = {row["line_a"] for row in doc["rows"] if row.get("line_a") is not None}
        first = sum(len(f.read_bytes().splitlines()) for f in files[:k])
        assert min(lines_a) > first and max(lines_a) <= first + len(files[k].read_bytes().splitlines())


def _generated(tmp_path: Path, dialect: str, lines: int = 30_000) -> Path:
    path = tmp_path / f"{dialect}.log"
    load_benchmark("gen_logs").generate(dialect, lines, str(path), seed=3, depth=4)
    return path


def _search_lines(path: Path, pid: str) -> int:
    """Lines of search ``pid`` (its header to the next header), counted from the text."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TREEDUMP ") and f" id={pid} " in line)
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("TREEDUMP ")), len(lines))
    return stop - start


def test_generated_logs_several_searches_per_position(tmp_path, spy):
    a, b = _generated(tmp_path, "typhoon"), _generated(tmp_path, "stockfish")
    assert a.read_text().count("TREEDUMP ") >= 8  # several searches of each of gen_logs' four positions
    for pid in ("gen5", "gen7"):
        same_both_ways(a, b, "--position", pid, formats=("json", "text"))


def test_fewer_lines_parsed(tmp_path, spy):
    a, b = _generated(tmp_path, "typhoon"), _generated(tmp_path, "stockfish")
    total = len(a.read_text().splitlines()) + len(b.read_text().splitlines())
    spy["lines"] = 0
    assert diff(a, b, "--position", "gen6", "--format", "json", full=True).exit_code == 0
    assert spy["lines"] == total
    spy["lines"] = 0
    assert diff(a, b, "--position", "gen6", "--format", "json", full=False).exit_code == 0
    chosen = _search_lines(a, "gen6") + _search_lines(b, "gen6")
    assert spy["lines"] == chosen and chosen * 4 < total


# ------------------------------------------------------------------ hand-written logs
FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWI = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def _search(pid: str, fen: str, acts=("FULL", "LMR"), end: bool = True, extra: list[str] | None = None) -> list[str]:
    """A search of 8 lines (header, ITER, 2 MOVE, 3 RESULT, END), two legal moves of ``fen``."""
    one, two = ("a2a3", "g2g3") if fen == KIWI else ("e2e4", "d2d4")
    lines = [f"TREEDUMP engine=stockfish v=1 id={pid} fen={fen}", "ITER d=1",
             f"MOVE path={one} ply=1 mn=1 d=2 nd=1 act={acts[0]}", f"RESULT path={one} ply=1 d=1 score=10",
             f"MOVE path={two} ply=1 mn=2 d=2 nd=0 act={acts[1]} red=1", f"RESULT path={two} ply=1 d=0 score=5",
             "RESULT path=- ply=0 d=2 score=10", *(extra or [])]
    return lines + (["END nodes=3"] if end else [])


def _write(path: Path, lines: list[str], newline: str = "\n", final: bool = True) -> Path:
    path.write_bytes((newline.join(lines) + (newline if final else "")).encode())
    return path


def test_chosen_search_after_a_cut_search(tmp_path, spy):
    # Search 1 is cut (no END, the engine stopped; a header follows); the chosen search is number 2.
    a = _write(tmp_path / "a.log", [*_search("p0", KIWI), *_search("cut", FEN, end=False)[:4],
                                    *_search("p2", FEN, acts=("LMR", "FULL"))])
    b = _write(tmp_path / "b.log", _search("p2", FEN))
    out = same_both_ways(a, b, "--position", "p2")
    quick, whole = out["json"]
    assert json.loads(quick.stdout)["a"]["search"] == 2  # the cut search counts
    assert (a.name, 2) in spy["spans"]
    # The cut search's warning is not shown (its lines are not read); the chosen one's are the same.
    assert chosen_warnings(whole.stderr, a, 1) and not chosen_warnings(quick.stderr, a, 1)
    assert chosen_warnings(quick.stderr, a, 2) == chosen_warnings(whole.stderr, a, 2)


def test_crlf_lines(tmp_path, spy):
    a = _write(tmp_path / "a.log", [*_search("p0", KIWI), *_search("p1", FEN)], newline="\r\n")
    b = _write(tmp_path / "b.log", [*_search("p1", FEN, acts=("LMR", "FULL")), *_search("p0", KIWI)], newline="\r\n")
    for pid in ("p0", "p1"):
        same_both_ways(a, b, "--position", pid)
    assert (a.name, 1) in spy["spans"] and (b.name, 1) in spy["spans"]
    for name in ("typhoon", "stockfish"):  # a real trace with CRLF line ends
        text = BATCH3[name].read_bytes().replace(b"\n", b"\r\n")
        (tmp_path / f"{name}.log").write_bytes(text)
    same_both_ways(tmp_path / "typhoon.log", tmp_path / "stockfish.log", "--position", "kiwipete")


def test_last_search_without_final_newline(tmp_path, spy):
    b = _write(tmp_path / "b.log", [*_search("p0", KIWI), *_search("p1", FEN, acts=("LMR", "FULL"))])
    # The last line is an END without newline: dropped (warned), so the last search has no END.
    a = _write(tmp_path / "a.log", [*_search("p0", KIWI), *_search("p1", FEN)], final=False)
    out = same_both_ways(a, b, "--position", "p1")
    assert (a.name, 1) in spy["spans"]
    quick, whole = out["text"]
    assert quick.stderr == whole.stderr  # every warning is about the last search or the file's end
    assert f"{a}: 1 line truncated (no newline at end of file; dropped) (line 16)" in quick.stderr
    assert "no END record (lines 9-15)" in quick.stderr
    # A partial line after the END: the END is read.
    c = _write(tmp_path / "c.log", [*_search("p0", KIWI), *_search("p1", FEN), "MOVE path=e2"], final=False)
    out = same_both_ways(c, b, "--position", "p1")
    assert out["json"][0].stderr == out["json"][1].stderr and "(line 17)" in out["json"][0].stderr


def test_garbage_inside_the_chosen_search(tmp_path, spy):
    garbage = ["MOVE path=e2e4 ply=x mn=1 d=2 act=FULL", "WHAT is=this"]  # lines 16, 17; non-UTF-8 at 19
    lines = [*_search("p0", KIWI), *_search("p1", FEN, extra=garbage)]
    a = tmp_path / "a.log"
    a.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe bad\n")
    b = _write(tmp_path / "b.log", _search("p1", FEN))
    out = same_both_ways(a, b, "--position", "p1")
    quick, whole = out["text"]
    assert quick.stderr == whole.stderr and "garbage" in quick.stderr and "line 19" in quick.stderr
    assert (a.name, 1) in spy["spans"]


def test_bad_headers_same_error(tmp_path, spy):
    b = _write(tmp_path / "b.log", _search("p1", FEN))
    # The chosen search's header has no engine=: the parser's error, naming the file and the line.
    a = _write(tmp_path / "a.log", [*_search("p0", KIWI),
                                    *[line.replace("engine=stockfish ", "") for line in _search("p1", FEN)]])
    # Another search's header names an unknown dialect: the full parse's error too.
    c = _write(tmp_path / "c.log", [*_search("p0", KIWI), *_search("p1", FEN)])
    c.write_text(c.read_text().replace("engine=stockfish v=1 id=p0", "engine=martian v=1 id=p0"))
    # The chosen search has no MOVE/RESULT record (a 0-node search).
    d = _write(tmp_path / "d.log", [*_search("p0", KIWI), f"TREEDUMP engine=stockfish v=1 id=p1 fen={FEN}",
                                    "END nodes=0", *_search("p2", KIWI)])
    for log, message in ((a, f"{a}:9: TREEDUMP header has no engine= key; give --engine"),
                         (c, f"{c}:1: unknown engine dialect 'martian'"),
                         (d, f"A searched position p1 but recorded no MOVE/RESULT: {d} holds that search")):
        quick, whole = (diff(log, b, "--position", "p1", full=f) for f in (False, True))
        assert quick.exit_code == whole.exit_code == 2
        assert quick.stderr == whole.stderr and message in quick.stderr
    assert (d.name, 1) in spy["spans"]  # the 0-node search was read alone; the bad headers were not shortcut
    assert not any(name in (a.name, c.name) for name, _ in spy["spans"])


def test_interleaved_searches_fall_back(tmp_path, spy):
    # p1's header comes before p0's records and END: p1 gets two END lines and its warning names p0.
    lines = [f"TREEDUMP engine=stockfish v=1 id=p0 fen={KIWI}", *_search("p1", FEN), "END nodes=3",
             *_search("p2", KIWI)]
    a = _write(tmp_path / "a.log", lines)
    b = _write(tmp_path / "b.log", _search("p1", FEN))
    out = same_both_ways(a, b, "--position", "p1")
    assert out["text"][0].stderr == out["text"][1].stderr and "interleaved" in out["text"][0].stderr
    # p0 (no END, a later search names it; its records went to p1) is read whole too: the same error.
    b0 = _write(tmp_path / "b0.log", _search("p0", KIWI))
    quick, whole = (diff(a, b0, "--position", "p0", full=f) for f in (False, True))
    assert quick.exit_code == whole.exit_code == 2
    assert quick.stderr == whole.stderr and "interleaved" in quick.stderr and "recorded no MOVE/RESULT" in quick.stderr


def test_positions_epd_and_engine_options(tmp_path, spy):
    # Headers without id=: the EPD file names the positions by FEN (--positions), and --engine-a picks.
    epd = tmp_path / "p.epd"
    epd.write_text(f"{' '.join(KIWI.split()[:4])} id \"kiwi\";\n{' '.join(FEN.split()[:4])} id \"start\";\n")
    a = _write(tmp_path / "a.log", [line.replace(" id=p0", "").replace(" id=p1", "")
                                    for line in [*_search("p0", KIWI), *_search("p1", FEN)]])
    b = _write(tmp_path / "b.log", [line.replace(" id=p0", "")
                                    for line in [*_search("p0", KIWI, acts=("LMR", "FULL")), *_search("p1", FEN)]])
    for pid in ("kiwi", "start"):
        same_both_ways(a, b, "--position", pid, "--positions", str(epd), "--engine-a", "stockfish")
    assert (a.name, 1) in spy["spans"] and (b.name, 0) in spy["spans"]
    # Without --positions: ids made from the FEN (fen:...), and the only shared position without --position.
    c = _write(tmp_path / "c.log", [line.replace(" id=p1", "") for line in [*_search("p0", KIWI), *_search("p1", FEN)]])
    other = FEN.replace(" KQkq ", " Qkq ")  # (castling rights differ: another position)
    d = _write(tmp_path / "d.log", [line.replace(" id=p1", "") for line in [*_search("p1", FEN), *_search("q", other)]])
    out = same_both_ways(c, d)
    assert json.loads(out["json"][0].stdout)["a"]["position"].startswith("fen:")
    assert (c.name, 1) in spy["spans"] and (d.name, 0) in spy["spans"]


def test_browse_model_same_both_ways(monkeypatch, spy):
    """``browse`` pairs and reads as diff does: the same rows and title with the shortcut and the full parse."""
    from treediff.cli.browse import build_model

    models = {}
    for full in (False, True):
        monkeypatch.setenv(log_index.FULL_PARSE_ENV, "1" if full else "")
        models[full] = build_model(str(BATCH3["typhoon"]), str(BATCH3["crafty"]), position="kiwipete")
    (quick, title), (whole, whole_title) = models[False], models[True]
    assert title == whole_title and "position kiwipete" in title
    pd_testing = pytest.importorskip("pandas").testing
    pd_testing.assert_frame_equal(quick.rows, whole.rows)
    assert (BATCH3["typhoon"].name, 1) in spy["spans"] and (BATCH3["crafty"].name, 1) in spy["spans"]

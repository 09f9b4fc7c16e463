"""Readers under hostile files (issue 15, deliverables 5 and 6, the reader side).

Every file here is written by the test: truncated or corrupt compressed logs,
searches without END or interleaved, records whose ``ply=`` or UCI path is
wrong, Parquet inputs with wrong types or missing columns, datasets with
foreign files, EPD files with odd line breaks, and headers carrying terminal
escapes.  Each one gets a clear message naming the file (exit 2), or a warning
naming the file and the line, never silently wrong numbers.
"""
from __future__ import annotations

import shutil

import pytest

from reliability.hostile import ROOT
from support.illegal_uci import ILLEGAL_UCI_BODY

LOG = ROOT / "fixtures" / "hand" / "align_basic_a.log"
LOG_B = ROOT / "fixtures" / "hand" / "align_basic_b.log"


# -- outputs that are inputs, inputs that are symlink loops ---------------------------------------------------

def test_report_and_compare_output_is_an_input(cli, tmp_path):
    log = tmp_path / "in.log"
    shutil.copyfile(LOG, log)
    before = log.read_bytes()
    c = cli("report", log, "--table", "nodes", "-o", log)
    assert c.wait(60) == 2 and "is also an input" in c.output and "in.log" in c.output, c.output
    c = cli("compare", log, LOG_B, "-o", log)
    assert c.wait(60) == 2 and "is also an input" in c.output, c.output
    c = cli("compare", LOG_B, log, "--format", "json", "-o", log)
    assert c.wait(60) == 2 and "is also an input" in c.output, c.output
    assert log.read_bytes() == before
    # Another output file still works.
    c = cli("report", log, "--table", "nodes", "-o", tmp_path / "r.txt")
    assert c.wait(60) == 0 and (tmp_path / "r.txt").read_text().startswith("== Nodes"), c.output


def test_report_on_a_symlink_loop_or_a_dangling_link(cli, tmp_path):
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    c = cli("report", loop)
    assert c.wait(60) == 2 and "loop.log" in c.output and "symlink loop" in c.output, c.output
    assert "no such file" not in c.output
    dangling = tmp_path / "dangling.log"
    dangling.symlink_to(tmp_path / "gone.log")
    c = cli("report", dangling)
    assert c.wait(60) == 2 and "dangling.log" in c.output and "gone.log" in c.output, c.output


# -- compressed logs cut short ----------------------------------------------------------------------------------

BATCH = b"".join((ROOT / "fixtures" / "traces" / f"{name}_batch3.log").read_bytes()
                 for name in ("stockfish", "crafty", "typhoon"))


def _zstd_in_blocks(data: bytes) -> bytes:
    """One zstd frame of many small blocks (as a streaming writer makes it), so a cut leaves decodable blocks."""
    import io

    import zstandard

    buf = io.BytesIO()
    with zstandard.ZstdCompressor(level=1, write_checksum=True).stream_writer(buf, closefd=False) as w:
        for i in range(0, len(data), 4096):
            w.write(data[i:i + 4096])
            w.flush(zstandard.FLUSH_BLOCK)
    return buf.getvalue()


def _decodable_prefix(kind: str, cut: bytes) -> bytes:
    """What a decoder gets out of the cut file (zlib / zstandard directly, not treediff's reader)."""
    import zlib

    import zstandard

    if kind == "gz":
        return zlib.decompressobj(wbits=31).decompress(cut)
    return zstandard.ZstdDecompressor().decompressobj().decompress(cut)


def _cut_file(tmp_path, kind: str, fraction: float):
    import gzip

    whole = gzip.compress(BATCH) if kind == "gz" else _zstd_in_blocks(BATCH)
    cut = whole[:int(len(whole) * fraction)]
    path = tmp_path / f"cut.log.{'gz' if kind == 'gz' else 'zst'}"
    path.write_bytes(cut)
    return path, len(cut), _decodable_prefix(kind, cut)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_truncated_compressed_log_is_an_error_naming_file_and_offset(tmp_path, kind):
    from treediff.model.errors import InputError
    from treediff.parse.core import parse_logs

    path, size, _ = _cut_file(tmp_path, kind, 0.6)
    with pytest.raises(InputError) as err:
        parse_logs([path])
    text = str(err.value)
    assert text.startswith(str(path)) and f"ends at byte {size:,}" in text and "--keep-complete" in text, text
    assert ("gzip" if kind == "gz" else "zstd") in text


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("fraction", [0.3, 0.75])
def test_keep_complete_keeps_the_searches_read_completely(tmp_path, kind, fraction):
    import re

    import pyarrow.parquet as pq

    from treediff.parse.core import parse_logs, parse_to_parquet

    path, size, prefix = _cut_file(tmp_path, kind, fraction)
    # Independently of treediff: the searches whose END line the decodable part holds, and their END nodes.
    ends = [int(n) for n in re.findall(rb"^END nodes=(\d+)", prefix, flags=re.M)]
    headers = len(re.findall(rb"^TREEDUMP ", prefix, flags=re.M))
    assert 0 < len(ends) < headers  # the cut falls inside a search
    for result in (parse_logs([path], keep_complete=True),
                   parse_to_parquet([path], tmp_path / "o.parquet", keep_complete=True)):
        searches = result.searches.to_pydict()
        assert len(searches["search"]) == len(ends)
        assert searches["result_nodes"] == ends and searches["end_nodes"] == ends
        cut_warnings = [w for w in result.warnings if "truncated" in w]
        assert len(cut_warnings) == 1 and f"byte {size:,}" in cut_warnings[0]
        cut_at = [m.start() for m in re.finditer(rb"^TREEDUMP ", prefix, flags=re.M)][len(ends)]
        cut_line = prefix.count(b"\n", 0, cut_at) + 1
        assert f"dropped the search at line {cut_line} " in cut_warnings[0], cut_warnings
    on_disk = pq.read_table(tmp_path / "o.parquet", columns=["search", "tag"]).to_pydict()
    assert sorted(set(on_disk["search"])) == list(range(len(ends)))
    assert on_disk["tag"].count("RESULT") == sum(ends)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_keep_complete_over_several_files_numbers_searches_without_a_gap(tmp_path, kind):
    """A cut file's dropped search leaves no gap and no orphan records: the next file's searches are numbered
    on from the kept ones (as reading the files as separate inputs does), in memory and on disk alike."""
    import re

    import pyarrow.parquet as pq

    from treediff.parse.core import parse_logs, parse_to_parquet
    from treediff.parse.source import open_sources

    cut, _, prefix = _cut_file(tmp_path, kind, 0.5)
    kept = len(re.findall(rb"^END nodes=", prefix, flags=re.M))
    after = tmp_path / "after.log"
    after.write_bytes(BATCH)
    # Independently of treediff: the RESULT records of each search of the files, in log order.
    def results_per_search(data: bytes) -> list[int]:
        return [part.count(b"\nRESULT ") for part in re.split(rb"^TREEDUMP ", data, flags=re.M)[1:]]

    expected = results_per_search(prefix)[:kept] + results_per_search(BATCH)
    for result in (parse_logs([cut, after, cut], keep_complete=True),
                   parse_to_parquet([cut, after, cut], tmp_path / "o.parquet", keep_complete=True)):
        searches = result.searches.to_pydict()
        assert searches["search"] == list(range(2 * kept + len(expected) - kept))
        assert searches["result_nodes"] == expected + expected[:kept]
        assert sum("numbered on without a gap" in w for w in result.warnings) == 2
    memory = parse_logs([cut, after, cut], keep_complete=True).records.to_pydict()
    on_disk = pq.read_table(tmp_path / "o.parquet", columns=["search", "tag", "line"]).to_pydict()
    for records in (memory, on_disk):
        counts = [0] * len(searches["search"])
        for search, tag in zip(records["search"], records["tag"]):
            counts[search] += tag == "RESULT"
        assert counts == expected + expected[:kept]  # no records of a dropped search, none numbered off
    assert memory["search"] == on_disk["search"] and memory["line"] == on_disk["line"]
    # The same numbers as the files read as separate inputs (each parsed alone, then numbered offset + rank).
    combined = open_sources([cut, after, cut], keep_complete=True).searches
    assert list(combined["search"]) == searches["search"]
    assert list(combined["result_nodes"]) == searches["result_nodes"]


def test_truncated_log_on_the_command_line(cli, tmp_path):
    path, size, prefix = _cut_file(tmp_path, "zst", 0.5)
    c = cli("parse", path, "-o", tmp_path / "x.parquet")
    assert c.wait(60) == 2 and "cut.log.zst" in c.output and f"byte {size:,}" in c.output, c.output
    assert "internal error" not in c.output and not (tmp_path / "x.parquet").exists()
    c = cli("report", path, "--table", "nodes", "--keep-complete")
    assert c.wait(60) == 0 and "warning:" in c.output and "kept the" in c.output, c.output


def test_whole_compressed_logs_still_read(tmp_path):
    """Several frames, a skippable frame, checksums, content sizes or not: all read to the end."""
    import gzip

    import zstandard

    from treediff.parse.core import parse_logs

    plain = tmp_path / "p.log"
    plain.write_bytes(BATCH)
    expected = parse_logs([plain]).searches.to_pydict()["result_nodes"]
    skippable = (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    half = len(BATCH) // 2
    half = BATCH.rindex(b"\n", 0, half) + 1
    variants = {
        "a.log.gz": gzip.compress(BATCH[:half]) + gzip.compress(BATCH[half:]),
        "b.log.zst": zstandard.ZstdCompressor(write_checksum=True).compress(BATCH[:half])
        + skippable + zstandard.ZstdCompressor(write_content_size=False).compress(BATCH[half:]),
        "c.log.zst": _zstd_in_blocks(BATCH),
    }
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        result = parse_logs([tmp_path / name])
        assert result.searches.to_pydict()["result_nodes"] == expected, name
        assert not [w for w in result.warnings if "truncated" in w]


# -- searches without END, interleaved searches ---------------------------------------------------------------

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _header(pid: str) -> str:
    return f"TREEDUMP engine=stockfish v=1 id={pid} fen={START_FEN}\n"


def _write(tmp_path, text: str, name: str = "t.log"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_search_without_end_is_warned(tmp_path):
    from treediff.parse.core import parse_logs

    log = _write(tmp_path, _header("a") + "ITER d=1\nMOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\n"
                 "RESULT path=e2e4 ply=1 d=0 score=20\nRESULT path=- ply=0 d=1 score=20\n"       # lines 1-5
                 + _header("b") + "ITER d=1\nRESULT path=- ply=0 d=1 score=20\nEND nodes=1\n"    # lines 6-9
                 + _header("c") + "ITER d=1\nRESULT path=- ply=0 d=1 score=20\n")                # lines 10-12
    result = parse_logs([log])
    no_end = [w for w in result.warnings if "no END record" in w]
    assert len(no_end) == 2, result.warnings
    assert no_end[0].startswith(f"{log}: search 0 (a, line 1): no END record (lines 1-5)")
    assert no_end[1].startswith(f"{log}: search 2 (c, line 10): no END record (lines 10-12)")
    # The numbers are still those of the lines read: 2 RESULT records in a, 1 in c.
    assert result.searches.to_pydict()["result_nodes"] == [2, 1, 1]


def test_interleaved_searches_name_both_and_the_lines(tmp_path):
    from treediff.model.errors import InputError
    from treediff.parse.core import parse_logs

    # Search a's header, then b's, then both searches' lines mixed: every record lands in b (the latest header).
    log = _write(tmp_path, _header("a") + _header("b")
                 + "ITER d=1\nITER d=1\n"                                                          # lines 3-4
                 + "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\nMOVE path=d2d4 ply=1 mn=1 d=1 nd=0 act=FULL\n"
                 + "RESULT path=e2e4 ply=1 d=0 score=20\nRESULT path=d2d4 ply=1 d=0 score=20\n"
                 + "RESULT path=- ply=0 d=1 score=20\nEND nodes=2 best=e2e4\n"                     # END: line 10
                 + "RESULT path=- ply=0 d=1 score=20\nEND nodes=2 best=d2d4\n")                    # END: line 12
    result = parse_logs([log])
    warned = [w for w in result.warnings if "searches interleaved" in w]
    assert len(warned) == 2, result.warnings
    a = next(w for w in warned if w.startswith(f"{log}: search 0 (a, line 1)"))
    b = next(w for w in warned if w.startswith(f"{log}: search 1 (b, line 2)"))
    assert "search 1 (b, line 2)" in a and "lines 10, 12" in a
    assert "search 0 (a, line 1)" in b and "lines 10, 12" in b and "not reliable" in b
    with pytest.raises(InputError, match="interleaved"):
        parse_logs([log], strict=True)


def test_one_end_per_search_is_not_interleaving(tmp_path):
    from treediff.parse.core import parse_logs

    log = _write(tmp_path, "".join(_header(p) + "ITER d=1\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n"
                                   for p in "abc"))
    result = parse_logs([log], strict=True)
    assert result.warnings == [] and result.searches.num_rows == 3


# -- ply= against the path ------------------------------------------------------------------------------------

def test_ply_that_is_not_the_path_length_is_flagged(tmp_path):
    from treediff.model.errors import InputError
    from treediff.parse.core import parse_logs

    log = _write(tmp_path, _header("a") + "ITER d=2\n"
                 "MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL\n"            # line 3: right
                 "MOVE path=e2e4/e7e5 ply=1 mn=1 d=1 nd=0 act=FULL\n"       # line 4: 2 moves, ply 1
                 "RESULT path=e2e4/e7e5 ply=2 d=0 score=0\n"                # line 5: right
                 "RESULT path=e2e4 ply=2 d=1 score=0\n"                     # line 6: 1 move, ply 2
                 "RESULT path=- ply=1 d=2 score=0\n"                        # line 7: the root, ply 1
                 "RESULT path=- ply=0 d=2 score=0\nEND nodes=4\n")          # line 8: right
    result = parse_logs([log])
    rows = result.records.select(["line", "problem"]).to_pydict()
    flagged = [line for line, problem in zip(rows["line"], rows["problem"]) if problem == "bad-ply"]
    assert flagged == [4, 6, 7]
    warned = [w for w in result.warnings if "ply=" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{log}: 3 lines") and "(line 4, 6, 7)" in warned[0]
    with pytest.raises(InputError, match="--strict: .*bad-ply"):
        parse_logs([log], strict=True)


def test_fixture_traces_have_no_bad_ply():
    """typhoon_py writes ply= itself: its traces must all pass the check (SAN and coordinate dialects too)."""
    from treediff.parse.core import parse_logs

    traces = sorted((ROOT / "fixtures" / "traces").glob("*.log"))
    result = parse_logs(traces)
    assert not [w for w in result.warnings if "ply=" in w]
    assert "bad-ply" not in set(result.records.column("problem").to_pylist())


# -- EPD line breaks, byte-order marks ------------------------------------------------------------------------

TACTIC_FEN = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"


@pytest.mark.parametrize("odd", ["\u2028", "\u0085", "\u2029", "\x1c", "\x1e"])
def test_epd_lines_break_only_at_newlines(tmp_path, odd):
    from treediff.model.positions import read_positions

    epd = tmp_path / "p.epd"
    # Two lines (the second ends in \r\n); the odd separator sits inside the first line's id.
    epd.write_bytes(f'{START_FEN} id "a{odd}b";\n{TACTIC_FEN} id "t";\r\n'.encode())
    if odd in "\x1c\x1e":  # C0 control characters are refused, naming the line
        from treediff.model.errors import InputError

        with pytest.raises(InputError, match="p.epd:1: contains a control character"):
            read_positions(epd)
        return
    positions, skipped = read_positions(epd)
    # One id, not cut (python-chess may show the odd blank as a space), and the second line numbered 2.
    assert len(positions) == 2 and skipped == [] and positions[1].id == "t" and positions[1].line == 2
    assert positions[0].id.startswith("a") and positions[0].id.endswith("b") and len(positions[0].id) == 3


def test_byte_order_mark_before_a_comment_or_the_first_line(tmp_path):
    from treediff.model.positions import read_positions
    from treediff.parse.core import parse_logs

    bom = "\ufeff"
    epd = tmp_path / "p.epd"
    epd.write_text(f"{bom}# positions\n{START_FEN} id \"s\";\n", encoding="utf-8")
    assert [p.id for p in read_positions(epd)[0]] == ["s"]
    epd.write_text(f"{bom}{START_FEN} id \"s\";\n", encoding="utf-8")
    assert [p.id for p in read_positions(epd)[0]] == ["s"]
    body = "ITER d=1\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n"
    for text in (f"{bom}# a comment\n" + _header("a") + body, bom + _header("a") + body,
                 _header("a") + body + bom + _header("b") + body):   # two files concatenated
        log = _write(tmp_path, text)
        result = parse_logs([log])
        assert result.warnings == [], result.warnings
        assert result.searches.column("position").to_pylist()[:1] == ["a"]


# -- log text shown on a terminal -----------------------------------------------------------------------------

ESCAPES = "x\x1b[2Jy\x1b]52;c;aGk=\x07z\u202e\u2028"


def test_printable_escapes_controls_visibly():
    from treediff.model.text import printable

    assert printable("e2e4 start kiwipete é ♞") == "e2e4 start kiwipete é ♞"  # clean text unchanged
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable(ESCAPES) == "x\\x1b[2Jy\\x1b]52;c;aGk=\\x07z\\u202e\\u2028"
    assert printable("tab\tnl\nnel\x85del\x7f") == "tab\\x09nl\\x0anel\\x85del\\x7f"


def test_header_escapes_do_not_reach_the_terminal(cli, tmp_path):
    log = _write(tmp_path, f"TREEDUMP engine=stockfish v=1 id={ESCAPES} fen={START_FEN}\n"
                 "ITER d=1\nRESULT path=- ply=0 d=1 score=0\n")
    for args in (("report", log, "--table", "nodes", "--by", "position"), ("report", log, "--format", "markdown"),
                 ("info", log, "-v"), ("compare", log, log, "--top", "0")):
        c = cli(*args)
        assert c.wait(60) == 0, c.output
        assert "\x1b" not in c.output and "\x07" not in c.output and "\u202e" not in c.output, (args, c.output)
        assert "x\\x1b[2Jy" in c.output, (args, c.output)  # shown, escaped (in the table or the warnings)
    # The machine formats keep the id as it was written.
    c = cli("report", log, "--table", "nodes", "--by", "position", "--format", "json")
    assert c.wait(60) == 0 and "\\u001b[2Jy" in c.output, c.output


def test_rich_markup_in_an_id_is_text(tmp_path):
    """On a terminal the tables are rich tables: an id like ``[/x]`` must print as itself, not be markup."""
    import io

    from rich.console import Console

    from treediff.parse.source import open_source
    from treediff.render.text import render_rich
    from treediff.report.core import build_report

    log = _write(tmp_path, f"TREEDUMP engine=stockfish v=1 id=[/x][red]p fen={START_FEN}\n"
                 "ITER d=1\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n")
    sections = build_report(open_source(log), ("nodes",), ("engine", "position")).sections
    out = io.StringIO()
    render_rich(sections, Console(file=out, width=200, color_system=None))
    assert "[/x][red]p" in out.getvalue()


# -- Parquet pairs and datasets against the schema -------------------------------------------------------------

def _pair(tmp_path, change=None, name: str = "p.parquet"):
    """A ``treediff parse`` pair of the hand fixture, its records table passed through ``change``."""
    import pyarrow.parquet as pq

    from treediff.parse.core import parse_to_parquet

    out = tmp_path / name
    parse_to_parquet([LOG], out)
    if change is not None:
        pq.write_table(change(pq.read_table(out)), out)
    return out


def _replace(table, name, array):
    import pyarrow as pa

    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, array.type), array)


def _tag_as_int(t):
    import pyarrow as pa
    import pyarrow.compute as pc

    return _replace(t, "tag", pa.array((pc.equal(t.column("tag").cast(pa.string()), "MOVE")).cast(pa.int8())))


def _bool_reduction(t):
    import pyarrow.compute as pc

    return _replace(t, "reduction", pc.greater(t.column("reduction"), 0).combine_chunks())


def _inf_reduction(t):
    import pyarrow as pa

    values = t.column("reduction").to_pylist()  # nulls stay nulls
    values[3] = float("inf")
    return _replace(t, "reduction", pa.array(values, pa.float32()))


def _without(*names):
    return lambda t: t.drop_columns(list(names))


@pytest.mark.parametrize("change, column, why", [
    (_tag_as_int, "tag", "integer values"),
    (_bool_reduction, "reduction", "flag values"),
    (_inf_reduction, "reduction", "inf (not a finite number)"),
    (_without("tag"), "tag", "is missing"),
    (_without("depth", "ply"), "ply, depth", "are missing"),
])
def test_parquet_pair_with_wrong_columns(tmp_path, change, column, why):
    from treediff.model.errors import InputError
    from treediff.parse.source import open_source
    from treediff.report.core import build_report

    pair = _pair(tmp_path, change)
    with pytest.raises(InputError) as err:
        build_report(open_source(pair), ("nodes", "lmr"), ("engine",))
    text = str(err.value)
    assert text.startswith(str(pair)) and column in text and why in text, text


def test_parquet_pair_without_optional_columns_still_reads(tmp_path):
    """Columns added after the first format (visit, parent_visit, fh) may be absent: older files lack them."""
    from treediff.parse.source import open_source
    from treediff.report.core import build_report

    whole = build_report(open_source(_pair(tmp_path)), ("nodes",), ("engine",))["nodes"]
    old = _pair(tmp_path, _without(*[c for c in ("visit", "parent_visit", "fh")]), name="old.parquet")
    assert build_report(open_source(old), ("nodes",), ("engine",))["nodes"].equals(whole)


def test_garbage_and_cut_parquet_inputs_are_named(cli, tmp_path):
    pair = _pair(tmp_path)
    data = pair.read_bytes()
    pair.write_bytes(data[: len(data) // 2])  # cut short: starts with PAR1, no footer
    c = cli("report", pair, "--table", "nodes")
    assert c.wait(60) == 2 and "p.parquet" in c.output and "not a readable Parquet" in c.output, c.output
    assert "internal error" not in c.output


def _dataset(tmp_path):
    from support.scale_helpers import TRACES, dataset_from_logs

    return dataset_from_logs([TRACES / "stockfish_batch3.log", TRACES / "crafty_batch3.log"], tmp_path / "ds")


def _nodes(source):
    from treediff.report.core import build_report

    return build_report(source, ("nodes",), ("engine",))["nodes"]


def test_dataset_skips_hidden_files_and_foreign_directories(tmp_path):
    """docs/SCALING.md: files of a dataset are DS/<table>/engine=NAME/KEY.parquet; others are not read."""
    from treediff.parse.source import open_source

    ds = _dataset(tmp_path)
    before = _nodes(open_source(ds))
    for table in ("searches", "records"):
        first = ds / table / "engine=stockfish" / "000000.parquet"
        shutil.copyfile(first, ds / table / "engine=stockfish" / ".hidden.parquet")
        shutil.copyfile(first, ds / table / "engine=stockfish" / ".000000.parquet.0badf00d.tmp")
        (ds / table / "junk").mkdir()
        shutil.copyfile(first, ds / table / "junk" / "000000.parquet")
        (ds / table / "README.txt").write_text("not a partition")
    after = open_source(ds)
    assert sorted(set(after.searches["engine"])) == ["crafty", "stockfish"]  # no phantom engine
    assert len(after.searches) == 6
    assert _nodes(after).equals(before)


def test_dataset_garbage_file_is_named(tmp_path):
    from treediff.model.errors import InputError
    from treediff.parse.source import open_source

    ds = _dataset(tmp_path)
    bad = ds / "records" / "engine=crafty" / "000004.parquet"
    bad.write_bytes(b"PAR1 garbage")
    with pytest.raises(InputError, match=r"engine=crafty/000004.parquet: not a readable Parquet records file"):
        _nodes(open_source(ds))
    bad = ds / "searches" / "engine=crafty" / "000004.parquet"
    bad.write_bytes(b"garbage")
    with pytest.raises(InputError, match=r"engine=crafty/000004.parquet: not a readable Parquet searches file"):
        open_source(ds)


def test_dataset_copied_files_are_refused_naming_both(tmp_path):
    from treediff.model.errors import InputError
    from treediff.parse.source import open_source

    ds = _dataset(tmp_path)
    # A searches + records pair copied from stockfish's partition into crafty's.
    for table in ("searches", "records"):
        shutil.copyfile(ds / table / "engine=stockfish" / "000001.parquet", ds / table / "engine=crafty" / "000001.parquet")
    with pytest.raises(InputError) as err:
        open_source(ds)
    text = str(err.value)
    assert "engine=crafty/000001.parquet" in text and "engine=stockfish/000001.parquet" in text, text
    assert "both hold search 1" in text
    for table in ("searches", "records"):
        (ds / table / "engine=crafty" / "000001.parquet").unlink()
    # A records file alone copied over another task's: its search number says so.
    shutil.copyfile(ds / "records" / "engine=stockfish" / "000001.parquet", ds / "records" / "engine=crafty" / "000004.parquet")
    with pytest.raises(InputError, match=r"engine=crafty/000004.parquet: holds the records of search 1, but its "
                                         r"searches row is search 4"):
        _nodes(open_source(ds))


def test_dataset_records_of_the_wrong_type(tmp_path):
    import pyarrow.parquet as pq

    from treediff.model.errors import InputError
    from treediff.parse.source import open_source

    ds = _dataset(tmp_path)
    file = ds / "records" / "engine=crafty" / "000003.parquet"
    pq.write_table(_bool_reduction(pq.read_table(file)), file)
    with pytest.raises(InputError, match=r"000003.parquet: column reduction holds flag values"):
        _nodes(open_source(ds))


# -- UCI paths validated against their positions -----------------------------------------------------------------

_ILLEGAL_UCI = _header("s") + ILLEGAL_UCI_BODY


def test_strict_flags_illegal_uci_moves_with_their_lines(tmp_path):
    from treediff.model.errors import InputError
    from treediff.parse.core import parse_logs

    log = _write(tmp_path, _ILLEGAL_UCI)
    with pytest.raises(InputError) as err:
        parse_logs([log], strict=True)
    assert "5 lines with a move that does not resolve in its position (line 4, 5, 6, 7, 9)" in str(err.value)
    castling = _write(tmp_path, "TREEDUMP engine=stockfish v=1 id=c fen=r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1\n"
                      "ITER d=1\nMOVE path=e1g1 ply=1 mn=1 d=1 nd=0 act=FULL\nMOVE path=e1c1 ply=1 mn=2 d=1 nd=0 "
                      "act=FULL\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n", name="c.log")
    assert parse_logs([castling], strict=True).warnings == []


def test_illegal_uci_moves_warned_by_default_and_fatal_with_strict(cli, tmp_path):
    """Without --strict the parse warns, naming the file and the lines, and exits 0; --strict exits 2."""
    from treediff.parse.paths import compiled_checker_available

    if not compiled_checker_available():
        pytest.skip("without the compiled _cmoves, UCI paths are validated under --strict only")
    log = _write(tmp_path, _ILLEGAL_UCI)
    c = cli("parse", log, "-o", tmp_path / "o.parquet")
    assert c.wait(60) == 0, c.output
    assert "warning" in c.output and "t.log: 5 lines with a move that does not resolve in its position " \
        "(line 4, 5, 6, 7, 9)" in c.output, c.output
    import pyarrow.parquet as pq

    problems = pq.read_table(tmp_path / "o.parquet", columns=["line", "problem"]).to_pydict()
    assert [ln for ln, p in zip(problems["line"], problems["problem"]) if p == "unresolved-move"] == [4, 5, 6, 7, 9]
    c = cli("parse", log, "--strict", "-o", tmp_path / "s.parquet")
    assert c.wait(60) == 2 and "--strict" in c.output and "(line 4, 5, 6, 7, 9)" in c.output, c.output
    assert "Traceback" not in c.output and not (tmp_path / "s.parquet").exists()


def test_strict_accepts_the_fixture_traces():
    """typhoon_py's traces are legal by construction: --strict must not flag a move (UCI and SAN dialects)."""
    from treediff.parse.core import parse_logs

    traces = sorted((ROOT / "fixtures" / "traces").glob("*.log"))
    result = parse_logs(traces, strict=True)
    assert not [w for w in result.warnings if "does not resolve" in w]

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
        assert f"dropped search {len(ends)} " in cut_warnings[0], cut_warnings
    on_disk = pq.read_table(tmp_path / "o.parquet", columns=["search", "tag"]).to_pydict()
    assert sorted(set(on_disk["search"])) == list(range(len(ends)))
    assert on_disk["tag"].count("RESULT") == sum(ends)


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

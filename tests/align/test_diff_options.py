"""``treediff diff`` speaks report's and compare's option vocabulary: -o, --format names, --positions, --engine."""
from __future__ import annotations

import json

from click.testing import CliRunner

from support.align_helpers import FIXTURES
from treediff.cli import main

A = str(FIXTURES / "align_basic_a.log")
B = str(FIXTURES / "align_basic_b.log")
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def run(*args: str):
    return CliRunner().invoke(main, ["diff", *args], env={"COLUMNS": "100"})


def test_output_file_holds_what_stdout_would(tmp_path):
    for fmt in ("json", "csv", "markdown", "text", "jsonl"):
        out = tmp_path / f"diff.{fmt}"
        written = run(A, B, "--format", fmt, "-o", str(out))
        assert written.exit_code == 0, written.output
        assert written.stdout == ""
        printed = run(A, B, "--format", fmt)
        assert out.read_text() == printed.stdout, fmt
    # No temporary file is left beside the outputs.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"diff.{f}" for f in
                                                                ("json", "csv", "markdown", "text", "jsonl"))


def test_format_follows_the_extension(tmp_path):
    out = tmp_path / "d.json"
    assert run(A, B, "-o", str(out)).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["divergence_total"]["nodes_a"] == 9 and doc["divergence_total"]["nodes_b"] == 8
    out = tmp_path / "d.csv"
    assert run(A, B, "-o", str(out)).exit_code == 0
    assert out.read_text().startswith("path,ply,status,")
    out = tmp_path / "d.html"
    assert run(A, B, "-o", str(out)).exit_code == 0
    page = out.read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "g1f3" in page
    # .txt and no extension: the plain-text table, as `table` gives when not on a terminal.
    out = tmp_path / "d.txt"
    assert run(A, B, "-o", str(out)).exit_code == 0
    assert out.read_text() == run(A, B, "--format", "table").stdout == run(A, B, "--format", "text").stdout


def test_jsonl_is_one_object_per_row():
    lines = run(A, B, "--format", "jsonl").stdout.splitlines()
    # 17 aligned rows, hand-counted in test_align_hand.EXPECTED_BASIC.
    assert len(lines) == 17
    rows = [json.loads(line) for line in lines]
    assert {r["table"] for r in rows} == {"rows"}
    assert rows[0]["path"] == "" and (rows[0]["nodes_a"], rows[0]["nodes_b"]) == (9, 8)


def test_output_over_an_input_is_refused_and_the_input_kept(tmp_path):
    copy = tmp_path / "a.log"
    copy.write_text((FIXTURES / "align_basic_a.log").read_text())
    before = copy.read_bytes()
    result = run(str(copy), B, "-o", str(copy))
    assert result.exit_code == 2 and "input" in result.output and "Traceback" not in result.output
    assert copy.read_bytes() == before


def test_positions_names_the_position_and_engine_chooses_the_dialect(tmp_path):
    # Two logs without a header engine or id: --engine stockfish reads them, the EPD names the position.
    body = "\n".join(line for line in (FIXTURES / "align_basic_a.log").read_text().splitlines()
                     if not line.startswith(("#", "TREEDUMP")))
    a = tmp_path / "a.log"
    a.write_text(f"TREEDUMP v=1 fen={START}\n{body}\n")
    epd = tmp_path / "named.epd"
    epd.write_text(f'{" ".join(START.split()[:4])} id "opening-start"; c0 "phase=opening";\n')
    refused = run(str(a), B, "--positions", str(epd))
    assert refused.exit_code == 2 and "give --engine" in refused.output
    result = run(str(a), B, "--engine", "stockfish", "--positions", str(epd), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["a"]["position"] == "opening-start"
    assert doc["divergence_total"]["nodes_a"] == 9

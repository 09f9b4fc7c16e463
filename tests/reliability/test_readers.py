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

"""A log's parse into a spill (what ``report`` and ``compare`` run in a forked child: cli/report.py,
``Opening``) imports no pandas: the child then imports the parser and polars while the command's own process
imports pandas and the tables, at the same time (docs/PERFORMANCE.md, fourteenth session).  pyarrow imports
pandas the first time a value crosses one of its converters (``pa.array`` of numpy, ``Array.to_numpy``, a
Python scalar given to a compute function), so a converter used anywhere in the parse would bring it back:
each dialect's logs, and the options a parse reads, are parsed here in a fresh interpreter that says which
data libraries it then holds.  The spill's content is checked elsewhere (tests/store/test_spill*.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PARSE_THEN_LIST = """
import sys, tempfile
from pathlib import Path
from treediff.parse.source import parse_logs_into
options = {"positions": sys.argv[2]} if len(sys.argv) > 2 else {}
warnings = parse_logs_into([sys.argv[1]], [Path(tempfile.mkdtemp())], **options)
print(len(warnings[0]), " ".join(sorted({m.split(".")[0] for m in sys.modules} & {"pandas", "polars", "pyarrow"})))
"""


@pytest.mark.parametrize("log,positions", [
    ("fixtures/traces/stockfish_batch3.log", None),
    ("fixtures/traces/typhoon_tactical-f6f7.log", None),
    ("fixtures/traces/crafty_batch3.log", None),  # SAN: the compiled resolver
    ("fixtures/real/mid_a_d7.log", None),  # real Stockfish 15.1: aspiration, verification re-entries
    ("fixtures/hand/visits_verify.log", None),
    ("fixtures/hand/report_crafty.log", "fixtures/positions20.epd"),  # phases from an EPD file
], ids=lambda v: Path(v).name if v else "-")
def test_a_logs_parse_imports_no_pandas(log, positions):
    argv = [sys.executable, "-c", _PARSE_THEN_LIST, str(ROOT / log)] + ([str(ROOT / positions)] if positions else [])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    _, modules = out.stdout.split(maxsplit=1)
    assert modules.split() == ["polars", "pyarrow"], out.stdout  # parsed (polars), and no pandas


def test_a_garbled_logs_parse_imports_no_pandas(tmp_path):
    """Lines the parser refuses are counted and shown as warnings: that path converts nothing either."""
    lines = (ROOT / "fixtures/traces/typhoon_batch3.log").read_text().splitlines(keepends=True)
    garbled = tmp_path / "garbled.log"
    garbled.write_text("".join(lines[:40] + ["MOVE path=e2e4 ply=x mn=1\n", "garbage line\n"] + lines[40:]))
    out = subprocess.run([sys.executable, "-c", _PARSE_THEN_LIST, str(garbled)], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    warnings, modules = out.stdout.split(maxsplit=1)
    assert int(warnings) > 0, out.stdout  # (the garbage was seen)
    assert modules.split() == ["polars", "pyarrow"], out.stdout

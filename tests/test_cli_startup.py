"""Start-up cost: `treediff parse` and the SAN worker import only what they use.

`treediff parse` is run on every search by the batch runner and on small logs
by hand, where imports dominate; pandas alone costs about 0.15 s.  The SAN
worker process starts in the middle of a parse and should need python-chess only.
"""
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "crafty_batch3.log"

_PARSE_THEN_LIST_MODULES = """
import sys
from treediff.cli import main
sys.argv = ["treediff", "parse", sys.argv[1], "-o", sys.argv[2]]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(" ".join(sorted(m for m in sys.modules if "." not in m)))
"""


def test_parse_does_not_import_pandas_or_the_other_commands(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", _PARSE_THEN_LIST_MODULES, str(FIXTURE), str(tmp_path / "o.parquet")],
        capture_output=True, text=True, timeout=120, check=True,
    )
    modules = set(out.stdout.splitlines()[-1].split())  # (the last line; parse prints a summary first)
    assert (tmp_path / "o.parquet").exists()
    assert "pandas" not in modules
    loaded = subprocess.run(
        [sys.executable, "-c", _PARSE_THEN_LIST_MODULES.replace('if "." not in m', 'if m.startswith("treediff.cli.")'),
         str(FIXTURE), str(tmp_path / "p.parquet")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()[-1].split()
    assert loaded == ["treediff.cli.common", "treediff.cli.parse"]


def test_san_worker_module_needs_only_python_chess():
    code = ("import sys, treediff.parse.san_worker, treediff.parse.moves; "
            "print(' '.join(m for m in ('polars', 'pyarrow', 'pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == []

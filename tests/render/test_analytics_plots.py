"""report --plot DIR adds the search-quality charts (cutoff share by mn, fh% by depth, residual by iteration)."""
from __future__ import annotations

from click.testing import CliRunner

from support.analytics_traces import CUTOFF_CASES, RESIDUAL_CASES, write
from treediff.cli import main


def test_plot_writes_the_analytics_charts(tmp_path):
    a = write(tmp_path, CUTOFF_CASES, "a.log")
    b = write(tmp_path, RESIDUAL_CASES, "b.log")
    out = tmp_path / "plots"
    result = CliRunner().invoke(main, ["report", str(a), str(b), "--table", "nodes", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("cutoff_mn.png", "fh_depth.png", "residual_iter.png", "acts.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert name in result.stderr

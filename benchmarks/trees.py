"""What the same-run benchmarks do to the checkouts they compare before timing them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def compile_package(root: Path | str) -> None:
    """Byte-compile ``root``'s ``treediff`` package (``.pyc`` next to the sources, refreshed where stale).

    Under ``PYTHONDONTWRITEBYTECODE`` (set on these machines) no run writes them, so a fresh ``git worktree``
    compiles its ~100 modules again in every run (~0.1-0.15 s of imports) while the main checkout loads most
    of its from old ``.pyc`` files: that skewed the new/base ratios of small inputs towards the new tree.  A
    user's install writes them once; so does this, for both trees alike."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(root) / "treediff")], check=True,
                   stdout=subprocess.DEVNULL)

"""The scripts of ``benchmarks/`` as modules, for tests that reuse their generators or check their figures.

``benchmarks/`` is neither a package nor on ``sys.path``, so a script is loaded from its file.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, loaded once per test process.

    It is registered in ``sys.modules`` before it runs: a script's dataclasses look their module up
    while it loads.
    """
    key = f"benchmarks_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module

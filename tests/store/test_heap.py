"""store/heap.py: freed memory kept for reuse, observed as page faults of a large array made a second time.

glibc serves a 64 MiB block with a fresh mmap and unmaps it when freed, so making the array again faults
its pages in again (16,384 faults of 4 KiB pages, or 32 of 2 MiB transparent huge pages).  With the
thresholds raised, the second array reuses the first one's heap pages: (almost) no fault.  Each case runs
in a fresh interpreter: the setting is process-wide.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or not platform.libc_ver()[0] == "glibc",
                                reason="glibc's malloc only")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "typhoon_start.log"

#: Prints the minor page faults of making (and touching) a 64 MiB array again after one was freed.
_FAULTS = r"""
import resource
import numpy as np

def faults_of_a_new_array():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(8 << 20)  # 64 MiB of float64, every page touched
    del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults_of_a_new_array()
print("faults", faults_of_a_new_array())
"""


def _faults(prefix: str, env: dict | None = None) -> tuple[int, str]:
    run = subprocess.run([sys.executable, "-c", prefix + _FAULTS], capture_output=True, text=True, timeout=120,
                         env={**_clean_env(), **(env or {})})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    return int(lines[-1].split()[1]), "\n".join(lines[:-1])


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def test_freed_memory_is_reused_once_kept():
    default, _ = _faults("")
    kept, said = _faults("from treediff.store.heap import keep_freed_heap\nprint(keep_freed_heap())\n")
    assert said == "True"
    assert default >= 16, default  # (a fresh mapping each time: the test shows something only if this holds)
    assert kept < 8, kept


def test_the_users_own_malloc_settings_are_left_alone():
    faults, said = _faults("from treediff.store.heap import keep_freed_heap\nprint(keep_freed_heap())\n",
                           env={"MALLOC_ARENA_MAX": "2", "MALLOC_TOP_PAD_": "0"})
    assert said == "False"
    assert faults >= 16


@pytest.mark.parametrize(("command", "kept"), [("report", True), ("whatif", True), ("compare", False),
                                               ("report-small-limit", False)])
def test_report_and_whatif_keep_freed_memory_and_compare_does_not(tmp_path, command, kept):
    """compare gained nothing from it and held more memory (store/heap.py), so it leaves malloc as it is.  With
    ``--memory-limit 100MB`` report keeps an eighth of it (12.5 MB): the 64 MiB array is mapped afresh again."""
    args = {"report": ["report", str(FIXTURE)],
            "report-small-limit": ["report", str(FIXTURE), "--memory-limit", "100MB"],
            "whatif": ["whatif", str(FIXTURE), "--rule", "mn >= 6"],
            "compare": ["compare", str(FIXTURE), str(FIXTURE)]}[command]
    prefix = ("import os, sys\nfrom treediff.cli import main\n"
              f"try:\n    main({args!r})\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n")
    faults, _ = _faults(prefix, env={"TREEDIFF_FORK": "0"})
    assert (faults < 8) == kept, faults


def test_what_is_kept_is_an_eighth_of_the_memory_limit_at_most_256_mib():
    from treediff.store.heap import KEPT_BYTES, kept_within

    assert KEPT_BYTES == 256 << 20
    assert kept_within(2 * 1024**3) == 256 << 20  # the default limit: 2 GiB / 8
    assert kept_within(16 * 1024**3) == 256 << 20
    assert kept_within(100_000_000) == 12_500_000
    assert kept_within(0) == 0

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


# ------------------------------------------------------------------ giving freed memory back (compare)

#: Makes 2,000 blocks of 64 KiB (below malloc's mmap threshold: heap blocks), frees three in four (the kept
#: ones keep the heap's top, so glibc's own trim of the top gives nothing back), and prints the resident
#: KiB before and after one call of ``trim_freed_heap_now_and_then``, and what it returned.
_FRAGMENTED = r"""
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

blocks = [bytearray(64 << 10) for _ in range(2000)]
kept = blocks[3::4]
del blocks
before = rss_kib()
from treediff.store import heap
did = heap.trim_freed_heap_now_and_then()
print(before, rss_kib(), did)
"""


def _trimmed(prefix: str) -> tuple[int, int, str]:
    run = subprocess.run([sys.executable, "-c", prefix + _FRAGMENTED], capture_output=True, text=True,
                         timeout=120, env=_clean_env())
    assert run.returncode == 0, run.stderr
    before, after, did = run.stdout.split()
    return int(before), int(after), did


def test_a_fragmented_heap_is_given_back_once_asked_and_not_before():
    before, after, did = _trimmed("")
    assert did == "False" and before - after < 16 << 10, (before, after)  # (glibc alone keeps it)
    asked = "from treediff.store import heap\nheap.give_back_freed_heap()\n"
    before, after, did = _trimmed(asked)  # (~160 MB resident: below TRIM_ABOVE, left as it is)
    assert did == "False" and before - after < 16 << 10, (before, after)
    before, after, did = _trimmed(asked + "heap.TRIM_ABOVE = 64 << 20\n")
    # 1,500 freed blocks of 64 KiB: ~94 MiB free amid the heap
    assert did == "True" and before - after > 64 << 10, (before, after)


def test_the_heap_is_trimmed_at_most_once_an_interval(monkeypatch):
    from treediff.store import heap

    calls: list[int] = []
    clock = [1000.0]
    monkeypatch.setattr(heap, "_trimming", False)
    monkeypatch.setattr(heap, "_last_trim", 0.0)
    monkeypatch.setattr(heap, "TRIM_ABOVE", 0)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    monkeypatch.setattr(heap.time, "monotonic", lambda: clock[0])
    assert not heap.trim_freed_heap_now_and_then() and calls == []  # (not asked for)
    heap.give_back_freed_heap()
    assert heap.trim_freed_heap_now_and_then() and calls == [0]
    clock[0] += heap.TRIM_INTERVAL / 2
    assert not heap.trim_freed_heap_now_and_then() and calls == [0]
    clock[0] += heap.TRIM_INTERVAL / 2
    assert heap.trim_freed_heap_now_and_then() and calls == [0, 0]
    monkeypatch.setattr(heap, "TRIM_ABOVE", 1 << 50)  # (a process holding less than that: not trimmed)
    clock[0] += heap.TRIM_INTERVAL
    assert not heap.trim_freed_heap_now_and_then() and calls == [0, 0]
    monkeypatch.setattr(heap, "TRIM_ABOVE", 0)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)  # (no glibc)
    clock[0] += heap.TRIM_INTERVAL
    assert not heap.trim_freed_heap_now_and_then()


def test_batches_read_after_release_freed_memory_trim_the_heap_between_them(monkeypatch):
    """compare calls release_freed_memory; the batch reader then trims between batches."""
    from treediff.parse.source import open_source
    from treediff.store import heap
    from treediff.store.source import release_freed_memory

    calls: list[int] = []
    monkeypatch.setattr(heap, "_trimming", False)
    monkeypatch.setattr(heap, "TRIM_INTERVAL", 0.0)
    monkeypatch.setattr(heap, "TRIM_ABOVE", 0)
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    source = open_source(FIXTURE.with_name("stockfish_batch3.log"))
    batches = sum(1 for _ in source.arrow_batches(["kind"], target=20))
    assert batches >= 3 and calls == []  # (report and the rest: malloc as it is)
    release_freed_memory()
    assert sum(1 for _ in source.arrow_batches(["kind"], target=20)) == batches
    assert len(calls) >= batches - 1

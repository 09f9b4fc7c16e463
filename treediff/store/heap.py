"""glibc's malloc told to keep freed memory for reuse, for the commands that fold many large batches.

A report folds batches of ~1M records, each table making numpy temporaries of a few to tens of MB and
freeing them.  glibc serves a block above its mmap threshold (128 KiB, raised as such blocks are freed, up to
32 MiB) with a fresh ``mmap`` and returns it at ``free``, and gives the heap's free top back once it
exceeds its trim threshold: so the next batch's arrays are new pages again, each one zeroed by the kernel on
its first touch.  Measured (docs/PERFORMANCE.md, fifteenth session), with both thresholds at 256 MiB,
against the code before: ``report --table all`` of the 20M-record Parquet file 9.40 -> 8.93 s (17.9 -> 16.7
CPU-s, peak RSS 632 -> 658 MB), of the 5M-record one 2.62 -> 2.41 s; ``report`` of the 5M-line log 3.71 ->
3.52 s (6.66 -> 6.30 CPU-s); ``whatif`` of it 2.90 -> 2.73 s.  ``compare`` gained nothing and held 143 MB
more at 5M + 5M, ``parse`` nothing: they do not call this.
"""
from __future__ import annotations

import os
import time
from typing import Callable

__all__ = ["KEPT_BYTES", "TRIM_ABOVE", "TRIM_INTERVAL", "give_back_freed_heap", "keep_freed_heap", "kept_within",
           "trim_freed_heap_now_and_then"]

#: The mmap and trim thresholds set (bytes): a block below it comes from the heap, and up to this much of
#: the heap's free top is kept.  Bounds what the process holds beyond its live data.
KEPT_BYTES = 256 << 20


def kept_within(limit: int) -> int:
    """The thresholds for a command that may hold ``limit`` bytes (``--memory-limit``): an eighth of it, at
    most :data:`KEPT_BYTES`.  ``report --table all`` of a 100M-line log, whose three processes each keep some:
    1,659 MB of summed PSS against 1,447 MB before, at the default 2 GB (fifteenth session)."""
    return max(0, min(KEPT_BYTES, limit // 8))

# mallopt(3) parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Environment variables through which a user sets these thresholds: when one is set, it is kept.
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def keep_freed_heap(kept: int = KEPT_BYTES) -> bool:
    """Set glibc's mmap and trim thresholds to ``kept`` bytes for this process (and the children it forks
    later); True when set.  Nothing is done (False) without glibc's ``mallopt`` (macOS, musl accepts nothing),
    when the user's environment sets malloc's tunables, or when ``kept`` is 0.  Only the allocator's policy
    changes: numbers and outputs stay the same."""
    if kept <= 0 or any(name in os.environ for name in _USER_SETTINGS):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # (no C library to load, or one without mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # (each returns 1 when accepted; the mmap threshold first: setting either one alone fixes the other at its
    # default, and a 128 KiB mmap threshold with a large trim threshold was measured 25% slower)
    return bool(mallopt(_M_MMAP_THRESHOLD, kept)) and bool(mallopt(_M_TRIM_THRESHOLD, kept))


#: Seconds at least between two trims of the heap (:func:`trim_freed_heap_now_and_then`).
TRIM_INTERVAL = 1.0
#: Resident bytes below which the heap is not trimmed: a trim's pages are faulted in again when reused (89
#: trims cost ~40 CPU-s, most of it the kernel's, in a compare 100M + 100M holding ~2 GB whose positions came
#: back five times), a cost a process holding little need not pay.
TRIM_ABOVE = 512 << 20
#: Whether :func:`trim_freed_heap_now_and_then` trims (:func:`give_back_freed_heap` turns it on), and when it
#: last did (``time.monotonic()``).
_trimming = False
_last_trim = 0.0


def give_back_freed_heap() -> None:
    """From now on, give the heap's free pages back to the system every :data:`TRIM_INTERVAL` seconds, as
    batches are read (:func:`trim_freed_heap_now_and_then`): for compare, whose ``--memory-limit``
    counts what it holds, the opposite of :func:`keep_freed_heap` (its tables and divergences call this,
    through :func:`treediff.store.source.release_freed_memory`).

    glibc returns a freed block to the system only if it was mmapped or lies at the heap's top.  compare
    frees many blocks of a few KiB to a few MiB (per-position slices and their copies, the aligner's arrays)
    among live ones, so the heap kept its high-water mark: compare 100M + 100M (distinct positions) peaked at
    2.70 GB of summed PSS, 2.5 GB of it one process, with 545 MB of Arrow data live; ``malloc_trim(0)`` every
    2 s in that run gave back 0.2-1.2 GB each time (docs/PERFORMANCE.md, sixteenth session).  Numbers and
    outputs stay the same; only the allocator's memory changes."""
    global _trimming
    _trimming = True


def trim_freed_heap_now_and_then() -> bool:
    """``malloc_trim(0)`` (glibc: every free page of every arena back to the system) if
    :func:`give_back_freed_heap` was called, :data:`TRIM_INTERVAL` seconds passed since the last and the
    process holds at least :data:`TRIM_ABOVE` bytes; True when it trimmed.  Nothing without glibc.  Called
    between batches (:func:`treediff.store.source.read_ahead`)."""
    global _last_trim
    if not _trimming:
        return False
    now = time.monotonic()
    if now - _last_trim < TRIM_INTERVAL:
        return False
    _last_trim = now
    resident = _resident_bytes()
    if resident is not None and resident < TRIM_ABOVE:
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def _resident_bytes() -> int | None:
    """This process's resident set (bytes), from ``/proc/self/statm``; None where there is none."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl)."""
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim

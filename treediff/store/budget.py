"""What a command may hold in memory at once (``--memory-limit``), and how its reads and buffers share it.

A light module (the standard library and treediff's errors only): the CLI parses ``--memory-limit`` for
``report``, ``compare`` and ``diff`` without importing the aligner (pandas, pyarrow: ~0.5 s of a small
log's start-up).  The aligner's streaming (:mod:`treediff.align.stream`) and the report's batch size read
the same :class:`MemoryBudget`.

Units: ``MemoryBudget.limit`` is bytes; record budgets are records (rows of the records table).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from treediff.model.errors import InputError

#: ``--memory-limit``'s default (bytes): 2 GiB.
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
#: Bytes of peak memory one record of a position pair costs while it is buffered, aligned and attributed
#: (measured, docs/SCALING.md: the aligner's working set over 2M + 2M records, plus the buffered frames).
BYTES_PER_RECORD = 600
#: Of the budget, the share a batch read may take (per side): two batches of each side are in memory at once
#: (the next one is prefetched) and a report table's partials of a batch cost about as much again as the
#: batch; the rest is for buffering and aligning.  Measured: 1/8 (447k records at 2 GB) peaked at 2.4 GB
#: on two 5M-line logs.
_BATCH_SHARE = 16
#: Records (both inputs of a compare together) per GiB of ``--memory-limit`` up to which compare forks its
#: divergences (:attr:`MemoryBudget.fork_records`).  Measured at the default 2 GiB (docs/SCALING.md): 20M + 20M
#: lines (40M records, 2,479 positions) peaked at 1.03 GB of summed PSS in two processes; 100M + 100M (200M
#: records, 10,976 positions) at 2.13 GiB, over the limit (and no faster than one process).  Between the two
#: it was not measured: this is the measured point that fits, not a fitted bound.
FORK_RECORDS_PER_GIB = 20_000_000
#: Records (both inputs of a compare; a report's input) from which a pass is run in two processes: below, the
#: fork costs more than the overlap saves.  Measured for compare (docs/PERFORMANCE.md, eighth session): two
#: small fixture logs 5% slower forked; 250k + 250k lines about even (1.66 against 1.70 s); 1M + 1M 10%
#: faster.  report takes the same bound; measured for it in the ninth session (a stockfish log's report
#: `--table all`, the parse and the fold forked against one process, 7 rounds): 125k lines 1.31 against
#: 1.27 s, 250k 1.53 against 1.54, 500k 1.81 against 1.82 (even), 1M 2.32 against 2.64.
FORK_MIN_RECORDS = 500_000
#: Bytes of logs from which ``compare`` parses its first log in a forked child while it parses the others
#: itself (``cli/report.py: _open_each``): about :data:`FORK_MIN_RECORDS` lines, at 64 bytes a line (the
#: benchmark logs' lines are 77 bytes).  Below it one child parses every log while compare imports its tables
#: (``Opening``).  ``report`` forks its parse at any size since the fourteenth session: forked before either
#: process imports, the child's imports overlap the command's (a small log's report 0.44 -> 0.36 s; before,
#: with the parser imported first, the fork cost ~60 ms, ninth session).
FORK_MIN_LOG_BYTES = FORK_MIN_RECORDS * 64
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4, "tb": 1024**4, "tib": 1024**4}


def parse_memory_limit(text: str | int) -> int:
    """``--memory-limit``: ``2GB``, ``512MB``, ``1.5G``, ``800k`` or plain bytes -> bytes (1 KB = 1024 B)."""
    if isinstance(text, int):
        value = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", str(text))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise InputError(f"--memory-limit {text}: not a size (e.g. 2GB, 512MB, 1.5G)")
        value = int(float(match.group(1)) * _UNITS[str(unit)])
    if value <= 0:
        raise InputError(f"--memory-limit {text}: must be more than 0 bytes")
    return value


def format_bytes(n: int) -> str:
    """A byte count as the shortest of GB/MB/KB (1024-based), as ``--memory-limit`` reads it."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class MemoryBudget:
    """What a command may hold at once: ``limit`` bytes (``--memory-limit``)."""

    limit: int = DEFAULT_MEMORY_LIMIT

    def share(self, parts: int) -> MemoryBudget:
        """The budget of one of ``parts`` passes that run at once (compare's divergences, in a child process
        beside its tables: :mod:`treediff.run.forked`): the limit divided among them."""
        return MemoryBudget(max(1, self.limit // max(1, parts)))

    @property
    def fork_records(self) -> int:
        """The most records (both inputs together) for which compare aligns its divergences in a forked child
        beside the tables (:data:`FORK_RECORDS_PER_GIB` per GiB of the limit).  Two processes hold two
        interpreters and the aligner's per-position results, which the batch budgets do not count."""
        return int(self.limit / 1024**3 * FORK_RECORDS_PER_GIB)

    @property
    def records(self) -> int:
        """Records of a position pair that fit (at :data:`BYTES_PER_RECORD` each); at least 1."""
        return max(1, self.limit // BYTES_PER_RECORD)

    @property
    def batch_records(self) -> int:
        """The ``target`` of a batch read per side (whole searches, so a batch can be larger): compare's
        tables and its divergences read in batches of this many records."""
        return max(1, self.records // _BATCH_SHARE)

    @property
    def report_batch_records(self) -> int:
        """``report``'s batch target: an eighth of :attr:`records` (447k at 2 GB; at most the sources' own
        1M-record default).  Two batches are alive at once (the next is read ahead), and the tables' work on
        a batch (the move-try derivation's arrays and hash tables, the partials) costs about as much again
        as the batch itself: `report --table all` on a 20M-record file peaked at 1.68 GB with a quarter
        (894k), 1.33 GB with an eighth, at the same CPU (docs/SCALING.md)."""
        from treediff.store.source import BATCH_RECORDS  # (pyarrow: imported when a report sizes its batches)

        return max(1, min(BATCH_RECORDS, self.records // 8))

    @property
    def pending_bytes(self) -> int:
        """Bytes the positions waiting for the other input may keep in memory (a quarter of the limit;
        counted as the batches their frames keep alive, :meth:`_Side.held`); beyond, they are spilled.

        Half the limit until the sixteenth session: with what the process held when its divergences began
        (the tables' results, the interpreter: ~0.5 GB at 100M + 100M) and the aligner beside it, compare
        100M + 100M peaked at 2.33 GB of summed PSS; at a quarter, 1.53 GB in about the same time (169.5
        against 172.7-177.1 s; docs/PERFORMANCE.md)."""
        return max(1, self.limit // 4)

    def check_pair(self, label: str, n_a: int, n_b: int, paths: Sequence[str]) -> None:
        """Refuse, before aligning, a position pair larger than the budget (exit 2 naming files and position)."""
        if n_a + n_b > self.records:
            raise InputError(
                f"{paths[0]} and {paths[1]}: position {label} holds {n_a:,} + {n_b:,} records, more than "
                f"--memory-limit {format_bytes(self.limit)} lets the aligner hold at once (about "
                f"{self.records:,} records at {BYTES_PER_RECORD} bytes each); give a larger --memory-limit")

"""Counting what is wrong with a log's lines: one reason, a count, and the first line numbers."""
from __future__ import annotations

import collections
from typing import Callable

import numpy as np

#: Line numbers shown per reason (and per search for unresolved moves); the rest is counted.
FIRST_LINES_SHOWN = 5


class Problems:
    """Counts of unusable or suspicious lines, with the first line numbers of each."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.first: dict[str, list[int]] = collections.defaultdict(list)
        #: Called before a reason is counted for the first time (the warnings come in that order): the parser's
        #: move checks, counted later than they were made, are counted there first (parse/paths.py).
        self.before_new_reason: Callable[[], None] | None = None

    def _new(self, reason: str) -> None:
        if reason not in self.counts and self.before_new_reason is not None:
            self.before_new_reason()

    def add(self, reason: str, line: int, count: int = 1) -> None:
        self._new(reason)
        self.counts[reason] += count
        if len(self.first[reason]) < FIRST_LINES_SHOWN:
            self.first[reason].append(line)

    def add_many(self, reason: str, lines: np.ndarray) -> None:
        if len(lines) == 0:
            return
        self._new(reason)
        self.counts[reason] += int(len(lines))
        room = FIRST_LINES_SHOWN - len(self.first[reason])
        if room > 0:
            self.first[reason].extend(int(x) for x in lines[:room])

    def merge(self, other: "Problems", offset: int) -> None:
        """Add ``other``'s problems, whose lines are numbered from 0, to lines from ``offset`` on."""
        for reason, count in other.counts.items():
            self._new(reason)
            self.counts[reason] += count
            room = FIRST_LINES_SHOWN - len(self.first[reason])
            if room > 0:
                self.first[reason].extend(line + offset for line in other.first[reason][:room])

    def messages(self, source: str) -> list[str]:
        out = []
        for reason, count in self.counts.items():
            lines = ", ".join(str(x) for x in sorted(self.first[reason]))
            more = "" if count <= len(self.first[reason]) else ", ..."
            noun = "line" if count == 1 else "lines"
            out.append(f"{source}: {count} {noun} {reason} (line {lines}{more})")
        return out

    def __bool__(self) -> bool:
        return bool(self.counts)

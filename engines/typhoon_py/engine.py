"""Library entry points: run searches with tracing and counters, read EPD files, place the trace."""
from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, TextIO

import chess

from typhoon_py.profiles import LmrPolicy, PruneScope, get_profile
from typhoon_py.search import SearchConfig, Searcher, SearchOutcome

DEFAULT_TRACE = "treedump.log"
#: Words that switch tracing off where a trace path is expected.
TRACE_OFF = frozenset({"", "none", "off"})
#: The trace path meaning standard output (``--treedump -``).
STDOUT_TRACE = Path("-")


def make_config(profile: str = "typhoon", lmr_policy: str = "profile",
                prune_scope: str = "move", trace_silent: bool = False) -> SearchConfig:
    """A :class:`SearchConfig` from the command-line spellings; ``ValueError`` on bad names."""
    return SearchConfig(get_profile(profile), LmrPolicy(lmr_policy), PruneScope(prune_scope), trace_silent)


def resolve_trace_path(explicit: Optional[str], disabled: bool = False) -> Optional[Path]:
    """Where the trace goes: ``explicit``, else ``$TREEDUMP``, else ``treedump.log`` in the
    working directory (as the instrumented C builds do); ``None`` when tracing is off,
    :data:`STDOUT_TRACE` for ``-`` (standard output)."""
    if disabled:
        return None
    value = explicit if explicit is not None else os.environ.get("TREEDUMP", DEFAULT_TRACE)
    if value.strip().lower() in TRACE_OFF:
        return None
    return Path(value)


@dataclass(frozen=True)
class EpdPosition:
    """One EPD line: the board, its ``id`` and its phase label (from ``c0 "phase=..."``)."""

    board: chess.Board
    id: Optional[str]
    phase: Optional[str]


def phase_label(ops: dict) -> Optional[str]:
    """The phase from EPD opcodes: the first ``cN "phase=<label>"`` comment, else ``None``."""
    for key in sorted(k for k in ops if k.startswith("c") and k[1:].isdigit()):
        value = str(ops[key])
        if value.startswith("phase="):
            return value[len("phase="):]
    return None


def read_epd(path: str | os.PathLike) -> list[EpdPosition]:
    """All positions of an EPD file (blank lines and ``#`` comments skipped)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                board, ops = chess.Board.from_epd(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: bad EPD line: {exc}") from None
            ident = ops.get("id")
            out.append(EpdPosition(board, str(ident) if ident is not None else None, phase_label(ops)))
    return out


def run_search(board: chess.Board, depth: int, config: SearchConfig, trace: Optional[TextIO] = None,
               position_id: Optional[str] = None, phase: Optional[str] = None,
               ctx: Optional[str] = None, stop: Optional[threading.Event] = None,
               node_limit: Optional[int] = None,
               on_iteration: Optional[Callable[[int, int, Searcher], None]] = None,
               header: bool = True) -> SearchOutcome:
    """Search ``board`` (a copy is searched) to ``depth`` plies; trace lines go to ``trace``."""
    searcher = Searcher(board.copy(), config, trace=trace, ctx=ctx, stop=stop, node_limit=node_limit)
    outcome = searcher.run(depth, position_id=position_id, phase=phase,
                           on_iteration=on_iteration, header=header)
    if trace is not None:
        trace.flush()
    return outcome


def run_batch(positions: Iterable[EpdPosition], depth: int, config: SearchConfig,
              trace: Optional[TextIO] = None) -> list[SearchOutcome]:
    """One search per position, in order, into one trace (a batch log)."""
    return [run_search(p.board, depth, config, trace, p.id, p.phase) for p in positions]


def write_counters(path: str | os.PathLike, outcomes: list[SearchOutcome], batch: bool = False) -> None:
    """``--counters``: one JSON object for a single search, a list of them for a batch."""
    data = [o.counters() for o in outcomes] if batch else outcomes[0].counters()
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


class _StdoutTrace:
    """The trace on standard output: written and flushed like a file, never closed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.write = stream.write

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


def open_trace(path: Optional[Path]) -> Optional[TextIO]:
    """The trace file opened for writing (truncated), standard output for
    :data:`STDOUT_TRACE`, or ``None`` when tracing is off."""
    if path is None:
        return None
    if path == STDOUT_TRACE:
        return _StdoutTrace(sys.stdout)  # type: ignore[return-value]
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 16)

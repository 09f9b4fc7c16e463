"""Regenerate the committed example traces: ``python -m typhoon_py.fixtures fixtures/traces``.

For every profile it writes one trace per single position (the user's
tactical position and the start position) and one 3-position batch log,
each with the engine's counters next to it (``<name>.counters.json``).
Depths are chosen per file to keep each trace under ~400 KB.  The output is
deterministic: rerunning reproduces every file byte for byte.
"""
from __future__ import annotations

import argparse
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from typhoon_py.engine import EpdPosition, make_config, read_epd, run_search

DEFAULT_EPD = Path("fixtures/positions20.epd")
PROFILE_NAMES = ("typhoon", "stockfish", "crafty")


@dataclass(frozen=True)
class TraceFixture:
    """One fixture file: the positions (EPD ids) it searches and the depth per profile (plies)."""

    name: str
    position_ids: tuple[str, ...]
    depth: dict[str, int]

    def file_name(self, profile: str) -> str:
        return f"{profile}_{self.name}.log"


FIXTURES: tuple[TraceFixture, ...] = (
    TraceFixture("tactical-f6f7", ("tactical-f6f7",), {"typhoon": 4, "stockfish": 5, "crafty": 3}),
    TraceFixture("start", ("start",), {"typhoon": 4, "stockfish": 5, "crafty": 4}),
    TraceFixture("batch3", ("start", "kiwipete", "rook-endgame"), {"typhoon": 3, "stockfish": 4, "crafty": 3}),
)


def render(fixture: TraceFixture, profile: str, positions: dict[str, EpdPosition]) -> tuple[str, list[dict]]:
    """The trace text and the per-search counters of one fixture for one profile."""
    config = make_config(profile)
    buf = io.StringIO()
    counters = []
    for pid in fixture.position_ids:
        p = positions[pid]
        outcome = run_search(p.board, fixture.depth[profile], config, buf, p.id, p.phase)
        counters.append(outcome.counters())
    return buf.getvalue(), counters


def regenerate(out_dir: Path, epd: Path = DEFAULT_EPD, only: Optional[Sequence[str]] = None) -> list[Path]:
    """Write every fixture (or only the file names in ``only``) into ``out_dir``."""
    positions = {p.id: p for p in read_epd(epd) if p.id}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fixture in FIXTURES:
        for profile in PROFILE_NAMES:
            name = fixture.file_name(profile)
            if only is not None and name not in only:
                continue
            text, counters = render(fixture, profile, positions)
            log_path = out_dir / name
            log_path.write_bytes(text.encode("utf-8"))
            data = counters[0] if len(counters) == 1 else counters
            counters_path = out_dir / (name[:-len(".log")] + ".counters.json")
            counters_path.write_bytes((json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))
            written += [log_path, counters_path]
    return written


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m typhoon_py.fixtures", description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", type=Path, help="output directory, e.g. fixtures/traces")
    parser.add_argument("--epd", type=Path, default=DEFAULT_EPD, help="positions file (default: %(default)s)")
    parser.add_argument("--only", nargs="*", default=None, help="only these file names")
    args = parser.parse_args(argv)
    for path in regenerate(args.out_dir, args.epd, args.only):
        print(path)


if __name__ == "__main__":
    main()

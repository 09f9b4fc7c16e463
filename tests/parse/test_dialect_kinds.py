"""The parser takes act -> kind from each dialect's own table (Dialect.kind_table), not from a registry copy."""
from __future__ import annotations

from pathlib import Path

import pytest

from treediff.model.taxonomy import Kind
from treediff.parse.dialects import DIALECTS, Dialect
from treediff.parse.pipeline import parse_logs

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_kind_table_is_the_act_vocabulary_as_strings(name):
    dialect = DIALECTS[name]
    table = dialect.kind_table()
    assert table == {act: dialect.kind_of(act).value for act in dialect.acts}
    assert dialect.kind_of("NO-SUCH-ACT") is Kind.OTHER and "NO-SUCH-ACT" not in table
    table["FULL"] = "changed"  # a fresh dict each time: callers cannot change the dialect
    assert dialect.kind_table()["FULL"] == Kind.SEARCH.value


@pytest.mark.parametrize("logs", [["minimal_stockfish.log"], ["minimal_stockfish.log", "minimal_typhoon.log"]],
                         ids=["one dialect (act dictionary)", "two dialects (row by row)"])
def test_parser_uses_the_dialects_kind_table(monkeypatch, tmp_path, logs):
    # Two dialects in one chunk take the row-by-row path: both must read the dialect's table.
    log = tmp_path / "joined.log"
    log.write_bytes(b"".join((HAND / name).read_bytes() for name in logs))
    real = Dialect.kind_table

    def swapped(self: Dialect) -> dict[str, str]:
        return {**real(self), "FULL": Kind.PRUNE.value} if self.name == "stockfish" else real(self)

    monkeypatch.setattr(Dialect, "kind_table", swapped)
    records = parse_logs([log]).records.to_pylist()
    full = [(r["engine"], r["kind"]) for r in records if r["act"] == "FULL"]
    assert ("stockfish", "PRUNE") in full and ("stockfish", "SEARCH") not in full
    assert all(kind == "SEARCH" for engine, kind in full if engine != "stockfish")

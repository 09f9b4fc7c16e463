"""The loader: any mix of inputs, unique search numbers, categoricals kept."""
from pathlib import Path

import pandas as pd
import pytest

from treediff.model.errors import InputError
from treediff.parse.load import load
from treediff.parse.core import parse_to_parquet

HAND = Path(__file__).resolve().parent.parent / "fixtures" / "hand"


def test_mixed_inputs_get_unique_search_numbers(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    loaded = load([HAND / "minimal_stockfish.log", parquet, HAND / "minimal_crafty.log"])
    assert loaded.searches["search"].tolist() == [0, 1, 2]
    assert loaded.searches["engine"].tolist() == ["stockfish", "typhoon", "crafty"]
    per_search = loaded.records.groupby("search", observed=True).size().to_dict()
    # Hand counts of the three fixtures: 13, 11 and 15 MOVE+RESULT records.
    assert per_search == {0: 13, 1: 11, 2: 15}
    assert isinstance(loaded.records["act"].dtype, pd.CategoricalDtype)
    assert set(loaded.records["engine"].cat.categories) == {"stockfish", "typhoon", "crafty"}


def test_columns_are_limited_but_keys_kept():
    loaded = load([HAND / "minimal_stockfish.log"], columns=["act"])
    assert list(loaded.records.columns) == ["engine", "search", "act"]


def test_parquet_without_its_searches_table_is_a_clear_error(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    (tmp_path / "t.searches.parquet").unlink()
    with pytest.raises(InputError, match="searches table"):
        load([parquet])


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load([tmp_path / "nope.log"])


def test_parse_warnings_reach_the_loader_and_the_commands(tmp_path):
    """Reports on a log must not hide what parsing it warned about (here a 0-node search)."""
    from click.testing import CliRunner

    from treediff.cli import main

    log = tmp_path / "zero.log"
    log.write_text("TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\nITER d=1\nEND nodes=0\n")
    assert any("0-node search" in w for w in load([log]).warnings)
    for args in (["report", str(log), "--table", "nodes"],
                 ["compare", str(log), str(HAND / "minimal_stockfish.log"), "--allow-different-positions"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "warning:" in result.output and "0-node search" in result.output


def test_parquet_inputs_carry_no_parse_warnings(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_crafty.log"], parquet)  # warns about its two illegal moves
    assert load([parquet]).warnings == []

from __future__ import annotations

from pathlib import Path

import pytest

from support.tracebuild import concat, read_fixture

HERE = Path(__file__).resolve().parent

FIXTURES = HERE.parents[1] / "fixtures" / "hand"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def typhoon():
    return read_fixture(FIXTURES / "report_typhoon.log")


@pytest.fixture(scope="session")
def stockfish():
    return read_fixture(FIXTURES / "report_stockfish.log")


@pytest.fixture(scope="session")
def crafty():
    return read_fixture(FIXTURES / "report_crafty.log")


@pytest.fixture(scope="session")
def three(typhoon, stockfish, crafty):
    """typhoon, stockfish and crafty loaded together (in that order), as open_sources combines them."""
    return concat(typhoon, stockfish, crafty)

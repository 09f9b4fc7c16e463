"""open_source / open_sources: any mix of inputs as one Source, unique search numbers, categoricals kept."""
from pathlib import Path

import pandas as pd
import pytest

from treediff.model.errors import InputError
from treediff.parse.source import open_source, open_sources
from treediff.parse.core import parse_to_parquet

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def test_mixed_inputs_get_unique_search_numbers(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    source = open_sources([HAND / "minimal_stockfish.log", parquet, HAND / "minimal_crafty.log"])
    assert source.searches["search"].tolist() == [0, 1, 2]
    assert source.searches["engine"].tolist() == ["stockfish", "typhoon", "crafty"]
    records = source.records()
    per_search = records.groupby("search", observed=True).size().to_dict()
    # Hand counts of the three fixtures: 13, 11 and 15 MOVE+RESULT records.
    assert per_search == {0: 13, 1: 11, 2: 15}
    assert isinstance(records["act"].dtype, pd.CategoricalDtype)
    assert set(records["engine"].cat.categories) == {"stockfish", "typhoon", "crafty"}
    # One batch per input held in memory, each of whole searches, numbered as the searches table.
    assert [sorted(set(b["search"])) for b in source.batches(["act"])] == [[0], [1], [2]]


def test_selection_reads_only_the_chosen_searches(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    source = open_sources([HAND / "minimal_stockfish.log", parquet, HAND / "minimal_crafty.log"])
    chosen = source.select((source.searches["engine"] != "typhoon").to_numpy())
    assert chosen.searches["search"].tolist() == [0, 2]
    assert chosen.records(["act"]).groupby("search", observed=True).size().to_dict() == {0: 13, 2: 15}
    assert len(source.select_position("nope").records(["act"])) == 0


def test_columns_are_limited_but_keys_kept():
    records = open_source(HAND / "minimal_stockfish.log").records(["act"])
    assert list(records.columns) == ["engine", "search", "act"]


def test_parquet_without_its_searches_table_is_a_clear_error(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    (tmp_path / "t.searches.parquet").unlink()
    with pytest.raises(InputError, match="searches table"):
        open_source(parquet)


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        open_source(tmp_path / "nope.log")


def test_parse_warnings_reach_the_loader_and_the_commands(tmp_path):
    """Reports on a log must not hide what parsing it warned about (here a 0-node search)."""
    from click.testing import CliRunner

    from treediff.cli import main

    log = tmp_path / "zero.log"
    log.write_text("TREEDUMP engine=stockfish v=1 id=p fen=8/8/8/8/8/8/8/K6k w - - 0 1\nITER d=1\nEND nodes=0\n")
    assert any("0-node search" in w for w in open_source(log).warnings)
    for args in (["report", str(log), "--table", "nodes"],
                 ["compare", str(log), str(HAND / "minimal_stockfish.log"), "--allow-different-positions"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "warning:" in result.output and "0-node search" in result.output


def test_parquet_inputs_carry_no_parse_warnings(tmp_path):
    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_crafty.log"], parquet)  # warns about its two illegal moves
    assert open_source(parquet).warnings == []


def test_open_each_parses_logs_at_once_and_yields_them_in_order(tmp_path, monkeypatch):
    """open_each: the sources open_source gives, in input order, while the parses overlap (two threads)."""
    import threading

    import treediff.parse.source as source_module
    from treediff.parse.source import open_each

    logs = [HAND / "minimal_stockfish.log", HAND / "minimal_typhoon.log", HAND / "minimal_crafty.log"]
    started, overlapped = threading.Barrier(2, timeout=30), []
    real = source_module.open_source

    def meeting(path, **options):
        if path != logs[2]:  # the first two meet while both are open: they run at the same time
            started.wait()
            overlapped.append(path)
        return real(path, **options)

    monkeypatch.setattr(source_module, "open_source", meeting)
    sources = list(open_each(logs))
    assert sorted(overlapped) == sorted(logs[:2])
    assert [s.searches["engine"].tolist() for s in sources] == [["stockfish"], ["typhoon"], ["crafty"]]
    # Hand counts of the three fixtures, as in test_mixed_inputs_get_unique_search_numbers.
    assert [len(s.records(["act"])) for s in sources] == [13, 11, 15]


def test_open_each_raises_the_first_failure_in_order_after_the_inputs_before_it(tmp_path):
    from treediff.parse.source import open_each

    missing = tmp_path / "nope.log"
    opened = []
    with pytest.raises(InputError, match="nope.log: no such file"):
        for source in open_each([HAND / "minimal_typhoon.log", missing, tmp_path / "also_missing.log"]):
            opened.append(source.searches["engine"].tolist())
    assert opened == [["typhoon"]]


def test_open_each_stops_the_parses_still_running_when_its_consumer_goes(monkeypatch):
    """A consumer that stops after the first input (an error, Ctrl-C) does not wait for the other parse to end:
    that parse's next progress call raises, which stops it at its next chunk."""
    import time

    import treediff.parse.source as source_module
    from treediff.parse.source import open_each

    import threading

    seen: list[str] = []
    slow_started = threading.Event()

    def fake_open(path, progress=None, **options):
        if path == "quick":
            return "quick source"
        slow_started.set()
        try:
            for _ in range(2000):  # 20 s unless stopped
                progress(1)
                time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            seen.append(type(exc).__name__)
            raise
        return "slow source"

    monkeypatch.setattr(source_module, "open_source", fake_open)
    start = time.perf_counter()
    each = open_each(["quick", "slow"])
    assert next(each) == "quick source"
    assert slow_started.wait(10)  # (a parse not started yet is simply cancelled)
    each.close()  # what an exception in the consumer's loop does to the generator
    assert time.perf_counter() - start < 10
    assert seen == ["_OpenAborted"]


# -- a log parsed into a directory first (report parses its logs in a forked child: cli/report.py) -------------

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"


def _same_source(got, expected) -> None:
    pd.testing.assert_frame_equal(got.searches, expected.searches)
    pd.testing.assert_frame_equal(got.records(), expected.records())
    assert got.warnings == expected.warnings


def _garbled(tmp_path) -> Path:
    """A fixture log with two lines of garbage bytes after its header: the parse warns about them."""
    lines = (HAND / "report_typhoon.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "garbled.log"
    log.write_bytes(b"".join(lines[:3] + [b"\xff\xfe garbage\n", b"\x81\x82\n"] + lines[3:]))
    return log


@pytest.mark.parametrize("name", ["report_typhoon", "minimal_crafty", "stockfish_batch3", "garbled"])
def test_a_log_parsed_into_a_directory_opens_as_the_log_does(name, tmp_path):
    from treediff.parse.source import parse_logs_into, scratch_dir, spilled_source

    log = _garbled(tmp_path) if name == "garbled" else (TRACES if "batch" in name else HAND) / f"{name}.log"
    directory = scratch_dir("test")
    (found,) = parse_logs_into([log], [directory])
    got = open_sources([log], spilled={0: spilled_source(directory, found)})
    expected = open_source(log)
    _same_source(got, expected)
    if name == "garbled":
        assert any("garbage" in w for w in got.warnings)


def test_a_directory_is_emptied_before_the_parse(tmp_path):
    """A parse stopped half-way and redone (a stuck child's work done again) starts from an empty directory."""
    from treediff.parse.source import parse_logs_into, scratch_dir, spilled_source

    directory = scratch_dir("test")
    (directory / "part-00000.arrow").write_bytes(b"half a part")
    (directory / "leftover").mkdir()
    (directory / "leftover" / "x").write_text("x")
    (found,) = parse_logs_into([HAND / "report_stockfish.log"], [directory])
    assert not (directory / "leftover").exists()
    got = open_sources([HAND / "report_stockfish.log"], spilled={0: spilled_source(directory, found)})
    _same_source(got, open_source(HAND / "report_stockfish.log"))


def test_a_spilled_source_removes_its_directory_with_the_last_source_over_it():
    import gc

    from treediff.parse.source import parse_logs_into, scratch_dir, spilled_source

    directory = scratch_dir("test")
    (found,) = parse_logs_into([HAND / "minimal_typhoon.log"], [directory])
    source = spilled_source(directory, found)
    picked = source.select(source.searches.index.to_numpy() >= 0)
    del source
    gc.collect()
    assert directory.exists()  # (a selection still reads it)
    del picked
    gc.collect()
    assert not directory.exists()


def test_a_directory_without_a_spill_is_an_error_and_is_removed():
    from treediff.parse.source import scratch_dir, spilled_source

    directory = scratch_dir("test")
    with pytest.raises(Exception):
        spilled_source(directory, [])
    assert not directory.exists()


def test_open_sources_takes_the_inputs_already_parsed(tmp_path):
    from treediff.parse.source import parse_logs_into, scratch_dir, spilled_source

    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    paths = [HAND / "minimal_stockfish.log", parquet, _garbled(tmp_path)]
    directories = [scratch_dir("test"), scratch_dir("test")]
    found = parse_logs_into([paths[0], paths[2]], directories)
    spilled = {0: spilled_source(directories[0], found[0]), 2: spilled_source(directories[1], found[1])}
    _same_source(open_sources(paths, spilled=spilled), open_sources(paths))


def test_is_plain_log(tmp_path):
    from treediff.parse.source import is_plain_log

    parquet = tmp_path / "t.parquet"
    parse_to_parquet([HAND / "minimal_typhoon.log"], parquet)
    assert is_plain_log(HAND / "minimal_typhoon.log")
    assert not is_plain_log("-")
    assert not is_plain_log(tmp_path)  # a directory (a dataset)
    assert not is_plain_log(parquet)
    assert not is_plain_log(tmp_path / "missing.log")


def test_a_scratch_directory_is_private_under_tmpdir_and_removed_by_remove_scratch(tmp_path, monkeypatch):
    import stat
    import tempfile

    from treediff.parse import source

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = source.scratch_dir("log")
    assert made.parent == tmp_path and made.name.startswith("treediff-log-") and made.is_dir()
    assert stat.S_IMODE(made.stat().st_mode) == 0o700 and str(made) in source._SCRATCH
    assert source.scratch_dir("log") != made
    source.remove_scratch(made)
    assert not made.exists() and str(made) not in source._SCRATCH


def test_a_signal_as_a_scratch_directory_is_made_leaves_nothing(tmp_path, monkeypatch):
    """SIGTERM raised as ``mkdir`` returns: the new directory is removed (``mkdtemp`` then a registration
    orphaned it)."""
    import os
    import tempfile

    from support.signal_windows import sigterm_as_it_returns
    from treediff.parse import source
    from treediff.run.signals import Terminated

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(Terminated):
        with sigterm_as_it_returns(os, "mkdir", lambda path, *rest: "treediff-log-" in str(path)) as hit:
            source.scratch_dir("log")
    assert len(hit) == 1
    assert list(tmp_path.iterdir()) == []
    assert not [name for name in source._SCRATCH if name.startswith(str(tmp_path))]

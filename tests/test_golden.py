"""Golden outputs: ``report``, ``compare`` and ``diff`` on every fixture, byte for byte.

This guards refactors that must not change a single number or character
(the layered redesign, the streaming engine).  The expected files in
``tests/golden/`` were written by the commands themselves *before* the
refactor they guard; they are a regression fence, not a correctness proof
(the hand-counted tests elsewhere are that).  A change that is meant to
alter an output regenerates them, in its own commit, with::

    TREEDIFF_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

and the diff of ``tests/golden/`` then shows exactly what changed.
"""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from treediff.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "fixtures" / "traces"
HAND = ROOT / "fixtures" / "hand"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = bool(os.environ.get("TREEDIFF_UPDATE_GOLDEN"))

PROFILES = ("typhoon", "stockfish", "crafty")
SCENARIOS = ("start", "tactical-f6f7", "batch3")
HAND_LOGS = sorted(p.name for p in HAND.glob("*.log"))

# Fixed terminal geometry so the rich table format is reproducible.
ENV = {"COLUMNS": "140", "LINES": "50", "TERM": "dumb", "NO_COLOR": "1"}


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(main, args, env=ENV, catch_exceptions=False)
    return f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path.name}; run with TREEDIFF_UPDATE_GOLDEN=1 to write it"
    expected = path.read_text()
    assert text == expected, f"{name}: output differs from {path.relative_to(ROOT)}"


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    # Paths in outputs (labels, notes) are relative to the repository root.
    monkeypatch.chdir(ROOT)


TRACE_LOGS = [f"{p}_{s}.log" for p in PROFILES for s in SCENARIOS]


@pytest.mark.parametrize("log", TRACE_LOGS + HAND_LOGS)
@pytest.mark.parametrize("fmt", ["json", "markdown", "table"])
def test_report_golden(log: str, fmt: str) -> None:
    path = TRACES / log if (TRACES / log).exists() else HAND / log
    _check(f"report-{Path(log).stem}-{fmt}", _run(["report", _rel(path), "--format", fmt]))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_report_grouped_golden(scenario: str) -> None:
    logs = [_rel(TRACES / f"{p}_{scenario}.log") for p in PROFILES]
    _check(f"report-all-{scenario}-by", _run(["report", *logs, "--by", "phase,position,iter", "--format", "json"]))
    _check(f"report-all-{scenario}-csv", _run(["report", *logs, "--by", "source", "--format", "csv"]))


PAIRS = [("typhoon", "stockfish"), ("crafty", "stockfish"), ("typhoon", "crafty")]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_compare_golden(scenario: str, pair: tuple[str, str], fmt: str) -> None:
    a, b = (_rel(TRACES / f"{p}_{scenario}.log") for p in pair)
    _check(f"compare-{scenario}-{'-'.join(pair)}-{fmt}", _run(["compare", a, b, "--format", fmt]))


@pytest.mark.parametrize("scenario", ["start", "tactical-f6f7"])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("fmt", ["json", "text", "csv"])
def test_diff_golden(scenario: str, pair: tuple[str, str], fmt: str) -> None:
    if fmt == "json" and scenario != "start":
        pytest.skip("JSON of the larger trees adds megabytes and nothing the text and CSV goldens miss")
    a, b = (_rel(TRACES / f"{p}_{scenario}.log") for p in pair)
    _check(f"diff-{scenario}-{'-'.join(pair)}-{fmt}", _run(["diff", a, b, "--format", fmt]))


HAND_DIFFS = [("align_basic_a", "align_basic_b"), ("align_promo_typhoon", "align_promo_stockfish"),
              ("align_promo_crafty", "align_promo_stockfish")]


@pytest.mark.parametrize("pair", HAND_DIFFS, ids=lambda p: "-".join(p))
def test_diff_hand_golden(pair: tuple[str, str]) -> None:
    a, b = (_rel(HAND / f"{p}.log") for p in pair)
    _check(f"diff-hand-{'-'.join(pair)}", _run(["diff", a, b, "--format", "text", "--context", "1"]))
    _check(f"diff-hand-{'-'.join(pair)}-only", _run(["diff", a, b, "--format", "json", "--only-diff"]))


def _dataset_from_log(log: Path, root: Path) -> Path:
    """A ``treediff batch``-shaped dataset (one records and one searches file per search) made from a log."""
    parquet = root / f"{log.stem}.parquet"
    assert CliRunner().invoke(main, ["parse", str(log), "-o", str(parquet)]).exit_code == 0
    records = pq.read_table(parquet)
    searches = pq.read_table(parquet.with_name(parquet.stem + ".searches.parquet"))
    import pyarrow as pa
    import pyarrow.compute as pc

    dataset = root / "ds"
    for row in range(searches.num_rows):
        srch = searches.slice(row, 1)
        engine = srch.column("engine")[0].as_py()
        key = f"{row:04d}"
        rec = records.filter(pc.equal(records.column("search"), srch.column("search")[0]))
        for table, frame in (("records", rec), ("searches", srch.append_column("task", pa.array([key])))):
            out = dataset / table / f"engine={engine}" / f"{key}.parquet"
            out.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(frame.drop(["engine"]), out)
    return dataset


@pytest.mark.parametrize("profile", PROFILES)
def test_parquet_and_dataset_inputs_golden(profile: str, tmp_path: Path) -> None:
    log = TRACES / f"{profile}_batch3.log"
    from_log = _run(["report", _rel(log), "--format", "json", "--by", "position"])
    _check(f"report-{profile}_batch3-by-position", from_log)
    parquet = tmp_path / "x.parquet"
    assert _run(["parse", _rel(log), "-o", str(parquet)]).startswith("exit 0")
    assert _run(["report", str(parquet), "--format", "json", "--by", "position"]) == from_log.replace(
        _rel(log), str(parquet))
    dataset = _dataset_from_log(log, tmp_path)
    _check(f"report-{profile}_batch3-dataset", _run(["report", str(dataset), "--format", "json", "--by", "position"])
           .replace(str(dataset), "DATASET"))
    other = _dataset_from_log(TRACES / "stockfish_batch3.log", tmp_path / "sf")
    _check(f"compare-{profile}_batch3-dataset",
           _run(["compare", str(dataset), str(other), "--format", "json"]).replace(str(dataset), "DATASET_A")
           .replace(str(other), "DATASET_B"))

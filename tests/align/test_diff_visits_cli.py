"""`treediff diff --visits all` on the hand-written verification fixture (counts read off the fixture by hand)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from treediff.cli import main

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "hand" / "visits_verify.log"


def _rows(*args: str) -> list[dict]:
    result = CliRunner().invoke(main, ["diff", str(LOG), str(LOG), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["rows"]


def test_visits_all_adds_the_verification_visit_as_its_own_row():
    main_rows = _rows()
    # One row per path: root, e2e4, e2e4/0000, e2e4/e7e5, e2e4/c7c5, d2d4.
    assert [r["path"] for r in main_rows] == ["", "e2e4", "e2e4/0000", "e2e4/e7e5", "e2e4/c7c5", "d2d4"]
    every = _rows("--visits", "all")
    labels = [(r["path"], r["visit_label"]) for r in every]
    # e2e4 has two RESULTs in iteration 12: d=5 (the verification search, before the main visit) and d=11.
    assert ("e2e4", "verify") in labels and ("e2e4", "main") in labels
    assert len(every) == len(main_rows) + 1


def test_visits_all_labels_the_row_in_the_text_view():
    result = CliRunner().invoke(main, ["diff", str(LOG), str(LOG), "--visits", "all", "--format", "csv"])
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    column = header.split(",").index("visit_label")
    assert sorted(line.split(",")[column] for line in lines).count("verify") == 1

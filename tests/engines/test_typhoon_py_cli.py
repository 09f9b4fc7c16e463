"""The one-shot `typhoon-py search`/`batch` commands: trace placement, counters, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import chess
from click.testing import CliRunner

from support.typhoon_trace_tools import read_trace
from typhoon_py.cli import main

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
TACTICAL = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - -"


def test_search_writes_trace_and_counters(tmp_path):
    log, counters = tmp_path / "out.log", tmp_path / "c.json"
    res = CliRunner().invoke(main, ["search", "--fen", TACTICAL, "--depth", "3", "--profile", "stockfish",
                                    "--treedump", str(log), "--counters", str(counters),
                                    "--id", "tactical-f6f7", "--phase", "middlegame"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("bestmove ")
    data = json.loads(counters.read_text())
    assert set(data) >= {"acts", "nodes", "qnodes", "iterations"}
    (search,) = read_trace(log.read_text())
    assert search.header["id"] == "tactical-f6f7" and search.header["phase"] == "middlegame"
    assert data["nodes"] == len(search.tagged("RESULT")) and data["iterations"] == 3
    assert data["acts"] == dict(search.acts())
    best = res.output.split()[1]
    assert chess.Move.from_uci(best) in chess.Board(TACTICAL).legal_moves


def test_default_trace_is_treedump_log_in_cwd_and_env_overrides(tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.delenv("TREEDUMP", raising=False)
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(main, ["search", "--depth", "2"]).exit_code == 0
    assert (tmp_path / "treedump.log").read_text().startswith("TREEDUMP engine=typhoon v=1 unit=64 ")
    res = runner.invoke(main, ["search", "--depth", "2", "--profile", "crafty"], env={"TREEDUMP": "env.log"})
    assert res.exit_code == 0
    assert (tmp_path / "env.log").read_text().startswith("TREEDUMP engine=crafty v=1 unit=1 ")
    os.remove(tmp_path / "treedump.log")
    assert runner.invoke(main, ["search", "--depth", "2", "--no-treedump"]).exit_code == 0
    assert not (tmp_path / "treedump.log").exists()


def test_batch_counters_are_a_list_matching_the_trace(tmp_path):
    log, counters = tmp_path / "b.log", tmp_path / "c.json"
    res = CliRunner().invoke(main, ["batch", "--epd", str(EPD), "--depth", "2", "--limit", "3",
                                    "--profile", "typhoon", "--treedump", str(log), "--counters", str(counters)])
    assert res.exit_code == 0, res.output
    data = json.loads(counters.read_text())
    searches = read_trace(log.read_text())
    assert len(data) == len(searches) == 3
    assert [s.header["id"] for s in searches] == ["start", "italian", "najdorf"]
    assert [s.header["phase"] for s in searches] == ["opening"] * 3
    for d, s in zip(data, searches):
        assert d["nodes"] == len(s.tagged("RESULT")) and d["acts"] == dict(s.acts())


def test_bad_fen_is_a_clear_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["search", "--fen", "not a fen", "--depth", "2", "--no-treedump"])
    assert res.exit_code == 2 and "--fen" in res.output and "Traceback" not in res.output


def test_trace_is_identical_across_processes_and_hash_seeds(tmp_path):
    texts = []
    for seed in ("1", "2"):
        log = tmp_path / f"t{seed}.log"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-m", "typhoon_py", "search", "--fen", TACTICAL, "--depth", "3",
                        "--profile", "crafty", "--treedump", str(log)], env=env, check=True, timeout=60,
                       capture_output=True)
        texts.append(log.read_bytes())
    assert texts[0] == texts[1] and len(texts[0]) > 1000


def test_unwritable_trace_path_is_a_clear_usage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = CliRunner().invoke(main, ["search", "--depth", "1", "--treedump", str(blocker / "x.log")])
    assert res.exit_code == 2 and "cannot write the trace file" in res.output
    assert "Traceback" not in res.output

"""Clear errors and validated answers (issue 15, deliverables 5 (runner) and 6).

Each case that printed "internal error" (exit 3) or was silently accepted now
gets a clear message naming the file (exit 2), before any engine starts when
it is the configuration's fault; an illegal ``bestmove`` is a failure.
"""
from __future__ import annotations

import gzip
import os
import shutil
import sys

import pytest

from reliability.hostile import FAKE, ROOT, START, TACTIC, epd, fake

LOG = ROOT / "fixtures" / "hand" / "align_basic_a.log"
NO_CASTLING = "r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1"


# -- bestmoves ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fen, move", [(START, "e2e5"), (START, "../../etc/passwd"), (NO_CASTLING, "e1g1"),
                                       (START, "a7a8q"), (START, "e2e4\\x1b[2J")])
def test_illegal_bestmove_is_a_failure(tmp_path, fen, move):
    from support.runner_helpers import fake_spec
    from treediff.run.search import Failure, Limits, run_search

    (tmp_path / "w").mkdir()
    out = run_search(fake_spec("--mode", "illegal", "--bestmove", move, preset="uci"), fen, 2, tmp_path / "w",
                     Limits(timeout=10))
    assert not out.ok and out.failure is Failure.ILLEGAL_BESTMOVE, out.detail
    assert "\x1b" not in out.detail  # shown escaped


def test_legal_bestmoves_still_pass(tmp_path):
    from support.runner_helpers import fake_spec
    from treediff.run.search import Limits, run_search

    for i, (fen, move) in enumerate([(START, "e2e4"), ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1"),
                                     ("8/P6k/8/8/8/8/8/K7 w - - 0 1", "a7a8q")]):
        (tmp_path / str(i)).mkdir()
        out = run_search(fake_spec("--mode", "illegal", "--bestmove", move, preset="uci"), fen, 1, tmp_path / str(i),
                         Limits(timeout=10))
        assert out.ok and out.bestmove == move, out.detail


def test_illegal_bestmove_cli_and_batch(cli, tmp_path, work):
    c = cli("run", "--engine", f"uci={fake('--mode', 'illegal')}", "--fen", START, "--depth", 1,
            "-o", tmp_path / "o.log")
    assert c.wait(60) == 1 and "FAILED (illegal-bestmove)" in c.output, c.output
    xb = cli("run", "--engine", "typhoon", "--cmd", fake("--mode", "illegal", "--bestmove", "Qh9"), "--fen", TACTIC,
             "--depth", 1, "-o", tmp_path / "x.log")
    assert xb.wait(60) == 1 and "FAILED (illegal-bestmove)" in xb.output, xb.output
    ds = tmp_path / "ds"
    b = cli("batch", epd(tmp_path / "p.epd", 2), "--engine", f"bad@uci={fake('--mode', 'illegal')}", "--depth", 1,
            "-o", ds, "--tmpdir", work)
    assert b.wait(60) == 1 and "illegal-bestmove 2" in b.output, b.output
    import pyarrow.dataset as pads

    failures = pads.dataset(ds / "failures", partitioning="hive").to_table().to_pandas()
    assert set(failures["failure"]) == {"illegal-bestmove"}
    assert not (ds / "searches").exists() or not list((ds / "searches").rglob("*.parquet"))


# -- files ----------------------------------------------------------------------------------------------------

def test_corrupt_gzip(cli, tmp_path):
    data = bytearray(gzip.compress(LOG.read_bytes()))
    data[30:40] = b"\x00" * 10
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(bytes(data))
    c = cli("parse", bad, "-o", tmp_path / "x.parquet")
    assert c.wait(60) == 2 and "bad.log.gz" in c.output and "corrupt gzip data" in c.output, c.output
    assert "internal error" not in c.output


def test_symlink_loop(cli, tmp_path):
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    c = cli("parse", loop, "-o", tmp_path / "x.parquet")
    assert c.wait(60) == 2 and "symbolic links" in c.output and "loop.log" in c.output, c.output
    c = cli("report", loop)
    assert c.wait(60) == 2 and "loop.log" in c.output and "internal error" not in c.output, c.output


def test_file_names_that_are_not_utf8(cli, tmp_path):
    bad_in = os.path.join(os.fsencode(tmp_path), b"\xff.log")
    shutil.copyfile(LOG, bad_in)
    c = cli("parse", os.fsdecode(bad_in), "-o", tmp_path / "x.parquet")
    assert c.wait(60) == 2 and "not valid UTF-8" in c.output and "\\xff.log" in c.output, c.output
    bad_out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xfe.parquet"))
    c = cli("parse", LOG, "-o", bad_out)
    assert c.wait(60) == 0, c.output
    assert os.path.exists(bad_out) and not list(tmp_path.glob(".*.tmp"))


# -- the engines config: checked completely before any engine starts -------------------------------------------

def _config(tmp_path, body: str, marker) -> "os.PathLike[str]":
    cfg = tmp_path / "engines.toml"
    argv = [sys.executable, str(FAKE), "--record", str(marker)]
    cfg.write_text(f"[engines.good]\nprotocol = \"uci\"\nargv = {argv!r}\n\n"
                   f"[engines.bad]\nprotocol = \"uci\"\nargv = {argv!r}\n{body}\n".replace("'", '"'))
    return cfg


@pytest.mark.parametrize("body, why", [
    ('uci_options = { Hash = "16\\nquit" }', "U+000A"),
    ('init = ["isready\\nquit"]', "U+000A"),
    ('init = ["isready\\u000bquit"]', "U+000B"),
    ('init = ["isready\\u2028quit"]', "U+2028"),
    ('init = ["isready\\u0000"]', "U+0000"),
    ('uci_options = { "Ha\\u0085sh" = "1" }', "U+0085"),
    ('env = { "A=B" = "1" }', "not a portable name"),
    ('env = { A = "x\\u0000y" }', "U+0000"),
    ('dialect = "stockfish"\ntrace_file = "."', "no empty, `.` or `..`"),
    ('dialect = "stockfish"\ntrace_file = "out/"', "no empty, `.` or `..`"),
    ('search = ["go\\rquit"]', "U+000D"),
])
def test_engines_config_errors(cli, tmp_path, body, why):
    marker = tmp_path / "started.txt"
    cfg = _config(tmp_path, body, marker)
    # Even the good engine of the file does not start: the whole file is checked first.
    c = cli("run", "--engines-config", cfg, "--engine", "good", "--fen", START, "--depth", 1, "-o", tmp_path / "o")
    assert c.wait(60) == 2 and why in c.output and "engines.bad" in c.output, c.output
    assert not marker.exists()


def test_engines_config_that_is_no_toml(cli, tmp_path):
    cfg = tmp_path / "engines.toml"
    cfg.write_bytes(b'[engines.x]\nprotocol = "uci\x00"\n')
    c = cli("run", "--engines-config", cfg, "--engine", "x", "--fen", START, "--depth", 1, "-o", tmp_path / "o")
    assert c.wait(60) == 2 and "not a valid TOML" in c.output, c.output
    c = cli("run", "--engines-config", tmp_path, "--engine", "x", "--fen", START, "--depth", 1, "-o", tmp_path / "o")
    assert c.wait(60) == 2 and "internal error" not in c.output, c.output


def test_control_characters_in_the_engine_command(cli, tmp_path):
    marker = tmp_path / "started.txt"
    c = cli("run", "--engine", f"uci={fake('--record', marker)} $'\\x0b'".replace("$'\\x0b'", "'a\x0bb'"),
            "--fen", START, "--depth", 1, "-o", tmp_path / "o")
    assert c.wait(60) == 2 and "U+000B" in c.output, c.output
    assert not marker.exists()


def test_relative_engine_path(cli, tmp_path):
    """`--engine uci=./engine` is found where the user is, not in the engine's fresh working directory."""
    script = tmp_path / "engine.sh"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    script.chmod(0o755)
    c = cli("run", "--engine", "uci=./engine.sh", "--fen", START, "--depth", 2, "-o", tmp_path / "o.log")
    assert c.wait(60) == 0 and "80 nodes" in c.output, c.output
    cfg = tmp_path / "engines.toml"
    cfg.write_text('[engines.rel]\nprotocol = "uci"\nargv = ["./engine.sh"]\n')
    c = cli("run", "--engines-config", cfg, "--engine", "rel", "--fen", START, "--depth", 2, "-o", tmp_path / "p.log")
    assert c.wait(60) == 0, c.output


@pytest.mark.parametrize("mode", ["outside-trace", "hardlink-trace"])
def test_trace_pointing_outside_is_not_copied(cli, tmp_path, work, mode):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    out = tmp_path / "o.log"
    c = cli("run", "--engine", "stockfish-treedump", "--cmd", fake("--mode", mode, "--secret", secret), "--fen", START,
            "--depth", 1, "-o", out, "--tmpdir", work)
    assert c.wait(60) == 1 and "FAILED (unparseable-trace)" in c.output, c.output
    assert not out.exists() or b"SECRET" not in out.read_bytes()
    ds = tmp_path / "ds"
    b = cli("batch", epd(tmp_path / "p.epd", 1), "--engine", f"x@stockfish-treedump={fake('--mode', mode, '--secret', secret)}",
            "--depth", 1, "-o", ds, "--keep-traces", "--tmpdir", work)
    assert b.wait(60) == 1 and "unparseable-trace" in b.output, b.output
    assert not (ds / "traces").exists() or not list((ds / "traces").rglob("*.zst"))
    assert secret.read_text() == "TOP SECRET\n"

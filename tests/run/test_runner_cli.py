"""`treediff run` and `treediff batch` through click's CliRunner."""
from __future__ import annotations

import json

import pyarrow.dataset as pads
from click.testing import CliRunner

from support.runner_helpers import ROOT, START, TACTIC, fake_cmd, stockfish_or_skip
from treediff.cli import main


def _invoke(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_run_with_trace(tmp_path, no_leftovers):
    out = tmp_path / "trace.log"
    res = _invoke(["run", "--engine", "stockfish-treedump", "--cmd", fake_cmd(), "--fen", TACTIC, "--depth", "2",
                   "-o", str(out), "--transcript", str(tmp_path / "t.txt")])
    assert res.exit_code == 0, res.output
    assert "depth 2/2" in res.output and "8 nodes (RESULT count; END says 8)" in res.output
    assert out.read_text().startswith("TREEDUMP engine=stockfish")
    assert "> go depth 2" in (tmp_path / "t.txt").read_text()


def test_run_engine_without_trace(tmp_path, no_leftovers):
    out = tmp_path / "out.log"
    res = _invoke(["run", "--engine", f"uci={fake_cmd()}", "--fen", START, "--depth", "3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "120 nodes (engine's own count" in res.output
    assert "info depth 3" in out.read_text()


def test_run_failure_exit_1(tmp_path, no_leftovers):
    res = _invoke(["run", "--engine", "uci", "--cmd", fake_cmd("--mode", "hang"), "--fen", START, "--depth", "3",
                   "--timeout", "0.5", "-o", str(tmp_path / "x.log")])
    assert res.exit_code == 1 and "FAILED (timeout)" in res.output


def test_run_rejects_bad_fen_before_starting(tmp_path):
    marker = tmp_path / "started"
    res = _invoke(["run", "--engine", "uci", "--cmd", fake_cmd("--record", str(marker)),
                   "--fen", START + "\nquit", "--depth", "3", "-o", str(tmp_path / "x.log")])
    assert res.exit_code == 2 and "newline" in res.output and not marker.exists()


def test_run_unknown_engine_and_missing_program(tmp_path):
    res = _invoke(["run", "--engine", "nope", "--fen", START, "--depth", "1", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown engine 'nope'" in res.output
    res = _invoke(["run", "--engine", "uci=/no/such/engine", "--fen", START, "--depth", "1", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "not an executable" in res.output


def test_run_stockfish(tmp_path, no_leftovers):
    stockfish_or_skip()
    res = _invoke(["run", "--engine", "stockfish", "--fen", TACTIC, "--depth", "8", "-o", str(tmp_path / "sf.log")])
    assert res.exit_code == 0 and "depth 8/8" in res.output and "engine's own count" in res.output


def test_batch_cli_and_resume(tmp_path, no_leftovers):
    epd = tmp_path / "p.epd"
    epd.write_text(f'{START} id "start"; c0 "phase=opening";\n{" ".join(TACTIC.split()[:4])} id "tactic";\n')
    cfg = tmp_path / "engines.toml"
    cfg.write_text(f'[engines.myfake]\npreset = "stockfish-treedump"\nargv = {json.dumps(fake_cmd())}\n')
    ds = tmp_path / "ds"
    args = ["batch", str(epd), "--engine", "myfake", "--engine", f"crashy@uci={fake_cmd('--mode', 'crash')}",
            "--depth", "2", "-o", str(ds), "-j", "2", "--engines-config", str(cfg)]
    res = _invoke(args)
    assert res.exit_code == 1, res.output  # some searches failed
    assert "2 done, 2 failed" in res.output and "crash 2" in res.output
    searches = pads.dataset(ds / "searches", partitioning="hive").to_table().to_pandas()
    assert sorted(searches["position"]) == ["start", "tactic"] and set(searches["engine"]) == {"myfake"}
    res = _invoke(args + ["--resume"])
    assert res.exit_code == 0 and "0 done, 0 failed" in res.output and "4 already in the dataset" in res.output
    res = _invoke(args)
    assert res.exit_code == 2 and "--resume" in res.output
    res = _invoke(args + ["--resume", "--retry-failed"])
    assert res.exit_code == 1 and "0 done, 2 failed" in res.output


def test_batch_bad_epd(tmp_path):
    epd = tmp_path / "p.epd"
    epd.write_text(f"{START}\nnonsense here\n")
    res = _invoke(["batch", str(epd), "--engine", f"uci={fake_cmd()}", "--depth", "1", "-o", str(tmp_path / "d")])
    assert res.exit_code == 2 and "p.epd:2" in res.output
    assert not (tmp_path / "d").exists()


def test_batch_positions20_with_typhoon_py(tmp_path, no_leftovers):
    """The user's basic experiment, small: 20 positions × typhoon_py at depth 1, opened again as a Source."""
    from treediff.parse.source import open_source

    ds = tmp_path / "ds"
    res = _invoke(["batch", str(ROOT / "fixtures" / "positions20.epd"), "--engine", "typhoon_py",
                   "--depth", "1", "-o", str(ds), "-j", "2", "--logs", "failed"])
    assert res.exit_code == 0, res.output
    searches = open_source(ds).searches
    assert len(searches) == 20 and set(searches["engine"]) == {"typhoon_py"}
    assert sorted(searches["phase"].value_counts().tolist()) == [6, 7, 7]
    assert (searches["result_nodes"] > 0).all()
    assert not (ds / "logs").exists()


def test_batch_ctrl_c_from_a_terminal(tmp_path):
    """SIGINT to the whole foreground group, as a terminal's Ctrl-C does: exit 130, results kept, engines gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from support.runner_helpers import pid_alive

    epd = tmp_path / "p.epd"
    epd.write_text("".join(f'{START} id "s{i}";\n' for i in range(4)))
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    ds = tmp_path / "ds"
    cmd = [sys.executable, "-c", "from treediff.cli import main; main()", "batch", str(epd),
           "--engine", f"ok@stockfish-treedump={fake_cmd()}",
           "--engine", f"hang@uci={fake_cmd('--mode', 'hang', '--pid-dir', str(pid_dir))}",
           "--depth", "1", "-o", str(ds), "-j", "2", "--timeout", "60"]
    def as_a_foreground_job() -> None:
        # A terminal's foreground job starts with SIGINT at its default; the test process may not have it
        # (pytest run as a background job of a non-interactive shell inherits SIGINT ignored, and the batch
        # rightly keeps ignoring an inherited SIG_IGN: it then never sees this Ctrl-C).
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=str(ROOT), preexec_fn=as_a_foreground_job)
    try:
        deadline = time.monotonic() + 30
        while len(list(pid_dir.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(pid_dir.iterdir())) == 2
        os.killpg(proc.pid, signal.SIGINT)
        # Generous on a loaded machine (the shutdown bound itself is measured in tests/reliability).
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = output.decode()
    assert proc.returncode == 130, text
    assert "INTERRUPTED" in text and "--resume" in text
    time.sleep(0.2)
    assert not any(pid_alive(int(p.name)) for p in pid_dir.iterdir())
    assert (ds / "searches" / "engine=ok").is_dir()
    assert not (ds / "searches" / "engine=hang").exists() and not list(ds.rglob("*.tmp"))
    # Nothing of the batch's session survives it: workers, fork server, resource tracker.
    deadline = time.monotonic() + 10
    while _group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_members(proc.pid)


def _group_members(pgid: int) -> list[int]:
    import os

    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members

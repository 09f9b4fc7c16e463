"""The engine's descendants, its I/O limits, the up-front checks and signal deferral, in process (issue 15)."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

import pytest

from support.runner_helpers import START, fake_spec, pid_alive
from treediff.model.errors import InputError
from treediff.run.engines import check_executable, presets, spec_problem
from treediff.run.process import EngineProcess, UnsafeCommand, unsafe_character
from treediff.run.search import Failure, Limits, illegal_move, run_search


@pytest.fixture(params=["cgroup", "subreaper"])
def mechanism(request, monkeypatch):
    import treediff.run.contain as contain

    monkeypatch.setattr(contain, "_BASE_KNOWN", False)
    if request.param == "subreaper":
        monkeypatch.setenv("TREEDIFF_CGROUP", "0")
    else:
        monkeypatch.delenv("TREEDIFF_CGROUP", raising=False)
        if contain.cgroup_base() is None:
            pytest.skip("no writable cgroup v2 here")
    yield request.param
    monkeypatch.setattr(contain, "_BASE_KNOWN", False)


@pytest.mark.parametrize("mode", ["escape", "escape-hang", "doublefork"])
def test_escaped_descendants_are_killed_and_reaped(tmp_path, mechanism, mode, no_leftovers):
    """``no_leftovers`` also fails on a zombie: under the subreaper the escapees become ours to reap."""
    pidfile = tmp_path / "escapees"
    work = tmp_path / "w"
    work.mkdir()
    t0 = time.monotonic()
    out = run_search(fake_spec("--mode", mode, "--orphan-pid", str(pidfile), preset="uci"), START, 2, work,
                     Limits(timeout=2.0, quit_grace=1.0))
    assert time.monotonic() - t0 < 2.0 + 3.0
    assert out.ok == (mode != "escape-hang")
    escapees = [int(p) for p in pidfile.read_text().split()]
    assert escapees and not any(pid_alive(p) for p in escapees)
    assert any(f"({mechanism})" in w for w in out.warnings), out.warnings


def test_no_cgroup_is_left(tmp_path, mechanism):
    import treediff.run.contain as contain

    work = tmp_path / "w"
    work.mkdir()
    run_search(fake_spec(preset="uci"), START, 1, work, Limits(timeout=5))
    base = contain.cgroup_base()
    if base is not None:
        assert not [e for e in os.listdir(base) if e.startswith(f"treediff-{os.getpid()}-")]


def test_stale_cgroups_of_dead_processes_are_swept(mechanism):
    import treediff.run.contain as contain

    if mechanism != "cgroup":
        pytest.skip("cgroup only")
    base = contain.cgroup_base()
    stale = base / "treediff-999999999-1-0"  # a pid no process has
    stale.mkdir()
    assert contain.sweep_stale_cgroups() >= 1 and not stale.exists()


def test_unsafe_characters():
    assert unsafe_character("position fen 8/8/8 w - - 0 1") is None
    assert unsafe_character("setoption name Ünïcode value é") is None
    for bad in ("a\nb", "a\rb", "a\x00b", "a\x0bb", "a\x1b[2J", "a\u2028b", "a\u2029b", "a\x85b", "a\u202eb",
                "a\ufeffb", "a\udcffb"):
        assert unsafe_character(bad) is not None, repr(bad)


def test_send_refuses_unsafe_commands(tmp_path, no_leftovers):
    with EngineProcess(fake_spec().argv, cwd=str(tmp_path)) as eng:
        with pytest.raises(UnsafeCommand):
            eng.send("isready\u2028quit")


def test_spec_problems():
    spec = presets()["uci"]
    assert spec_problem(replace(spec, argv=("/bin/eng",))) is None
    assert "no command" in spec_problem(spec)
    assert "U+000A" in spec_problem(replace(spec, argv=("/bin/eng",), init=("a\nb",)))
    assert "portable" in spec_problem(replace(spec, argv=("/bin/eng",), env=(("A=B", "1"),)))
    assert "value" in spec_problem(replace(spec, argv=("/bin/eng",), uci_options=(("Hash", "1\x00"),)))
    assert "inside" in spec_problem(replace(spec, argv=("/bin/eng",), dialect="typhoon", trace_file="."))
    # undecodable bytes in a file name are allowed in argv
    assert spec_problem(replace(spec, argv=("/bin/\udcffeng",))) is None


def test_a_spec_refused_at_run_time_never_starts(tmp_path):
    marker = tmp_path / "started"
    spec = fake_spec("--record", str(marker), preset="uci", init=("go\x00",))
    out = run_search(spec, START, 1, tmp_path, Limits(timeout=5))
    assert out.failure is Failure.START and "U+0000" in out.detail and not marker.exists()


def test_check_executable_makes_relative_paths_absolute(tmp_path, monkeypatch):
    script = tmp_path / "eng.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    spec = check_executable(replace(presets()["uci"], argv=("./eng.sh", "-x")))
    assert spec.argv == (str(script), "-x")
    with pytest.raises(InputError, match="not an executable"):
        check_executable(replace(presets()["uci"], argv=("./nope.sh",)))


def test_illegal_move():
    assert illegal_move("e2e4", START) is None and illegal_move("0000", START) is None
    assert "not a legal move" in illegal_move("e2e5", START)
    assert "\\x1b" in illegal_move("e2e4\x1b[2J", START)


def test_byte_tripwire_default():
    assert Limits().trace_bytes == 2_000_000 * 256
    assert Limits(max_trace_lines=10, max_trace_bytes=7).trace_bytes == 7


def test_deferred_raises_a_signal_at_the_end_of_the_section():
    from treediff.run.signals import Terminated, deferred, interrupting

    steps = []
    with interrupting():
        with pytest.raises(Terminated) as info:
            with deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # the handler runs here, and is held back
                steps.append("cleanup finished")
        assert info.value.signum == signal.SIGTERM
    assert steps == ["cleanup finished"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

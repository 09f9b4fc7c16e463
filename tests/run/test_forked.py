"""treediff.run.forked: a computation in a forked child, its answer, errors and progress carried back, the
child always reaped (every exit path and signal) and its scratch removed, the parent's left alone."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from support.forking import stop_while_stuck
from support.runner_helpers import pid_alive, wait_until
from support.threads import settle_threads
from treediff.model.errors import InputError
from treediff.parse import source as parse_source
from treediff.run import forked
from treediff.run.forked import BackgroundFailed, fork_allowed, in_background

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def only_the_main_thread():
    """These tests fork: another test's thread still ending would make the fork refused."""
    left = settle_threads()
    assert left == [], f"threads of an earlier test still run: {left}"


def test_the_work_runs_in_a_child_and_its_answer_comes_back(no_leftovers):
    with in_background(lambda progress: (os.getpid(), os.getppid(), [1, 2.5, "x"])) as job:
        assert job.forked
        pid, parent, payload = job.result()
    assert parent == os.getpid()
    assert pid == job.pid and pid != os.getpid()
    assert payload == [1, 2.5, "x"]
    assert not pid_alive(pid)  # reaped by result()


def test_a_large_answer_crosses_the_pipe_whole(no_leftovers):
    big = bytes(range(256)) * 40_000  # ~10 MB: many times a pipe's buffer
    with in_background(lambda progress: big) as job:
        time.sleep(0.2)  # the child writes while this process is busy elsewhere
        assert job.result() == big


def test_progress_reaches_the_callback_with_the_last_call(no_leftovers):
    def work(progress):
        for done in range(200):
            progress(done, 200)
            time.sleep(0.001)
        return "done"

    seen: list[tuple[int, int]] = []
    with in_background(work) as job:
        assert job.result(lambda done, total: seen.append((done, total))) == "done"
    assert seen, "no progress came back"
    assert seen[-1] == (199, 200)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(seen) < 200  # throttled: the pipe does not carry one message per call


def test_an_input_error_is_raised_here_with_its_message(no_leftovers):
    def work(progress):
        raise InputError("a.log: line 3: not a TREEDUMP line")

    with in_background(work) as job:
        with pytest.raises(InputError, match=r"^a\.log: line 3: not a TREEDUMP line$"):
            job.result()


def test_an_error_that_cannot_be_pickled_comes_back_as_text(no_leftovers):
    class Local(Exception):  # a local class cannot be pickled
        pass

    def work(progress):
        raise Local("it broke")

    with in_background(work) as job:
        with pytest.raises(BackgroundFailed, match="Local: it broke"):
            job.result()


def test_a_child_killed_without_an_answer_is_a_clear_error(no_leftovers):
    def work(progress):
        os.kill(os.getpid(), signal.SIGKILL)

    with in_background(work) as job:
        with pytest.raises(BackgroundFailed, match="background process was killed by SIGKILL.*--memory-limit"):
            job.result()
    with in_background(work, name="process parsing the logs") as job:
        with pytest.raises(BackgroundFailed, match="^the process parsing the logs was killed by SIGKILL"):
            job.result()


def test_an_error_that_cannot_cross_back_names_the_child(no_leftovers):
    class Local(Exception):  # (a local class cannot be pickled)
        pass

    def work(progress):
        raise Local("it broke")

    with in_background(work, name="process aligning the divergences") as job:
        with pytest.raises(BackgroundFailed, match="^the process aligning the divergences failed: Local: it broke"):
            job.result()


def test_leaving_the_block_stops_the_child_and_it_removes_only_its_own_scratch(no_leftovers, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    parents = parse_source.scratch_dir("parent")
    marker = tmp_path / "child-scratch"

    def work(progress):
        mine = parse_source.scratch_dir("child")
        marker.write_text(str(mine))
        time.sleep(60)

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="tables failed"):
        with in_background(work) as job:
            # (written, not only made: write_text makes the file empty first, and Path("") is ".")
            assert wait_until(lambda: marker.exists() and marker.read_text() != "", 10)
            child_dir = Path(marker.read_text())
            assert child_dir.is_dir()
            raise RuntimeError("tables failed")
    assert time.monotonic() - started < forked.STOP_GRACE  # it unwound on SIGTERM, no SIGKILL needed
    assert not pid_alive(job.pid)
    assert not child_dir.exists(), "the child's scratch directory was left behind"
    assert parents.is_dir(), "the child removed a scratch directory of the parent's"
    parse_source.remove_scratch(parents)


def test_a_child_that_ignores_sigterm_is_killed(no_leftovers, monkeypatch, tmp_path):
    monkeypatch.setattr(forked, "STOP_GRACE", 0.3)
    ready = tmp_path / "ready"

    def work(progress):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        ready.write_text("x")
        time.sleep(60)

    with in_background(work) as job:
        assert wait_until(ready.exists, 10)
    assert not pid_alive(job.pid)


def test_a_stopped_child_is_still_reaped_at_once(no_leftovers):
    with in_background(lambda progress: time.sleep(60)) as job:
        os.kill(job.pid, signal.SIGSTOP)
        started = time.monotonic()
    assert time.monotonic() - started < forked.STOP_GRACE  # SIGCONT let it see the SIGTERM
    assert not pid_alive(job.pid)


def test_no_fork_while_another_thread_runs():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not fork_allowed(settle=0.05)
        with in_background(lambda progress: os.getpid()) as job:
            assert not job.forked
            assert job.result() == os.getpid()  # computed here, when asked
    finally:
        stop.set()
        other.join()
    assert fork_allowed()


def test_a_thread_python_did_not_start_prevents_the_fork_without_an_error():
    """A thread started outside ``threading`` that ran Python code is a "dummy" thread, which ``join`` refuses
    (AssertionError): fork_allowed takes it as running, not as an internal error.  In a fresh interpreter: a
    dummy thread stays listed for the rest of the process."""
    script = textwrap.dedent("""
        import _thread, threading, time
        from treediff.run.forked import fork_allowed
        seen, stop = threading.Event(), threading.Event()
        def foreign():
            threading.current_thread()  # (registers it as a dummy thread)
            seen.set()
            stop.wait()
        _thread.start_new_thread(foreign, ())
        seen.wait(10)
        print(fork_allowed(settle=0.05))
        stop.set()
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TREEDIFF_FORK": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_a_thread_that_is_ending_does_not_prevent_the_fork(no_leftovers):
    ending = threading.Thread(target=time.sleep, args=(0.05,))
    ending.start()
    with in_background(lambda progress: os.getpid()) as job:
        assert job.forked
        assert job.result() != os.getpid()


def test_the_environment_turns_forking_off(monkeypatch):
    monkeypatch.setenv("TREEDIFF_FORK", "0")
    calls = []
    with in_background(lambda progress: calls.append(progress) or os.getpid()) as job:
        assert not job.forked
        assert calls == []  # nothing runs until the result is asked
        assert job.result("p") == os.getpid()
    assert calls == ["p"]


def test_work_never_asked_for_is_stopped(no_leftovers):
    with in_background(lambda progress: time.sleep(60)) as job:
        pass
    assert not pid_alive(job.pid)


_PARENT_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from treediff.run.forked import in_background

    out = Path(sys.argv[1])

    def work(progress):
        import os
        out.write_text(str(os.getpid()))
        time.sleep(60)

    with in_background(work) as job:
        time.sleep(60)
""")


def test_the_child_ends_when_its_parent_is_killed(tmp_path):
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT_SCRIPT, str(pid_file)], cwd=REPO)
    try:
        assert wait_until(lambda: pid_file.exists() and pid_file.read_text() != "", 10)
        child = int(pid_file.read_text())
        assert pid_alive(child)
        parent.kill()  # SIGKILL: no cleanup of the parent's runs
        parent.wait()
        assert wait_until(lambda: not pid_alive(child), 5), "the child outlived its parent"
    finally:
        parent.kill()
        parent.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_compare_stopped_by_a_signal_reaps_its_child_and_leaves_no_scratch(tmp_path, signum):
    traces = REPO / "fixtures" / "traces"
    status, err, child, scratch = stop_while_stuck(
        tmp_path, "treediff.align.summaries.divergences",
        ["compare", str(traces / "typhoon_batch3.log"), str(traces / "stockfish_batch3.log")], signum)
    assert status == 128 + signum, err
    assert not pid_alive(child), "the aligning child outlived compare"
    assert list(scratch.iterdir()) == [], "scratch left behind"


def test_a_child_stuck_without_cpu_is_replaced_by_the_work_done_here(no_leftovers, monkeypatch):
    monkeypatch.setattr(forked, "_POLL", 0.05)
    monkeypatch.setattr(forked, "STALL_POLLS", 4)
    parent = os.getpid()

    def work(progress):
        if os.getpid() != parent:
            threading.Event().wait()  # as a thread pool that did not survive the fork would leave it
        return ("here", os.getpid())

    with in_background(work) as job:
        assert job.result() == ("here", parent)
        assert job.stalled
    assert not pid_alive(job.pid)


def test_a_busy_child_is_not_taken_for_stuck(no_leftovers, monkeypatch):
    monkeypatch.setattr(forked, "_POLL", 0.05)
    monkeypatch.setattr(forked, "STALL_POLLS", 4)

    def work(progress):
        end = time.monotonic() + 1.0  # 20 polls of CPU work, no message
        while time.monotonic() < end:
            sum(range(1000))
        return os.getpid()

    with in_background(work) as job:
        assert job.result() == job.pid
        assert not job.stalled


# -- this process helping the child (helping=True): pieces offered, answered here, joined there -------------

def _offering_work(pieces: int, own_seconds: float):
    """A child's work that offers ``pieces`` numbers, squares itself those this process does not take (each
    taking ``own_seconds``), and returns {number: (square, pid that squared it)} and how many it offered."""
    def work(progress, helper):
        done = {}
        for number in range(pieces):
            if helper is not None:
                done.update(helper.answers())
                if helper.free() and helper.offer(number):
                    continue
            time.sleep(own_seconds)
            done[number] = (number * number, os.getpid())
        if helper is not None:
            done.update(helper.finish())
        return done, (helper.offered if helper is not None else 0)
    return work


def _square_here(number):
    return number, (number * number, os.getpid())


def test_the_parent_squares_the_pieces_the_child_offers_once_it_is_ready(no_leftovers):
    with in_background(_offering_work(60, 0.01), helping=True) as job:
        assert job.forked
        job.help(_square_here)
        done, offered = job.result()
    assert {number: square for number, (square, _) in done.items()} == {n: n * n for n in range(60)}
    here = [number for number, (_, pid) in done.items() if pid == os.getpid()]
    assert len(here) == offered == job.helped > 0
    assert any(pid == job.pid for _, pid in done.values())  # the child squared some itself


def test_without_a_fork_the_work_gets_no_helper_and_does_every_piece(no_leftovers):
    with in_background(_offering_work(5, 0.0), fork=False, helping=True) as job:
        job.help(_square_here)  # nothing to help with: returns at once
        done, offered = job.result()
    assert offered == 0 and job.helped == 0
    assert {number: entry[0] for number, entry in done.items()} == {n: n * n for n in range(5)}
    assert {entry[1] for entry in done.values()} == {os.getpid()}


def test_help_asked_after_the_child_is_done_returns_with_its_answer(no_leftovers):
    with in_background(_offering_work(3, 0.0), helping=True) as job:
        time.sleep(0.5)  # the child has finished every piece itself before this process is ready
        job.help(_square_here)
        done, offered = job.result()
    assert offered == 0 and job.helped == 0
    assert {number: entry[0] for number, entry in done.items()} == {0: 0, 1: 1, 2: 4}


def test_an_error_of_the_parents_piece_is_raised_here_and_the_child_reaped(no_leftovers):
    def fails(number):
        raise ValueError(f"piece {number} cannot be squared")

    with pytest.raises(ValueError, match=r"piece \d+ cannot be squared"):
        with in_background(_offering_work(40, 0.01), helping=True) as job:
            job.help(fails)
    assert not pid_alive(job.pid)


def test_the_childs_error_ends_the_help_and_is_raised_by_result(no_leftovers):
    def work(progress, helper):
        while not helper.free():  # once this process is ready, one piece, then an error
            helper.answers()
            time.sleep(0.01)
        helper.offer(7)
        raise InputError("b.log: line 9: not a TREEDUMP line")

    with in_background(work, helping=True) as job:
        job.help(_square_here)  # returns when the child's end of the pipe closes
        with pytest.raises(InputError, match="b.log: line 9"):
            job.result()


def test_progress_sent_while_the_parent_helps_reaches_the_callback(no_leftovers):
    def work(progress, helper):
        done = {}
        for number in range(30):
            progress(number, 30)
            done.update(helper.answers())
            if not (helper.free() and helper.offer(number)):
                time.sleep(0.01)
                done[number] = (number * number, os.getpid())
        done.update(helper.finish())
        return sorted(done)

    seen: list[tuple[int, int]] = []
    with in_background(work, helping=True) as job:
        job.help(_square_here, lambda d, t: seen.append((d, t)))
        assert job.result(lambda d, t: seen.append((d, t))) == list(range(30))
    assert seen and seen[-1] == (29, 30)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_child_stuck_while_the_parent_helps_is_replaced(no_leftovers, monkeypatch):
    monkeypatch.setattr(forked, "_POLL", 0.05)
    monkeypatch.setattr(forked, "STALL_POLLS", 4)
    parent = os.getpid()

    def work(progress, helper):
        if os.getpid() != parent:
            threading.Event().wait()  # stuck, offering nothing
        assert helper is None  # the work redone here does every piece itself
        return "here"

    with in_background(work, helping=True) as job:
        job.help(_square_here)  # returns once the child is taken to be stuck
        assert job.result() == "here"
        assert job.stalled
    assert not pid_alive(job.pid)


#: ``python -c NEVER_ENTERED MARKER``: forks a child that ignores SIGTERM (so that this process's death,
#: PR_SET_PDEATHSIG, does not end it either), waits until it runs, and leaves with status 3 without ever
#: entering its ``with`` block: as when a signal comes between the fork and the caller's ``with``.
_NEVER_ENTERED = textwrap.dedent("""
    import os, signal, sys, time
    from treediff.run import forked
    forked.STOP_GRACE = 0.3
    marker = sys.argv[1]

    def work(progress):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(marker + ".part", "w") as fh:
            fh.write(str(os.getpid()))
        os.rename(marker + ".part", marker)
        time.sleep(60)

    job = forked.in_background(work, fork=True)
    while not os.path.exists(marker):
        time.sleep(0.01)
    raise SystemExit(3)
""")


def test_a_child_whose_block_was_never_entered_is_reaped_at_exit(tmp_path):
    marker = tmp_path / "child.pid"
    proc = subprocess.run([sys.executable, "-c", _NEVER_ENTERED, str(marker)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, TREEDIFF_FORK="1"))
    child = int(marker.read_text())
    try:
        assert proc.returncode == 3, proc.stderr
        assert not pid_alive(child), "the child outlived the process that forked it"
    finally:
        if pid_alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_reaped_child_is_not_kept_for_the_exit(no_leftovers):
    with in_background(lambda progress: os.getpid()) as job:
        assert job.pid in forked._UNREAPED
        assert job.result() == job.pid
    assert job.pid not in forked._UNREAPED


#: ``python -c SIGNAL_AT_FORK``: a SIGTERM that comes while the process forks (sent, and handled, inside an
#: at-fork callback, where Python prints and drops any exception), under the CLI's interrupting handlers.
_SIGNAL_AT_FORK = textwrap.dedent("""
    import os, signal, sys, time
    from treediff.run import forked
    from treediff.run.signals import interrupt_status, interrupting

    def terminate_me():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # (bytecodes: the handler runs among them, inside the callback)
            pass

    os.register_at_fork(after_in_parent=terminate_me)
    try:
        with interrupting():
            with forked.in_background(lambda progress: time.sleep(3), fork=True) as job:
                print("CHILD", job.pid, flush=True)
                job.result()
            print("COMPLETED", flush=True)
    except KeyboardInterrupt as exc:
        print("INTERRUPTED", interrupt_status(exc), flush=True)
    print("UNREAPED", sorted(forked._UNREAPED), flush=True)
""")


def test_a_signal_during_the_fork_is_raised_after_it_not_lost():
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_AT_FORK], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, TREEDIFF_FORK="1"))
    lines = proc.stdout.splitlines()
    assert "INTERRUPTED 143" in lines, (proc.stdout, proc.stderr)
    assert "COMPLETED" not in lines
    assert "Exception ignored" not in proc.stderr, proc.stderr
    # The signal was raised once the child was registered: the at-exit reaping has it (it was never entered).
    unreaped = [line for line in lines if line.startswith("UNREAPED")]
    assert unreaped and unreaped[-1] != "UNREAPED []"
    for pid in map(int, unreaped[-1].split(" ", 1)[1].strip("[]").split(", ")):
        assert not pid_alive(pid), "the child outlived the process"

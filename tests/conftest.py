from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def press_ctrl_c():
    """``press_ctrl_c(pid_dir, count, within)``: a thread sends this process SIGINT, as a terminal's Ctrl-C,
    once ``count`` engines have written their pid file into ``pid_dir`` (or after ``within`` seconds).

    SIGINT raises KeyboardInterrupt for the test's duration, as in an interactive run: a process
    started in the background by a non-interactive shell (``cmd &``) inherits SIGINT ignored, and
    Python then installs no handler, so the test would see no Ctrl-C at all.
    """
    import os
    import signal
    import threading
    import time

    threads = []

    def press(pid_dir, count: int, within: float, settle: float = 0.2) -> None:
        def wait_then_press():
            deadline = time.monotonic() + within
            while len(list(pid_dir.iterdir())) < count and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(settle)  # let the engines start reading their input
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=wait_then_press)
        threads.append(thread)
        thread.start()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield press
        for thread in threads:
            thread.join()
    finally:
        signal.signal(signal.SIGINT, previous)

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt in this test, as in an interactive run.

    A process started in the background by a non-interactive shell (``cmd &``)
    inherits SIGINT ignored, and Python then installs no handler: the tests
    that press Ctrl-C by sending SIGINT to themselves would see nothing.
    """
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)

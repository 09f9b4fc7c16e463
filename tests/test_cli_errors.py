"""How the CLI turns what a command raises into one line and an exit status (``treediff.cli._Group``).

The case these tests were written for: a cleanup cut short by SIGTERM raised its own error (Python's locks are
not signal-safe: a Condition the signal left unacquired says "release unlocked lock"), and the command, which
the user had stopped, reported "internal error" with status 3 instead of "terminated" with 143.
"""
from __future__ import annotations

import signal

import click
import pytest
from click.testing import CliRunner

from treediff.cli import _Group
from treediff.model.errors import InputError
from treediff.run.signals import Terminated


def _group(raiser) -> click.Group:
    @click.group(cls=_Group)
    def group() -> None:
        pass

    @group.command("go")
    def go() -> None:
        raiser()

    return group


def _cut_short_by(interrupt: BaseException, then: Exception):
    def raiser():
        try:
            raise interrupt
        finally:
            raise then  # (the cleanup's own error, raised while the interrupt propagates)

    return raiser


def _invoke(raiser, monkeypatch, debug: bool = False):
    if debug:
        monkeypatch.setenv("TREEDIFF_DEBUG", "1")
    else:
        monkeypatch.delenv("TREEDIFF_DEBUG", raising=False)
    return CliRunner().invoke(_group(raiser), ["go"])


@pytest.mark.parametrize(("interrupt", "status", "line"), [
    (Terminated(signal.SIGTERM), 143, "treediff: terminated by SIGTERM"),
    (Terminated(signal.SIGHUP), 129, "treediff: terminated by SIGHUP"),
    (KeyboardInterrupt(), 130, "treediff: interrupted"),
])
@pytest.mark.parametrize("then", [RuntimeError("release unlocked lock"), InputError("x.log: cut short")])
def test_an_error_raised_while_an_interrupt_unwinds_exits_as_the_interrupt(monkeypatch, interrupt, status, line,
                                                                           then):
    result = _invoke(_cut_short_by(interrupt, then), monkeypatch)
    assert result.exit_code == status, result.output
    assert line in result.output
    assert "internal error" not in result.output and "error:" not in result.output


def test_an_error_raised_two_levels_behind_the_interrupt_too(monkeypatch):
    def raiser():
        try:
            _cut_short_by(Terminated(signal.SIGTERM), RuntimeError("release unlocked lock"))()
        finally:
            raise OSError("and then this")

    result = _invoke(raiser, monkeypatch)
    assert result.exit_code == 143 and "terminated by SIGTERM" in result.output


def test_with_treediff_debug_the_error_propagates_with_its_interrupt_as_context(monkeypatch):
    result = _invoke(_cut_short_by(Terminated(signal.SIGTERM), RuntimeError("release unlocked lock")), monkeypatch,
                     debug=True)
    assert isinstance(result.exception, RuntimeError)
    assert isinstance(result.exception.__context__, Terminated)


def test_an_interrupt_after_a_handled_error_is_not_behind_a_new_one(monkeypatch):
    """An interrupt that was caught and dealt with before is history, not the cause of the next error: only
    the chain of the error raised counts."""
    def raiser():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            pass
        raise RuntimeError("a bug")

    result = _invoke(raiser, monkeypatch)
    assert result.exit_code == 3 and "internal error: RuntimeError: a bug" in result.output


@pytest.mark.parametrize(("error", "status", "text"), [
    (InputError("x.log: line 3: bad"), 2, "treediff: error: x.log: line 3: bad"),
    (RuntimeError("a bug"), 3, "treediff: internal error: RuntimeError: a bug (set TREEDIFF_DEBUG=1"),
    (Terminated(signal.SIGTERM), 143, "treediff: terminated by SIGTERM"),
    (KeyboardInterrupt(), 130, "treediff: interrupted"),
])
def test_plain_errors_keep_their_line_and_status(monkeypatch, error, status, text):
    def raiser():
        raise error

    result = _invoke(raiser, monkeypatch)
    assert result.exit_code == status and text in result.output, result.output


def test_a_closed_pipe_is_not_an_error(monkeypatch):
    def raiser():
        raise BrokenPipeError

    assert _invoke(raiser, monkeypatch).exit_code == 0

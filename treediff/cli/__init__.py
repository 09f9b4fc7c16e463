"""The ``treediff`` command line: a thin click shell over the library.

Each command lives in ``treediff/cli/<name>.py`` and exposes ``COMMANDS``
(a list of click commands); this module only discovers and assembles them and turns errors into clear messages.
"""
from __future__ import annotations

import atexit
import importlib
import os
import pkgutil
import signal
import sys
import threading

import click

from treediff import __version__
from treediff.cli.common import (
    aligner_in_use,
    attach_examples,
    command_summaries,
    dictionary_conversion_in_use,
    move_checker_in_use,
    san_resolver_in_use,
    tokenizer_in_use,
)
from treediff.model.errors import TreediffError
from treediff.run.environment import quiet_blas
from treediff.run.signals import Terminated, interrupt_status, interrupting, received

import treediff.cli as _commands_pkg

# Every module in treediff/cli/ that defines COMMANDS is registered.
_COMMAND_MODULES = sorted(m.name for m in pkgutil.iter_modules(_commands_pkg.__path__))

#: Where the built-in commands live, so running one imports only its module: the others pull in
#: pandas, rich tables and the aligner, which cost `treediff parse` about 0.2 s of start-up.
#: A command missing here is still found: then every module is imported.
_KNOWN_HOMES = {
    "parse": "parse", "info": "parse", "report": "report", "compare": "report",
    "diff": "diff", "run": "run", "batch": "run", "whatif": "whatif", "docs": "docs", "browse": "browse",
}


def quiet_echo(message: str) -> None:
    """Print to stderr, if there still is one (after SIGHUP the terminal may be gone)."""
    try:
        click.echo(message, err=True)
    except (OSError, ValueError):
        detach_closed_streams()


def detach_closed_streams() -> None:
    """Point stdout and stderr at /dev/null: a hung-up terminal fails every write, and the interpreter's
    final flush of stdout would turn the exit status into 120."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


class _Group(click.Group):
    """Loads command modules on demand; turns library errors into one-line messages instead of tracebacks."""

    _loaded: set[str]
    #: The command this invocation ran (its name), once click has resolved it; None before (e.g. ``--help``).
    invoked: str | None = None

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        self.invoked = name
        return name, command, rest

    def main(self, *args, **kwargs):
        # Before any command module loads numpy: its OpenBLAS threads would spin for nothing (run/environment.py).
        quiet_blas()
        return super().main(*args, **kwargs)

    def _load(self, module: str) -> None:
        if module in self._loaded:
            return
        self._loaded.add(module)
        for command in getattr(importlib.import_module(f"treediff.cli.{module}"), "COMMANDS", ()):
            attach_examples(command)
            self.add_command(command)

    def _load_all(self) -> None:
        for module in _COMMAND_MODULES:
            self._load(module)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_all()
        return super().list_commands(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # `treediff --help` lists the commands from their modules' source, without importing them
        # (they pull in pandas, polars, pyarrow, rich: 0.6 s of a 0.9 s --help); click's own way otherwise.
        found = command_summaries(_commands_pkg.__path__[0], _COMMAND_MODULES)
        if not found:
            return super().format_commands(ctx, formatter)
        limit = formatter.width - 6 - max(len(name) for name in found)
        # A bare click.Command per summary: click's own shortening (public API; its helper is deprecated).
        rows = [(name, click.Command(name, help=text).get_short_help_str(limit)) for name, text in sorted(found.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        home = _KNOWN_HOMES.get(cmd_name)
        if home in _COMMAND_MODULES:
            self._load(home)
        if cmd_name not in self.commands:
            self._load_all()
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context):
        # SIGTERM and SIGHUP (closing the terminal) are handled like Ctrl-C, exit 128 + signum.
        with interrupting():
            result = self._invoke(ctx)
            signum = received()
            if signum is not None:
                # The signal's exception was raised where Python drops exceptions (a finalizer, a generator
                # closed by the collector, an at-exit function: "Exception ignored in ..."), so the command
                # ran on: it still ends as the signal asked, with its status.
                _interrupted(ctx, KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum))
            return result

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            _interrupted(ctx, exc)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - sorted out below
            interrupt = _interrupt_behind(exc)
            if interrupt is not None:
                # Raised by a cleanup the interrupt cut short (Python's locks are not signal-safe: "release
                # unlocked lock" from a Condition the signal left unacquired).  The user stopped the command.
                if os.environ.get("TREEDIFF_DEBUG"):
                    raise
                _interrupted(ctx, interrupt)
            self._failed(ctx, exc)

    @staticmethod
    def _failed(ctx: click.Context, exc: Exception) -> None:
        """A command's error: one line on stderr and its status; a traceback only with ``TREEDIFF_DEBUG``."""
        if isinstance(exc, TreediffError):
            from treediff.model.text import printable

            click.echo(f"treediff: error: {printable(str(exc))}", err=True)  # it may quote the input
            ctx.exit(2)
        if isinstance(exc, BrokenPipeError):
            # Output piped into `head` and closed early: not an error.
            sys.stderr.close()
            ctx.exit(0)
        # The last line of defence: a bug is one line, not a traceback, unless asked for.
        if os.environ.get("TREEDIFF_DEBUG"):
            raise exc
        click.echo(
            f"treediff: internal error: {type(exc).__name__}: {exc} "
            "(set TREEDIFF_DEBUG=1 for a traceback)",
            err=True,
        )
        ctx.exit(3)


def _interrupted(ctx: click.Context, exc: KeyboardInterrupt) -> None:
    """Ctrl-C, SIGTERM or SIGHUP: one line on stderr (if it is still there), status 130, 143 or 129."""
    signum = getattr(exc, "signum", None)
    quiet_echo("treediff: interrupted" if signum is None else f"treediff: terminated by {exc}")
    ctx.exit(interrupt_status(exc))


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt (Ctrl-C, SIGTERM, SIGHUP) during whose handling ``exc`` was raised, if any."""
    seen: set[int] = set()
    here: BaseException | None = exc
    while here is not None and id(here) not in seen:
        if isinstance(here, KeyboardInterrupt):
            return here
        seen.add(id(here))
        here = here.__context__
    return None


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: the version and which compiled parts are in use, each worked out only when asked (every
    other command starts without loading the extensions for it)."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"treediff {__version__} (tokenizer: {tokenizer_in_use()}; UCI moves checked by: "
               f"{move_checker_in_use()}; SAN resolved by: {san_resolver_in_use()}; aligner: {aligner_in_use()}; "
               f"dictionary columns converted by: {dictionary_conversion_in_use()})")
    ctx.exit()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def main() -> None:
    """Find out why one chess engine's search tree is bigger than another's.

    Every command's --help ends with examples; `treediff docs` lists the
    documentation (definitions of every table and column).
    """


main._loaded = set()


#: The commands after which :func:`run` leaves without tearing the interpreter down.  Each writes its outputs
#: through files it closes itself (atomically: a temporary name, then a rename) or to stdout and stderr, which
#: ``run`` flushes, and leaves no thread running.  ``run``, ``batch`` (engines, Dask), ``browse`` (a terminal
#: UI) and ``whatif`` exit the usual way.
FAST_EXIT_COMMANDS = frozenset({"parse", "info", "report", "compare", "diff", "docs"})


def run() -> None:
    """The ``treediff`` console script: :func:`main`; then, after a command of :data:`FAST_EXIT_COMMANDS`, the
    process ends without the interpreter's teardown (``os._exit`` once stdout and stderr are flushed and the
    ``atexit`` handlers, e.g. the scratch directories' removal, have run).  The teardown frees every object of
    the heap one by one: 0.07 s of the 0.53 s a report of a 4k-line log took, 0.06-0.08 s of compare 1M + 1M
    (docs/PERFORMANCE.md, eleventh session).  Where anything is unusual (another thread still running, an
    exit status that is not a number, a stream that cannot be flushed) it exits the usual way, as before."""
    try:
        main()
    except SystemExit as exc:
        if main.invoked in FAST_EXIT_COMMANDS:
            _exit_at_once(exc.code)
        raise


def _exit_at_once(code: object) -> None:
    """End the process with status ``code`` (None: 0) without the interpreter's teardown; return instead when
    that could change what the usual exit does (the caller then exits the usual way)."""
    if code is not None and not isinstance(code, int):
        return  # (a message: Python prints it to stderr)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return  # (the usual exit waits for them)
    if not _flushed():
        return  # (e.g. stdout is a closed pipe: the usual exit's own flush reports it, as it always did)
    atexit._run_exitfuncs()  # (they run once: the list is emptied)
    _flushed()  # (what the handlers printed)
    os._exit(code or 0)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True

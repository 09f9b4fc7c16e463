"""The ``treediff`` command line: a thin click shell over the library.

Each command lives in ``treediff/commands/<name>.py`` and exposes ``COMMANDS``
(a list of click commands); this module only discovers and assembles them and turns errors into clear messages.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import click

from treediff import __version__
from treediff.errors import TreediffError

import treediff.commands as _commands_pkg

# Every module in treediff/commands/ that defines COMMANDS is registered.
_COMMAND_MODULES = sorted(m.name for m in pkgutil.iter_modules(_commands_pkg.__path__))


class _Group(click.Group):
    """Turns library errors into one-line messages instead of tracebacks."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except TreediffError as exc:
            click.echo(f"treediff: error: {exc}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("treediff: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # Output piped into `head` and closed early: not an error.
            sys.stderr.close()
            ctx.exit(0)
        except Exception as exc:  # noqa: BLE001 - last line of defence, see below
            if os.environ.get("TREEDIFF_DEBUG"):
                raise
            click.echo(
                f"treediff: internal error: {type(exc).__name__}: {exc} "
                "(set TREEDIFF_DEBUG=1 for a traceback)",
                err=True,
            )
            ctx.exit(3)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="treediff")
def main() -> None:
    """Find out why one chess engine's search tree is bigger than another's."""


for _name in _COMMAND_MODULES:
    for _cmd in getattr(importlib.import_module(f"treediff.commands.{_name}"), "COMMANDS", ()):
        main.add_command(_cmd)

"""Helpers shared by the click commands (no commands here)."""
from __future__ import annotations

import click

#: ``--keep-complete``, on every command that reads logs: a compressed log cut short keeps the searches
#: read completely (the one the cut ends is dropped, a warning says so) instead of failing.
keep_complete_option = click.option(
    "--keep-complete", is_flag=True,
    help="A .gz/.zst log cut short: keep the searches read completely and warn, instead of failing (exit 2).")


def echo_warnings(warnings: list[str], limit: int = 40) -> None:
    """Print warnings to stderr, one per line, at most ``limit`` of them and a count of the rest."""
    for w in warnings[:limit]:
        click.echo(f"warning: {w}", err=True)
    if len(warnings) > limit:
        click.echo(f"warning: ... and {len(warnings) - limit} more warnings", err=True)

"""Helpers shared by the click commands (no commands here)."""
from __future__ import annotations

import click


def echo_warnings(warnings: list[str], limit: int = 40) -> None:
    """Print warnings to stderr, one per line, at most ``limit`` of them and a count of the rest."""
    for w in warnings[:limit]:
        click.echo(f"warning: {w}", err=True)
    if len(warnings) > limit:
        click.echo(f"warning: ... and {len(warnings) - limit} more warnings", err=True)

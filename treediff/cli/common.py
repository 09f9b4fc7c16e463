"""Helpers shared by the click commands (no commands here).

Kept light: ``treediff --help`` and every command import this module, so it
imports click and the standard library only (issue 17: start-up).
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import click

#: ``--keep-complete``, on every command that reads logs: a compressed log cut short keeps the searches
#: read completely (the one the cut ends is dropped, a warning says so) instead of failing.
keep_complete_option = click.option(
    "--keep-complete", is_flag=True,
    help="A .gz/.zst log cut short: keep the searches read completely and warn, instead of failing (exit 2).")

#: The formats an ``-o`` name's extension implies when ``--format`` is not given (report, compare, diff).
EXTENSION_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".md": "markdown",
                     ".markdown": "markdown", ".html": "html", ".htm": "html", ".txt": "table"}


def echo_warnings(warnings: list[str], limit: int = 40) -> None:
    """Print warnings to stderr, one per line, at most ``limit`` of them and a count of the rest."""
    from treediff.model.text import printable

    for w in warnings[:limit]:
        click.echo(f"warning: {printable(w)}", err=True)  # warnings quote ids and lines from the input
    if len(warnings) > limit:
        click.echo(f"warning: ... and {len(warnings) - limit} more warnings", err=True)


def format_from_output(fmt: str | None, output: str | os.PathLike[str] | None, default: str = "table",
                       choices: tuple[str, ...] | list[str] | None = None,
                       aliases: dict[str, str] | None = None) -> str:
    """The output format: ``--format`` when given, else the one ``-o``'s extension names, else ``default``.

    ``.csv`` -> csv, ``.json`` -> json, ``.jsonl``/``.ndjson`` -> jsonl, ``.md`` -> markdown, ``.html`` ->
    html, ``.txt`` -> table (:data:`EXTENSION_FORMATS`; ``aliases`` maps a command's own name for one, e.g.
    diff's ``{"table": "text"}``).  An extension naming a format the command lacks (``choices``) is a usage
    error, not a silent fallback; an unknown extension (or stdout) gives ``default``.
    """
    if fmt is not None:
        return fmt
    if output is None or str(output) == "-":
        return default
    implied = EXTENSION_FORMATS.get(Path(str(output)).suffix.lower())
    if implied is None:
        return default
    implied = (aliases or {}).get(implied, implied)
    if choices is not None and implied not in choices:
        raise click.UsageError(f"-o {output}: the {implied} format (from the extension) is not available here; "
                               f"give --format ({', '.join(choices)})")
    return implied


#: Examples shown at the end of each command's ``--help`` (attached by :func:`attach_examples`).
EXAMPLES: dict[str, list[str]] = {
    "parse": [
        "treediff parse engine.log -o engine.parquet      # + engine.searches.parquet",
        "zstd -dc big.log.zst | treediff parse - -o big.parquet",
        "treediff parse engine.log -o - | duckdb -c \"select count(*) from read_parquet('/dev/stdin')\"",
    ],
    "info": [
        "treediff info engine.log                 # one line per search",
        "treediff info engine.parquet --schema    # format, versions, every column's unit",
    ],
    "report": [
        "treediff report a.log b.log --by phase --table lmr",
        "treediff report ds/ --table all -o tables/ --format csv    # one CSV per table",
        "treediff report a.parquet -o report.md                    # format from the extension",
    ],
    "compare": [
        "treediff compare typhoon.log stockfish.log",
        "treediff compare a.log b.log --top 20 -o why.json",
    ],
    "diff": [
        "treediff diff a.log b.log --only-diff --context 2",
        "treediff diff a.log b.log --under e2e4 --max-ply 3",
        "treediff diff a.log b.log --meld out/ && meld out/a.txt out/b.txt",
    ],
    "run": [
        "treediff run --engine typhoon_py --fen startpos --depth 5 -o start.log",
    ],
    "batch": [
        "treediff batch fixtures/positions20.epd --engine typhoon_py --engine stockfish --depth 6 -o ds/ -j 2",
        "treediff batch fixtures/positions20.epd --engine typhoon_py --depth 6 -o ds/ --resume",
    ],
    "docs": [
        "treediff docs               # list the documents",
        "treediff docs reports       # every report table's definition",
    ],
    "browse": [
        "treediff browse a.log b.log",
        "treediff browse a.log b.log --under e2e4",
    ],
}


def examples_epilog(lines: list[str]) -> str:
    """An epilog click prints as is (``\\b`` stops it re-wrapping the lines)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def attach_examples(command: click.Command) -> None:
    """Give ``command`` its :data:`EXAMPLES` epilog unless it has one of its own."""
    lines = EXAMPLES.get(command.name or "")
    if lines and not command.epilog:
        command.epilog = examples_epilog(lines)


def tokenizer_in_use() -> str:
    """Which tokenizer parses logs: ``compiled _ctok`` or the polars regex fallback (and why).

    Loads only the compiled module (no polars): ``treediff --version`` stays fast.  The same answer as
    :func:`treediff.parse.tokenizer.ctok_available` (tests/test_cli_startup.py checks it).
    """
    if os.environ.get("TREEDIFF_TOKENIZER", "") == "regex":
        return "polars regex (TREEDIFF_TOKENIZER=regex)"
    try:
        importlib.import_module("treediff.parse._ctok")
    except ImportError:
        return ("polars regex fallback: the compiled _ctok was not built (no C compiler at install?); "
                "parsing is about half as fast")
    return "compiled _ctok"

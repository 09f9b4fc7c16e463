"""Choosing a renderer and writing its output (to stdout, or atomically to a file).

The table format fits a width (:func:`~treediff.render.formatting.fit_width`:
``--width N``, else the terminal's, ``COLUMNS`` when piped, else 100), on a
terminal (rich tables) and piped or written with ``-o`` (plain text) alike;
markdown, CSV, JSON and JSON Lines are never fitted.  Notes (the sections' own and the
command's) follow the tables in table and markdown, are a ``notes`` list in
JSON, and go to stderr with CSV and JSON Lines (which have no place for them).

``--format csv -o DIR`` (an existing directory, a name ending in ``/`` or a
name without a suffix) writes one ``DIR/<table>.csv`` per table; ``-o FILE.csv``
takes one table (several are refused: no CSV reader reads tables one after
another); on stdout several tables follow one another under ``# name`` lines.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from treediff.model.errors import InputError

# The renderers (pandas, numpy, rich) and the writer (pyarrow) are imported where they are used: the CLI
# imports this module for FORMATS, and `treediff report --help` should not pay for them (issue 17).

FORMATS = ("table", "markdown", "csv", "json", "jsonl")


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """:func:`treediff.store.files.write_text_atomic` (imported on first use)."""
    from treediff.store.files import write_text_atomic as write

    write(path, text)

def is_directory_output(output: str | os.PathLike) -> bool:
    """``-o`` names a directory for ``--format csv``: it is one, ends with ``/``, or has no suffix."""
    text = str(output)
    return text.endswith(("/", os.sep)) or Path(text).is_dir() or not Path(text).suffix


def _all_notes(sections: Sequence, notes: Sequence[str]) -> list[str]:
    return [n for s in sections for n in getattr(s, "notes", ())] + list(notes)


def render(sections: Sequence, fmt: str, extra_json: dict | None = None, width: int | None = None,
           notes: Sequence[str] = ()) -> str:
    """The sections as text in ``fmt`` (``table`` gives plain aligned text here, fitted to ``width`` if given).

    ``notes`` (the command's) are included in JSON (with the sections' notes, as ``notes``); the text
    formats show the sections' notes after their tables and leave ``notes`` to :func:`emit`.
    """
    from treediff.render.data import render_csv, render_json, render_jsonl
    from treediff.render.text import render_markdown, render_plain

    if fmt == "markdown":
        return render_markdown(sections)
    if fmt == "csv":
        return render_csv(sections)
    if fmt == "jsonl":
        return render_jsonl(sections)
    if fmt == "json":
        extra = dict(extra_json or {})
        every = _all_notes(sections, notes)
        if every:
            extra["notes"] = every
        return render_json(sections, extra)
    if fmt == "table":
        return render_plain(sections, width)
    raise ValueError(f"unknown format {fmt!r}")


def _notes_text(notes: Sequence[str], fmt: str, width: int | None) -> str:
    from treediff.render.text import wrap

    if not notes:
        return ""
    from treediff.model.text import printable

    if fmt == "table":
        return "".join("\n" + "\n".join(wrap(printable(n), width)) for n in notes) + "\n"
    return "".join(f"\n{printable(n)}" for n in notes) + "\n"


def emit(sections: Sequence, fmt: str, output: str | os.PathLike | None = None,
         extra_json: dict | None = None, notes: Sequence[str] = (), width: int | None = None) -> None:
    """Render and write: ``-o FILE`` atomically; stdout as rich tables when it is a terminal.

    ``width``: ``--width N`` (None: :func:`~treediff.render.formatting.fit_width`'s default), for the
    table format only.
    """
    from treediff.render.formatting import fit_width

    fit = fit_width(width) if fmt == "table" else None
    if fmt in ("csv", "jsonl"):
        for n in _all_notes(sections, notes):
            sys.stderr.write(n + "\n")
    if fmt == "csv" and output is not None and str(output) != "-":
        write_csv(sections, output)
        return
    if output is not None and str(output) != "-":
        text = render(sections, fmt, extra_json, fit, notes)
        if fmt in ("table", "markdown"):
            text += _notes_text(notes, fmt, fit)
        write_text_atomic(output, text)
        return
    if fmt == "table" and sys.stdout.isatty():
        from rich.console import Console

        from treediff.render.text import render_rich

        console = Console()
        render_rich(sections, console, fit)
        for n in notes:
            console.print(n, style="dim", markup=False, width=fit)
        return
    text = render(sections, fmt, extra_json, fit, notes)
    sys.stdout.write(text)
    if fmt in ("table", "markdown"):
        sys.stdout.write(_notes_text(notes, fmt, fit))
    sys.stdout.flush()


def write_csv(sections: Sequence, output: str | os.PathLike) -> list[Path]:
    """``--format csv -o OUT``: one file per table into the directory OUT, or the one table into the file OUT.

    Each file is written atomically; a directory is created if missing.  Several tables to one file are
    refused (:class:`~treediff.model.errors.InputError`) before anything is written.
    """
    from treediff.render.data import csv_files, render_csv

    if is_directory_output(output):
        directory = Path(str(output))
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{output}: exists and is not a directory (--format csv -o DIR writes one CSV per table)")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{output}: cannot create the directory: {exc.strerror or exc}") from None
        written = []
        for name, text in csv_files(sections).items():
            write_text_atomic(directory / name, text)
            written.append(directory / name)
        return written
    if len(sections) > 1:
        names = ", ".join(s.name for s in sections)
        raise InputError(f"{output}: {len(sections)} tables ({names}) do not fit one CSV file; give a directory "
                         f"(-o {Path(str(output)).with_suffix('')}/ writes one CSV per table) or choose one table")
    write_text_atomic(output, render_csv(sections))
    return [Path(str(output))]

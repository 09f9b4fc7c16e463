"""Choosing a renderer and writing its output (to stdout, or atomically to a file)."""
from __future__ import annotations

import os
import sys
from typing import Sequence

from treediff.render.data import render_csv, render_json
from treediff.render.text import render_markdown, render_plain, render_rich
from treediff.store.files import write_text_atomic

FORMATS = ("table", "markdown", "csv", "json")


def render(sections: Sequence, fmt: str, extra_json: dict | None = None) -> str:
    """The sections as text in ``fmt`` (``table`` gives plain aligned text here)."""
    if fmt == "markdown":
        return render_markdown(sections)
    if fmt == "csv":
        return render_csv(sections)
    if fmt == "json":
        return render_json(sections, extra_json)
    if fmt == "table":
        return render_plain(sections)
    raise ValueError(f"unknown format {fmt!r}")


def emit(sections: Sequence, fmt: str, output: str | os.PathLike | None = None,
         extra_json: dict | None = None, notes: Sequence[str] = ()) -> None:
    """Render and write: ``-o FILE`` atomically; stdout as rich tables when it is a terminal."""
    if output is not None and str(output) != "-":
        text = render(sections, fmt, extra_json)
        if notes and fmt in ("table", "markdown"):
            text += "".join(f"\n{n}" for n in notes) + "\n"
        write_text_atomic(output, text)
        return
    if fmt == "table" and sys.stdout.isatty():
        from rich.console import Console

        console = Console()
        render_rich(sections, console)
        for n in notes:
            console.print(n, style="dim", markup=False)
        return
    text = render(sections, fmt, extra_json)
    sys.stdout.write(text)
    if notes and fmt in ("table", "markdown"):
        sys.stdout.write("".join(f"\n{n}" for n in notes) + "\n")
    sys.stdout.flush()

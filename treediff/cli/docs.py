"""``treediff docs [NAME]``: the documentation, shipped inside the package (``treediff/docs``)."""
from __future__ import annotations

from importlib import resources

import click

from treediff.model.errors import InputError


def _docs_dir():
    """The packaged documents: ``treediff/docs/*.md`` (in a checkout, a link to the repository's ``docs/``)."""
    return resources.files("treediff") / "docs"


def documents() -> dict[str, str]:
    """``{name: file name}``: ``REPORTS`` -> ``REPORTS.md``, sorted by name."""
    try:
        entries = list(_docs_dir().iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return {}
    found = {e.name[: -len(".md")]: e.name for e in entries if e.name.endswith(".md")}
    return dict(sorted(found.items()))


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


@click.command("docs")
@click.argument("name", required=False)
def docs_command(name: str | None) -> None:
    """Print one of the documents (NAME, e.g. reports); without NAME, list them.

    The documents are the files of the repository's docs/ folder, shipped
    with the package, so an installed treediff has them too.
    """
    available = documents()
    if not available:
        raise InputError("this installation has no documentation files (treediff/docs is missing)")
    if name is None:
        width = max(len(n) for n in available)
        for doc, file in available.items():
            title = _first_heading((_docs_dir() / file).read_text(encoding="utf-8"))
            click.echo(f"{doc.lower():<{width}}  {title}")
        return
    key = name.upper().removesuffix(".MD")
    matches = [doc for doc in available if doc.upper() == key]
    if not matches:
        raise InputError(f"no document {name!r}; there are: {', '.join(d.lower() for d in available)}")
    click.echo((_docs_dir() / available[matches[0]]).read_text(encoding="utf-8"), nl=False)


COMMANDS = [docs_command]

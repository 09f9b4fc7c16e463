"""Helpers shared by the click commands (no commands here).

Kept light: ``treediff --help`` and every command import this module, so it
imports click and the standard library only (issue 17: start-up).
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import click

if TYPE_CHECKING:
    import ast

#: ``--keep-complete``, on every command that reads logs: a compressed log cut short keeps the searches
#: read completely (the one the cut ends is dropped, a warning says so) instead of failing.
keep_complete_option = click.option(
    "--keep-complete", is_flag=True,
    help="A .gz/.zst log cut short: keep the searches read completely and warn, instead of failing (exit 2).")

#: The formats an ``-o`` name's extension implies when ``--format`` is not given (report, compare, diff).
EXTENSION_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".md": "markdown",
                     ".markdown": "markdown", ".html": "html", ".htm": "html", ".txt": "table"}


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """A block of a command's heavy imports (pandas, polars, pyarrow, the tables, the aligner) with Python's
    cyclic garbage collector paused, the objects they made then frozen (``gc.freeze``: left out of every later
    collection; modules live to the end anyway).  Collected as they came, the objects of those modules cost
    30 ms of a small log's 0.47 s report (about 220 collections, one of them full; docs/PERFORMANCE.md,
    eleventh session).  Nested blocks leave it to the outermost; an error re-enables it too.

    Only a process that has frozen nothing yet freezes: one that runs commands again and again (the tests,
    through click's runner) would otherwise keep, frozen, whatever garbage was waiting for a collection at
    each command's start."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            if gc.get_freeze_count() == 0:
                gc.freeze()
            gc.enable()


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
        "treediff parse engine.log -o - > records.parquet    # the records table only, to stdout",
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
        "treediff run --engine typhoon_py --fen 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1' "
        "--depth 4 -o start.log",
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
    "whatif": [
        "treediff whatif typhoon.log --rule 'kind == \"SEARCH\" and mn >= 6 and depth <= 4 and hist < 0'",
        "treediff whatif a.log --rule 'see < -100' --as reduce --by phase",
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
        ctok = importlib.import_module("treediff.parse._ctok")
    except ImportError:
        return ("polars regex fallback: the compiled _ctok was not built (no C compiler at install?); "
                "parsing takes about 2.4x the CPU")
    if not hasattr(ctok, "record_fields"):  # tokenizer.py refuses a module built from older source
        return "polars regex fallback: the compiled _ctok is stale (reinstall to rebuild it)"
    return "compiled _ctok"


def move_checker_in_use() -> str:
    """Who validates UCI paths against their positions: the compiled ``_cmoves`` on every parse, or
    python-chess under ``--strict`` only (docs/TREEDUMP_FORMAT.md).

    Loads only the compiled module (no polars), as :func:`tokenizer_in_use`; the same answer as
    :func:`treediff.parse.paths.compiled_checker_available` (tests/parse/test_uci_validation_parse.py).
    """
    if os.environ.get("TREEDIFF_MOVE_CHECK", "") == "python":
        return "python-chess under --strict only (TREEDIFF_MOVE_CHECK=python)"
    try:
        importlib.import_module("treediff.parse._cmoves")
    except ImportError:
        return ("python-chess under --strict only: the compiled _cmoves was not built (no C compiler at "
                "install?), so a parse without --strict does not check UCI moves")
    return "compiled _cmoves, every parse"


def san_resolver_in_use() -> str:
    """Who turns SAN paths (the crafty dialect) into UCI: the compiled ``_cmoves.SanResolver`` or python-chess.

    Loads only the compiled module (no polars, no python-chess), as :func:`tokenizer_in_use`; the same answer
    as :func:`treediff.parse.paths.compiled_san_available` (pyarrow >= 19, the declared minimum, has the
    string views it also asks for; tests/test_cli_startup.py checks the two agree).
    """
    for variable in ("TREEDIFF_SAN", "TREEDIFF_MOVE_CHECK"):
        if os.environ.get(variable, "") == "python":
            return f"python-chess ({variable}=python)"
    try:
        cmoves = importlib.import_module("treediff.parse._cmoves")
    except ImportError:
        return ("python-chess: the compiled _cmoves was not built (no C compiler at install?); SAN logs take "
                "about 4x the CPU")
    if not hasattr(cmoves, "SanResolver"):
        return "python-chess: the compiled _cmoves is stale (reinstall to rebuild it)"
    return "compiled _cmoves"


def _extension_alone(package: str, name: str) -> Any:
    """``treediff.<package>.<name>``, a compiled module, loaded from its file without running the package's
    ``__init__`` (ImportError when no file of that name was built)."""
    import importlib.machinery
    import importlib.util

    folder = Path(__file__).resolve().parent.parent / package
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"treediff.{package}.{name}", path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module
    raise ImportError(f"treediff.{package}.{name} was not built")


def aligner_in_use() -> str:
    """Which per-path passes compare and diff align with: the compiled ``_calign`` or the numpy fallback.

    Loads only the compiled module (no numpy, pandas or pyarrow), as :func:`tokenizer_in_use`; the same answer
    as :func:`treediff.align.core.compiled_available` (tests/test_cli_startup.py checks the two agree).
    """
    if os.environ.get("TREEDIFF_NO_CALIGN", "") not in ("", "0"):
        return "numpy (TREEDIFF_NO_CALIGN set)"
    try:  # the extension's file alone: importing treediff.align would load its package (pandas, pyarrow)
        calign = _extension_alone("align", "_calign")
    except ImportError:
        return ("numpy: the compiled _calign was not built (no C compiler at install?); aligning takes about "
                "1.7x the CPU")
    if not all(hasattr(calign, name) for name in ("tree", "visit_tree", "decisions", "order")):
        return "numpy: the compiled _calign is stale (reinstall to rebuild it)"
    return "compiled _calign"


def dictionary_conversion_in_use() -> str:
    """How a batch's dictionary columns (tag, act, kind, ...) become pandas Categoricals: the compiled
    ``_cstore`` pass or pyarrow's ``to_pandas``.  Loads only the compiled module, as :func:`aligner_in_use`; the
    same answer as :func:`treediff.store.categorical.compiled_available` (tests/test_cli_startup.py)."""
    try:
        cstore = _extension_alone("store", "_cstore")
    except ImportError:
        return "pyarrow's to_pandas: the compiled _cstore was not built (no C compiler at install?)"
    if not hasattr(cstore, "dictionary_codes"):
        return "pyarrow's to_pandas: the compiled _cstore is stale (reinstall to rebuild it)"
    return "compiled _cstore"


def command_summaries(package_dir: str | os.PathLike[str], modules: list[str]) -> dict[str, str] | None:
    """``{command name: help text}`` of every command the modules' ``COMMANDS`` lists, read from their
    source (``ast``) instead of importing them: ``treediff --help`` lists the commands without loading
    pandas, polars and the rest (about 0.6 s).  None when a module is written in a way this reader does
    not follow (then the caller imports the modules); tests/test_cli_startup.py checks it against click.
    """
    import ast

    found: dict[str, str] = {}
    for module in modules:
        try:
            source = Path(package_dir, f"{module}.py").read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None
        if "\nCOMMANDS" not in source:
            continue  # a helper module: no commands
        quick = _quick_summaries(source)  # parsing only the commands' heads: a whole module costs ~10 ms
        if quick is not None:
            found.update(quick)
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return None
        listed: list[str] | None = None
        functions: dict[str, ast.FunctionDef] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMMANDS"
                                                      for t in node.targets):
                if not isinstance(node.value, (ast.List, ast.Tuple)) or \
                        not all(isinstance(e, ast.Name) for e in node.value.elts):
                    return None
                listed = [e.id for e in node.value.elts if isinstance(e, ast.Name)]
        for function_name in listed or ():
            function = functions.get(function_name)
            summary = _command_of(function) if function is not None else None
            if summary is None:
                return None
            name, text, hidden = summary
            if not hidden:
                found[name] = text
    return found


def _quick_summaries(source: str) -> dict[str, str] | None:
    """:func:`command_summaries` of one module from the ``COMMANDS = [...]`` line and, per command, the
    snippet from its decorators to the end of its docstring (parsed alone); None where the module is
    laid out otherwise (then the whole module is parsed)."""
    import ast
    import re

    listing = re.search(r"^COMMANDS = \[([\w, ]*)\]\s*$", source, re.M)
    if listing is None:
        return None
    found: dict[str, str] = {}
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for name in (n.strip() for n in listing.group(1).split(",") if n.strip()):
        match = re.search(rf"^def {name}\(", source, re.M)
        if match is None:
            return None
        row = source.count("\n", 0, match.start())
        first = row
        while first > 0 and (lines[first - 1].startswith(("@", " ", ")")) and lines[first - 1].strip()):
            first -= 1  # decorator lines and their continuations, up to a blank or top-level line
        if not lines[first].startswith("@"):
            return None
        opening = source.find('"""', match.start())
        closing = source.find('"""', opening + 3) if opening >= 0 else -1
        following = re.compile(r"^\S", re.M).search(source, match.end())
        if closing < 0 or (following is not None and following.start() < opening):
            return None  # no docstring right after the signature
        try:
            function = ast.parse(source[starts[first]:closing + 3]).body[0]
        except (SyntaxError, ValueError, IndexError):
            return None
        summary = _command_of(function) if isinstance(function, ast.FunctionDef) else None
        if summary is None:
            return None
        if not summary[2]:
            found[summary[0]] = summary[1]
    return found


def _command_of(function: "ast.FunctionDef") -> tuple[str, str, bool] | None:
    """(name, help text, hidden) of a ``@click.command("name")``-decorated function, None if not one."""
    import ast
    import inspect

    for decorator in function.decorator_list:
        if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "command"):
            continue
        if not (decorator.args and isinstance(decorator.args[0], ast.Constant)
                and isinstance(decorator.args[0].value, str)):
            return None  # click derives the name from the function's: not followed here
        keywords = {k.arg: k.value for k in decorator.keywords}
        if any(k in keywords for k in ("cls", "short_help")):
            return None
        hidden = keywords.get("hidden")
        is_hidden = isinstance(hidden, ast.Constant) and hidden.value is True
        given = keywords.get("help")
        if given is not None:
            if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
                return None
            text = inspect.cleandoc(given.value)
        else:
            text = ast.get_docstring(function, clean=True) or ""
        return decorator.args[0].value, text.split("\f", 1)[0], is_hidden
    return None

"""Engine presets: how to start an engine, talk to it, and find its trace.

A :class:`EngineSpec` says everything the runner needs: the argv (never a
shell string), the protocol, the commands that make a batch search safe
(``easy`` for typhoon, ``ponder off`` for Crafty), where the engine writes its
TREEDUMP trace relative to its working directory, and the trace's dialect.
Engines without TREEDUMP (``uci``, ``xboard``, Debian's stockfish) have no
trace: their own per-iteration node counts are recorded instead.

Engine arguments on the command line (``--engine``) look like
``[LABEL@]PRESET[:PROFILE][=ARGV]``; see :func:`parse_engine_arg`.
"""
from __future__ import annotations

import enum
import functools
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from treediff.model.errors import InputError
from treediff.parse.dialects import DIALECTS
from treediff.run.process import unsafe_character

#: The UCI options set when the engine offers them: one search thread, a small fixed hash (MB).
DEFAULT_UCI_OPTIONS: tuple[tuple[str, str], ...] = (("Threads", "1"), ("Hash", "16"))
#: xboard commands sent after the handshake, before the position; ``{fen}`` and ``{depth}`` are filled in.
DEFAULT_XBOARD_SEARCH: tuple[str, ...] = ("post", "force", "setboard {fen}", "sd {depth}", "go")
_NAME = re.compile(r"^[A-Za-z0-9_.+:-]+$")
#: Environment variable names an engine may be given (POSIX portable names).
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: typhoon_py's profiles; each writes the TREEDUMP dialect of the same name (see :func:`_typhoon_py`).
_TYPHOON_PY_PROFILES = ("typhoon", "stockfish", "crafty")


class Protocol(str, enum.Enum):
    UCI = "uci"
    XBOARD = "xboard"


@dataclass(frozen=True)
class EngineSpec:
    """One engine as the runner drives it.

    * ``name``: the label results are stored under (the dataset's ``engine=`` partition).
    * ``argv``: the command, as a list; started in a fresh working directory.
    * ``dialect``: the TREEDUMP dialect of its trace; None for an engine without TREEDUMP.
    * ``trace_file``: where the trace appears, relative to the working directory (None: no trace).
    * ``pre``: xboard commands sent first, before ``xboard`` (Crafty: ``ponder off``).
    * ``init``: commands sent after the handshake (typhoon: ``easy``; UCI: raw commands).
    * ``uci_options``: ``setoption`` pairs, sent when the engine advertises the option.
    * ``search``: the xboard search commands (``{fen}``, ``{depth}`` placeholders).
    * ``env``: extra environment variables.
    * ``protover``: xboard: send ``protover 2`` and wait (at most 2 s) for ``feature ... done=1``.
    """

    name: str
    argv: tuple[str, ...]
    protocol: Protocol
    dialect: str | None = None
    trace_file: str | None = None
    pre: tuple[str, ...] = ()
    init: tuple[str, ...] = ()
    uci_options: tuple[tuple[str, str], ...] = DEFAULT_UCI_OPTIONS
    search: tuple[str, ...] = DEFAULT_XBOARD_SEARCH
    env: tuple[tuple[str, str], ...] = ()
    description: str = ""
    protover: bool = True

    @property
    def has_trace(self) -> bool:
        return self.trace_file is not None

    def describe(self) -> dict[str, Any]:
        """A JSON-able description (stored in the batch manifest)."""
        return {
            "name": self.name,
            "argv": list(self.argv),
            "protocol": self.protocol.value,
            "dialect": self.dialect,
            "trace_file": self.trace_file,
            "pre": list(self.pre),
            "init": list(self.init),
            "uci_options": [list(kv) for kv in self.uci_options],
            "search": list(self.search),
            "env": [list(kv) for kv in self.env],
            "protover": self.protover,
        }

    def xboard_commands(self, fen: str, depth: int) -> list[str]:
        return [c.replace("{fen}", fen).replace("{depth}", str(depth)) for c in self.search]


def trace_file_problem(rel: str) -> str | None:
    """Why ``rel`` cannot be a trace file name relative to the engine's working directory, or None."""
    bad = unsafe_character(rel)
    if bad is not None:
        return f"holds a {bad}"
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return "must be a file name inside the engine's working directory (relative; no empty, `.` or `..` parts)"
    return None


def spec_problem(spec: EngineSpec) -> str | None:
    """What would make ``spec`` unsafe to start, or None: checked before any engine starts.

    Every string that reaches the engine (argv, environment, the commands of
    ``pre``/``init``/``search``, UCI option names and values) must be free of
    the characters :func:`~treediff.run.process.unsafe_character` refuses
    (argv may hold undecodable file-name bytes); environment names must be
    portable names; the trace file must lie inside the working directory.
    """
    if not spec.argv:
        return "no command"
    for i, arg in enumerate(spec.argv):
        bad = unsafe_character(arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
        if bad is not None:
            return f"argv[{i}] {arg[:60]!r} holds a {bad}"
    for key, value in spec.env:
        if not _ENV_KEY.match(key):
            return f"environment variable name {key[:60]!r} is not a portable name (letters, digits, _; not a digit first)"
        bad = unsafe_character(value)
        if bad is not None:
            return f"environment variable {key} holds a {bad}"
    for what, commands in (("pre", spec.pre), ("init", spec.init), ("search", spec.search)):
        for command in commands:
            bad = unsafe_character(command)
            if bad is not None:
                return f"{what} command {command[:60]!r} holds a {bad} (each command is one line sent to the engine)"
    for name, value in spec.uci_options:
        for part, text in (("name", name), ("value", value)):
            bad = unsafe_character(text)
            if bad is not None:
                return f"UCI option {name[:60]!r} holds a {bad} in its {part}"
        if not name.strip():
            return "a UCI option has an empty name"
    if spec.trace_file is not None:
        problem = trace_file_problem(spec.trace_file)
        if problem is not None:
            return f"trace_file {spec.trace_file[:60]!r} {problem}"
    return None


def _typhoon_py_argv() -> tuple[str, ...]:
    # The interpreter running treediff has typhoon_py installed next to it.
    return (sys.executable, "-m", "typhoon_py")


def _typhoon_py(profile: str) -> EngineSpec:
    spec = functools.partial(
        EngineSpec,
        name="typhoon_py" if profile == "typhoon" else f"typhoon_py:{profile}",
        argv=(*_typhoon_py_argv(), "--profile", profile),
        dialect=profile,
        trace_file="treedump.log",
    )
    if profile == "stockfish":
        return spec(protocol=Protocol.UCI, description="typhoon_py, stockfish profile, over UCI")
    if profile == "crafty":
        return spec(protocol=Protocol.XBOARD, pre=("ponder off",),
                    description="typhoon_py, crafty profile, over xboard with `ponder off`")
    return spec(protocol=Protocol.XBOARD, init=("easy",),
                description="typhoon_py, typhoon profile, over xboard with `easy`")


def _debian(*names: str) -> str:
    for n in names:
        found = shutil.which(n) or (f"/usr/games/{n}" if os.access(f"/usr/games/{n}", os.X_OK) else None)
        if found:
            return found
    return names[0]


def presets() -> dict[str, EngineSpec]:
    """The built-in engines, by name (``typhoon_py:<profile>`` variants included)."""
    table = {
        "typhoon": EngineSpec(
            name="typhoon", argv=("typhoon",), protocol=Protocol.XBOARD, dialect="typhoon",
            trace_file="treedump.log", init=("easy",),
            description="typhoon (TREEDUMP build) over xboard; `easy` stops the background ponder"),
        "stockfish": EngineSpec(
            name="stockfish", argv=(_debian("stockfish"),), protocol=Protocol.UCI,
            description="Stockfish over UCI, its own per-iteration node counts (Debian's build has no TREEDUMP)"),
        "stockfish-treedump": EngineSpec(
            name="stockfish-treedump", argv=("stockfish",), protocol=Protocol.UCI, dialect="stockfish",
            trace_file="treedump.log", description="Stockfish TREEDUMP build over UCI"),
        "crafty": EngineSpec(
            name="crafty", argv=("crafty",), protocol=Protocol.XBOARD, dialect="crafty",
            trace_file="treedump.log", pre=("ponder off",),
            description="Crafty (TREEDUMP build) over xboard; `ponder off` first"),
        "uci": EngineSpec(name="uci", argv=(), protocol=Protocol.UCI,
                          description="any UCI engine; its own node counts (give its command with =ARGV or --cmd)"),
        "xboard": EngineSpec(name="xboard", argv=(), protocol=Protocol.XBOARD,
                             description="any xboard engine; its thinking-line node counts (=ARGV or --cmd)"),
    }
    for profile in _TYPHOON_PY_PROFILES:
        spec = _typhoon_py(profile)
        table[spec.name] = spec
    return table


def _tuple_of_str(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{what}: expected a list of strings")
    return tuple(value)


def _spec_from_table(name: str, table: Mapping[str, Any], known: Mapping[str, EngineSpec], where: str) -> EngineSpec:
    allowed = {"preset", "argv", "protocol", "dialect", "trace_file", "pre", "init", "uci_options", "search",
               "env", "description", "protover"}
    unknown = set(table) - allowed
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(allowed))})")
    base_name = table.get("preset")
    if base_name is not None:
        if base_name not in known:
            raise InputError(f"{where}: unknown preset {base_name!r}")
        spec = replace(known[base_name], name=name)
    else:
        if "protocol" not in table:
            raise InputError(f"{where}: give `protocol` (uci or xboard) or a `preset` to start from")
        spec = EngineSpec(name=name, argv=(), protocol=Protocol.UCI)
    changes: dict[str, Any] = {}
    if "argv" in table:
        argv = table["argv"]
        if isinstance(argv, str):
            try:
                changes["argv"] = tuple(shlex.split(argv))
            except ValueError as exc:
                raise InputError(f"{where}.argv: cannot split the command: {exc}") from None
        else:
            changes["argv"] = _tuple_of_str(argv, f"{where}.argv")
    if "protocol" in table:
        try:
            changes["protocol"] = Protocol(table["protocol"])
        except ValueError:
            raise InputError(f"{where}.protocol: {table['protocol']!r} is not uci or xboard") from None
    if "dialect" in table:
        dialect = table["dialect"] or None
        if dialect is not None and dialect not in DIALECTS:
            raise InputError(f"{where}.dialect: {dialect!r} is not one of {', '.join(DIALECTS)} (or \"\" for none)")
        changes["dialect"] = dialect
    if "trace_file" in table:
        trace = table["trace_file"] or None
        if trace is not None and not isinstance(trace, str):
            raise InputError(f"{where}.trace_file: expected a string")
        if trace is not None:
            problem = trace_file_problem(trace)
            if problem is not None:
                raise InputError(f"{where}.trace_file: {problem}")
        changes["trace_file"] = trace
    for key in ("pre", "init", "search"):
        if key in table:
            changes[key] = _tuple_of_str(table[key], f"{where}.{key}")
    if "uci_options" in table:
        opts = table["uci_options"]
        if not isinstance(opts, dict):
            raise InputError(f"{where}.uci_options: expected a table of name = value")
        for k, v in opts.items():
            if not isinstance(v, (str, int, float, bool)):
                raise InputError(f"{where}.uci_options.{k}: expected a string, number or boolean")
        changes["uci_options"] = tuple((str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in opts.items())
    if "env" in table:
        env = table["env"]
        if not isinstance(env, dict):
            raise InputError(f"{where}.env: expected a table of NAME = value")
        for k, v in env.items():
            if not isinstance(v, (str, int, float, bool)):
                raise InputError(f"{where}.env.{k}: expected a string or number")
        changes["env"] = tuple((str(k), str(v)) for k, v in env.items())
    if "description" in table:
        changes["description"] = str(table["description"])
    if "protover" in table:
        if not isinstance(table["protover"], bool):
            raise InputError(f"{where}.protover: expected true or false")
        changes["protover"] = table["protover"]
    spec = replace(spec, **changes)
    if (spec.dialect is None) != (spec.trace_file is None):
        raise InputError(f"{where}: give both `dialect` and `trace_file` (an engine with a trace) or neither")
    problem = spec_problem(spec) if spec.argv else spec_problem(replace(spec, argv=("engine",)))
    if problem is not None:
        raise InputError(f"{where}: {problem}")
    return spec


def load_config(path: str | Path, known: Mapping[str, EngineSpec] | None = None) -> dict[str, EngineSpec]:
    """User engines from a TOML file: one ``[engines.NAME]`` table per engine.

    Keys: ``argv`` (list, or a string split like a shell would, never run by
    one), ``protocol``, ``dialect`` and ``trace_file`` (both or neither),
    ``pre``, ``init``, ``search``, ``uci_options``, ``env``, ``description``,
    ``protover`` (xboard handshake on/off), and ``preset`` to start from a
    built-in engine.
    """
    known = dict(known or presets())
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a valid TOML file: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the engines config: {exc.strerror or exc}") from None
    engines = data.get("engines")
    if not isinstance(engines, dict) or not engines:
        raise InputError(f"{path}: no [engines.NAME] tables")
    out: dict[str, EngineSpec] = {}
    for name, table in engines.items():
        if not _NAME.match(name):
            raise InputError(f"{path}: engine name {name!r} may only use letters, digits and _ . + : -")
        if not isinstance(table, dict):
            raise InputError(f"{path}: engines.{name} must be a table")
        out[name] = _spec_from_table(name, table, {**known, **out}, f"{path}: engines.{name}")
        known[name] = out[name]
    return out


def parse_engine_arg(arg: str, known: Mapping[str, EngineSpec], cmd: str | None = None) -> EngineSpec:
    """Resolve ``[LABEL@]PRESET[:PROFILE][=ARGV]`` to an :class:`EngineSpec`.

    ``PRESET[:PROFILE]`` names a built-in or configured engine; ``=ARGV`` (or
    ``cmd``) replaces its command, split with :func:`shlex.split`; ``LABEL@``
    stores the results under another name (to run one preset twice, or to
    name a generic ``uci`` engine).
    """
    head, sep, argv_text = arg.partition("=")
    label, at, preset = head.rpartition("@")
    if not at:
        label, preset = "", head
    if preset not in known:
        raise InputError(f"--engine {arg}: unknown engine {preset!r} (known: {', '.join(sorted(known))})")
    spec = known[preset]
    name = label or spec.name
    if not _NAME.match(name):
        raise InputError(f"--engine {arg}: the name {name!r} may only use letters, digits and _ . + : -")
    if sep and cmd:
        raise InputError(f"--engine {arg}: give the command either as =ARGV or with --cmd, not both")
    command = argv_text if sep else cmd
    argv = spec.argv
    if command is not None:
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise InputError(f"--engine {arg}: cannot split the command: {exc}") from None
    if not argv:
        raise InputError(f"--engine {arg}: no command; give it as {preset}=ARGV or with --cmd")
    spec = replace(spec, name=name, argv=argv)
    problem = spec_problem(spec)
    if problem is not None:
        raise InputError(f"--engine {arg}: {problem}")
    return spec


def check_executable(spec: EngineSpec) -> EngineSpec:
    """The spec with its program made absolute; :class:`InputError` when it cannot be found or run.

    A relative program path (``./engine``, ``bin/engine``) is taken from the
    current directory, as a shell would, and made absolute: the engine itself
    starts in a fresh working directory, where it would not be found.
    """
    problem = spec_problem(spec)
    if problem is not None:
        raise InputError(f"engine {spec.name}: {problem}")
    program = spec.argv[0]
    if os.sep in program:
        program = os.path.abspath(program)
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise InputError(f"engine {spec.name}: {spec.argv[0]} is not an executable file")
    else:
        found = shutil.which(program)
        if found is None:
            raise InputError(f"engine {spec.name}: {program!r} not found on PATH (give its path with =ARGV or --cmd)")
        if not os.path.isabs(found):
            program = os.path.abspath(found)  # a relative directory on PATH
    if program != spec.argv[0]:
        spec = replace(spec, argv=(program, *spec.argv[1:]))
    return spec

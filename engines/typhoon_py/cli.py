"""``typhoon-py``: protocol mode (UCI/xboard, auto-detected) and one-shot ``search``/``batch``.

The engine options (``--profile``, ``--lmr-policy``, ``--prune-scope``,
``--treedump``, ``--no-treedump``, ``--trace-silent``) are accepted before the
subcommand and after it; different values in both places are refused.
``--treedump -`` writes the trace to standard output (``search``/``batch`` then
print their result lines on standard error; protocol mode refuses it).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import chess
import click

from typhoon_py.engine import (
    STDOUT_TRACE,
    make_config,
    open_trace as _open_trace,
    read_epd,
    resolve_trace_path,
    run_batch,
    run_search,
    write_counters,
)
from typhoon_py.profiles import PROFILES
from typhoon_py.protocol import SearchCrashed, UciEngine, XboardEngine, detect_and_run
from typhoon_py.search import SearchConfig


def _version() -> str:
    """The version of the distribution that ships typhoon_py (treediff's)."""
    try:
        from importlib.metadata import version

        return version("treediff")
    except Exception:  # not installed as a distribution (a bare checkout on sys.path)
        return "unknown"


def open_trace(path):
    """The trace file, or a clear usage error (exit 2) when it cannot be created."""
    try:
        return _open_trace(path)
    except OSError as exc:
        raise click.BadParameter(f"cannot write the trace file {path}: {exc.strerror}",
                                 param_hint="--treedump / $TREEDUMP") from None


#: The engine options' defaults.  They are given here, not to click, so that an option given
#: before the subcommand (``typhoon-py --profile stockfish search``) is told from one left out.
DEFAULTS = {"profile": "typhoon", "lmr_policy": "profile", "prune_scope": "move"}


def _note_shadow(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--shadow`` before or after the subcommand: noted in the contexts' shared ``meta``."""
    if value:
        ctx.meta["typhoon_py.shadow"] = True


def _engine_options(f):
    f = click.option("--shadow", is_flag=True, expose_value=False, callback=_note_shadow,
                     help="Search every pruned or reduced move again at full depth in a side search "
                          "that cannot change the result; write a SHADOW line after its decision.")(f)
    f = click.option("--trace-silent", is_flag=True,
                     help="Also write the decisions the engine makes without a MOVE line "
                          "(stockfish's move-count pruning: act=SKIP-QUIETS).")(f)
    f = click.option("--no-treedump", is_flag=True, help="Do not write a trace at all.")(f)
    f = click.option("--treedump", "treedump", metavar="PATH", default=None,
                     help="Trace file, `-` for standard output (default: $TREEDUMP, else ./treedump.log).")(f)
    f = click.option("--prune-scope", type=click.Choice(["move", "node"]), default=None,
                     help="An LMP/FP decision skips the move (continue) or the rest of the node (break)"
                          " [default: move].")(f)
    f = click.option("--lmr-policy", type=click.Choice(["profile", "see-history"]), default=None,
                     help="The profile's LMR rule or the SEE/history rule [default: profile].")(f)
    f = click.option("--profile", type=click.Choice(list(PROFILES)), default=None,
                     help="Mechanism set and TREEDUMP dialect [default: typhoon].")(f)
    return f


@dataclass(frozen=True)
class Settings:
    """The engine options after merging the group's and the subcommand's."""

    config: SearchConfig
    trace_path: Optional[Path]


def _settings(ctx: click.Context, profile, lmr_policy, prune_scope, treedump, no_treedump,
              trace_silent, protocol: bool = False) -> Settings:
    """Merge the options given before the subcommand (kept in ``ctx.obj``) with the
    subcommand's own: either place works, the same value in both is fine, different values
    are a usage error (exit 2)."""
    given = {"profile": profile, "lmr_policy": lmr_policy, "prune_scope": prune_scope,
             "treedump": treedump}
    group = ctx.obj or {}
    merged = {}
    for name, value in given.items():
        outer = group.get(name)
        if value is not None and outer is not None and value != outer:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} is {outer!r} before the subcommand and {value!r} after it;"
                                   " give it once")
        merged[name] = value if value is not None else outer
    config = make_config(merged["profile"] or DEFAULTS["profile"],
                         merged["lmr_policy"] or DEFAULTS["lmr_policy"],
                         merged["prune_scope"] or DEFAULTS["prune_scope"],
                         bool(trace_silent or group.get("trace_silent")))
    if ctx.meta.get("typhoon_py.shadow"):
        config = replace(config, shadow=True)
    path = resolve_trace_path(merged["treedump"], bool(no_treedump or group.get("no_treedump")))
    if protocol and path == STDOUT_TRACE:
        raise click.UsageError("--treedump - (the trace on standard output) does not work in protocol mode:"
                               " standard output carries the UCI/xboard protocol; give a file"
                               " (--treedump / $TREEDUMP)")
    return Settings(config, path)


def _echo_result(text: str, settings: Settings) -> None:
    """A result line: on standard output, or on standard error when the trace goes there."""
    click.echo(text, err=settings.trace_path == STDOUT_TRACE)


@click.group(invoke_without_command=True)
@click.version_option(_version(), "--version", prog_name="typhoon-py",
                      message="%(prog)s %(version)s (typhoon_py, the treediff reference engine)")
@_engine_options
@click.pass_context
def main(ctx: click.Context, profile: Optional[str], lmr_policy: Optional[str], prune_scope: Optional[str],
         treedump: Optional[str], no_treedump: bool, trace_silent: bool) -> None:
    """typhoon_py: a reference alpha-beta engine that writes TREEDUMP traces.

    Without a subcommand it reads UCI or xboard commands from standard input
    (the first command decides which).  The engine options work before the
    subcommand as well as after it.
    """
    ctx.obj = {"profile": profile, "lmr_policy": lmr_policy, "prune_scope": prune_scope,
               "treedump": treedump, "no_treedump": no_treedump, "trace_silent": trace_silent}
    if ctx.invoked_subcommand is None:
        st = _settings(ctx, None, None, None, None, False, False, protocol=True)
        _protocol_exit(lambda: detect_and_run(st.config, st.trace_path, sys.stdin, exit_on_crash=True))


def _protocol_exit(run) -> None:
    """Run a protocol loop; a crashed search makes the process exit non-zero at once."""
    try:
        run()
    except SearchCrashed as exc:
        sys.stderr.write(f"typhoon_py: {exc}\n")
        sys.stderr.flush()
        sys.exit(3)


@main.command()
@_engine_options
@click.pass_context
def uci(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent) -> None:
    """Speak UCI on standard input/output."""
    st = _settings(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent, protocol=True)
    _protocol_exit(lambda: UciEngine(st.config, st.trace_path, exit_on_crash=True).run(sys.stdin))


@main.command()
@_engine_options
@click.pass_context
def xboard(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent) -> None:
    """Speak xboard (CECP) on standard input/output; pondering is on until `easy`/`ponder off`."""
    st = _settings(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent, protocol=True)
    _protocol_exit(lambda: XboardEngine(st.config, st.trace_path, exit_on_crash=True).run(sys.stdin))


@main.command()
@click.option("--fen", default=chess.STARTING_FEN, show_default="start position", help="Position to search.")
@click.option("--depth", type=click.IntRange(1, 64), required=True, help="Depth in plies.")
@click.option("--counters", type=click.Path(dir_okay=False), default=None,
              help="Write the engine's own counters (JSON) here.")
@click.option("--id", "position_id", default=None, help="Position id for the header.")
@click.option("--phase", type=click.Choice(["opening", "middlegame", "endgame"]), default=None,
              help="Phase label for the header.")
@_engine_options
@click.pass_context
def search(ctx, fen, depth, counters, position_id, phase, profile, lmr_policy, prune_scope, treedump,
           no_treedump, trace_silent) -> None:
    """Search one position to a fixed depth and print the best move (on standard error when
    the trace goes to standard output)."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--fen") from None
    st = _settings(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent)
    trace = open_trace(st.trace_path)
    try:
        outcome = run_search(board, depth, st.config, trace, position_id, phase)
    finally:
        if trace is not None:
            trace.close()
    if counters:
        write_counters(counters, [outcome])
    best = outcome.best_move.uci() if outcome.best_move else "0000"
    _echo_result(f"bestmove {best} score {outcome.score} nodes {outcome.nodes} qnodes {outcome.qnodes}", st)


@main.command()
@click.option("--epd", type=click.Path(exists=True, dir_okay=False), required=True,
              help="EPD file; `id` and `c0 \"phase=...\"` opcodes go into the headers.")
@click.option("--depth", type=click.IntRange(1, 64), required=True, help="Depth in plies.")
@click.option("--limit", type=int, default=None, help="Only the first N positions.")
@click.option("--counters", type=click.Path(dir_okay=False), default=None,
              help="Write a JSON list of per-search counters here.")
@_engine_options
@click.pass_context
def batch(ctx, epd, depth, limit, counters, profile, lmr_policy, prune_scope, treedump, no_treedump,
          trace_silent) -> None:
    """Search every position of an EPD file into one trace (a batch log)."""
    try:
        positions = read_epd(epd)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--epd") from None
    if limit is not None:
        positions = positions[:limit]
    st = _settings(ctx, profile, lmr_policy, prune_scope, treedump, no_treedump, trace_silent)
    trace = open_trace(st.trace_path)
    try:
        outcomes = run_batch(positions, depth, st.config, trace)
    finally:
        if trace is not None:
            trace.close()
    if counters:
        write_counters(counters, outcomes, batch=True)
    for p, o in zip(positions, outcomes):
        _echo_result(f"{p.id or '-'} bestmove {o.best_move.uci() if o.best_move else '0000'} "
                     f"score {o.score} nodes {o.nodes} qnodes {o.qnodes}", st)


if __name__ == "__main__":  # pragma: no cover
    main()

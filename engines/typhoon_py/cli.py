"""``typhoon-py``: protocol mode (UCI/xboard, auto-detected) and one-shot ``search``/``batch``."""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Optional

import chess
import click

from typhoon_py.engine import (
    make_config,
    open_trace as _open_trace,
    read_epd,
    resolve_trace_path,
    run_batch,
    run_search,
    write_counters,
)
from typhoon_py.profiles import PROFILES
from typhoon_py.protocol import UciEngine, XboardEngine, detect_and_run
from typhoon_py.search import SearchConfig


def open_trace(path):
    """The trace file, or a clear usage error (exit 2) when it cannot be created."""
    try:
        return _open_trace(path)
    except OSError as exc:
        raise click.BadParameter(f"cannot write the trace file {path}: {exc.strerror}",
                                 param_hint="--treedump / $TREEDUMP") from None


def _note_shadow(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--shadow`` before or after the subcommand: noted in the contexts' shared ``meta``."""
    if value:
        ctx.meta["typhoon_py.shadow"] = True


def _config(profile: str, lmr_policy: str, prune_scope: str) -> SearchConfig:
    """``make_config`` plus ``--shadow``."""
    config = make_config(profile, lmr_policy, prune_scope)
    if click.get_current_context().meta.get("typhoon_py.shadow"):
        config = replace(config, shadow=True)
    return config


def _engine_options(f):
    f = click.option("--shadow", is_flag=True, expose_value=False, callback=_note_shadow,
                     help="Search every pruned or reduced move again at full depth in a side search "
                          "that cannot change the result; write a SHADOW line after its decision.")(f)
    f = click.option("--no-treedump", is_flag=True, help="Do not write a trace at all.")(f)
    f = click.option("--treedump", "treedump", metavar="PATH", default=None,
                     help="Trace file (default: $TREEDUMP, else ./treedump.log).")(f)
    f = click.option("--prune-scope", type=click.Choice(["move", "node"]), default="move", show_default=True,
                     help="An LMP/FP decision skips the move (continue) or the rest of the node (break).")(f)
    f = click.option("--lmr-policy", type=click.Choice(["profile", "see-history"]), default="profile",
                     show_default=True, help="The profile's LMR rule or the SEE/history rule.")(f)
    f = click.option("--profile", type=click.Choice(list(PROFILES)), default="typhoon", show_default=True,
                     help="Mechanism set and TREEDUMP dialect.")(f)
    return f


@click.group(invoke_without_command=True)
@_engine_options
@click.pass_context
def main(ctx: click.Context, profile: str, lmr_policy: str, prune_scope: str, treedump: Optional[str],
         no_treedump: bool) -> None:
    """typhoon_py: a reference alpha-beta engine that writes TREEDUMP traces.

    Without a subcommand it reads UCI or xboard commands from standard input
    (the first command decides which).
    """
    if ctx.invoked_subcommand is None:
        config = _config(profile, lmr_policy, prune_scope)
        detect_and_run(config, resolve_trace_path(treedump, no_treedump), sys.stdin)


@main.command()
@_engine_options
def uci(profile, lmr_policy, prune_scope, treedump, no_treedump) -> None:
    """Speak UCI on standard input/output."""
    UciEngine(_config(profile, lmr_policy, prune_scope),
              resolve_trace_path(treedump, no_treedump)).run(sys.stdin)


@main.command()
@_engine_options
def xboard(profile, lmr_policy, prune_scope, treedump, no_treedump) -> None:
    """Speak xboard (CECP) on standard input/output; pondering is on until `easy`/`ponder off`."""
    XboardEngine(_config(profile, lmr_policy, prune_scope),
                 resolve_trace_path(treedump, no_treedump)).run(sys.stdin)


@main.command()
@click.option("--fen", default=chess.STARTING_FEN, show_default="start position", help="Position to search.")
@click.option("--depth", type=click.IntRange(1, 64), required=True, help="Depth in plies.")
@click.option("--counters", type=click.Path(dir_okay=False), default=None,
              help="Write the engine's own counters (JSON) here.")
@click.option("--id", "position_id", default=None, help="Position id for the header.")
@click.option("--phase", type=click.Choice(["opening", "middlegame", "endgame"]), default=None,
              help="Phase label for the header.")
@_engine_options
def search(fen, depth, counters, position_id, phase, profile, lmr_policy, prune_scope, treedump,
           no_treedump) -> None:
    """Search one position to a fixed depth and print the best move."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--fen") from None
    config = _config(profile, lmr_policy, prune_scope)
    trace = open_trace(resolve_trace_path(treedump, no_treedump))
    try:
        outcome = run_search(board, depth, config, trace, position_id, phase)
    finally:
        if trace is not None:
            trace.close()
    if counters:
        write_counters(counters, [outcome])
    best = outcome.best_move.uci() if outcome.best_move else "0000"
    click.echo(f"bestmove {best} score {outcome.score} nodes {outcome.nodes} qnodes {outcome.qnodes}")


@main.command()
@click.option("--epd", type=click.Path(exists=True, dir_okay=False), required=True,
              help="EPD file; `id` and `c0 \"phase=...\"` opcodes go into the headers.")
@click.option("--depth", type=click.IntRange(1, 64), required=True, help="Depth in plies.")
@click.option("--limit", type=int, default=None, help="Only the first N positions.")
@click.option("--counters", type=click.Path(dir_okay=False), default=None,
              help="Write a JSON list of per-search counters here.")
@_engine_options
def batch(epd, depth, limit, counters, profile, lmr_policy, prune_scope, treedump, no_treedump) -> None:
    """Search every position of an EPD file into one trace (a batch log)."""
    try:
        positions = read_epd(epd)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--epd") from None
    if limit is not None:
        positions = positions[:limit]
    config = _config(profile, lmr_policy, prune_scope)
    trace = open_trace(resolve_trace_path(treedump, no_treedump))
    try:
        outcomes = run_batch(positions, depth, config, trace)
    finally:
        if trace is not None:
            trace.close()
    if counters:
        write_counters(counters, outcomes, batch=True)
    for p, o in zip(positions, outcomes):
        click.echo(f"{p.id or '-'} bestmove {o.best_move.uci() if o.best_move else '0000'} "
                   f"score {o.score} nodes {o.nodes} qnodes {o.qnodes}")


if __name__ == "__main__":  # pragma: no cover
    main()

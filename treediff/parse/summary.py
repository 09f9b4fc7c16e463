"""The searches table: one row per search, and the warnings about each search.

Made once every log is read (:func:`searches_table`), from what the state
machine (:mod:`treediff.parse.state`) counted: contexts, iterations, END
lines, records, unknown acts and unresolved moves.
"""
from __future__ import annotations

import pyarrow as pa
import polars as pl

from treediff.model.notation import NULL_UCI, looks_uci
from treediff.model.schema import SEARCHES_SCHEMA
from treediff.parse.dialects import Notation
from treediff.parse.paths import resolve_root_move
from treediff.parse.state import NO_CTX, SearchState, effective

#: An END line as the state machine keeps it: (nodes, best move as written, score, order in its search).
End = tuple[int | None, str | None, int | None, int]


def searches_table(searches: list[SearchState], all_contexts: bool) -> tuple[pa.Table, list[str]]:
    """The SEARCHES_SCHEMA table, and every search's warnings as ``source: search N (...): warning``."""
    rows: list[dict] = []
    warnings: list[str] = []
    interleaved = _interleaving(searches, all_contexts)
    for st in searches:
        row, search_warnings = _summarize(st, all_contexts, interleaved.get(st.search, []))
        where = f"search {st.search} ({st.position}, line {st.first_line})"
        warnings.extend(f"{st.source}: {where}: {w}" for w in search_warnings)
        rows.append(row)
    return _table_from_rows(rows, SEARCHES_SCHEMA), warnings


def strict_failures(warnings: list[str]) -> list[str]:
    """The warnings that ``--strict`` turns into an error: unknown acts, moves that do not resolve, interleaved
    searches."""
    return [w for w in warnings if "unknown act=" in w or "does not resolve" in w or INTERLEAVED in w]


#: The phrase of every interleaving warning (``--strict`` looks for it).
INTERLEAVED = "searches interleaved"


def _where(st: SearchState) -> str:
    return f"search {st.search} ({st.position}, line {st.first_line})"


def _interleaving(searches: list[SearchState], all_contexts: bool) -> dict[int, list[str]]:
    """Warnings about two searches whose lines are mixed, keyed by search.

    Records carry no search id: each belongs to the latest header.  When a
    second search's header comes before the first one's records and END, every
    record lands in the second search, which then has two END lines in one
    context, while the first has none.  Both searches are named, with the lines.
    """
    out: dict[int, list[str]] = {}
    for i, st in enumerate(searches):
        kept = _kept_labels(st, all_contexts)
        doubled = {label: lines for label, lines in st.end_lines.items() if label in kept and len(lines) > 1}
        if not doubled:
            continue
        lines = sorted(line for ls in doubled.values() for line in ls)
        # The earlier search of the same file that never got its END: the one whose lines went here.
        partner = next((p for p in reversed(searches[:i])
                        if p.source == st.source and not _kept_ends(p, all_contexts)), None)
        other = f"; {_where(partner)} has no END of its own" if partner is not None else ""
        out.setdefault(st.search, []).append(
            f"{len(lines)} END records in one context (lines {', '.join(map(str, lines))}): two {INTERLEAVED} "
            f"(records belong to the latest header, so this search counts the other's records too){other}: "
            "its numbers are not reliable")
        if partner is not None:
            out.setdefault(partner.search, []).append(
                f"no END, and {_where(st)} has {len(lines)} (lines {', '.join(map(str, lines))}): two "
                f"{INTERLEAVED}; this search's records were counted in search {st.search}: its numbers are not "
                "reliable")
    return out


def _kept_ends(st: SearchState, all_contexts: bool) -> list:
    return [st.ends[label] for label in _kept_labels(st, all_contexts) if label in st.ends]


def _summarize(st: SearchState, all_contexts: bool, interleaved: list[str] | None = None) -> tuple[dict, list[str]]:
    """One search's row of the searches table, and its warnings (header ones first)."""
    primary_name = st.primary_label or ""
    kept_labels = _kept_labels(st, all_contexts)
    kept_ends = [st.ends[label] for label in kept_labels if label in st.ends]
    end = max(kept_ends, key=lambda e: e[3]) if kept_ends else None
    end_nodes = end[0] if end else None
    if all_contexts and kept_ends:
        # Every context's records are kept, so every context's own count adds up.
        end_nodes = sum(e[0] for e in kept_ends if e[0] is not None)
    warnings = list(st.warnings) + (interleaved or []) + _count_warnings(st, all_contexts, end_nodes)
    if end is None and not any(INTERLEAVED in w for w in interleaved or []):
        last = f"-{st.last_line}" if st.last_line is not None and st.last_line > st.first_line else ""
        warnings.append(f"no END record (lines {st.first_line}{last}): the search was cut short or its engine did "
                        "not finish it, so its node count cannot be checked against the engine's")
    row = {
        "engine": st.dialect.name,
        "search": st.search,
        "position": st.position,
        "fen": st.fen,
        "phase": st.phase,
        "phase_source": st.phase_source,
        "unit": st.unit,
        "producer": st.producer,
        "source": st.source,
        "first_line": st.first_line,
        "contexts": ",".join(f"{c or primary_name}:{n}" for c, n in st.ctx_counts.items()),
        "kept_context": "*" if all_contexts else primary_name,
        "iterations": sum(st.iter_counts[label] for label in kept_labels),
        "max_iter": max((st.max_iter.get(label, 0) for label in kept_labels), default=0),
        "records": st.records,
        "moves": st.moves,
        "result_nodes": st.result_nodes,
        "end_nodes": end_nodes,
        "end_best": _end_best(st, end),
        "end_score": end[2] if end else None,
        "node_source": "result",
        "warnings": "\n".join(warnings) if warnings else None,
    }
    return row, warnings


def _kept_labels(st: SearchState, all_contexts: bool) -> set[str]:
    """The raw context labels whose ITER and END lines count: the kept context's, or all."""
    if all_contexts:
        return set(st.iter_counts) | set(st.ends)
    return {label for label in st.iter_counts | dict.fromkeys(st.ends, 0) if effective(st, label) == NO_CTX}


def _count_warnings(st: SearchState, all_contexts: bool, end_nodes: int | None) -> list[str]:
    """What the counts say is wrong with a search: mixed contexts, no records, unknown acts, END, unresolved."""
    warnings = []
    context = _context_warning(st, all_contexts)
    if context:
        warnings.append(context)
    if st.records == 0:
        warnings.append(
            "0-node search: no MOVE/RESULT records (an engine fed by a closing pipe can lose its input "
            "before it starts searching; hold stdin open until it answers)"
        )
    for act, n in st.other_acts.most_common():
        warnings.append(f"unknown act={act} ({n} records) is not in the {st.dialect.name} vocabulary: kind OTHER")
    if end_nodes is not None and end_nodes != st.result_nodes:
        warnings.append(f"END nodes={end_nodes} but {st.result_nodes} RESULT records")
    if st.unresolved_count:
        warnings.append(
            f"{st.unresolved_count} records with a move that does not resolve in its position "
            f"(flagged problem=unresolved-move; first at line {', '.join(map(str, st.unresolved))})"
        )
    return warnings


def _context_warning(st: SearchState, all_contexts: bool) -> str | None:
    """The warning about several search contexts in one search (e.g. pondering), if there were several."""
    if len(st.ctx_counts) <= 1:
        return None
    primary_name = st.primary_label or ""
    detail = ", ".join(f"{c or primary_name or '(none)'}: {n}" for c, n in st.ctx_counts.items())
    if all_contexts:
        return f"several search contexts in one search ({detail}); all kept (--all-contexts)"
    return (
        f"several search contexts in one search ({detail}): a second search (e.g. pondering) "
        f"wrote into the same log; kept only {primary_name or '(unlabelled)'}, the context of its first line "
        "(--all-contexts keeps all)"
    )


def _end_best(st: SearchState, end: End | None) -> str | None:
    """The kept END's ``best=`` in UCI (as written if it does not resolve); None without one."""
    if not (end and end[1]):
        return None
    best = end[1]
    if st.dialect.notation == Notation.SAN or not looks_uci(best):
        return resolve_root_move(st, best) or best
    return best.lower() if best not in st.dialect.null_moves else NULL_UCI


_POLARS_TYPE_OF = {pa.string(): pl.String, pa.int16(): pl.Int16, pa.int32(): pl.Int32, pa.int64(): pl.Int64}


def _table_from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` through polars, for flat schemas of strings and ints.

    pyarrow's own converters import pandas the first time (0.15 s of every
    `treediff parse`), and nothing else on the parse path needs it.
    """
    frame = pl.DataFrame(rows, schema={f.name: _POLARS_TYPE_OF[f.type] for f in schema}, orient="row")
    return frame.to_arrow().cast(schema)

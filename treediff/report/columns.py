"""One-line descriptions of the report's and compare's columns: the "columns:" legend under each table
(table and markdown formats).  docs/REPORTS.md has the full definitions; these are its short forms.

Lookup of a column ``c`` of section ``s`` (:func:`legend`): ``SECTION_COLUMNS[s][c]``, else
``COLUMNS[c]``; a per-side column of compare (``nodes_a``, ``nodes_b``, ...: a base name and the side's
letter) uses the ``<base>_*`` entry, and a side-by-side block column (``<label> pct_of_moves``) the
``* <base>`` entry.  Self-explanatory columns (engine, position, phase, act, kind, side, count, iter,
ply, path, ...) have no entry and are left out of the legend.
"""
from __future__ import annotations

import re
from typing import Sequence

#: Descriptions by column name (units in the text: plies, percent, records).
COLUMNS: dict[str, str] = {
    # nodes
    "node_source": "result (RESULT records counted) or engine (the engine's own count)",
    "depth_min": "smallest and largest search depth D in the group (plies)",
    "depth_max": "smallest and largest search depth D in the group (plies)",
    "nodes": "sum of the searches' node counts (RESULT records)",
    "mean_nodes": "nodes per search",
    "end_nodes": "sum of the END records' nodes= (the engine's own counter)",
    "ratio": "mean_nodes / the reference group's (the first engine with the same other keys)",
    # acts, kinds, skips
    "pct_of_moves": "100 * count / moves",
    "moves": "the group's MOVE records (decisions)",
    # lmr
    "real_moves": "MOVE records that are not null-move records",
    "lmr": "MOVE records of kind REDUCE",
    "admission_pct": "100 * lmr / moves",
    "admission_pct_real": "100 * lmr / real_moves (null-move records left out)",
    "mean_red": "mean, median and 90th percentile reduction of LMR records (plies)",
    "median_red": "mean, median and 90th percentile reduction of LMR records (plies)",
    "p90_red": "mean, median and 90th percentile reduction of LMR records (plies)",
    "red_missing": "LMR records without red= (left out of the magnitudes)",
    "research": "MOVE records of kind RESEARCH",
    "research_pct": "100 * research / lmr",
    "reduction_plies": "reduction rounded to a quarter ply",
    "pct_of_lmr": "% of the LMR records that carry a reduction",
    # ebf
    "ebf": "mean_nodes ^ (1 / D), when every search has the same depth D",
    "ebf_geo": "geometric mean over searches of nodes ^ (1 / D)",
    "ebf_iter": "sqrt(N(d) / N(d-2)): nodes of iteration d over iteration d-2",
    "ebf_fanout": "(n(D_min-1) / n(0)) ^ (1 / (D_min-1)) from the per-ply profile of final iterations",
    "pairs": "searches with nodes in both iterations d and d-2",
    "fanout": "nodes(ply + 1) / nodes(ply)",
    "nodes_main": "RESULT records closing their node's main visit",
    "fanout_main": "nodes_main(ply + 1) / nodes_main(ply)",
    # scope
    "prunes": "MOVE records of that act",
    "continued": "those visits in which a later sibling decision follows the act's first prune",
    "pct_continued": "100 * continued / nodes",
    "followed": "prune records followed by a later sibling decision in the same visit",
    "pct_followed": "100 * followed / prunes",
    "remaining": "legal moves not yet decided at each prune (visits without a cutoff)",
    "later_decided": "of remaining, moves a later MOVE record of the visit decides",
    "unrecorded": "of remaining, moves no MOVE record of the visit decides",
    "pct_remaining_unrecorded": "100 * unrecorded / remaining",
    # cutoffs
    "class": "what cut the node (move, null, probcut, multicut), none (no cutoff) or all",
    "visits": "node visits (RESULT records)",
    "cutoffs": "cutoff visits (bound=lower) of the class",
    "pct_of_visits": "100 * cutoffs / visits",
    "pct_of_cutoffs": "100 * cutoffs / the group's cutoff visits",
    "move_cutoffs": "move-class cutoff visits (the mn shares are of those whose cutoff move has an mn)",
    "mn1_pct": "% of move cutoffs by the first move (mn 1), the move-ordering measure",
    "mn2_pct": "% by move 2, moves 3-4, move 5 or later",
    "mn3_4_pct": "% by move 2, moves 3-4, move 5 or later",
    "mn5p_pct": "% by move 2, moves 3-4, move 5 or later",
    "mean_mn": "mean mn of the cutoff move",
    # fh
    "tries": "move tries in the bucket",
    "fail_highs": "tries that failed high",
    "fh_pct": "100 * fail_highs / tries",
    "fh_lo": "Wilson 95 % interval of fh_pct (percent)",
    "fh_hi": "Wilson 95 % interval of fh_pct (percent)",
    "shadow_tries": "SHADOW records (full-depth side searches of pruned or reduced moves)",
    "shadow_fail_highs": "SHADOW records with fh=1: the side search reached beta",
    "shadow_fh_pct": "100 * shadow_fail_highs / shadow_tries: the silent-miss rate",
    "shadow_fh_lo": "Wilson 95 % interval of shadow_fh_pct (percent)",
    "shadow_fh_hi": "Wilson 95 % interval of shadow_fh_pct (percent)",
    # residual
    "paths": "moves decided in 3 or more iterations",
    "stalled": "of those, moves whose residual depth did not grow from first to last iteration",
    "stalled_pct": "100 * stalled / paths",
    "median_growth": "median (last - first residual) / (last - first iteration), plies per root ply",
    "mean_residual": "mean residual depth of the moves decided in the iteration (plies)",
    "first_residual": "residual depth in the move's first and last iteration (plies)",
    "last_residual": "residual depth in the move's first and last iteration (plies)",
    "subtree_nodes": "subtree nodes of the move's tries, summed over the iterations",
    "stable_from": "iteration from which the final best move stayed best",
    "changes": "times the best move changed between consecutive iterations",
    "best_moves": "iter:move, the root best move of each iteration",
    # depths, why
    "mean": "mean, median and 90th percentile of depth - new depth (plies)",
    "median": "mean, median and 90th percentile of depth - new depth (plies)",
    "p90": "mean, median and 90th percentile of depth - new depth (plies)",
    "kind_moves": "the group's MOVE records of that kind",
    "pct_of_kind": "100 * count / kind_moves",
    # compare: per-side columns (nodes_a, nodes_b, ...) and side-by-side blocks ("<label> act")
    "depth_*": "the iteration each side's figures are taken at (plies)",
    "nodes_*": "the side's nodes (RESULT records of iterations 1..depth)",
    "ratio_*": "nodes_a / that side's nodes",
    "ebf_*": "the side's mean nodes ^ (1 / depth)",
    "lmr_pct_*": "the side's LMR (kind REDUCE) as % of its MOVE decisions",
    "skip_pct_*": "the side's PRUNE decisions as % of its MOVE decisions",
    "count_*": "the side's MOVE records",
    "pct_*": "the side's % of its MOVE decisions",
    "* pct_of_moves": "% of that side's MOVE decisions",
    # divergences
    "iter_a": "the iteration of A and of B that is aligned",
    "iter_b": "the iteration of A and of B that is aligned",
    "status": "differs, only-A or only-B: how the sides decided the row",
    "delta": "nodes_a - nodes_b (RESULT records at or below the row, each node counted once)",
    "sentence": "what differs at the row itself",
    "shared_residual": "nodes under no frontier row, A's minus B's",
    "shared_residual_*": "the side's nodes under no frontier row",
    "frontier_rows": "rows where the sides' decisions first differ",
    "rows": "frontier rows",
}

#: Where a column means something else in one section.
SECTION_COLUMNS: dict[str, dict[str, str]] = {
    "nodes": {"ratio": "mean_nodes / the reference group's (the first engine with the same other keys)"},
    "ebf_iter": {"searches": "searches with nodes in iteration d", "mean_nodes": "their mean N(d)"},
    "ebf_ply": {"nodes": "RESULT records at that ply in each search's final iteration"},
    "scope": {"nodes": "node visits in which the act fired"},
    "residual_iter": {"paths": "moves decided in the iteration"},
    "residual_stalled": {"iterations": "iterations the move was decided in", "line": "log line of its last decision"},
    "pv_stability": {"iterations": "iterations with a root best move", "final_best": "the last one's best move"},
    "fh": {"depth": "the node's depth in whole plies (floor of d)", "mn": "mn band: 1, 2, 3-4, 5-8, 9-16, 17+"},
    "lmr_grid": {"lmr": "kind-REDUCE records with a red=", "mean_red": "their mean reduction (plies)",
                 "depth": "the node's depth in whole plies (floor of d)", "mn": "mn band: 1, 2, 3-4, 5-8, 9-16, 17+"},
    "whatif": {"all_tries": "every move try of the group", "tries": "tries the rule newly admits",
               "share_pct": "100 * tries / all_tries", "fail_highs": "admitted tries that failed high",
               "baseline_tries": "all tries of the same first kinds (the rate to compare with)",
               "baseline_fail_highs": "of those, tries that failed high",
               "baseline_fh_pct": "100 * baseline_fail_highs / baseline_tries",
               "subtree_nodes": "RESULT records in the admitted tries' spans (all visits): the most admitting "
                                "them could save"},
    "silent_misses": {"subtree_nodes": "RESULT records in the try's span (all visits)",
                      "line": "log line of the try's first record"},
    "divergences": {"nodes_*": "the side's RESULT records at or below the row (all visits)"},
    "divergence_total": {"nodes_*": "the side's nodes of the aligned iterations"},
    "divergence_by_kind": {"nodes_*": "the side's nodes of those rows"},
    "divergence_by_ply": {"nodes_*": "the side's nodes of those rows"},
    "divergence_kinds": {"A": "A's kind (rows) against B's kind (columns): aligned decisions"},
    # compare's sections (recognised by their per-side columns) where the report's same-named one differs
    "compare:nodes": {"ratio": "nodes_a / nodes_b over the positions both searched, (geomean) row: geometric "
                               "mean of the per-position ratios"},
}

_SIDE = re.compile(r"^(?P<base>.+)_(?P<side>[a-h])$")


def describe(section: str, column: str, compared: bool = False) -> tuple[str, str] | None:
    """(the legend's key, description) of one column, None when it has no entry.

    The key groups a compare side's columns: ``nodes_a`` and ``nodes_b`` both give ``nodes_*``;
    ``compared``: the section is compare's (its ``compare:<section>`` entries come first)."""
    own = SECTION_COLUMNS.get(section, {})
    if compared:
        own = {**own, **SECTION_COLUMNS.get("compare:" + section, {})}
    if column in own:
        return (column, own[column]) if own[column] else None
    if column in COLUMNS:
        return column, COLUMNS[column]
    side = _SIDE.match(column)
    if side is not None:
        key = side.group("base") + "_*"
        text = own.get(key, COLUMNS.get(key))
        if text:
            return key, text
    if " " in column:
        key = "* " + column.rsplit(" ", 1)[1]
        if key in COLUMNS:
            return key, COLUMNS[key]
    return None


def legend(section: str, columns: Sequence[str]) -> list[tuple[list[str], str]]:
    """The documented columns among ``columns``, in order: (the names, description) per entry; columns with
    the same description share one entry (a compare side's ``nodes_a``, ``nodes_b``; ``mean_red``,
    ``median_red``, ``p90_red``), a side-by-side block column appears once by its base name
    (``pct_of_moves`` for every ``<label> pct_of_moves``)."""
    entries: dict[str, tuple[list[str], str]] = {}
    compared = any(str(c).endswith("_a") and str(c)[:-2] + "_b" in map(str, columns) for c in columns)
    for column in columns:
        found = describe(section, str(column), compared)
        if found is None:
            continue
        key, text = found
        name = key[2:] if key.startswith("* ") else str(column)
        names, _ = entries.setdefault(text, ([], text))
        if name not in names:
            names.append(name)
    return list(entries.values())


def legend_line(section: str, columns: Sequence[str], code: bool = False) -> str | None:
    """``columns: a: ...; b_a, b_b: ...`` for :func:`legend` (``code``: names in backticks, for markdown);
    None when no column needs one."""
    parts = []
    for names, text in legend(section, columns):
        shown = ", ".join(f"`{n}`" if code else n for n in names)
        parts.append(f"{shown}: {text}")
    return "columns: " + "; ".join(parts) if parts else None

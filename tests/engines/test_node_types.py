"""typhoon_py's node-type labels (``nt=`` on MOVE records: the deciding node's expected type) follow PVS.

PVS's expectation (Knuth and Moore's node types): the root and a PV node's first child are PV; a PV node's
other children are CUT (zero-window searches; a full-window re-search of one is PV again); a CUT node's
children are ALL; an ALL node's children are CUT -- a null-move probe's child and a reduced move's re-search
included (the re-search is the same child searched again, with the same expectation).  An expected CUT node
mostly fails high; an expected ALL node proper -- the child a CUT node searches first -- mostly fails low.

Reading a figure: a CUT node whose first move does not cut has already missed its expectation; its later
children are still labelled ALL, and they fail high whenever the CUT node's move fails low.  So "nt=ALL
visits" as a whole fail high far more often than an ALL node proper (typhoon at depth 5: 79% against 29%):
the figure measures move ordering at CUT nodes, not a labelling error.

Everything here is read from the trace text by the independent reader in tests/support, not by treediff.
"""
from __future__ import annotations

import dataclasses
import io
from collections import Counter
from pathlib import Path

import pytest

from support.typhoon_trace_tools import read_trace
from typhoon_py import make_config, read_epd, run_search

EPD = Path(__file__).resolve().parents[2] / "fixtures" / "positions20.epd"
POSITIONS = read_epd(EPD)
#: The type of a child that PVS expects, by the deciding (parent) node's type.
CHILD_TYPES = {"PV": {"PV", "CUT"}, "CUT": {"ALL"}, "ALL": {"CUT"}}


@dataclasses.dataclass
class Visit:
    """One node visit: its type (from its own MOVE records), the decision that entered it, its bound."""

    nt: str
    parent_nt: str | None  # None: the root
    parent_mn: int
    parent_act: str
    bound: str


def visits(text: str) -> list[Visit]:
    """The node visits of a trace that have MOVE records of their own (a visit with none carries no type).

    A visit at ply k is closed by its RESULT at ply k; its own MOVE records are those at ply k + 1 since it
    began, and the decision that entered it is the last MOVE record at ply k before them (a silent re-search,
    typhoon's, is entered by the same LMR record as the reduced search before it)."""
    out: list[Visit] = []
    for search in read_trace(text):
        own: dict[int, str] = {}  # ply -> the open visit's nt (from its MOVE records)
        entry: dict[int, tuple[str, int, str]] = {}  # ply -> the last decision at that ply
        for tag, g in search.lines:
            if tag == "MOVE":
                ply = int(g["ply"])
                own[ply - 1] = g["nt"]
                entry[ply] = (g["nt"], int(g["mn"]), g["act"])
            elif tag == "RESULT":
                ply = int(g["ply"])
                nt = own.pop(ply, None)
                if nt is None:
                    continue
                parent = entry.get(ply) if ply else None
                out.append(Visit(nt, parent[0] if parent else None, parent[1] if parent else 0,
                                 parent[2] if parent else "", g["bound"]))
    return out


#: Per (profile, policy): the depth and the positions searched (each case runs in a couple of seconds).
CASES = {("typhoon", "profile"): (5, ("kiwipete", "iqp-attack")),
         ("crafty", "profile"): (5, ("kiwipete", "iqp-attack")),
         ("typhoon", "see-history"): (4, ("kiwipete", "iqp-attack", "french")),
         ("crafty", "see-history"): (4, ("kiwipete", "iqp-attack", "french")),
         ("stockfish", "profile"): (5, ("kiwipete", "iqp-attack", "tactical-f6f7", "french", "rook-endgame"))}
_TRACES: dict[tuple[str, str], str] = {}


def _trace(profile: str, policy: str) -> str:
    if (profile, policy) not in _TRACES:
        depth, ids = CASES[profile, policy]
        config = make_config(profile, policy)
        buf = io.StringIO()
        for p in POSITIONS:
            if p.id in ids:
                run_search(p.board, depth, config, buf, p.id, p.phase)
        _TRACES[profile, policy] = buf.getvalue()
    return _TRACES[profile, policy]


def _fh(vs: list[Visit]) -> float:
    assert vs, "no visits of this kind"
    return sum(v.bound == "lower" for v in vs) / len(vs)


# stockfish's singular-extension verification visits a node again as a non-PV node of its own type, so its
# labels are checked only through the fail-high rates below.
@pytest.mark.parametrize("profile,policy", [c for c in CASES if c[0] != "stockfish"])
def test_every_child_has_the_type_pvs_expects(profile, policy):
    vs = visits(_trace(profile, policy))
    assert [v for v in vs if v.parent_nt is None and v.nt != "PV"] == []  # the root
    wrong = Counter((v.parent_nt, v.parent_act, v.nt) for v in vs
                    if v.parent_nt is not None and v.nt not in CHILD_TYPES[v.parent_nt])
    assert wrong == Counter()
    # Every type occurs, and reduced moves (LMR) and re-searches (a second visit entered by the same LMR
    # record, typhoon's silent re-search, or an LMR-RESEARCH record) entered some of the visits.
    assert {v.nt for v in vs} == {"PV", "CUT", "ALL"}
    assert any(v.parent_act.startswith("LMR") for v in vs)


@pytest.mark.parametrize("profile", ["typhoon", "crafty", "stockfish"])
def test_cut_nodes_fail_high_and_all_nodes_proper_fail_low(profile):
    vs = visits(_trace(profile, "profile"))
    cut = [v for v in vs if v.nt == "CUT"]
    all_nodes = [v for v in vs if v.nt == "ALL"]
    all_proper = [v for v in all_nodes if v.parent_nt == "CUT" and v.parent_mn == 1 and v.parent_act != "NMP"]
    pv = [v for v in vs if v.nt == "PV"]
    assert len(cut) >= 100 and len(all_proper) >= 30, (len(cut), len(all_proper))
    assert _fh(cut) > 0.5  # an expected CUT node mostly fails high
    assert _fh(all_proper) < 0.5  # an expected ALL node proper mostly fails low
    assert _fh(cut) > _fh(all_nodes) > _fh(all_proper)  # the late children of CUT nodes raise the ALL figure
    assert _fh(pv) < 0.5  # a PV node's score mostly lands inside its window

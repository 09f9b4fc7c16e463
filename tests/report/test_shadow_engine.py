"""fh and whatif's shadow figures against typhoon_py's own counters (``--shadow``), through the real parser.

typhoon_py counts, per act, its shadow searches and those whose full-depth score reached beta, independently
of the SHADOW records it writes; the reports, reading only the trace, must give the same numbers exactly.
Its node counter excludes the shadow searches' nodes, so END nodes equals the RESULT count.
"""
from __future__ import annotations

import dataclasses
import io

import pytest

chess = pytest.importorskip("chess")
engine = pytest.importorskip("typhoon_py.engine")

from treediff.parse.source import open_source  # noqa: E402
from treediff.report.core import build_report  # noqa: E402
from treediff.report.whatif import whatif  # noqa: E402

FEN = "2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1"


def _config(profile: str):
    config = engine.make_config(profile)
    if not any(f.name == "shadow" for f in dataclasses.fields(config)):
        pytest.skip("this typhoon_py has no --shadow")
    return dataclasses.replace(config, shadow=True)


@pytest.mark.parametrize("profile", ["typhoon", "stockfish", "crafty"])
def test_shadow_figures_equal_the_engine_counters(tmp_path, profile):
    buf = io.StringIO()
    outcome = engine.run_search(chess.Board(FEN), 3, _config(profile), trace=buf, position_id="ecm",
                                phase="middlegame")
    log = tmp_path / f"{profile}.log"
    log.write_text(buf.getvalue())
    counters = outcome.counters()["shadow"]
    assert counters, "the search pruned or reduced nothing: no shadow to compare"
    want = {act: (c["tries"], c["fail_highs"]) for act, c in counters.items()}
    source = open_source(str(log))
    rep = build_report(source, ["fh", "nodes", "acts"])
    got = {r.act: (r.shadow_tries, r.shadow_fail_highs) for r in rep["fh_shadow"].itertuples()}
    assert got == want
    sections = {s.name: s.frame for s in whatif(source, "mn >= 3")}
    got_w = {r.act: (r.shadow_tries, r.shadow_fail_highs) for r in sections["shadow"].itertuples()}
    assert got_w == want
    # Shadow nodes are in no count: END nodes and the RESULT records agree with the engine's node counter,
    # and the acts are the MOVE records only.
    nodes = rep["nodes"].iloc[0]
    assert nodes["nodes"] == outcome.nodes == nodes["end_nodes"]
    assert dict(zip(rep["acts"]["act"], rep["acts"]["count"])) == {k: v for k, v in outcome.acts.items() if v}

"""Edge cases: 0-node searches, missing phases, engine-only inputs, every grouping combination."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from support.tracebuild import concat, read_trace
from treediff.report.core import TABLES, report_frames

EMPTY_SEARCH = """\
TREEDUMP engine=stockfish v=1 id=z fen=8/8/8/8/8/8/8/K6k w - - 0 1
END nodes=0
"""

NO_PHASE = """\
TREEDUMP engine=stockfish v=1 id=q fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
MOVE path=d2d4 ply=1 mn=2 d=1 nd=0 act=FULL
RESULT path=- ply=0 d=1 score=1
END nodes=1
"""


def test_zero_node_search_next_to_a_normal_one(stockfish):
    records, searches = concat(stockfish, read_trace(EMPTY_SEARCH))
    rep = report_frames(records, searches)
    nodes = rep["nodes"].iloc[0]
    assert (nodes["searches"], nodes["nodes"]) == (3, 14)
    assert nodes["mean_nodes"] == pytest.approx(14 / 3)
    ebf = rep["ebf"].iloc[0]
    assert ebf["depth_min"] == 0 and math.isnan(ebf["ebf"])
    # the 0-node search has no depth: it does not enter the geometric mean
    assert ebf["ebf_geo"] == pytest.approx(math.exp((math.log(10) / 3 + math.log(4) / 2) / 2))
    by_pos = report_frames(records, searches, tables=["ebf", "nodes"], by="position")
    z = by_pos["ebf"][by_pos["ebf"]["position"] == "z"].iloc[0]
    assert z["mean_nodes"] == 0 and math.isnan(z["ebf"])


def test_missing_phase_groups_as_null(stockfish):
    records, searches = concat(stockfish, read_trace(NO_PHASE))
    lmr = report_frames(records, searches, tables=["lmr"], by="phase")["lmr"]
    assert list(lmr["phase"].astype(object)[:2]) == ["opening", "endgame"] and pd.isna(lmr["phase"].iloc[2])
    assert lmr["moves"].tolist() == [32, 10, 2]


def test_no_prunes_gives_an_empty_scope_and_zero_skips():
    rep = report_frames(*read_trace(NO_PHASE), tables=["scope", "skips"])
    assert rep["scope"].empty and "pct_continued" in rep["scope"].columns
    skips = rep["skips"]
    assert list(skips["act"]) == ["(all)"] and skips["count"].iloc[0] == 0 and skips["pct_of_moves"].iloc[0] == 0


@pytest.mark.parametrize("by", ["engine", "phase", "position", "iter", "phase,iter", "position,iter",
                                "phase,position,iter"])
def test_every_grouping_adds_up(three, by):
    rep = report_frames(*three, tables=TABLES, by=by)
    acts = rep["acts"]
    totals = acts.groupby(acts["engine"].astype(object))["count"].sum().to_dict()
    assert totals == {"typhoon": 28, "stockfish": 42, "crafty": 32}
    lmr = rep["lmr"]
    assert lmr.groupby(lmr["engine"].astype(object))["lmr"].sum().to_dict() == {"typhoon": 4, "stockfish": 6,
                                                                                 "crafty": 3}
    scope = rep["scope"]
    prunes = scope[scope["act"] == "(all)"].groupby(scope["engine"].astype(object))["prunes"].sum().to_dict()
    assert prunes == {"typhoon": 10, "stockfish": 16, "crafty": 12}
    nodes = rep["nodes"]
    assert nodes.groupby(nodes["engine"].astype(object))["nodes"].sum().to_dict() == {"typhoon": 10, "stockfish": 14,
                                                                                      "crafty": 13}


def test_engine_only_input_without_records():
    searches = pd.DataFrame({
        "engine": pd.array(["ethereal", "ethereal"], dtype="string"), "search": [0, 1],
        "position": pd.array(["a", "b"], dtype="string"), "fen": ["x", "y"],
        "phase": pd.array(["opening", "endgame"], dtype="string"), "max_iter": [0, 0], "result_nodes": [0, 0],
        "end_nodes": [1000, 4000], "node_source": ["engine", "engine"],
        "iter_nodes": ["[[1, 10], [2, 40], [3, 1000]]", "[[1, 20], [2, 400], [3, 4000]]"],
    })
    records = pd.DataFrame({c: pd.Series([], dtype="object") for c in ("engine", "search", "tag")})
    records["search"] = records["search"].astype("int32")
    rep = report_frames(records, searches, tables=["ebf", "nodes", "acts"])
    ebf = rep["ebf"].iloc[0]
    assert (ebf["mean_nodes"], ebf["depth_min"]) == (2500, 3)
    assert ebf["ebf"] == pytest.approx(2500 ** (1 / 3))
    # N(3) = C(3) - C(2): 960 and 3600; N(1) = 10 and 20
    assert ebf["ebf_iter"] == pytest.approx(math.sqrt((960 + 3600) / (10 + 20)))
    assert rep["acts"].empty


def test_by_source_separates_two_runs_of_one_engine(typhoon, stockfish):
    records, searches = typhoon
    # A second "run": the same trace with its last LMP turned into FULL, from another log.
    other_r, other_s = records.copy(), searches.copy()
    other_s["source"] = "variant.log"
    last_lmp = other_r.index[(other_r["act"] == "LMP")][-1]
    other_r["act"] = other_r["act"].astype(object)
    other_r["kind"] = other_r["kind"].astype(object)
    other_r.loc[last_lmp, ["act", "kind"]] = ["FULL", "SEARCH"]
    both = concat((records, searches), (other_r, other_s), stockfish)
    rep = report_frames(*both, tables=["acts", "nodes"], by="source")
    acts = rep["acts"]
    lmp = acts[acts["act"] == "LMP"]
    assert list(lmp["count"]) == [10, 9]
    assert list(lmp["source"]) == [searches["source"].iloc[0], "variant.log"]
    nodes = rep["nodes"]
    assert list(nodes["engine"]) == ["typhoon", "typhoon", "stockfish"]
    # Against the first engine and source; stockfish searched p1 and p2, typhoon only p1: undefined.
    assert nodes["ratio"].tolist()[:2] == [1.0, 1.0] and math.isnan(nodes["ratio"].iloc[2])


def test_a_selection_leaving_an_input_out_keeps_the_main_visit_figures():
    """A combined source selected to some inputs' searches still reads the others' (empty) batches; an empty
    batch closes no node visit, so ebf_ply's main-visit columns equal those of the kept inputs combined alone
    (they were blanked for the whole report)."""
    import numpy as np

    from treediff.parse.source import open_source
    from treediff.report.core import build_report
    from treediff.store.source import CombinedSource

    traces = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
    sources = [open_source(traces / f"{engine}_batch3.log") for engine in ("typhoon", "stockfish", "crafty")]
    combined = CombinedSource.of(sources)
    engines = combined.searches["engine"].astype(str).to_numpy()
    selected = combined.select(np.isin(engines, ["typhoon", "crafty"]))
    alone = CombinedSource.of([sources[0], sources[2]])
    got = build_report(selected, ["ebf"], "engine")["ebf_ply"]
    want = build_report(alone, ["ebf"], "engine")["ebf_ply"]
    assert got["nodes_main"].notna().all() and len(got) > 4
    pd.testing.assert_frame_equal(got, want)


def test_ebf_main_visits_of_a_log_read_in_batches_equal_one_batch(monkeypatch):
    """A log read in batches smaller than its spill's parts: the cuts at a part's end that hold only the next
    batch's searches are not batches (they were empty batches, and ebf_ply's main-visit columns were then
    blank for the whole report).  The figures equal the one-batch (--in-memory) ones."""
    from treediff.parse import chunks
    from treediff.parse.source import open_source
    from treediff.report.core import build_report

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)  # many spill parts, each cut across batches
    log = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "typhoon_batch3.log"
    source = open_source(log)
    sizes = [len(b) for b in source.batches(["search"], 300)]
    assert len(sizes) >= 3 and 0 not in sizes
    batched = build_report(source, ["ebf"], "engine,position", target=300)["ebf_ply"]
    whole = build_report(open_source(log), ["ebf"], "engine,position", target=2**62)["ebf_ply"]
    assert batched["nodes_main"].notna().all()
    pd.testing.assert_frame_equal(batched, whole)

"""Position identity and equal depth in compare and report, on hand-written logs (answers counted by hand).

Logs (stockfish dialect, unit 1), written below:

deep.log, id=k, FEN K (white Ke1 Pe2, black Ke8), iterations 1-3
  it 1: MOVE e2e4 FULL                                         RESULT root           -> 1 RESULT, 1 MOVE
  it 2: MOVE e2e4 FULL(nd 1), e2e4/e8d8 FULL, RESULT e2e4,
        MOVE e1d1 LMR, MOVE e1f1 FP-QUIET,                    RESULT root           -> 2 RESULT, 4 MOVE (1 LMR)
  it 3: MOVE e2e4 FULL(nd 2), e2e4/e8d8 FULL(nd 1), e2e4/e8d8/e1d2 FULL, RESULT e2e4/e8d8, RESULT e2e4,
        MOVE e1d1 LMR(nd 1), e1d1/e8f8 FULL, RESULT e1d1,
        MOVE e1f1 LMR,                                        RESULT root           -> 4 RESULT, 6 MOVE (2 LMR)
  nodes: 1 + 2 + 4 = 7; through iteration 2: 3.  MOVE records through iteration 2: 5, LMR 1, FP-QUIET 1.
shallow.log, id=k, the same FEN, iterations 1-2
  it 1: MOVE e2e4 FULL, RESULT root; it 2: MOVE e2e4 FULL(nd 1), RESULT e2e4, MOVE e2e3 FULL, RESULT root
  -> nodes 1 + 2 = 3, MOVE 3, no LMR, no prune.
other.log, id=k again but another FEN (white Ke1 Pd2): the same text as shallow.log with d2 moves.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.pairing_traces import DEEP, FEN_K
from treediff.cli import main
from treediff.model.positions import position_key
from treediff.parse.source import open_source, open_sources
from treediff.report.compare import Side, compare
from treediff.report.core import ReportOptions, build_report

FEN_D = "4k3/8/8/8/8/8/3P4/4K3 w - - 0 1"


SHALLOW = f"""TREEDUMP engine=stockfish v=1 unit=1 id=k fen={FEN_K}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=- ply=0 d=1 score=10 bound=exact
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL
RESULT path=e2e4 ply=1 d=1 score=-10 bound=exact
MOVE path=e2e3 ply=1 mn=2 d=2 nd=0 act=FULL
RESULT path=- ply=0 d=2 score=10 bound=exact
END nodes=3 best=e2e4 score=10
"""

OTHER = SHALLOW.replace(FEN_K, FEN_D).replace("e2e4", "d2d4").replace("e2e3", "d2d3")


@pytest.fixture()
def logs(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("deep", DEEP), ("shallow", SHALLOW), ("other", OTHER)):
        out[name] = tmp_path / f"{name}.log"
        out[name].write_text(text)
    return out


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def nodes_rows(output: str) -> dict:
    doc = json.loads(output)
    return {r["position"]: r for r in doc["tables"][0]["rows"]}, doc


# ---------------------------------------------------------------- position identity

def test_position_key_normalizes_with_python_chess():
    # After 1. e4 no black pawn can take en passant: python-chess drops e3, as Board.epd() does.
    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    assert position_key(after_e4) == position_key("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 7 30")
    # With a black pawn on d4 the square is real, and the key keeps it.
    takeable = "rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    assert position_key(takeable).endswith(" e3")
    assert position_key(takeable) != position_key(takeable.replace(" e3 ", " - "))
    # Side to move and castling rights are part of the position; castling rights the board cannot have are not.
    assert position_key(FEN_K) != position_key(FEN_K.replace(" w ", " b "))
    assert position_key("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1") != position_key("4k3/8/8/8/8/8/8/R3K2R w K - 0 1")
    assert position_key("4k3/8/8/8/8/8/8/4K2R w KQ - 0 1") == position_key("4k3/8/8/8/8/8/8/4K2R w K - 0 1")


def test_an_en_passant_square_no_pawn_can_take_still_pairs(tmp_path, logs):
    # The same position written with a dead en-passant square, other counters and another id: paired.
    shifted = tmp_path / "ep.log"
    fen_ep = "4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1"
    text = SHALLOW.replace(FEN_K, fen_ep).replace("e2e4", "e8d8").replace("e2e3", "e8f8")
    shifted.write_text(text)
    plain = tmp_path / "plain.log"
    plain.write_text(text.replace(fen_ep, "4k3/8/8/8/4P3/8/8/4K3 b - - 12 40").replace("id=k", "id=kk"))
    res = run("compare", shifted, plain, "--top", "0", "--format", "json")
    assert res.exit_code == 0, res.output
    rows, doc = nodes_rows(res.output)
    assert rows["k"]["ratio"] == 1.0 and rows["k"]["nodes_b"] == 3
    assert any("'kk' in B" in n for n in doc["notes"])


def test_an_id_naming_two_positions_is_never_paired(logs):
    res = run("compare", logs["shallow"], logs["other"], "--top", "0")
    assert res.exit_code == 2
    assert "position id 'k' names different positions" in res.output
    assert FEN_K in res.output and FEN_D in res.output  # both FENs in the message
    res = run("compare", logs["shallow"], logs["other"], "--top", "0", "--allow-different-positions",
              "--format", "json")
    assert res.exit_code == 0, res.output
    rows, doc = nodes_rows(res.output)
    assert set(rows) == {"k (A)", "k (B)", "(all)"}
    assert rows["k (A)"]["nodes_a"] == 3 and rows["k (A)"]["nodes_b"] is None and rows["k (A)"]["ratio"] is None
    assert rows["k (B)"]["nodes_b"] == 3 and rows["k (B)"]["ratio"] is None
    assert rows["(all)"]["nodes_a"] is None  # nothing paired
    clash = [n for n in doc["notes"] if "names different positions" in n]
    assert clash and FEN_K in clash[0] and FEN_D in clash[0]


def test_report_ratio_never_pairs_an_id_across_two_positions(logs):
    source = open_sources([str(logs["shallow"]), str(logs["other"])])
    rep = build_report(source, ["nodes"], ["engine", "source", "position"])
    nodes = rep["nodes"]
    assert list(nodes["nodes"]) == [3, 3]
    assert nodes["ratio"].iloc[0] == 1.0 and math.isnan(nodes["ratio"].iloc[1])
    (note,) = rep.sections[0].notes
    assert "position id 'k' names different positions" in note and FEN_K in note and FEN_D in note


def test_positions_epd_with_a_disagreeing_fen_warns(tmp_path, logs):
    epd = tmp_path / "book.epd"
    epd.write_text(f'{" ".join(FEN_D.split()[:4])} id "k"; c0 "phase=opening";\n')
    res = run("report", logs["shallow"], "--positions", epd, "--table", "nodes", "--by", "phase",
              "--format", "json")
    assert res.exit_code == 0, res.output
    warning = [line for line in res.stderr.splitlines() if "--positions" in line]
    assert warning and FEN_K in warning[0] and FEN_D.split()[0] in warning[0]
    row = json.loads(res.stdout)["tables"][0]["rows"][0]
    assert row["phase"] == "endgame"  # the EPD label was not used: the material rule's


# ---------------------------------------------------------------- equal depth

def test_compare_cuts_to_the_deepest_common_iteration(logs):
    res = run("compare", logs["deep"], logs["shallow"], "--top", "0", "--format", "json")
    assert res.exit_code == 0, res.output
    rows, doc = nodes_rows(res.output)
    k = rows["k"]
    assert (k["depth_a"], k["depth_b"]) == (2, 2)
    assert (k["nodes_a"], k["nodes_b"]) == (3, 3)   # deep: 1 + 2 through iteration 2 (7 in all); shallow 1 + 2
    assert k["ratio"] == 1.0
    assert k["ebf_a"] == pytest.approx(3 ** 0.5) and k["ebf_b"] == pytest.approx(3 ** 0.5)
    assert k["lmr_pct_a"] == pytest.approx(100 * 1 / 5)  # 1 LMR of 5 MOVE records in iterations 1-2
    assert k["skip_pct_a"] == pytest.approx(100 * 1 / 5) and k["skip_pct_b"] == 0.0
    assert any("A cut to the common depth at 1 position(s): k 3 -> 2" in n for n in doc["notes"])
    tables = {t["name"]: t for t in doc["tables"]}
    lmr = {r["side"]: r for r in tables["lmr"]["rows"]}
    assert lmr[doc["label_a"]]["lmr"] == 1 and lmr[doc["label_a"]]["moves"] == 5  # the side sections too
    # The (all) row is only for several positions or unpaired ones: here one paired position, no total.
    assert "(all)" not in rows


def test_compare_depth_option(logs):
    res = run("compare", logs["deep"], logs["shallow"], "--top", "0", "--depth", "1", "--format", "json")
    rows, _ = nodes_rows(res.output)
    assert (rows["k"]["depth_a"], rows["k"]["nodes_a"], rows["k"]["nodes_b"]) == (1, 1, 1)
    res = run("compare", logs["deep"], logs["shallow"], "--top", "0", "--depth", "3", "--format", "json")
    assert res.exit_code == 0, res.output
    rows, doc = nodes_rows(res.output)
    assert rows["k"]["ratio"] is None and rows["k"]["nodes_a"] == 7 and rows["k"]["depth_a"] == 3
    assert any("--depth 3 not completed by every side (deepest completed: B 2)" in n for n in doc["notes"])


def test_compare_library_two_sides_cut(logs):
    deep, shallow = open_source(str(logs["deep"])), open_source(str(logs["shallow"]))
    cmp = compare(Side("deep", deep), Side("shallow", shallow))
    assert list(cmp.nodes.columns[:6]) == ["position", "phase", "depth_a", "depth_b", "nodes_a", "nodes_b"]
    assert cmp.nodes["nodes_a"].tolist() == [3.0]


def test_report_ratio_between_different_depths(logs):
    source = open_sources([str(logs["deep"]), str(logs["shallow"])])
    rep = build_report(source, ["nodes"], ["engine", "source"])
    nodes = rep["nodes"]
    assert list(nodes["nodes"]) == [7, 3]
    assert (list(nodes["depth_min"]), list(nodes["depth_max"])) == ([3, 2], [3, 2])
    assert math.isnan(nodes["ratio"].iloc[1])
    assert "different depths (depth 2 vs 3)" in rep.sections[0].notes[0]
    allowed = build_report(source, ["nodes"], ["engine", "source"],
                           options=ReportOptions(allow_different_depths=True))
    assert allowed["nodes"]["ratio"].iloc[1] == pytest.approx(3 / 7)
    res = run("report", logs["deep"], logs["shallow"], "--table", "nodes", "--by", "source",
              "--allow-different-depths", "--format", "json")
    assert json.loads(res.stdout)["tables"][0]["rows"][1]["ratio"] == pytest.approx(3 / 7)


def test_depths_of_partials_counted_by_hand():
    """depths_of over two batches' ITERATIONS partials: counts summed per (search, iteration), a running sum of
    nodes from iteration 0 on, an iteration completed only with a root RESULT, a search without ITER markers
    completed at its deepest root depth unless that is unknown (NaN) or absent (-inf)."""
    import numpy as np
    import pandas as pd

    from treediff.report.pairing import depths_of

    inf = float("inf")
    parts = [pd.DataFrame({"srow": [0, 0, 1, 2], "iter": [0, 1, 0, 0], "key": 0, "results": [1, 2, 3, 4],
                           "roots": [0, 1, 1, 1], "root_depth": [-inf, 1.0, 3.0, float("nan")]}),
             pd.DataFrame({"srow": [0, 0, 3, 4, 4], "iter": [1, 2, 0, 1, 3], "key": 0, "results": [1, 5, 2, 6, 7],
                           "roots": [0, 0, 0, 1, 1], "root_depth": [-inf, -inf, -inf, 1.0, 3.0]})]
    searches = pd.DataFrame({"search": [10, 11, 12, 13, 14], "position": list("abcde"), "fen": [None] * 5})
    depths = depths_of(searches, parts, keys=np.asarray(list("abcde"), dtype=object))
    # search 0: iteration 0 (1 node), 1 (2 + 1, with a root RESULT), 2 (5, none): only 1 completed, at 1 + 3.
    # search 4: iterations 1 and 3 completed, at 6 and 13.
    assert depths.completed == [{1: 4.0}, {3: 3.0}, {}, {}, {1: 6.0, 3: 13.0}]
    assert depths.has_iters.tolist() == [True, False, False, False, True]

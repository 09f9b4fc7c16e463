"""`treediff report` and `treediff compare` through click, on Parquet pairs, dataset dirs and logs.

Expected numbers are the hand counts documented in test_tables.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from support.tracebuild import read_fixture
from treediff.cli import main
from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "hand"


def write_pair(frames, path: Path) -> Path:
    records, searches = frames
    pq.write_table(pa.Table.from_pandas(records, schema=RECORDS_SCHEMA, preserve_index=False), path)
    pq.write_table(pa.Table.from_pandas(searches, schema=SEARCHES_SCHEMA, preserve_index=False),
                   path.with_name(path.stem + ".searches.parquet"))
    return path


def write_dataset(frames, root: Path) -> Path:
    """DIR/records/engine=E/KEY.parquet and DIR/searches/engine=E/KEY.parquet in the runner's layout
    (treediff.store.layout: the engine is the partition directory, not a column)."""
    from treediff.store.layout import DATASET_RECORDS_SCHEMA, DATASET_SEARCHES_SCHEMA

    records, searches = frames
    engine = str(searches["engine"].iloc[0])
    for key, sid in enumerate(searches["search"]):
        rec = records[records["search"] == sid].drop(columns="engine")
        srch = searches[searches["search"] == sid].drop(columns="engine").assign(
            node_source="result", task=f"{key:05d}")
        for sub, frame, schema in (("records", rec, DATASET_RECORDS_SCHEMA),
                                   ("searches", srch, DATASET_SEARCHES_SCHEMA)):
            d = root / sub / f"engine={engine}"
            d.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pandas(frame.reindex(columns=schema.names), schema=schema, preserve_index=False)
            pq.write_table(table, d / f"{key:05d}.parquet")
    return root


@pytest.fixture()
def parquets(tmp_path):
    return {e: write_pair(read_fixture(FIX / f"report_{e}.log"), tmp_path / f"{e}.parquet")
            for e in ("typhoon", "stockfish", "crafty")}


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result


def tables_of(output: str) -> dict:
    return {t["name"]: t for t in json.loads(output)["tables"]}


def rows(table, **match):
    return [r for r in table["rows"] if all(r.get(k) == v for k, v in match.items())]


def test_report_json_on_parquet_inputs(parquets):
    res = run("report", parquets["typhoon"], parquets["stockfish"], parquets["crafty"], "--format", "json")
    assert res.exit_code == 0, res.output
    t = tables_of(res.output)
    assert [r["nodes"] for r in t["nodes"]["rows"]] == [10, 14, 13]
    assert rows(t["acts"], engine="typhoon", act="LMP")[0]["count"] == 10
    assert rows(t["lmr"], engine="stockfish")[0]["admission_pct_real"] == pytest.approx(600 / 41)
    assert rows(t["scope"], engine="crafty", act="(all)")[0]["pct_continued"] == 0.0
    assert [s for s in t] == ["nodes", "acts", "kinds", "lmr", "lmr_hist", "ebf", "ebf_iter", "ebf_ply",
                              "skips", "scope", "cutoffs", "cutoff_mn", "fh", "residual", "residual_iter",
                              "residual_stalled", "pv_stability", "depths", "lmr_grid", "why"]


def test_report_by_phase_table_subset(parquets):
    res = run("report", parquets["stockfish"], parquets["crafty"], "--table", "lmr", "--by", "phase",
              "--format", "json")
    assert res.exit_code == 0, res.output
    t = tables_of(res.output)
    assert set(t) == {"lmr", "lmr_hist"}
    assert rows(t["lmr"], engine="crafty", phase="endgame")[0]["admission_pct"] == pytest.approx(100 / 7)
    assert rows(t["lmr"], engine="stockfish", phase="opening")[0]["lmr"] == 6


def test_report_dataset_dir(tmp_path):
    root = write_dataset(read_fixture(FIX / "report_crafty.log"), tmp_path / "ds")
    res = run("report", root, "--table", "acts,nodes", "--format", "json")
    assert res.exit_code == 0, res.output
    t = tables_of(res.output)
    assert rows(t["nodes"], engine="crafty")[0]["nodes"] == 13
    assert rows(t["acts"], engine="crafty", act="FP-QUIET")[0]["count"] == 7


def test_output_file_is_written_whole(parquets, tmp_path):
    out = tmp_path / "out" / "report.md"
    res = run("report", parquets["typhoon"], "--format", "markdown", "-o", out)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "### MOVE decisions per act" in text and "| typhoon | LMP | PRUNE | 10 | 35.71 | 28 |" in text
    assert [p.name for p in out.parent.iterdir()] == ["report.md"]  # no temporary left behind
    assert res.output == ""


def test_plots(parquets, tmp_path):
    res = run("report", parquets["typhoon"], parquets["stockfish"], "--table", "nodes", "--plot", tmp_path / "png",
              "--format", "csv")
    assert res.exit_code == 0, res.output
    for name in ("acts.png", "ebf_iter.png", "lmr_phase.png"):
        data = (tmp_path / "png" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_bad_options_are_one_line_errors(parquets, tmp_path):
    res = run("report", parquets["typhoon"], "--by", "colour")
    assert res.exit_code == 2 and "treediff: error: --by" in res.output
    res = run("report", tmp_path / "missing.parquet")
    assert res.exit_code == 2 and "Traceback" not in res.output


# ---------------------------------------------------------------- compare

def test_compare_same_positions(parquets):
    res = run("compare", parquets["stockfish"], parquets["crafty"], "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["label_a"], doc["label_b"]) == ("stockfish", "crafty")
    t = {x["name"]: x for x in doc["tables"]}
    by_pos = {r["position"]: r for r in t["nodes"]["rows"]}
    assert (by_pos["p1"]["nodes_a"], by_pos["p1"]["nodes_b"], by_pos["p1"]["ratio"]) == (10, 10, 1.0)
    assert by_pos["p2"]["ratio"] == pytest.approx(4 / 3)
    assert by_pos["(all)"]["ratio"] == pytest.approx(14 / 13)
    assert by_pos["(geomean)"]["ratio"] == pytest.approx(math.sqrt(4 / 3))
    # per position: LMR 6/32 (stockfish p1), 2/25 (crafty p1), 0/10 and 1/7 (p2);
    # skips (12)/32, (5+4)/25, (2+1+1)/10, (2+1)/7; EBF 10^(1/3) both on p1, 4^(1/2) and 3^(1/2) on p2
    p1, p2, total = by_pos["p1"], by_pos["p2"], by_pos["(all)"]
    assert (p1["lmr_pct_a"], p1["lmr_pct_b"]) == (pytest.approx(100 * 6 / 32), pytest.approx(100 * 2 / 25))
    assert (p2["lmr_pct_a"], p2["lmr_pct_b"]) == (0.0, pytest.approx(100 / 7))
    assert (p1["skip_pct_a"], p1["skip_pct_b"], p2["skip_pct_a"], p2["skip_pct_b"]) == (
        pytest.approx(100 * 12 / 32), pytest.approx(100 * 9 / 25), pytest.approx(40.0), pytest.approx(300 / 7))
    assert (p1["ebf_a"], p2["ebf_a"], p2["ebf_b"]) == (pytest.approx(10 ** (1 / 3)), pytest.approx(2.0),
                                                       pytest.approx(3 ** 0.5))
    assert (total["lmr_pct_a"], total["lmr_pct_b"]) == (pytest.approx(100 * 6 / 42), pytest.approx(100 * 3 / 32))
    assert total["ebf_a"] is None  # depths 3 and 2 mixed
    acts = t["acts"]["rows"]
    assert (acts[0]["stockfish act"], acts[0]["stockfish count"], acts[0]["crafty act"], acts[0]["crafty count"]) \
        == ("FULL", 16, "FULL", 14)
    # Aligned by kind (counted in the two logs): SEARCH 16+14, PRUNE 16+12, REDUCE 6+3, RESEARCH 2+2,
    # NULL_PROBE 1+1, NODE_CUT (the PROBCUT act) 1+0; within PRUNE each side's acts by count: stockfish FP-QUIET 10 then
    # HIST-PRUNE 3 and SEE-QUIET 3, crafty FP-QUIET 7, LMP 5 and an empty cell.
    assert [r["kind"] for r in acts] == ["SEARCH", "PRUNE", "PRUNE", "PRUNE", "REDUCE", "RESEARCH", "NULL_PROBE",
                                         "NODE_CUT"]
    prune = [r for r in acts if r["kind"] == "PRUNE"]
    assert [r["crafty act"] for r in prune] == ["FP-QUIET", "LMP", None]
    assert [r["crafty count"] for r in prune] == [7, 5, None]
    assert prune[0]["stockfish act"] == "FP-QUIET" and {r["stockfish act"] for r in prune[1:]} == {"HIST-PRUNE",
                                                                                                 "SEE-QUIET"}
    assert acts[-1]["stockfish act"] == "PROBCUT" and acts[-1]["crafty act"] is None
    lmr = {r["side"]: r for r in t["lmr"]["rows"]}
    assert lmr["stockfish"]["lmr"] == 6 and lmr["crafty"]["lmr"] == 3
    skips = {r["act"]: r for r in t["skips"]["rows"]}
    assert (skips["(all)"]["count_a"], skips["(all)"]["count_b"]) == (16, 12)
    assert (skips["LMP"]["count_a"], skips["LMP"]["count_b"]) == (0, 5)
    kinds = {r["kind"]: r for r in t["kinds"]["rows"]}
    assert (kinds["PRUNE"]["count_a"], kinds["PRUNE"]["pct_b"]) == (16, pytest.approx(100 * 12 / 32))
    # Both positions were aligned: every frontier row names one of them, largest |delta| first, then (rest);
    # with the shared residual they add up to the aligned iterations' difference, summed over the positions.
    divergences = t["divergences"]["rows"]
    shown = [r for r in divergences if r["path"] != "(rest)"]
    assert {r["position"] for r in shown} <= {"p1", "p2"} and shown
    assert [abs(r["delta"]) for r in shown] == sorted((abs(r["delta"]) for r in shown), reverse=True)
    total = t["divergence_total"]["rows"][0]
    assert total["positions"] == 2
    assert sum(r["delta"] for r in divergences) + total["shared_residual"] == total["delta"]


def test_compare_refuses_different_positions(parquets):
    res = run("compare", parquets["typhoon"], parquets["stockfish"])
    assert res.exit_code == 2
    assert "different positions" in res.output and "--allow-different-positions" in res.output
    res = run("compare", parquets["typhoon"], parquets["stockfish"], "--allow-different-positions",
              "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["only_in_b"] == ["p2"]
    by_pos = {r["position"]: r for r in doc["tables"][0]["rows"]}
    assert by_pos["p1"]["ratio"] == 1.0 and by_pos["p2"]["nodes_a"] is None
    assert by_pos["(all)"]["nodes_b"] == 10  # totals over the positions both searched


def test_compare_same_engine_labels_by_file(parquets, tmp_path):
    other = write_pair(read_fixture(FIX / "report_stockfish.log"), tmp_path / "sf2.parquet")
    res = run("compare", parquets["stockfish"], other, "--format", "markdown")
    assert res.exit_code == 0, res.output
    assert "A = stockfish (stockfish.parquet), B = stockfish (sf2.parquet)" in res.output


def test_compare_engine_choice(parquets, tmp_path):
    from support.tracebuild import concat

    both = write_pair(concat(read_fixture(FIX / "report_stockfish.log"), read_fixture(FIX / "report_crafty.log")),
                      tmp_path / "both.parquet")
    res = run("compare", both, both)
    assert res.exit_code == 2 and "--engine-a" in res.output
    res = run("compare", both, both, "--engine-a", "crafty", "--engine-b", "stockfish", "--format", "json")
    assert res.exit_code == 0, res.output
    by_pos = {r["position"]: r for r in json.loads(res.output)["tables"][0]["rows"]}
    assert by_pos["p2"]["ratio"] == pytest.approx(3 / 4)


# ---------------------------------------------------------------- end to end through the real parser


def test_report_on_logs_end_to_end():
    res = run("report", FIX / "report_typhoon.log", FIX / "minimal_stockfish.log", "--format", "json")
    assert res.exit_code == 0, res.output
    t = tables_of(res.output)
    assert [r["nodes"] for r in t["nodes"]["rows"]] == [10, 4]
    assert {(r["act"], r["count"]) for r in rows(t["acts"], engine="typhoon")} == {
        ("FULL", 11), ("LMP", 10), ("LMR", 4), ("EXT", 1), ("NMP", 1), ("NULLBAILOUT", 1)}
    ty = rows(t["lmr"], engine="typhoon")[0]
    assert (ty["real_moves"], ty["mean_red"]) == (26, pytest.approx(0.6875))
    assert rows(t["scope"], engine="typhoon", act="LMP")[0]["continued"] == 3
    assert rows(t["ebf"], engine="stockfish")[0]["ebf"] == pytest.approx(2.0)  # 4 nodes at depth 2


def test_compare_logs_end_to_end_with_san():
    res = run("compare", FIX / "report_stockfish.log", FIX / "report_crafty.log", "--format", "json")
    assert res.exit_code == 0, res.output
    t = {x["name"]: x for x in json.loads(res.output)["tables"]}
    by_pos = {r["position"]: r for r in t["nodes"]["rows"]}
    assert (by_pos["p1"]["nodes_a"], by_pos["p2"]["nodes_b"]) == (10, 3)
    skips = {r["act"]: r for r in t["skips"]["rows"]}
    assert (skips["FP-QUIET"]["count_a"], skips["FP-QUIET"]["count_b"]) == (10, 7)


def test_parse_then_report_multi_search_san_log(tmp_path):
    out = tmp_path / "crafty.parquet"
    res = run("parse", FIX / "report_crafty.log", "-o", out)
    assert res.exit_code == 0, res.output
    res = run("report", out, "--by", "position", "--table", "nodes,acts,scope", "--format", "json")
    assert res.exit_code == 0, res.output
    t = tables_of(res.output)
    assert [(r["position"], r["nodes"]) for r in t["nodes"]["rows"]] == [("p1", 10), ("p2", 3)]
    assert rows(t["acts"], position="p1", act="FP-QUIET")[0]["count"] == 5
    assert rows(t["acts"], position="p2", act="LMR")[0]["count"] == 1
    assert rows(t["scope"], position="p1", act="(all)")[0]["continued"] == 0


def test_positions_epd_labels_logs_without_ids(tmp_path):
    text = (FIX / "report_stockfish.log").read_text()
    log = tmp_path / "noid.log"
    log.write_text(text.replace(" id=p1 phase=opening", "").replace(" id=p2 phase=endgame", ""))
    epd = tmp_path / "two.epd"
    epd.write_text('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "start"; c0 "phase=middlegame";\n'
                   '8/5k2/8/3p4/4P3/8/5K2/8 w - - id "pawns"; c0 "phase=endgame";\n')
    res = run("report", log, "--positions", epd, "--by", "phase,position", "--table", "nodes", "--format", "json")
    assert res.exit_code == 0, res.output
    got = [(r["phase"], r["position"], r["nodes"]) for r in tables_of(res.output)["nodes"]["rows"]]
    assert got == [("middlegame", "start", 10), ("endgame", "pawns", 4)]


def test_report_memory_limit_reads_smaller_batches_with_the_same_numbers(monkeypatch):
    """--memory-limit sets the batch target (an eighth of what fits at 600 bytes a record); the tables,
    folded over batches of one search each, are those of one batch."""
    import treediff.report.core as core

    log = Path(__file__).resolve().parents[2] / "fixtures" / "traces" / "stockfish_batch3.log"
    targets = []
    real = core.build_report

    def spy(source, names, keys, target, **kw):
        targets.append(target)
        return real(source, names, keys, target, **kw)

    monkeypatch.setattr(core, "build_report", spy)
    whole = run("report", log, "--format", "json", "--in-memory")
    small = run("report", log, "--format", "json", "--memory-limit", "6KB")
    default = run("report", log, "--format", "json")
    assert whole.exit_code == small.exit_code == default.exit_code == 0, small.output
    assert targets == [2**62, 6 * 1024 // 600 // 8, 2 * 1024**3 // 600 // 8]
    assert tables_of(small.output) == tables_of(whole.output) == tables_of(default.output)
    bad = run("report", log, "--memory-limit", "lots")
    assert bad.exit_code == 2 and "--memory-limit" in bad.output and "Traceback" not in bad.output

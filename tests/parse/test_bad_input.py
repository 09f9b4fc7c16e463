"""Every bad-input case of the format doc: a clear message, never a traceback or silent wrong numbers."""
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from treediff.parse import chunks
from treediff.cli import main
from treediff.model.errors import InputError
from treediff.parse.pipeline import TreedumpParser, parse_logs, parse_to_parquet

HAND = Path(__file__).resolve().parents[2] / "fixtures" / "hand"
HEADER = "TREEDUMP engine=stockfish v=1 id=p fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n"


def write(tmp_path, text, name="t.log", mode="w"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def run_cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("text", ["", "\n\n# only a comment\n", "MOVE path=e2e4 act=FULL d=1\n"])
def test_empty_or_headerless_is_exit_2(tmp_path, text):
    log = write(tmp_path, text)
    out = tmp_path / "o.parquet"
    result = run_cli("parse", log, "-o", out)
    assert result.exit_code == 2
    assert "no TREEDUMP header" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_zero_node_search_warns_about_closing_pipe(tmp_path):
    log = write(tmp_path, HEADER + "ITER d=1\nEND nodes=0\n")
    result = parse_logs([log])
    assert result.records.num_rows == 0
    assert any("0-node search" in w and "closing pipe" in w for w in result.warnings)


def test_truncated_last_line_dropped_with_line_number(tmp_path):
    log = write(tmp_path, HEADER + "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\nRESULT path=- ply=0 d=1 score=3\nMOVE path=d2d4 ply=1 mn=2 d=1 nd=")
    result = parse_logs([log])
    assert result.records.num_rows == 2
    assert any("truncated" in w and "line 4" in w for w in result.warnings)


def test_garbage_bytes_counted_and_parse_continues(tmp_path):
    body = (HEADER + "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL\n").encode()
    body += b"\xff\xfe\x00garbage\x80\n" + b"MOVE path=d2d4 ply=1 mn=2 d=1 nd=0 act=FULL\n" + b"\x81\x82\n"
    body += b"RESULT path=- ply=0 d=1 score=3\n"
    log = write(tmp_path, body)
    result = parse_logs([log])
    assert result.records.column("path").to_pylist() == ["e2e4", "d2d4", ""]
    assert any("2 lines with garbage" in w and "line 3, 5" in w for w in result.warnings)
    with pytest.raises(InputError, match="--strict"):
        parse_logs([log], strict=True)
    cli = run_cli("parse", "--strict", log, "-o", tmp_path / "o.parquet")
    assert cli.exit_code == 2 and not (tmp_path / "o.parquet").exists()


def test_missing_required_keys_and_non_numeric_values(tmp_path):
    log = write(
        tmp_path,
        HEADER
        + "MOVE ply=1 mn=1 d=1 act=FULL\n"        # no path: dropped
        + "MOVE path=e2e4 ply=1 mn=1 d=1\n"       # no act: dropped
        + "MOVE path=d2d4 ply=1 mn=x d=1 act=FULL\n"  # non-numeric mn: kept, flagged
        + "RESULT path=- ply=0 d=1 score=3\n",
    )
    result = parse_logs([log])
    rec = result.records.to_pandas()
    assert rec.path.tolist() == ["d2d4", ""]
    assert rec.problem.tolist()[0] == "bad-number:mn" and rec.mn.isna().tolist()[0]
    text = "\n".join(result.warnings)
    assert "1 line missing required key path= (dropped) (line 2)" in text
    assert "1 line missing required key act= (dropped) (line 3)" in text
    assert "1 line with a non-numeric mn= (line 4)" in text


def test_unknown_act_is_other_and_warned(tmp_path):
    log = write(tmp_path, HEADER + "MOVE path=e2e4 ply=1 mn=1 d=1 act=WEIRD\nMOVE path=d2d4 ply=1 mn=2 d=1 act=WEIRD\nRESULT path=- ply=0 d=1 score=0\nEND nodes=1\n")
    result = parse_logs([log])
    assert result.records.column("kind").to_pylist()[:2] == ["OTHER", "OTHER"]
    assert any("unknown act=WEIRD (2 records)" in w for w in result.warnings)
    with pytest.raises(InputError):
        parse_logs([log], strict=True)


def test_mixed_contexts_keep_first_unless_all_contexts(tmp_path):
    text = (
        HEADER
        + "ITER d=1\n"
        + "MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL ctx=main\n"
        + "RESULT path=- ply=0 d=1 score=3 ctx=main\n"
        + "END nodes=1 best=e2e4 ctx=main\n"
        + "ITER d=1 ctx=ponder\n"
        + "MOVE path=e7e5 ply=1 mn=1 d=1 nd=0 act=FULL ctx=ponder\n"
        + "MOVE path=d7d5 ply=1 mn=2 d=1 nd=0 act=FULL ctx=ponder\n"
        + "RESULT path=- ply=0 d=1 score=-3 ctx=ponder\n"
    )
    log = write(tmp_path, text)
    result = parse_logs([log])
    assert result.records.column("path").to_pylist() == ["e2e4", ""]
    s = result.searches.to_pylist()[0]
    assert s["contexts"] == "main:2,ponder:3" and s["kept_context"] == "main"
    assert s["result_nodes"] == 1 and s["end_nodes"] == 1 and s["iterations"] == 1
    assert any("several search contexts" in w and "main: 2, ponder: 3" in w for w in result.warnings)
    everything = parse_logs([log], all_contexts=True)
    assert everything.records.num_rows == 5
    s = everything.searches.to_pylist()[0]
    # The ponder context wrote no END: only main's END (1 node) counts, against 2 RESULT records.
    assert s["end_nodes"] == 1 and s["result_nodes"] == 2
    assert any("END nodes=1 but 2 RESULT records" in w for w in everything.warnings)


def test_end_nodes_mismatch_warned(tmp_path):
    log = write(tmp_path, HEADER + "RESULT path=- ply=0 d=1 score=3\nEND nodes=7\n")
    result = parse_logs([log])
    assert any("END nodes=7 but 1 RESULT records" in w for w in result.warnings)


def test_unknown_engine_and_forced_dialect(tmp_path):
    log = write(tmp_path, HEADER.replace("stockfish", "ethereal") + "RESULT path=- ply=0 d=1 score=3\n")
    with pytest.raises(InputError, match="unknown engine dialect 'ethereal'"):
        parse_logs([log])
    forced = parse_logs([log], engine="stockfish")
    assert forced.records.column("engine").to_pylist() == ["stockfish"]


def test_keys_in_any_order_and_unknown_keys_kept(tmp_path):
    log = write(tmp_path, HEADER + "MOVE act=LMR d=3 path=e2e4 zz=9 mn=2 ply=1 red=1 nd=1 foo=bar\n")
    rec = parse_logs([log]).records.to_pandas().iloc[0]
    assert (rec.path, rec.act, rec.depth, rec.new_depth, rec.reduction, rec.mn) == ("e2e4", "LMR", 3.0, 1.0, 1.0, 2)
    assert rec.extra == "zz=9 foo=bar"


def test_state_carries_across_chunk_boundaries(monkeypatch):
    """Tiny chunks split searches, iterations and contexts everywhere: same tables as one chunk."""
    logs = [HAND / "minimal_stockfish.log", HAND / "minimal_typhoon.log", HAND / "minimal_crafty.log"]
    whole = parse_logs(logs)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 37)
    pieces = parse_logs(logs)
    # Dictionary-encoded columns differ per chunk in their dictionaries, not in their values.
    assert pieces.records.to_pylist() == whole.records.to_pylist()
    assert pieces.searches.to_pylist() == whole.searches.to_pylist()


def test_interrupted_parse_leaves_no_output(tmp_path, monkeypatch):
    out = tmp_path / "o.parquet"
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64)
    calls = {"n": 0}
    real = TreedumpParser._process_chunk

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TreedumpParser, "_process_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        parse_to_parquet([HAND / "minimal_stockfish.log"], out)
    assert list(tmp_path.iterdir()) == []


def test_parse_writes_two_loadable_tables(tmp_path):
    import pandas as pd

    out = tmp_path / "o.parquet"
    result = run_cli("parse", HAND / "minimal_stockfish.log", HAND / "minimal_crafty.log", "-o", out)
    assert result.exit_code == 0, result.output
    records = pd.read_parquet(out)
    searches = pd.read_parquet(tmp_path / "o.searches.parquet")
    assert len(records) == 13 + 15 and searches.search.tolist() == [0, 1]
    assert searches.engine.tolist() == ["stockfish", "crafty"]
    assert pq.read_schema(out).field("act").type.value_type == "string"
    assert "warning:" in result.output  # the crafty fixture's illegal moves


def test_stdin(tmp_path):
    data = (HAND / "minimal_stockfish.log").read_text()
    out = tmp_path / "o.parquet"
    result = CliRunner().invoke(main, ["parse", "-", "-o", str(out)], input=data)
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).num_rows == 13


def test_info_one_line_per_search(tmp_path):
    log = tmp_path / "batch.log"
    log.write_text((HAND / "minimal_stockfish.log").read_text() + (HAND / "minimal_typhoon.log").read_text())
    result = run_cli("info", log)
    assert result.exit_code == 0
    lines = result.output.strip().splitlines()
    assert lines[0].split("\t") == ["engine", "position", "phase", "iterations", "records", "RESULT nodes", "END nodes", "contexts", "warnings"]
    assert lines[1].split("\t")[:8] == ["stockfish", "start", "opening", "2", "13", "4", "4", "1"]
    assert lines[2].split("\t")[:7] == ["typhoon", "tactical", "middlegame", "1", "11", "4", "4"]


def test_positions_epd_labels(tmp_path):
    epd = tmp_path / "p.epd"
    epd.write_text('2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - id "other-id"; c0 "phase=endgame";\n')
    result = parse_logs([HAND / "minimal_typhoon.log"], positions=epd)
    s = result.searches.to_pylist()[0]
    # The header's own id wins; the phase label comes from the EPD (matched by FEN).
    assert s["position"] == "tactical" and s["phase"] == "endgame" and s["phase_source"] == "epd"


def test_move_at_the_root_is_dropped_and_reported(tmp_path):
    log = write(tmp_path, HEADER + "MOVE path=- ply=0 mn=1 d=1 act=FULL\nMOVE ply=0 act=LMP path=- d=1\n"
                + "MOVE path=e2e4 ply=1 mn=1 d=1 act=FULL\nRESULT path=- ply=0 d=1 score=0\n")
    result = parse_logs([log])
    assert result.records.column("path").to_pylist() == ["e2e4", ""]
    # Line 2 takes the fast path (canonical order), line 3 the slow one (keys out of order).
    assert any("2 lines with a MOVE at the root" in w and "line 2, 3" in w for w in result.warnings)

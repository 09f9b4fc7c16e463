"""FEN validation, EPD reading, engine presets and the engines config file."""
from __future__ import annotations

import pytest

from support.runner_helpers import ROOT, START, TACTIC
from treediff.model.errors import InputError
from treediff.parse.dialects import DIALECTS
from treediff.run.engines import Protocol, load_config, parse_engine_arg, presets
from treediff.model.positions import Position, epd_phase, parse_epd_line, read_epd, read_positions, validate_fen


@pytest.mark.parametrize("bad, why", [
    (START + "\nquit", "newline"),
    (START.replace(" w ", " w\r"), "control"),
    (START + " go", "4 to 6"),
    ("8/8/8/8/8/8/8/8 w - - 0 1", "not a legal position"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 x", "invalid FEN"),
    ("k7/8/KQ6/8/8/8/8/8 b - - 0 1", "no legal move"),
])
def test_bad_fens_are_rejected(bad, why):
    with pytest.raises(InputError, match=why):
        validate_fen(bad)


def test_fen_is_normalised():
    assert validate_fen(TACTIC.rsplit(" ", 2)[0]) == TACTIC
    assert validate_fen("  " + START + "  ") == START


def test_positions20_fixture():
    positions, skipped = read_positions(ROOT / "fixtures" / "positions20.epd")
    assert not skipped and len(positions) == 20
    phases = [p.phase for p in positions]
    # The fixture's own promise: 7 opening, 7 middlegame, 6 endgame, all labelled.
    assert (phases.count("opening"), phases.count("middlegame"), phases.count("endgame")) == (7, 7, 6)
    assert positions[0].id == "start" and positions[0].fen == START and positions[0].line == 1
    assert TACTIC in {p.fen for p in positions}


def test_epd_forms(tmp_path):
    pos = parse_epd_line(f'{START} id "s"; phase opening;', "f:1", 1)
    assert (pos.id, pos.fen, pos.phase) == ("s", START, "opening")
    pos = parse_epd_line(f'{" ".join(START.split()[:4])} hmvc 3; fmvn 7; c0 "phase=endgame";', "f:2", 2)
    assert pos.fen.endswith(" 3 7") and pos.phase == "endgame" and pos.id.startswith("fen:")
    assert parse_epd_line("   # comment", "f:3") is None


def test_epd_errors(tmp_path):
    epd = tmp_path / "p.epd"
    epd.write_text(f'{START} id "a";\n{START} id "a";\n')
    with pytest.raises(InputError, match=r"p.epd:2: duplicate position id 'a'"):
        read_positions(epd)
    epd.write_text(f'{START} id "a";\nnot a position\n8/8/8/8/8/8/8/8 w - - id "b";\n')
    with pytest.raises(InputError, match=r"p.epd:2"):
        read_positions(epd)
    positions, skipped = read_positions(epd, skip_bad=True)
    assert [p.id for p in positions] == ["a"] and len(skipped) == 2
    epd.write_text(f'{START} id "a"; c0 "phase=late";\n')
    positions, _ = read_positions(epd)
    assert positions[0].phase is None  # a comment that is no phase label is only a comment
    epd.write_text(f'{START} id "a"; phase "late";\n')
    with pytest.raises(InputError, match="unknown phase label"):
        read_positions(epd)


def test_phase_labels():
    assert epd_phase({"phase": "Middle"}) == "middlegame"
    assert epd_phase({"c3": "phase: END"}) == "endgame" and epd_phase({"c0": "opening"}) == "opening"
    assert epd_phase({"c0": "phase=late", "id": "x"}) is None
    with pytest.raises(InputError, match="f:1: unknown phase label 'late'"):
        epd_phase({"phase": "late"}, "f:1")


def test_one_reader_for_the_runner_and_the_parser(tmp_path):
    """read_epd (the parser's --positions) is read_positions as a book: same Position objects, same checks."""
    epd = tmp_path / "p.epd"
    epd.write_text(f'{START} id "s"; phase opening;\n{TACTIC}\n')
    positions, _ = read_positions(epd)
    book = read_epd(epd)
    assert book.positions == positions and all(isinstance(p, Position) for p in positions)
    assert book.by_id["s"].phase == "opening" and book.lookup(None, TACTIC).id.startswith("fen:")
    epd.write_text(f'{START} id "s";\n{START} id "s";\n')
    with pytest.raises(InputError, match="duplicate position id"):
        read_epd(epd)
    epd.write_text(f'{START} id "a\x01b";\n')
    with pytest.raises(InputError, match="control character"):
        read_epd(epd)


def test_presets_state_their_incantations():
    known = presets()
    assert known["typhoon"].protocol is Protocol.XBOARD and known["typhoon"].init == ("easy",)
    assert known["crafty"].pre == ("ponder off",) and known["crafty"].dialect == "crafty"
    assert known["stockfish"].protocol is Protocol.UCI and not known["stockfish"].has_trace
    assert dict(known["stockfish"].uci_options)["Threads"] == "1"
    for profile in ("typhoon", "stockfish", "crafty"):
        name = "typhoon_py" if profile == "typhoon" else f"typhoon_py:{profile}"
        spec = known[name]
        assert spec.dialect == profile and spec.trace_file == "treedump.log"
        assert spec.argv[-2:] == ("--profile", profile)
    # Every dialect a preset names is one the parser registry knows.
    assert {s.dialect for s in known.values() if s.dialect} <= set(DIALECTS)


def test_engine_args():
    known = presets()
    spec = parse_engine_arg("sf2@stockfish=/opt/sf --bench 'a b'", known)
    assert spec.name == "sf2" and spec.argv == ("/opt/sf", "--bench", "a b")
    assert parse_engine_arg("typhoon_py:crafty", known).name == "typhoon_py:crafty"
    assert parse_engine_arg("uci", known, cmd="/bin/eng -x").argv == ("/bin/eng", "-x")
    with pytest.raises(InputError, match="no command"):
        parse_engine_arg("uci", known)
    with pytest.raises(InputError, match="unknown engine 'nope'"):
        parse_engine_arg("nope", known)
    with pytest.raises(InputError, match="either as =ARGV or with --cmd"):
        parse_engine_arg("uci=/a", known, cmd="/b")
    with pytest.raises(InputError, match="may only use"):
        parse_engine_arg("a/b@uci=/a", known)


def test_engines_config(tmp_path):
    cfg = tmp_path / "engines.toml"
    cfg.write_text("""
[engines.ethereal]
argv = "/usr/games/ethereal-chess"
protocol = "uci"
uci_options = { Hash = 32, Ponder = false }

[engines.mytyphoon]
preset = "typhoon"
argv = ["/opt/typhoon", "--cpus", "1"]
init = ["easy", "nopost"]

[engines.traced]
protocol = "xboard"
argv = ["/opt/e"]
dialect = "crafty"
trace_file = "out/trace.txt"
pre = ["ponder off"]
env = { FOO = "1" }
protover = false
""")
    engines = load_config(cfg)
    assert engines["ethereal"].argv == ("/usr/games/ethereal-chess",) and not engines["ethereal"].has_trace
    assert dict(engines["ethereal"].uci_options) == {"Hash": "32", "Ponder": "false"}
    assert engines["mytyphoon"].dialect == "typhoon" and engines["mytyphoon"].init == ("easy", "nopost")
    assert engines["traced"].trace_file == "out/trace.txt" and engines["traced"].env == (("FOO", "1"),)
    assert engines["traced"].protover is False and engines["mytyphoon"].protover is True
    bad = tmp_path / "bad.toml"
    for text, why in [
        ('[engines.x]\nargv = ["/a"]\n', "give `protocol`"),
        ('[engines.x]\nprotocol = "uci"\nargv = ["/a"]\ncolour = 1\n', "unknown key"),
        ('[engines.x]\nprotocol = "uci"\ndialect = "typhoon"\n', "both"),
        ('[engines.x]\nprotocol = "uci"\ndialect = "typhoon"\ntrace_file = "../x"\n', "inside"),
        ('[engines.x]\nprotocol = "telnet"\n', "not uci or xboard"),
        ('[engines.x]\nprotocol = "uci"\ndialect = "fruit"\ntrace_file = "t"\n', f"not one of {', '.join(DIALECTS)}"),
        ("[engines.x\n", "not a valid TOML"),
    ]:
        bad.write_text(text)
        with pytest.raises(InputError, match=why):
            load_config(bad)


def test_example_engines_config_loads():
    engines = load_config(ROOT / "fixtures" / "engines" / "example_engines.toml")
    assert engines["ethereal"].protocol is Protocol.UCI and not engines["ethereal"].has_trace
    assert engines["typhoon-dev"].init == ("easy",) and engines["typhoon-dev"].dialect == "typhoon"
    assert engines["crafty-td"].pre == ("ponder off",)
    assert engines["typhoon_py-see"].argv[-2:] == ("--lmr-policy", "see-history")

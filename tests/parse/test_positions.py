import pytest

from treediff.model.positions import fen_hash_id, material_phase, read_epd

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


@pytest.mark.parametrize(
    "fen, phase",
    [
        (START, "opening"),
        # The user's tactical position: full material but developed.
        ("2q1r1k1/1ppb4/r2p1Pp1/p4n1p/2P1n3/5NPP/PP3Q1K/2BRRB2 w - - 0 1", "middlegame"),
        # R+B vs R+N: M = 16 <= 26.
        ("4k3/pp3ppp/2n5/8/8/2B5/PP3PPP/3R2K1 w - - 0 30", "endgame"),
        # Queens off, everything else on: M = 44 -> middlegame.
        ("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1", "middlegame"),
    ],
)
def test_material_phase(fen, phase):
    assert material_phase(fen) == phase


def test_fen_hash_ignores_move_counters():
    assert fen_hash_id(START) == fen_hash_id(START.replace(" 0 1", " 5 40"))
    assert fen_hash_id(START).startswith("fen:") and len(fen_hash_id(START)) == 14


def test_read_epd_ids_and_phase_labels(tmp_path):
    epd = tmp_path / "p.epd"
    epd.write_text(
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "start"; c0 "phase=endgame";\n'
        '4k3/8/8/8/8/8/8/4K3 w - - id "bare";\n'
    )
    book = read_epd(epd)
    assert book.by_id["start"].phase == "endgame"  # the label wins over the material rule
    assert book.by_id["bare"].phase is None
    assert book.lookup(None, "4k3/8/8/8/8/8/8/4K3 w - - 0 1").id == "bare"


def test_read_epd_bad_line_is_a_clear_error(tmp_path):
    from treediff.model.errors import InputError

    epd = tmp_path / "bad.epd"
    epd.write_text("this is not an epd\n")
    with pytest.raises(InputError, match="bad.epd:1"):
        read_epd(epd)

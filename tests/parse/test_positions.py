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


def _random_fens(seed: int, games: int = 60, plies: int = 120) -> list[str]:
    """FENs of python-chess random games (every phase: captures thin the material out)."""
    import random

    import chess

    rng = random.Random(seed)
    fens = []
    for _ in range(games):
        board = chess.Board()
        for _ in range(rng.randint(1, plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            fens.append(board.fen())
    return fens


def _odd_fens(fens: list[str]) -> list[str]:
    """Variants python-chess may or may not read: the plain reader must say what it says about each."""
    out = []
    for fen in fens:
        board, side, castling, ep, half, full = fen.split()
        ranks = board.split("/")
        out += [
            " ".join((board, side, castling, ep)),              # no counters
            " ".join((board, side, castling, ep, half)),        # one counter
            " ".join((board, side, "-", ep, "0", "0")),         # fullmove 0 (python-chess reads it as 1)
            " ".join((board, "x", castling, ep, half, full)),   # bad side
            " ".join((board, side, "kq", ep, half, full)),      # castling of one colour only
            " ".join((board, side, castling, "e9", half, full)),  # no such square
            " ".join((board, side, castling, ep, "-1", full)),  # negative counter
            fen + " extra",                                     # a part too many
            "/".join(ranks[:7]),                                # 7 ranks, board only
            "/".join(ranks + ["8"]) + " w - - 0 1",             # 9 ranks
            board.replace("8", "44", 1) + " w - - 0 1",         # two digits in a row
            board.replace("8", "7", 1) + " w - - 0 1",          # a rank of 7 squares
            board.replace("p", "x", 1) + " w - - 0 1",          # a letter that is no piece
            " " + fen,                                          # a leading space
            fen.replace(" ", "  ", 1),                          # two spaces
            board + " w",                                       # board and side only
        ]
    return out


def test_material_phase_plain_reader_agrees_with_python_chess():
    from treediff.model.positions import _material_phase_by_python_chess, read_plain_fen

    fens = _random_fens(11)
    odd = _odd_fens(fens[::40])
    assert sum(read_plain_fen(f) is not None for f in fens) == len(fens)  # python-chess's own FENs are plain
    for fen in fens + odd:
        assert material_phase.__wrapped__(fen) == _material_phase_by_python_chess(fen), fen
    phases = {material_phase(f) for f in fens}
    assert phases == {"opening", "middlegame", "endgame"}


def test_material_phase_of_a_plain_fen_does_not_import_python_chess():
    import subprocess
    import sys

    code = ("import sys; from treediff.model.positions import material_phase; "
            "assert material_phase('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1') == 'opening'; "
            "print('chess' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _epd_by_python_chess(fen: str) -> str:
    import chess

    try:
        return chess.Board(fen.strip()).epd()
    except ValueError:
        return " ".join(fen.split()[:4])


def test_position_key_of_plain_fens_is_python_chess_epd():
    import random

    import chess

    from treediff.model.positions import position_key

    rng = random.Random(5)
    fens = _random_fens(3, games=40)
    extra = []
    for fen in fens[::7]:
        board = chess.Board(fen)
        extra.append(board.fen(en_passant="fen"))  # an en-passant square after every double push, legal or not
        placement, side = fen.split()[:2]
        for rights in ("KQkq", "Kq", "k", "-"):  # rights the board may not have: python-chess clears them
            extra.append(f"{placement} {side} {rights} - {rng.randint(0, 50)} {rng.randint(1, 90)}")
    extra += _odd_fens(fens[::60])
    checked = 0
    for fen in fens + extra:
        want = _epd_by_python_chess(fen)
        assert position_key.__wrapped__(fen) == want, fen
        checked += 1
    assert checked > 2000

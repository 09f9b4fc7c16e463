"""SAN/UCI resolution against python-chess's own answers (legality, SAN of every legal move)."""
import chess
import pytest

from treediff.parse.moves import PathResolver, UnreadableMove, _Legality, normalize_typed_path

FENS = [
    chess.STARTING_FEN,
    "r1bqkbnr/ppp2ppp/2np4/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 1 4",   # the knight on c6 is pinned
    "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",   # the same knight, not pinned
    "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",       # mate: no legal move
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",                                   # en passant
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",                                # castling both ways
    "4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1",                                   # check by a bishop
    "8/2P5/8/8/8/8/5p2/4K2k w - - 0 1",                                    # promotions
    "4k3/8/8/8/8/8/8/R3R3 w - - 0 1",                                      # no white king
    "3r4/8/8/8/8/8/3R4/3K3k w - - 0 1",                                    # rook pinned on a file
]


@pytest.mark.parametrize("fen", FENS)
def test_legality_test_agrees_with_python_chess(fen):
    board = chess.Board(fen)
    legality = _Legality(board)
    for from_sq in chess.SQUARES:
        for to_sq in chess.SQUARES:
            for promotion in (None, chess.QUEEN, chess.KNIGHT):
                move = chess.Move(from_sq, to_sq, promotion=promotion)
                assert legality(move) == board.is_legal(move), (fen, move.uci())


@pytest.mark.parametrize("fen", FENS)
def test_every_legal_move_resolves_from_its_san(fen):
    board = chess.Board(fen)
    resolver = PathResolver(fen)
    for move in board.legal_moves:
        assert resolver.resolve(board.san(move)) == move.uci()
        assert resolver.resolve(move.uci()) == move.uci()


def test_paths_in_any_order_give_the_same_moves():
    # Depth-first, then jumping back and forth: the resolver's stack must follow.
    resolver = PathResolver(chess.STARTING_FEN)
    paths = ["e4", "e4/e5", "e4/e5/Nf3", "e4/e5/Nf3/Nc6", "d4", "e4/e5/Nf3/Nc6/Bb5", "e4/c5", "e4/e5/Nf3/Nc6/Bb5/a6"]
    expected = ["e2e4", "e2e4/e7e5", "e2e4/e7e5/g1f3", "e2e4/e7e5/g1f3/b8c6", "d2d4",
                "e2e4/e7e5/g1f3/b8c6/f1b5", "e2e4/c7c5", "e2e4/e7e5/g1f3/b8c6/f1b5/a7a6"]
    assert [resolver.resolve(p) for p in paths] == expected
    assert [resolver.resolve(p) for p in reversed(paths)] == list(reversed(expected))


def test_pins_and_ambiguity():
    pinned = PathResolver(FENS[1])  # Bb5 pins the knight on c6 to the king
    assert pinned.resolve("Nd4") is None   # the pinned knight cannot move
    assert pinned.resolve("Ne7") == "g8e7"  # only one of the two knights may go to e7
    free = PathResolver(FENS[2])
    assert free.resolve("Nd4") == "c6d4"
    assert free.resolve("Ne7") is None     # ambiguous: both knights may
    assert free.resolve("Nge7") == "g8e7"
    assert free.resolve("Nd4/Nxd4") == "c6d4/f3d4"
    assert free.resolve("Nd4/Qe2/Qxe2") is None  # Qe2 is legal, but then black's queen cannot take on e2


def _random_positions(games: int, plies: int, seed: int = 7):
    """Positions of seeded random games (checks, captures, en passant, castling and promotions arise)."""
    import random

    rng = random.Random(seed)
    for _ in range(games):
        board = chess.Board()
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            yield board.copy(stack=False)
            board.push(rng.choice(moves))


def test_resolution_agrees_with_python_chess_parse_san_on_random_games():
    # The oracle is python-chess's own parse_san: every legal move's SAN resolves to it, and SAN
    # seen in other positions resolves exactly when parse_san accepts it, to the same move.
    seen_elsewhere: list[str] = []
    coverage = {"check": 0, "en passant": 0, "castling": 0, "promotion": 0, "foreign": 0}
    for board in _random_positions(games=25, plies=70):
        resolver = PathResolver(board.fen())
        coverage["check"] += board.is_check()
        for move in board.legal_moves:
            san = board.san(move)
            assert resolver.resolve(san) == move.uci(), (board.fen(), san)
            assert resolver.resolve(move.uci()) == move.uci(), (board.fen(), move.uci())
            coverage["en passant"] += board.is_en_passant(move)
            coverage["castling"] += board.is_castling(move)
            coverage["promotion"] += move.promotion is not None
            seen_elsewhere.append(san)
        for token in seen_elsewhere[-400::7]:
            try:
                expected = board.parse_san(token).uci()
            except ValueError:
                expected = None
            assert resolver.resolve(token) == expected, (board.fen(), token)
            coverage["foreign"] += 1
    assert all(n > 0 for n in coverage.values()), coverage


@pytest.mark.parametrize("text, fen, expected", [
    ("", None, ""), (" - ", None, ""), ("/", None, ""), ("(root)", chess.STARTING_FEN, ""),
    (" e2e4 / e7e5 ", None, "e2e4/e7e5"),
    ("e7e8Q/(null)/--/Z0/@@@@", None, "e7e8q/0000/0000/0000/0000"),
    ("e2e4/e7e5", "4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "e2e4/e7e5"),  # UCI-shaped only: read by shape, no board
    ("Nf3/Nf6", chess.STARTING_FEN, "g1f3/g8f6"),
    ("e2e4/0000/Nf3", chess.STARTING_FEN, "e2e4/0000/g1f3"),
    ("e4/e5/Nf3/Nc6/Bb5/a6/O-O", chess.STARTING_FEN, "e2e4/e7e5/g1f3/b8c6/f1b5/a7a6/e1g1"),
    ("a8", "4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8q"),  # as SAN logs are read: a bare promotion is a queen
])
def test_typed_paths_are_read_as_the_parser_reads_paths(text, fen, expected):
    assert normalize_typed_path(text, fen) == expected


@pytest.mark.parametrize("text, fen, token, after, known", [
    ("e2e4/Nf6", None, "Nf6", "e2e4", False),             # SAN without a position
    ("Nf3", "not a fen", "Nf3", "", False),
    ("e2e4/Nf3", chess.STARTING_FEN, "Nf3", "e2e4", True),  # Black to move
    ("e2e5/Nf6", chess.STARTING_FEN, "e2e5", "", True),     # replayed: a UCI move must be legal too
    ("e2e4//e7e5", chess.STARTING_FEN, "", "e2e4", True),
])
def test_unreadable_typed_paths_name_the_move_and_what_came_before(text, fen, token, after, known):
    with pytest.raises(UnreadableMove) as caught:
        normalize_typed_path(text, fen)
    assert (caught.value.token, caught.value.after, caught.value.position_known) == (token, after, known)

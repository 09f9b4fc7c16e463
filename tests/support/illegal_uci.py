"""One search body (after its header) holding the issue's four illegal UCI moves, for the parser's and the
reliability suite's tests; each line's comment says why it is (il)legal from the start position."""

#: The records, starting at line 2 of a log whose line 1 is a ``TREEDUMP`` header with the start FEN.
ILLEGAL_UCI_BODY = (
    "ITER d=2\n"
    "MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL\n"          # line 3: legal
    "MOVE path=e2e4/e2e4 ply=2 mn=1 d=1 nd=0 act=FULL\n"     # line 4: black has no piece on e2
    "MOVE path=e2e5 ply=1 mn=2 d=2 nd=1 act=FULL\n"          # line 5: a pawn does not go three
    "MOVE path=e1g1 ply=1 mn=3 d=2 nd=1 act=FULL\n"          # line 6: not castling here
    "MOVE path=a7a8q ply=1 mn=4 d=2 nd=1 act=FULL\n"         # line 7: no white pawn on a7
    "MOVE path=g1f3 ply=1 mn=5 d=2 nd=1 act=FULL\n"          # line 8: legal
    "RESULT path=e2e4/e2e4 ply=2 d=0 score=0\n"              # line 9: below an illegal move
    "RESULT path=e2e4 ply=1 d=1 score=0\nRESULT path=- ply=0 d=2 score=0\nEND nodes=3\n")
#: The lines a checker must flag (counted by hand from the comments above).
ILLEGAL_UCI_LINES = [4, 5, 6, 7, 9]

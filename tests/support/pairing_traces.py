"""Hand-written traces shared by the pairing and compare tests (tests/report)."""

FEN_K = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"

#: Iterations 1-3, each completed (a root RESULT): RESULT records 1 + 2 + 4 = 7; MOVE records 1 + 4 + 6 = 11,
#: of which LMR 1 + 2 = 3 and FP-QUIET (a PRUNE) 1; through iteration 2: nodes 3, MOVE 5, LMR 1, FP-QUIET 1.
DEEP = f"""TREEDUMP engine=stockfish v=1 unit=1 id=k fen={FEN_K}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=- ply=0 d=1 score=10 bound=exact
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL
MOVE path=e2e4/e8d8 ply=2 mn=1 d=1 nd=0 act=FULL
RESULT path=e2e4 ply=1 d=1 score=-10 bound=exact
MOVE path=e1d1 ply=1 mn=2 d=2 nd=0 act=LMR red=1
MOVE path=e1f1 ply=1 mn=3 d=2 act=FP-QUIET
RESULT path=- ply=0 d=2 score=10 bound=exact
ITER d=3
MOVE path=e2e4 ply=1 mn=1 d=3 nd=2 act=FULL
MOVE path=e2e4/e8d8 ply=2 mn=1 d=2 nd=1 act=FULL
MOVE path=e2e4/e8d8/e1d2 ply=3 mn=1 d=1 nd=0 act=FULL
RESULT path=e2e4/e8d8 ply=2 d=1 score=10 bound=exact
RESULT path=e2e4 ply=1 d=2 score=-10 bound=exact
MOVE path=e1d1 ply=1 mn=2 d=3 nd=1 act=LMR red=1
MOVE path=e1d1/e8f8 ply=2 mn=1 d=1 nd=0 act=FULL
RESULT path=e1d1 ply=1 d=1 score=-5 bound=exact
MOVE path=e1f1 ply=1 mn=3 d=3 nd=1 act=LMR red=1
RESULT path=- ply=0 d=3 score=10 bound=exact
END nodes=7 best=e2e4 score=10
"""

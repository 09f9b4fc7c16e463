"""Hand-written traces for the issue-13 analytics tables (cutoffs, fh, whatif, residual, depths, why), with
their counts worked out by hand in the docstrings of the tests that use them."""
from __future__ import annotations

from pathlib import Path

from treediff.parse.source import open_source

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

#: One iteration of depth 4 from the start position, every cutoff class in one tree (lines numbered in the
#: comments; the header is line 1):
#:   e2e4 node: cut by its second move d7d5 (class move, mn 2);
#:   d2d4 node: cut by its null move (class null);
#:   c2c4 node: e7e5 reduced (LMR), re-searched (LMR-RESEARCH), the re-search holds the cutoff (move, mn 2);
#:   g1f3 node: null-move record at the outer depth, then a shallower verification visit of g1f3 (cut by
#:     d7d5, class move mn 1), then the outer visit ends bound=lower with no decision after it (multicut);
#:   b1c3 node: bound=lower with no decision at all (TT cutoff, class none).
CUTOFF_CASES = f"""TREEDUMP engine=stockfish v=1 unit=1 id=start fen={START}
ITER d=4
MOVE path=e2e4 ply=1 mn=1 d=4 nd=3 act=FULL
MOVE path=e2e4/e7e5 ply=2 mn=1 d=3 nd=2 act=FULL
RESULT path=e2e4/e7e5 ply=2 d=2 score=30 bound=upper
MOVE path=e2e4/d7d5 ply=2 mn=2 d=3 nd=2 act=FULL
RESULT path=e2e4/d7d5 ply=2 d=2 score=-60 bound=upper
RESULT path=e2e4 ply=1 d=3 score=60 bound=lower
MOVE path=d2d4 ply=1 mn=2 d=4 nd=3 act=FULL
MOVE path=d2d4/0000 ply=2 mn=0 d=3 nd=1 act=NMP
RESULT path=d2d4/0000 ply=2 d=1 score=-70 bound=upper
RESULT path=d2d4 ply=1 d=3 score=70 bound=lower
MOVE path=c2c4 ply=1 mn=3 d=4 nd=3 act=FULL
MOVE path=c2c4/g8f6 ply=2 mn=1 d=3 nd=2 act=FULL
RESULT path=c2c4/g8f6 ply=2 d=2 score=20 bound=upper
MOVE path=c2c4/e7e5 ply=2 mn=2 d=3 nd=1 act=LMR red=1
RESULT path=c2c4/e7e5 ply=2 d=1 score=-40 bound=upper
MOVE path=c2c4/e7e5 ply=2 mn=2 d=3 nd=2 act=LMR-RESEARCH
RESULT path=c2c4/e7e5 ply=2 d=2 score=-45 bound=upper
RESULT path=c2c4 ply=1 d=3 score=45 bound=lower
MOVE path=g1f3 ply=1 mn=4 d=4 nd=3 act=FULL
MOVE path=g1f3/0000 ply=2 mn=0 d=3 nd=1 act=NMP
RESULT path=g1f3/0000 ply=2 d=1 score=-10 bound=upper
MOVE path=g1f3/d7d5 ply=2 mn=1 d=1 nd=0 act=FULL
RESULT path=g1f3/d7d5 ply=2 d=0 score=-80 bound=upper
RESULT path=g1f3 ply=1 d=1 score=80 bound=lower
RESULT path=g1f3 ply=1 d=3 score=80 bound=lower
MOVE path=b1c3 ply=1 mn=5 d=4 nd=3 act=FULL
RESULT path=b1c3 ply=1 d=3 score=90 bound=lower
RESULT path=- ply=0 d=4 score=-10 bound=exact
END nodes=15 best=e2e4 score=-10
"""


def write(tmp_path: Path, text: str, name: str = "trace.log") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def source_of(tmp_path: Path, text: str, name: str = "trace.log"):
    """The trace parsed by the real parser (node visits included)."""
    return open_source(str(write(tmp_path, text, name)))

#: typhoon dialect (unit 64): acts with their depth steps and why= reasons, one root visit of depth 4.
#:   FULL  e2e4 d=256 nd=192            -> step 1      why=tt-move
#:   NMP   e2e4/(null) d=192 nd=0       -> step 3
#:   LMR   e2e4/e7e5 d=192 nd=64 red=64  -> step 2, red 1 (depth 3, mn 2)
#:   LMR   e2e4/d7d5 d=192 nd=32 red=96  -> step 2.5, red 1.5 (depth 3, mn 3)
#:   EXT   d2d4 d=256 nd=256            -> step 0      why=in-check
#:   LMR   g1f3 d=256 nd=96 red=96      -> step 2.5, red 1.5 (depth 4, mn 3)
#:   FULL  b1c3 d=256 nd=192            -> step 1      why=killer
#:   LMP   a2a3 d=256 (no nd)           -> not in the depth steps
DEPTH_CASES = f"""TREEDUMP engine=typhoon v=1 unit=64 id=start fen={START}
ITER d=4
MOVE path=e2e4 ply=1 mn=1 d=256 nd=192 act=FULL why=tt-move
MOVE path=e2e4/(null) ply=2 mn=0 d=192 nd=0 act=NMP
RESULT path=e2e4/(null) ply=2 d=0 score=10 bound=upper
MOVE path=e2e4/e7e5 ply=2 mn=2 d=192 nd=64 act=LMR red=64
RESULT path=e2e4/e7e5 ply=2 d=64 score=10 bound=upper
MOVE path=e2e4/d7d5 ply=2 mn=3 d=192 nd=32 act=LMR red=96
RESULT path=e2e4/d7d5 ply=2 d=32 score=10 bound=upper
RESULT path=e2e4 ply=1 d=192 score=-10 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=256 nd=256 act=EXT why=in-check
RESULT path=d2d4 ply=1 d=256 score=-20 bound=upper
MOVE path=g1f3 ply=1 mn=3 d=256 nd=96 act=LMR red=96
RESULT path=g1f3 ply=1 d=96 score=-20 bound=upper
MOVE path=b1c3 ply=1 mn=4 d=256 nd=192 act=FULL why=killer
RESULT path=b1c3 ply=1 d=192 score=-20 bound=upper
MOVE path=a2a3 ply=1 mn=5 d=256 act=LMP
RESULT path=- ply=0 d=256 score=10 bound=exact
END nodes=7 best=e2e4 score=10
"""

#: Four iterations from the start position (stockfish dialect, unit 1); root moves e2e4, d2d4, g1f3 every
#: iteration, b1c3 in the last two.  Residual depth (nd of the last decision in the root's main visit, 0 for
#: a prune):
#:   e2e4: 0, 1, 2, 3      d2d4: 0, 0, 0, 3      g1f3: 0, 0 (FP-QUIET), 0, 0 (FP-QUIET in the main visit)
#:   b1c3: iterations 3 and 4 only (not counted: fewer than 3).
#: Iteration 4 has an aspiration re-search: root visit 1 (bound=lower) searched g1f3 at nd=3, but the main
#: visit (the root's last, visit 2) prunes it.
#: Root best move (lowest child score in the root's main visit): iter 1 e2e4 (-10 < -5); iter 2 e2e4 (-12
#: exact beats d2d4's -12 lower); iter 3 e2e4; iter 4 d2d4 (-20): a PV flip at the last iteration.
RESIDUAL_CASES = f"""TREEDUMP engine=stockfish v=1 unit=1 id=start fen={START}
ITER d=1
MOVE path=e2e4 ply=1 mn=1 d=1 nd=0 act=FULL
RESULT path=e2e4 ply=1 d=0 score=-10 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=1 nd=0 act=FULL
RESULT path=d2d4 ply=1 d=0 score=-5 bound=upper
MOVE path=g1f3 ply=1 mn=3 d=1 nd=0 act=FULL
RESULT path=g1f3 ply=1 d=0 score=-1 bound=upper
RESULT path=- ply=0 d=1 score=10 bound=exact
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL
RESULT path=e2e4 ply=1 d=1 score=-12 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=2 nd=0 act=LMR red=1
RESULT path=d2d4 ply=1 d=0 score=-12 bound=lower
MOVE path=g1f3 ply=1 mn=3 d=2 act=FP-QUIET
RESULT path=- ply=0 d=2 score=12 bound=exact
ITER d=3
MOVE path=e2e4 ply=1 mn=1 d=3 nd=2 act=FULL
RESULT path=e2e4 ply=1 d=2 score=-15 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=3 nd=0 act=LMR red=2
RESULT path=d2d4 ply=1 d=0 score=-2 bound=upper
MOVE path=g1f3 ply=1 mn=3 d=3 nd=0 act=LMR red=2
RESULT path=g1f3 ply=1 d=0 score=-1 bound=upper
MOVE path=b1c3 ply=1 mn=4 d=3 act=FP-QUIET
RESULT path=- ply=0 d=3 score=15 bound=exact
ITER d=4
MOVE path=e2e4 ply=1 mn=1 d=4 nd=3 act=FULL
RESULT path=e2e4 ply=1 d=3 score=-30 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=4 nd=3 act=FULL
RESULT path=d2d4 ply=1 d=3 score=-40 bound=exact
MOVE path=g1f3 ply=1 mn=3 d=4 nd=3 act=FULL
RESULT path=g1f3 ply=1 d=3 score=-50 bound=exact
RESULT path=- ply=0 d=4 score=50 bound=lower
MOVE path=e2e4 ply=1 mn=1 d=4 nd=3 act=FULL
RESULT path=e2e4 ply=1 d=3 score=-5 bound=upper
MOVE path=d2d4 ply=1 mn=2 d=4 nd=3 act=FULL
RESULT path=d2d4 ply=1 d=3 score=-20 bound=exact
MOVE path=g1f3 ply=1 mn=3 d=4 act=FP-QUIET
MOVE path=b1c3 ply=1 mn=4 d=4 nd=1 act=LMR red=2
RESULT path=b1c3 ply=1 d=1 score=-1 bound=upper
RESULT path=- ply=0 d=4 score=20 bound=exact
END nodes=22 best=d2d4 score=20
"""

#: typhoon dialect with SHADOW records (typhoon_py --shadow) right after the decisions they shadow:
#:   root: e2e4 FULL; d2d4 LMP + SHADOW fh=1; g1f3 LMR + SHADOW fh=0 (then its reduced search, RESULT);
#:   e2e4 node (ply 2): e7e5 LMP + SHADOW fh=1, d7d5 LMP + SHADOW fh=0, c7c5 LMP + SHADOW fh=0.
#: Per act: LMP 4 shadow tries, 2 fail highs; LMR 1, 0.  RESULT records 4; MOVE records 7.
SHADOW_CASES = f"""TREEDUMP engine=typhoon v=1 unit=64 id=start fen={START}
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=128 nd=64 act=FULL
MOVE path=e2e4/e7e5 ply=2 mn=1 d=64 act=LMP
SHADOW path=e2e4/e7e5 ply=2 d=0 score=30 fh=1
MOVE path=e2e4/d7d5 ply=2 mn=2 d=64 act=LMP
SHADOW path=e2e4/d7d5 ply=2 d=0 score=-30 fh=0
MOVE path=e2e4/c7c5 ply=2 mn=3 d=64 act=LMP
SHADOW path=e2e4/c7c5 ply=2 d=0 score=-40 fh=0
RESULT path=e2e4 ply=1 d=64 score=-10 bound=exact
MOVE path=d2d4 ply=1 mn=2 d=128 act=LMP
SHADOW path=d2d4 ply=1 d=64 score=-30 fh=1
MOVE path=g1f3 ply=1 mn=3 d=128 nd=32 act=LMR red=32
SHADOW path=g1f3 ply=1 d=64 score=-50 fh=0
RESULT path=g1f3 ply=1 d=32 score=-20 bound=upper
MOVE path=b1c3 ply=1 mn=4 d=128 nd=64 act=FULL
RESULT path=b1c3 ply=1 d=64 score=-20 bound=upper
RESULT path=- ply=0 d=128 score=10 bound=exact
END nodes=4 best=e2e4 score=10
"""

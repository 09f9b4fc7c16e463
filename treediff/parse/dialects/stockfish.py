"""Stockfish: depth in plies, UCI moves, null move ``0000``."""
from treediff.parse.dialects.base import Dialect, Notation
from treediff.model.taxonomy import Kind

DIALECT = Dialect(
    name="stockfish",
    unit=1,
    notation=Notation.UCI,
    null_moves=("0000",),
    acts={
        "FULL": Kind.SEARCH,
        "LMR": Kind.REDUCE,
        "LMR-RESEARCH": Kind.RESEARCH,
        "FP-QUIET": Kind.PRUNE,
        "FP-CAP": Kind.PRUNE,
        "SEE-QUIET": Kind.PRUNE,
        "SEE-CAP": Kind.PRUNE,
        "HIST-PRUNE": Kind.PRUNE,
        # Move-count pruning: real Stockfish writes nothing for it; typhoon_py writes one record per
        # dropped quiet move under --trace-silent.
        "SKIP-QUIETS": Kind.PRUNE,
        "PROBCUT": Kind.NODE_CUT,
        "NMP": Kind.NULL_PROBE,
        "EXT": Kind.EXTEND,
    },
    description="Stockfish (UCI); plies; e7e8q; null move 0000",
)

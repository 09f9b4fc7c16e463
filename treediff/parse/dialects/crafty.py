"""Crafty: depth in plies, SAN moves (resolved against the position), null move ``null``."""
from treediff.parse.dialects.base import Dialect, Notation
from treediff.model.taxonomy import Kind

DIALECT = Dialect(
    name="crafty",
    unit=1,
    notation=Notation.SAN,
    null_moves=("null",),
    acts={
        "FULL": Kind.SEARCH,
        "LMR": Kind.REDUCE,
        "LMR-RESEARCH": Kind.RESEARCH,
        "LMP": Kind.PRUNE,
        "FP-QUIET": Kind.PRUNE,
        "NMP": Kind.NULL_PROBE,
        "EXT": Kind.EXTEND,
    },
    description="Crafty (xboard); plies; SAN moves; null move null",
)

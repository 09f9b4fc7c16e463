"""typhoon: depth in 1/64 ply ticks, coordinate moves with upper-case promotion."""
from treediff.parse.dialects.base import Dialect, Notation
from treediff.model.taxonomy import Kind

DIALECT = Dialect(
    name="typhoon",
    unit=64,  # ONE_PLY = 64, QUARTER_PLY = 16
    notation=Notation.COORD,
    null_moves=("(null)",),
    acts={
        "FULL": Kind.SEARCH,
        "LMR": Kind.REDUCE,
        # Not in typhoon's own vocabulary; typhoon_py writes it for the forum post's verification
        # search (--lmr-policy see-history), and it means the same as in the other dialects.
        "LMR-RESEARCH": Kind.RESEARCH,
        "LMP": Kind.PRUNE,
        "NMP": Kind.NULL_PROBE,
        "EXT": Kind.EXTEND,
        "NULLBAILOUT": Kind.NODE_CUT,
    },
    description="typhoon (xboard); ticks of 1/64 ply; e7e8Q; null move (null)",
)

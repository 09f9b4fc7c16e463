"""The shared taxonomy of move-level decisions (no dependencies: imported by the dialect registry,
which the SAN worker process also loads)."""
from __future__ import annotations

import enum


class Kind(str, enum.Enum):
    """The shared taxonomy of move-level decisions."""

    SEARCH = "SEARCH"          #: searched at full (nominal) depth
    REDUCE = "REDUCE"          #: searched at reduced depth (LMR)
    RESEARCH = "RESEARCH"      #: re-searched after a reduced search beat alpha
    EXTEND = "EXTEND"          #: searched with an extension
    PRUNE = "PRUNE"            #: skipped without being searched
    NULL_PROBE = "NULL_PROBE"  #: null-move probe
    NODE_CUT = "NODE_CUT"      #: the node was cut by an aggregate test (ProbCut, null bail-out)
    OTHER = "OTHER"            #: an act= value the dialect does not know

"""Align two engines' search trees of the same position, move path by move path.

>>> from treediff.parse.source import open_source
>>> from treediff.align import LOAD_COLUMNS, align, kind_confusion, top_divergences
>>> al = align(open_source("a.parquet").records(LOAD_COLUMNS), open_source("b.parquet").records(LOAD_COLUMNS))
>>> al.rows            # one row per path, depth-first, with status and subtree node counts
>>> align(ra, rb, visits="all").rows  # also a row per other visit of a path (visit_label)
>>> kind_confusion(al) # A's kind x B's kind on shared paths
>>> top_divergences(al, n=10)

See docs/ALIGN.md.
"""
from treediff.align.api import Alignment, align
from treediff.align.core import (
    LOAD_COLUMNS,
    NEEDED_COLUMNS,
    SEQ_SEPARATOR,
    STATUS_VALUES,
    VISIT_LABELS,
    VISIT_MODES,
    Status,
    align_trees,
)
from treediff.align.select import SideChoice
from treediff.align.summaries import divergences, kind_confusion, top_divergences

__all__ = [
    "Alignment",
    "LOAD_COLUMNS",
    "SEQ_SEPARATOR",
    "STATUS_VALUES",
    "VISIT_LABELS",
    "VISIT_MODES",
    "SideChoice",
    "Status",
    "align",
    "align_trees",
    "divergences",
    "kind_confusion",
    "top_divergences",
]

"""Align two engines' search trees of the same position, move path by move path.

>>> from treediff.store.files import load
>>> from treediff.align import align, kind_confusion, top_divergences
>>> al = align(load(["a.parquet"]).records, load(["b.parquet"]).records)
>>> al.rows            # one row per path, depth-first, with status and subtree node counts
>>> kind_confusion(al) # A's kind x B's kind on shared paths
>>> top_divergences(al, n=10)

See docs/ALIGN.md.
"""
from treediff.align.api import Alignment, align
from treediff.align.core import NEEDED_COLUMNS, SEQ_SEPARATOR, STATUS_VALUES, Status, align_trees
from treediff.align.select import SideChoice
from treediff.align.summaries import kind_confusion, top_divergences

#: Records columns ``treediff diff`` loads.
LOAD_COLUMNS = ("position", "fen", "iter", "ply", *NEEDED_COLUMNS)

__all__ = [
    "Alignment",
    "LOAD_COLUMNS",
    "SEQ_SEPARATOR",
    "STATUS_VALUES",
    "SideChoice",
    "Status",
    "align",
    "align_trees",
    "kind_confusion",
    "top_divergences",
]

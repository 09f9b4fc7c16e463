"""The report tables, one module each; :data:`TABLES` is the registry, in display order.

Adding a table: write ``treediff/report/tables/<name>.py`` with an object
following :class:`treediff.report.table.Table` (``name``, ``columns``,
``partial``, ``finish``) and add it on one line below.
"""
from __future__ import annotations

from treediff.report.table import Table
from treediff.report.tables.acts import ACTS, SKIPS
from treediff.report.tables.cutoffs import CUTOFFS
from treediff.report.tables.depths import DEPTHS
from treediff.report.tables.ebf import EBF
from treediff.report.tables.fh import FH
from treediff.report.tables.lmr import LMR
from treediff.report.tables.nodes import NODES
from treediff.report.tables.residual import RESIDUAL
from treediff.report.tables.scope import SCOPE
from treediff.report.tables.why import WHY

#: Every ``--table`` name and its table, in display order.
TABLES: dict[str, Table] = {t.name: t for t in (NODES, ACTS, LMR, EBF, SKIPS, SCOPE, CUTOFFS, FH, RESIDUAL, DEPTHS, WHY)}

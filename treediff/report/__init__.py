"""Report tables (acts, kinds, lmr, ebf, skips, scope, nodes) and the two-input comparison.

Every function here returns data (pandas DataFrames in dataclasses); the
renderers in :mod:`treediff.render` turn them into text, files and plots.
Each table is one module of :mod:`treediff.report.tables` following the
:class:`~treediff.report.table.Table` protocol.
"""
from treediff.report.core import TABLES, Report, Section, build_report, columns_for, parse_tables, report_frames

__all__ = ["TABLES", "Report", "Section", "build_report", "columns_for", "parse_tables", "report_frames"]

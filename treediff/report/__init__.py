"""Report tables (acts, kinds, lmr, ebf, skips, scope, nodes) and the two-input comparison.

Every function here returns data (pandas DataFrames in dataclasses); the
renderers in :mod:`treediff.render` turn them into text, files and plots.
"""
from treediff.report.core import TABLES, Report, Section, build_report, columns_for, parse_tables

__all__ = ["TABLES", "Report", "Section", "build_report", "columns_for", "parse_tables"]

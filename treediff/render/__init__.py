"""Renderers for report and compare sections: rich/plain tables, markdown, CSV, JSON and PNG plots."""
from treediff.render.output import FORMATS, emit, render, write_text_atomic

__all__ = ["FORMATS", "emit", "render", "write_text_atomic"]

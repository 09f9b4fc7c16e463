"""treediff: parse, align and report on chess engines' TREEDUMP search traces."""

__version__ = "0.1.0"

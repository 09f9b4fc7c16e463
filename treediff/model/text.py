"""Text that came from a log or an input file, made safe to show on a terminal.

A header's ``id=`` or ``fen=``, an EPD id, a path the parser could not resolve:
any of them can hold ANSI/OSC escape sequences (``ESC [ 2 J`` clears the
screen, ``ESC ] 52`` writes the clipboard, ``ESC ] 8`` forges links) or other
control characters that break a table's lines.  :func:`printable` replaces
each such character by a visible escape (``\\x1b``, ``\\u2028``), so the
text reads the same and nothing reaches the terminal raw.  Machine formats
(JSON, CSV, Parquet) keep the text as it was.
"""
from __future__ import annotations

import re

#: C0 controls (tab and newline too: a cell or a warning is one line), DEL, C1 controls, the line and
#: paragraph separators, and the bidirectional overrides and isolates (which reorder what follows them).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character (and line separator, bidi override, BOM) shown escaped.

    ``"a\\x1b[2Jb"`` becomes ``"a\\\\x1b[2Jb"``; clean text (the usual case) is
    returned as it is, after one regex search.
    """
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(_escape, text)

"""One search of a log without parsing the others: a byte scan finds the searches, then one search's lines are parsed.

``treediff diff`` and ``treediff browse`` align one search per side, but a full parse reads every line of
both logs (about 1.5 CPU-us a line).  For a plain log file, :func:`index_log` instead finds every search's
header line by a scan of the bytes, with no Python per line (:func:`_header_lines`: ``memchr`` for the ``D``
bytes, which a header's ``TREEDUMP`` and an END record's ``END`` hold and few other lines do, the lines
counted with numpy), and reads each header exactly as the parser does (:func:`~treediff.parse.tokenizer.tokenize_line`, then the parser's own
:meth:`~treediff.parse.state.SearchStates.start_search` in log order: the same search numbers, dialects,
position ids, EPD labels and FENs, and the same errors).  :func:`parse_span` then parses one search's
bytes (from its header line to the next header line) with the existing parser, told the line number its
first line has (``first_line``), and checks that what it read is the search the index found.

A search's rows are then identical to a full parse's: its number (renumbered from the scan: every earlier
search of the file counts), position, engine, FEN, phase, records, ``line`` numbers, visits and the warnings
about it.  What the shortcut does not give: warnings about the lines of the other searches (they are not
read), so a file-level problem count ("3 lines with ...") counts the lines read.  The first search is read
from the file's first byte on (the lines before its header, and their warnings, as in a full parse).

:func:`index_log` returns None, and the caller parses the whole log, wherever the shortcut could differ:
standard input, compressed logs (no seeking; ``--keep-complete``'s cut searches), a file of one search
(nothing to skip), no header at all, a header the parser would refuse (no ``engine=``, an unknown dialect:
the full parse raises its error), a header line that is not UTF-8, a line longer than the scan's block, an
unknown ``--engine``.  :func:`parse_span` raises :class:`SpanMismatch` (the caller then parses the whole
log) when the search it read is not the one the index found, or when its warnings would name another
search (two END lines in one search: two searches' lines interleaved; a search without END that a later
search may name, unless the scan's counts of END lines prove none can), or its id came from its search number
(a header without ``id=`` and ``fen=``).

``TREEDIFF_DIFF_FULL_PARSE=1`` turns the shortcut off (every log parsed whole, as before).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from treediff.model.errors import InputError
from treediff.parse import tokenizer
from treediff.parse.problems import Problems
from treediff.parse.state import ParseOptions, SearchStates
from treediff.parse.tokenizer import tokenize_line
from treediff.store.magic import is_compressed

#: Set to 1 (or any value but "" and "0") to parse every log of diff and browse whole.
FULL_PARSE_ENV = "TREEDIFF_DIFF_FULL_PARSE"
#: Bytes scanned at a time (a line longer than this turns the shortcut off).
SCAN_BYTES = 16 * 1024 * 1024
#: What the parser strips from a line's ends (``tokenize_line``'s ASCII blanks) and the UTF-8 byte-order mark.
_BLANKS = b" \t\r\n\f\v"
_BOM = b"\xef\xbb\xbf"
#: First bytes of a line that may be a header: ``T``, a blank other than the newline, or a byte-order mark's.
_FIRST_BYTES = np.frombuffer(b"T \t\r\f\v\xef", dtype=np.uint8)


def full_parse_forced() -> bool:
    """Whether ``TREEDIFF_DIFF_FULL_PARSE`` asks for the full parse."""
    return os.environ.get(FULL_PARSE_ENV, "") not in ("", "0")


class SpanMismatch(Exception):
    """A search's lines read alone do not give what a full parse gives for it: parse the whole log instead."""


@dataclass(frozen=True)
class Span:
    """One search of a log: its number, bytes ``[start, stop)`` and the line number at ``start``."""

    search: int
    start: int
    stop: int
    first_line: int
    #: Line number of the search's header (``first_line`` unless the lines before the first header are read too).
    header_line: int


@dataclass
class LogIndex:
    """A plain log's searches as the byte scan found them."""

    path: str
    #: The name the parser gives the file in its tables and warnings (``str(path)``).
    source: str
    #: The file's size in bytes.
    size: int
    options: ParseOptions
    spans: list[Span]
    #: One row per search, in log order (``search`` 0, 1, ...): the searches table's engine, search, position,
    #: fen and phase, as a full parse gives them.
    rows: dict[str, list]
    #: Per search, the lines holding ``END`` (at least its END records; the first search's count includes the
    #: lines before its header); None when the scan did not count them.
    end_lines: list[int] | None = None


def index_log(path: str | os.PathLike, options: ParseOptions,
              progress: Callable[[int], None] | None = None) -> LogIndex | None:
    """The searches of the log at ``path`` found by a byte scan; None where only a full parse is safe.

    ``options``: the parse's (``engine``, ``positions`` as a PositionBook; ``strict`` and ``all_contexts``
    are not shortcut: None).  ``progress`` is called with 0 after each block (it may raise to stop the scan).
    """
    if options.strict or options.all_contexts or str(path) == "-":
        return None
    name = os.fspath(path)
    try:
        if not isinstance(name, str):
            return None
        name.encode("utf-8")  # (a name that is not UTF-8: the full parse's error)
        if not Path(path).is_file():
            return None
        with open(path, "rb") as fh:
            if is_compressed(fh.read(4)):
                return None
            fh.seek(0)
            scanned = _header_lines(fh, progress)
            size = fh.tell()
    except (OSError, UnicodeError):
        return None  # (the full parse names the problem)
    if scanned is None or len(scanned[0]) < 2:
        return None
    headers, end_lines = scanned
    source = str(path)
    try:
        states = SearchStates(options)
        rows: dict[str, list] = {"engine": [], "search": [], "position": [], "fen": [], "phase": []}
        for _, line_no, fields in headers:
            state = states.start_search(fields, line_no, source, Problems())
            for key, value in (("engine", state.dialect.name), ("search", state.search), ("position", state.position),
                               ("fen", state.fen), ("phase", state.phase)):
                rows[key].append(value)
    except InputError:
        return None  # a header the parser refuses: its own error, from the full parse
    spans = []
    for i, (start, line_no, _) in enumerate(headers):
        stop = headers[i + 1][0] if i + 1 < len(headers) else None
        first = (0, 1) if i == 0 else (start, line_no)  # the first search is read with the lines before it
        spans.append(Span(search=i, start=first[0], stop=stop if stop is not None else -1, first_line=first[1],
                          header_line=line_no))
    ends = None
    if end_lines is not None:  # lines holding END per search (its header line to the next header line)
        bounds = np.asarray([h[0] for h in headers[1:]], dtype=np.int64)
        ends = np.bincount(np.searchsorted(bounds, np.asarray(end_lines, dtype=np.int64), side="right"),
                           minlength=len(headers)).tolist()
    return LogIndex(path=name, source=source, size=size, options=options, spans=spans, rows=rows, end_lines=ends)


def _line_starts(data: memoryview) -> np.ndarray:
    """Offsets of the complete lines of ``data``: 0, then one past each newline (``split_lines``' offsets)."""
    ctok = getattr(tokenizer, "_ctok", None)  # (None without the compiled tokenizer, or a stale build)
    if ctok is not None and hasattr(ctok, "line_offsets"):
        return np.frombuffer(ctok.line_offsets(data), dtype=np.int64)
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    out = np.empty(len(newlines) + 1, dtype=np.int64)
    out[0] = 0
    out[1:] = newlines + 1
    return out


#: A block with more ``D`` bytes than this is split into lines (:func:`_block_by_lines`) instead.
MAX_D_BYTES = 20_000


def _header_lines(fh, progress: Callable[[int], None] | None = None):
    """(byte offset, line number, fields) of every line the parser reads as a ``TREEDUMP`` header, in order,
    and the byte offsets of the lines holding ``END`` (every END record's line among them; None if not known).

    Lines are what the parser reads: ended by a newline (the bytes after the last one are no line).  None when
    a header line is not UTF-8 or a line is longer than :data:`SCAN_BYTES`.  The file is read a block at a
    time; in each block (its complete lines), :func:`_block_by_d` finds the headers, or :func:`_block_by_lines`
    where ``D`` is common.
    """
    buf = bytearray(SCAN_BYTES)
    view = memoryview(buf)
    newline = np.empty(SCAN_BYTES, dtype=bool)
    found: list[tuple[int, int, dict]] = []
    end_lines: list[int] | None = []
    offset, line, filled = 0, 1, 0  # file offset of buf[0], its line number, bytes held
    while True:
        if filled == len(buf):
            return None  # a line longer than the buffer
        got = fh.readinto(view[filled:])
        if not got:
            return found, end_lines  # the end: what is left has no newline (the parser drops it)
        filled += got
        complete = buf.rfind(b"\n", 0, filled) + 1  # the block's whole lines: buf[:complete]
        if complete == 0:
            continue
        block = _block_by_d(buf, complete, newline)
        if block is None:
            block = _block_by_lines(buf, view, complete)
        if block is False:
            return None
        headers, lines, ends = block
        found.extend((offset + start, line + k, fields) for start, k, fields in headers)
        if end_lines is not None and ends is not None:
            end_lines.extend(offset + start for start in ends)
        else:
            end_lines = None
        tail = bytes(view[complete:filled])  # the incomplete last line, carried over
        buf[:len(tail)] = tail
        offset, line, filled = offset + complete, line + lines, len(tail)
        if progress is not None:
            progress(0)  # (a stop point: open_each's callback raises once its consumer has gone)


def _block_by_d(buf: bytearray, complete: int, newline: np.ndarray):
    """The headers of ``buf[:complete]`` (whole lines) as (offset, line index, fields), its number of lines and
    the offsets of its lines holding ``END``; found from its ``D`` bytes (``memchr``: a header's ``TREEDUMP``
    has one, an END record's ``END`` one, and few other lines have any).  None when the block has more than
    :data:`MAX_D_BYTES` of them; False for a header line that is not UTF-8."""
    starts: list[int] = []
    ends: list[int] = []
    hits = 0
    at = buf.find(b"D", 0, complete)
    while at >= 0:
        hits += 1
        if hits > MAX_D_BYTES:
            return None
        if at >= 4 and buf[at - 4:at + 4] == b"TREEDUMP":
            start = buf.rfind(b"\n", 0, at - 4) + 1
            if not starts or starts[-1] != start:
                starts.append(start)
        elif at >= 2 and buf[at - 2:at + 1] == b"END":
            start = buf.rfind(b"\n", 0, at - 2) + 1
            if not ends or ends[-1] != start:
                ends.append(start)
        at = buf.find(b"D", at + 1, complete)
    arr = np.frombuffer(buf, dtype=np.uint8, count=complete)
    is_newline = newline[:complete]
    np.equal(arr, 10, out=is_newline)
    headers = []
    counted, lines = 0, 0
    for start in starts:
        lines += int(np.count_nonzero(is_newline[counted:start]))
        counted = start
        raw = bytes(buf[start:buf.find(b"\n", start) + 1])
        fields = _header_fields(raw)
        if fields is False:
            return False
        if fields is not None:
            headers.append((start, lines, fields))
    lines += int(np.count_nonzero(is_newline[counted:complete]))
    return headers, lines, ends


def _block_by_lines(buf: bytearray, view: memoryview, complete: int):
    """:func:`_block_by_d`'s headers and lines found by splitting the block into lines: each line whose first
    byte may start a header (``T``, a blank, a byte-order mark's first byte) is looked at.  Its END lines are
    not looked for (None)."""
    starts = _line_starts(view[:complete])
    first = np.frombuffer(buf, dtype=np.uint8, count=complete)[starts[:-1]]
    headers = []
    for k in np.flatnonzero(np.isin(first, _FIRST_BYTES)).tolist():
        fields = _header_fields(bytes(view[int(starts[k]):int(starts[k + 1])]))
        if fields is False:
            return False
        if fields is not None:
            headers.append((int(starts[k]), k, fields))
    return headers, len(starts) - 1, None


def _header_fields(raw: bytes) -> dict | None | bool:
    """A line's header fields if the parser reads it as a ``TREEDUMP`` header, None if not; False: not UTF-8
    (the parser would drop it as garbage; not shortcut)."""
    rest = raw.lstrip(_BLANKS)
    while rest.startswith(_BOM):
        rest = rest[len(_BOM):].lstrip(_BLANKS)
    if not rest.startswith(b"TREEDUMP"):
        return None  # (the tag is the first field of the stripped line)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    token = tokenize_line(text)
    if token is None or token.tag != "TREEDUMP":
        return None
    return token.fields


class _RangeReader:
    """Bytes ``[start, stop)`` of a file (``stop`` -1: to its end) as the binary stream the parser reads."""

    def __init__(self, path: str, start: int, stop: int):
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._fh.seek(start)
        self._left = None if stop < 0 else stop - start

    def read(self, n: int = -1) -> bytes:
        if self._left is None:
            return self._fh.read(n)
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._fh.read(n)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._fh.close()


def parse_span(index: LogIndex, span: Span, out: Path, progress: Callable[[int], None] | None = None):
    """Parse the lines of one search (``span``) of ``index``'s log into the spill directory ``out``
    (:mod:`treediff.store.spill`, as :func:`~treediff.parse.pipeline.parse_to_spill` writes a log), its
    ``search`` numbered 0.

    Returns the :class:`~treediff.parse.pipeline.ParseResult` with the warnings as a full parse words them
    (``search N``).  Raises :class:`SpanMismatch` where the search read alone could differ from a full
    parse's (see the module docstring); InputError as the parser does.
    """
    from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_FORMAT, dialects_of, with_format
    from treediff.parse.pipeline import TreedumpParser, _BackgroundSink
    from treediff.store.spill import SpillWriter

    with SpillWriter(out, RECORDS_SCHEMA) as writer:
        with _BackgroundSink(writer.write, name="treediff-writer") as encode, \
                _BackgroundSink(encode.put, name="treediff-convert") as convert:
            parser = TreedumpParser(index.options, deferred_sink=convert.put)
            stream = _RangeReader(index.path, span.start, span.stop)
            try:
                parser.parse_stream(stream, index.source, progress, first_line=span.first_line)
            finally:
                stream.close()
            convert.drain()
            encode.drain()
            states = list(parser.searches)
            result = parser.finish()
            _check_span(index, span, states, result)
            writer.write_searches(with_format(result.searches, SEARCHES_FORMAT, dialects_of(result.searches)))
    result.warnings = _renumbered(result.warnings, index, span)
    return result


def _check_span(index: LogIndex, span: Span, states: list, result) -> None:
    """Raise SpanMismatch unless the parse of ``span`` read exactly the search the index found, and nothing in
    its warnings depends on the other searches."""
    if len(states) != 1 or result.searches.num_rows != 1:
        raise SpanMismatch(f"{len(states)} searches read")
    state = states[0]
    row = {name: result.searches.column(name)[0].as_py() for name in ("engine", "position", "fen", "phase")}
    for name, value in row.items():
        if value != index.rows[name][span.search]:
            raise SpanMismatch(f"{name} {value!r} is not the index's {index.rows[name][span.search]!r}")
    if state.first_line != span.header_line:
        raise SpanMismatch(f"header at line {state.first_line}, not {span.header_line}")
    from treediff.parse.summary import _kept_ends

    if any(len(lines) > 1 for lines in state.end_lines.values()):
        # Two END lines in one context: its warning names an earlier search (docs/TREEDUMP_FORMAT.md,
        # interleaved searches).
        raise SpanMismatch("a search with several END lines")
    if not _kept_ends(state, index.options.all_contexts) and not _named_by_none(index, span.search):
        raise SpanMismatch("a search without END that a later search may name")


def _named_by_none(index: LogIndex, search: int) -> bool:
    """Whether no later search can name ``search`` (one without END of its own) as the other of two interleaved
    searches: that is a later search with two END lines in one context, all searches between them with an END.
    Proven from the scan's counts of lines holding END (an over-count): the searches after it are walked until
    one with none (it has no END: any later search would name that one) or the log's end; a search with two or
    more on the way may name it (not proven)."""
    if index.end_lines is None:
        return search == len(index.spans) - 1  # (the last search has nothing after it)
    for count in index.end_lines[search + 1:]:
        if count == 0:
            return True
        if count > 1:
            return False
    return True


def _renumbered(warnings: list[str], index: LogIndex, span: Span) -> list[str]:
    """The warnings of a one-search parse, its ``search 0`` as the full parse numbers it."""
    if span.search == 0:
        return list(warnings)
    position = index.rows["position"][span.search]
    alone = f"{index.source}: search 0 ({position}, line {span.header_line}): "
    full = f"{index.source}: search {span.search} ({position}, line {span.header_line}): "
    return [full + w[len(alone):] if w.startswith(alone) else w for w in warnings]

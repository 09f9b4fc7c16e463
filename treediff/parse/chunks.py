"""From a byte stream to prepared chunks: every step of parsing that needs no parser state.

:class:`ChunkReader` cuts the stream into chunks of whole lines;
:func:`prepare_chunk` splits one into lines, tokenizes them column-wise
(:mod:`treediff.parse.tokenizer`), reads the few lines the fast path does
not take one by one, and drops the records that cannot be used.  It runs on
the tokenize thread (see :mod:`treediff.parse.pipeline`), so it must stay
free of shared state.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Callable

import numpy as np
import polars as pl

from treediff.model.errors import InputError
from treediff.parse.problems import Problems
from treediff.store.compressed import TruncatedInput
from treediff.parse.tokenizer import (
    FAST_FIELDS,
    INT_KEYS,
    PATH_ROOT,
    PATH_SHAPE,
    ROW_KEYS,
    SLOW_ROW_KEYS,
    is_int,
    SCAN_BUFFERS,
    BufferPool,
    split_lines,
    tokenize_records,
    tokenize_line,
    typed_fields,
)

#: Bytes read per chunk.  8 MiB: the same CPU per line as 16 MiB with a third less peak memory
#: (about 0.5 GB instead of 0.75 GB; one chunk is tokenized ahead and two wait for the writer).
CHUNK_BYTES = 8 * 1024 * 1024

ROOT_MOVE_PROBLEM = "with a MOVE at the root (path=- names no move; dropped)"

#: The blocks :class:`ChunkReader` reads plain files into, reused once nothing made from a chunk refers to
#: its block (string views of long values point into it until the chunk's table is built).
READ_BUFFERS = BufferPool()


def release_buffers() -> None:
    """Let the reused read and scan buffers go (:class:`~treediff.parse.tokenizer.BufferPool`): after a file,
    so a finished parse holds no memory for the next (the buffers still in use go with their users)."""
    READ_BUFFERS.clear()
    SCAN_BUFFERS.clear()


class ChunkReader:
    """Iterates over a stream in chunks of whole lines, as ``(tail, block, cut)``.

    The chunk is ``tail + block[:cut]``: the bytes left over from the previous
    block, then this block up to its last newline.  Joining and splitting them
    is left to the consumer (a helper thread).  After the loop, ``tail`` holds
    the bytes after the last newline.  ``progress`` gets the bytes read.  A
    plain file or pipe (``io.BufferedReader``) is read into a buffer that
    starts with the tail: its chunks come as ``(b"", buffer, cut)``.
    """

    def __init__(self, stream, source: str, progress: Callable[[int], None] | None, keep_complete: bool = False):
        self._stream = stream
        self._source = source
        self._progress = progress
        self._keep_complete = keep_complete
        self.tail = b""
        #: With ``keep_complete``: the truncation that ended the stream early (None: it ended whole).
        self.truncated: TruncatedInput | None = None

    def __iter__(self):
        if isinstance(self._stream, io.BufferedReader):  # a plain file or a pipe: read in place, after the tail
            yield from self._read_into()
            return
        while True:
            try:
                block = self._stream.read(CHUNK_BYTES)
            except (TruncatedInput, OSError, EOFError) as exc:
                self._read_failed(exc)
                return
            if not block:
                return
            if self._progress is not None:
                self._progress(len(block))
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this block (a very long line)
                self.tail += block
                continue
            tail, self.tail = self.tail, block[cut:]
            yield tail, block, cut

    def _read_failed(self, exc: BaseException) -> None:
        """A read raised ``exc``: a cut stream under --keep-complete is kept as :attr:`truncated` (the reading
        stops there); anything else is an :class:`InputError` naming the input."""
        if isinstance(exc, TruncatedInput):
            if self._keep_complete:
                self.truncated = exc
                return
            raise InputError(f"{self._source}: {exc}; --keep-complete keeps the searches before the cut "
                             "(and drops the one it cuts)") from None
        raise InputError(f"{self._source}: cannot read ({exc})") from None

    def _read_into(self):
        """:meth:`__iter__` with each block read into a buffer that starts with the tail (``readinto``), so the
        chunk is whole as read: yields ``(b"", buffer, cut)``, and the consumer copies nothing (``tail + block``
        was an 8 MiB copy per chunk, and the pages of a fresh 8 MiB string)."""
        while True:
            head = len(self.tail)
            buf = READ_BUFFERS.take("read", head + CHUNK_BYTES, np.uint8)  # (not zeroed: the read fills it)
            buf[:head] = np.frombuffer(self.tail, dtype=np.uint8)
            view = buf.data  # (a memoryview of the buffer)
            try:
                got = self._stream.readinto(view[head:])
            except (TruncatedInput, OSError, EOFError) as exc:  # (TruncatedInput: not from plain streams)
                self._read_failed(exc)
                return
            if not got:
                return
            if self._progress is not None:
                self._progress(got)
            end = head + got
            cut = _last_newline(buf, head, end) + 1
            if cut == 0:  # no line ends in this block (a very long line)
                self.tail = bytes(view[:end])
                continue
            self.tail = bytes(view[cut:end])
            yield b"", view[:end], cut


def _last_newline(buf: np.ndarray, start: int, end: int) -> int:
    """Index of the last newline in ``buf[start:end]``, or -1: searched from the end in growing windows (a line
    is short, so the first window of 64 KiB almost always holds one)."""
    hi, window = end, 1 << 16
    while hi > start:
        lo = max(start, hi - window)
        hits = np.flatnonzero(buf[lo:hi] == 10)
        if len(hits):
            return lo + int(hits[-1])
        hi, window = lo, window * 4
    return -1


@dataclass
class PreparedChunk:
    """A chunk after every step that needs no parser state (see :func:`prepare_chunk`)."""

    #: Lines in the chunk.
    n_lines: int
    #: Its MOVE/RESULT records, fast and slow path together, in line order (``idx``: line in the chunk).
    rows: pl.DataFrame
    #: Its TREEDUMP/ITER/END lines: (line in the chunk, tag, fields).
    events: list
    #: What was wrong with its lines, numbered from 0 (see :meth:`Problems.merge`).
    problems: Problems


def prepare_chunk(tail: bytes, block: bytes | memoryview, cut: int) -> PreparedChunk:
    """Split ``tail + block[:cut]`` (whole lines) and do all that needs no parser state; runs on a helper thread."""
    data = tail + memoryview(block)[:cut] if tail else memoryview(block)[:cut]
    lines, _ = split_lines(data)
    tokens = tokenize_records(lines)
    problems = Problems()
    slow_idx, slow_text, bad_utf8 = tokens.slow_idx, tokens.slow_text, tokens.slow_bad_utf8
    if bad_utf8.any():
        problems.add_many("with garbage (non-UTF-8) bytes", slow_idx[bad_utf8])
        slow_idx, slow_text = slow_idx[~bad_utf8], slow_text.filter(pl.Series(~bad_utf8))
    events, slow_rows = _read_slow_lines(slow_text, slow_idx, problems)
    fast_rows = _usable_fast_rows(tokens.fast, problems)
    return PreparedChunk(n_lines=len(lines), rows=_all_rows(fast_rows, slow_rows), events=events, problems=problems)


def _read_slow_lines(text: pl.Series, slow_idx: np.ndarray, problems: Problems) -> tuple[list, list[dict]]:
    """The lines the fast path did not take, one by one: headers, ITER, END, comments and odd records.

    ``text``: those lines, decoded; ``slow_idx``: their lines in the chunk.

    Returns the stateful lines as ``(chunk index, tag, fields)`` and the
    usable MOVE/RESULT records as rows (see :func:`_slow_row`).
    """
    events: list[tuple[int, str, dict]] = []
    slow_rows: list[dict] = []
    for i, line in zip(slow_idx.tolist(), text.to_list()):
        token = tokenize_line(line)
        if token is None:
            continue
        if token.tag in ("MOVE", "RESULT", "SHADOW"):
            row = _slow_row(token, i, problems)
            if row is not None:
                slow_rows.append(row)
        elif token.tag in ("TREEDUMP", "ITER", "END"):
            if token.bad:
                problems.add(f"with a malformed {token.tag} record", i)
            events.append((i, token.tag, token.fields))
        else:
            problems.add("with an unknown record tag", i)
    return events, slow_rows


def _usable_fast_rows(fast_rows: pl.DataFrame, problems: Problems) -> pl.DataFrame:
    """The fast path's records without those missing path= (or act= for a MOVE), or a MOVE at the root."""
    if not _any_unusable(fast_rows):
        return fast_rows
    missing_path = fast_rows.get_column("path").is_null()
    is_move = fast_rows.get_column("tag") == "MOVE"
    missing_act = is_move & fast_rows.get_column("act").is_null()
    # A MOVE decides a move, so its path names at least one; "-" is the root (RESULT only).
    root_move = is_move & (fast_rows.get_column("path") == "-").fill_null(False)
    if not (missing_path.any() or missing_act.any() or root_move.any()):
        return fast_rows
    idx_all = fast_rows.get_column("idx").to_numpy()
    problems.add_many("missing required key path= (dropped)", idx_all[missing_path.to_numpy()])
    problems.add_many("missing required key act= (dropped)", idx_all[(missing_act & ~missing_path).to_numpy()])
    problems.add_many(ROOT_MOVE_PROBLEM, idx_all[(root_move & ~missing_act).to_numpy()])
    return fast_rows.filter(~(missing_path | missing_act | root_move))


def _any_unusable(fast_rows: pl.DataFrame) -> bool:
    """Whether a fast-path record misses path=, or is a MOVE missing act= or at the root: the usual answer (no)
    found in one pass.  A fast-path tag is ``MOVE`` or ``RESULT`` (the pattern's only two), so a MOVE is a tag of
    four bytes (a view's length, no string compared), and its path is the root ``-`` exactly where
    :data:`PATH_SHAPE` says ``PATH_ROOT``."""
    if fast_rows.get_column("path").null_count():
        return True
    is_move = fast_rows.get_column("tag").str.len_bytes() == 4
    return bool((is_move & (fast_rows.get_column("act").is_null() | (fast_rows.get_column(PATH_SHAPE) == PATH_ROOT))).any())


def _all_rows(fast_rows: pl.DataFrame, slow_rows: list[dict]) -> pl.DataFrame:
    """Fast- and slow-path records in one frame, in line order, with ``extra`` and ``problem``."""
    fast_rows = fast_rows.with_columns(
        *(pl.lit(None, pl.Int64).alias(k) for k in SLOW_ROW_KEYS),
        pl.lit(None, pl.String).alias("extra"),
        pl.lit(None, pl.String).alias("problem"),
    )
    if not slow_rows:
        return fast_rows
    slow_frame = pl.DataFrame(
        slow_rows,
        schema={"idx": pl.UInt32, **{k: pl.String for k in FAST_FIELDS}, PATH_SHAPE: pl.UInt8,
                **{k: pl.String for k in SLOW_ROW_KEYS}, "extra": pl.String, "problem": pl.String},
    )
    # The typed layout of the fast path's rows (integers cast, path lengths), columns in their order.
    slow_frame = typed_fields(slow_frame).select(fast_rows.columns)
    return pl.concat([fast_rows, slow_frame], how="vertical_relaxed").sort("idx")


def _slow_row(token, idx: int, problems: Problems) -> dict | None:
    """A MOVE/RESULT/SHADOW record read by the slow path, as a row of string fields (None: dropped).

    ``idx`` is the line in the chunk; problems are numbered by it too.
    """
    fields = token.fields
    required = ("path", "act") if token.tag == "MOVE" else ("path",)
    for key in required:
        if key not in fields or not fields[key]:
            problems.add(f"missing required key {key}= (dropped)", idx)
            return None
    if token.tag in ("MOVE", "SHADOW") and fields["path"] == "-":
        problems.add(ROOT_MOVE_PROBLEM, idx)
        return None
    if token.bad:
        problems.add("with a malformed key=value token", idx)
    row: dict = {"idx": idx, "tag": token.tag}
    extra = []
    problem = None
    for key, value in fields.items():
        if key in ROW_KEYS or key in SLOW_ROW_KEYS:
            if key in INT_KEYS and not is_int(value):
                problems.add(f"with a non-numeric {key}=", idx)
                problem = problem or f"bad-number:{key}"
                continue
            row[key] = value
        else:
            extra.append(f"{key}={value}")
    row["extra"] = " ".join(extra) if extra else None
    row["problem"] = problem
    return row

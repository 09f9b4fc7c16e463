"""The shared TREEDUMP tokenizer.

Two paths produce the same fields:

* a vectorized *fast path* for MOVE/RESULT lines whose keys come in the
  canonical order of ``docs/TREEDUMP_FORMAT.md``, which is how producers write
  them: the compiled tokenizer (``_ctok.c``) fills typed column buffers
  (integers parsed, strings as views into the chunk) in one pass; without it,
  one polars regex over the whole chunk gives the same frame
  (:func:`fast_fields`, then :func:`typed_fields`);
* a per-line *slow path* (:func:`tokenize_line`) for everything else: headers,
  ITER/END, comments, keys in another order, unknown keys, tabs, bad lines.

A well-formed log sends only its few header/ITER/END lines down the slow path.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from treediff.model.notation import UCI_PATH_PATTERN

try:  # The optional compiled fast path (treediff/parse/_ctok.c), built by `pip install`.
    from treediff.parse import _ctok  # type: ignore[attr-defined]  # (compiled: no stub)
except ImportError:  # no C compiler at install time: the polars regex does the same job
    _ctok = None
if not hasattr(pa, "string_view") or not hasattr(_ctok, "record_fields"):
    # pyarrow < 16 cannot wrap the C code's string views; an older build lacks the compact typed scan
    _ctok = None

#: Record keys in canonical order: MOVE keys and RESULT keys are both subsequences of it.
ROW_KEYS = (
    "path", "ply", "mn", "d", "nd", "act", "red", "a", "b", "nt", "see", "hist", "why",
    "score", "bound", "ctx",
)
#: Record keys the fast path does not take (a line with one goes down the slow path): ``visit``,
#: which engines rarely write (docs/TREEDUMP_FORMAT.md §3), and SHADOW records' ``fh``.
SLOW_ROW_KEYS = ("visit", "fh")
#: Keys whose value must be an integer.
INT_KEYS = frozenset({"ply", "mn", "d", "nd", "red", "a", "b", "see", "hist", "score", "visit", "fh"})

# Printable ASCII without space: an ASCII-only class keeps the regex engine off UTF-8 decoding,
# which makes the fast path about a quarter cheaper.  Integers are validated after the cast.
_VALUE = r"([!-~]+)"
FAST_PATTERN = r"^(MOVE|RESULT)" + "".join(rf"(?: {k}={_VALUE})?" for k in ROW_KEYS) + r"\r?\n?$"
FAST_FIELDS = ("tag", *ROW_KEYS)
#: Column of the fast path's output after :data:`FAST_FIELDS`: what each ``path=`` looks like, so
#: the parser runs no regex over paths that are already UCI (almost all of them in UCI dialects).
PATH_SHAPE = "path_shape"
#: Values of :data:`PATH_SHAPE` (UInt8): no path (or no match), UCI moves or ``0000`` joined by
#: ``/`` (:data:`~treediff.model.notation.UCI_PATH_PATTERN`), the root ``-``, anything else.
PATH_NONE, PATH_UCI, PATH_ROOT, PATH_OTHER = 0, 1, 2, 3

_INT_RE = re.compile(r"-?[0-9]+\Z")


@dataclass
class Token:
    """One line read by the slow path."""

    tag: str
    fields: dict[str, str] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)
    #: Why the line is unusable (None if fine).
    bad: str | None = None


#: What separates the fields of a line, and what is stripped from its ends: ASCII blanks.
_ASCII_SPACE = " \t\r\n\f\v"
_FIELD_SEPARATOR = re.compile(r"[ \t\f\v]+")


def tokenize_line(text: str) -> Token | None:
    """Tokenize one decoded line; None for blank lines and ``#`` comments."""
    # A byte-order mark before the first line (or where files were concatenated) is not part of the line.
    stripped = text.strip(_ASCII_SPACE).lstrip("\ufeff").strip(_ASCII_SPACE)
    if not stripped or stripped.startswith("#"):
        return None
    fen = None
    if stripped.startswith("TREEDUMP"):
        # fen runs to the end of the line and may contain spaces.
        m = re.search(r"(?:^|\s)fen=", stripped)
        if m:
            fen = stripped[m.end():].strip()
            stripped = stripped[: m.start()]
    # Fields are separated by ASCII blanks only: str.split() would also split at U+2028, NEL (U+0085),
    # U+001C..U+001F, which the fast path (and the format) do not treat as separators.
    parts = _FIELD_SEPARATOR.split(stripped)
    tag, rest = parts[0], parts[1:]
    token = Token(tag=tag)
    for part in rest:
        key, eq, value = part.partition("=")
        if not eq or not key:
            token.bad = f"malformed token {part[:30]!r}"
            continue
        if key in token.fields:
            token.bad = f"key {key!r} given twice"
            continue
        token.fields[key] = value
    if fen is not None:
        token.fields["fen"] = fen
    return token


def split_lines(data: bytes | memoryview) -> tuple[pa.LargeBinaryArray, int]:
    """Split complete lines (each keeps its ``\\n``) out of ``data``.

    Returns the lines and the number of bytes consumed; bytes after the last
    newline are not consumed.
    """
    if _ctok is not None:  # two memchr passes instead of numpy's compare + flatnonzero (about 8x less CPU)
        offsets = np.frombuffer(_ctok.line_offsets(data), dtype=np.int64)
    else:
        buf = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(buf == 10)
        offsets = np.empty(len(newlines) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = newlines + 1
    consumed = int(offsets[-1])
    lines = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    return lines, consumed


def decode_lines(lines: pa.LargeBinaryArray) -> tuple[pl.Series, np.ndarray]:
    """Decode lines as UTF-8; lines that are not valid UTF-8 become "" and are flagged."""
    series = pl.Series("l", lines)
    try:
        return series.cast(pl.String), np.zeros(len(series), dtype=bool)
    except pl.exceptions.ComputeError:
        pass
    texts, bad = [], np.zeros(len(series), dtype=bool)
    for i, raw in enumerate(lines.to_pylist()):
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append("")
            bad[i] = True
    return pl.Series("l", texts, dtype=pl.String), bad


#: Lines per slice of the fast path; slices are matched in parallel by polars.
FAST_SLICE_LINES = 50_000


def fast_fields(text: pl.Series) -> pl.DataFrame:
    """Apply the canonical-order regex: one string column per field, ``tag`` null where it did not match,
    then :data:`PATH_SHAPE`."""
    frame = pl.DataFrame({"l": text})
    expr = pl.col("l").str.extract_groups(FAST_PATTERN).struct.unnest()
    slices = [
        frame.slice(start, FAST_SLICE_LINES).lazy().select(expr)
        for start in range(0, max(frame.height, 1), FAST_SLICE_LINES)
    ]
    out = pl.concat(slices, parallel=True).collect()
    out = out.rename(dict(zip(out.columns, FAST_FIELDS)))
    path = pl.col("path")
    shape = (
        pl.when(path.is_null()).then(PATH_NONE)
        .when(path == "-").then(PATH_ROOT)
        .when(path.str.contains(UCI_PATH_PATTERN)).then(PATH_UCI)
        .otherwise(PATH_OTHER)
    )
    return out.with_columns(shape.cast(pl.UInt8).alias(PATH_SHAPE))


#: The typed layout of the fast path's output (both paths): string fields stay strings, these ten
#: integer keys become Int64 (null where absent or not an integer).  Also the order of
#: :data:`BAD_INT`'s bits, and of the compiled tokenizer's int outputs (``_ctok.c``).
STRING_FIELDS = ("tag", "path", "act", "nt", "why", "bound", "ctx")
INT_FIELDS = ("ply", "mn", "d", "nd", "red", "a", "b", "see", "hist", "score")
#: Bit of each integer key in :data:`BAD_INT` (the slow path's ``visit=`` and ``fh=`` too).
INT_BITS = {k: i for i, k in enumerate((*INT_FIELDS, *SLOW_ROW_KEYS))}
#: Column (UInt16) of the typed output: bit :data:`INT_BITS`\ [k] set where key k has a value that is
#: not an integer (the value is then null; :func:`treediff.parse.assemble.check_numbers` warns).
BAD_INT = "_bad_int"
#: Column (Int32) of the typed output: the path's length in moves (0 for the root ``-``; null without a
#: path), what :func:`treediff.parse.assemble.check_ply` compares ``ply=`` with.
PLIES = "_plies"


def typed_fields(fields: pl.DataFrame) -> pl.DataFrame:
    """The regex path's string frame (:func:`fast_fields`, or any frame with the int keys as strings and
    ``path``) in the typed layout: the integer keys of :data:`INT_BITS` it has cast to Int64 (polars'
    non-strict cast: ``[+-]?[0-9]+`` within int64), then :data:`PLIES` and :data:`BAD_INT`.

    The reference for the compiled tokenizer's output (tests/parse/test_ctok.py) and the slow path's
    records' conversion (:mod:`treediff.parse.chunks`).
    """
    keys = [k for k in INT_BITS if k in fields.columns]
    bad = pl.lit(0, pl.UInt16)
    for k in keys:
        failed = pl.col(k).is_not_null() & pl.col(k).cast(pl.Int64, strict=False).is_null()
        bad = bad | pl.when(failed).then(pl.lit(1 << INT_BITS[k], pl.UInt16)).otherwise(pl.lit(0, pl.UInt16))
    path = pl.col("path")
    plies = (
        pl.when(path.is_null()).then(None)
        .when(path == "-").then(0)
        .otherwise(path.str.count_matches("/", literal=True) + 1)
    ).cast(pl.Int32)
    return fields.with_columns(
        *(pl.col(k).cast(pl.Int64, strict=False) for k in keys),
        plies.alias(PLIES),
        bad.alias(BAD_INT),
    )


#: Largest chunk the compiled path takes: Arrow string views hold 32-bit offsets.
_CTOK_MAX_BYTES = 2**31 - 1


def ctok_available() -> bool:
    """Whether :func:`tokenize_chunk` uses the compiled fast path.

    Setting the environment variable ``TREEDIFF_TOKENIZER=regex`` forces the polars regex
    (to compare the two, e.g. in ``benchmarks/bench_parse.py``).
    """
    return _ctok is not None and os.environ.get("TREEDIFF_TOKENIZER", "") != "regex"


def compiled_function(name: str):
    """The compiled tokenizer's function ``name`` where :func:`ctok_available` (else None: the pure-Python
    steps, which give the same output; so ``TREEDIFF_TOKENIZER=regex`` runs no compiled step of the parse)."""
    return getattr(_ctok, name, None) if ctok_available() else None


def fast_fields_c(lines: pa.LargeBinaryArray, text: pl.Series | None = None) -> pl.DataFrame | None:
    """``typed_fields(fast_fields(text))`` of ``lines`` by the compiled tokenizer, or None where it cannot run.

    The same DataFrame as the regex path (checked by tests/parse/test_ctok.py), made from column
    buffers the C code fills in one pass over the chunk's bytes: integers parsed, string fields as
    Arrow string views pointing into the chunk's own buffer (which polars takes over without
    copying), path shapes and lengths; no Python object per line.  Lines that are not UTF-8 never
    match (the pattern is ASCII), as with the regex on their "".  ``text`` (the decoded lines) is
    read only for the rare line with an integer key the C code does not take (see :func:`_fix_bad_ints`).
    """
    scanned = _scan_c(lines, compact=False)
    if scanned is None:
        return None
    frame, bad, _ = scanned
    if bad.any():
        rows = np.flatnonzero(bad)
        frame = _fix_bad_ints(frame, rows, text.gather(rows) if text is not None else _decode_rows(lines, rows))
    return frame


def record_fields_c(lines: pa.LargeBinaryArray) -> tuple[pl.DataFrame, np.ndarray] | None:
    """The rows of :func:`fast_fields_c` for the lines that match only, with their line in the chunk first
    (``idx``, UInt32), and those lines (int64, ascending); None where the compiled tokenizer cannot run.

    What the parser keeps of the fast path, made without a row for the other lines (so nothing is filtered
    out afterwards) and without decoding the chunk: a matched line is ASCII, so only the others (the slow
    path's) are decoded, by the caller.
    """
    scanned = _scan_c(lines, compact=True)
    if scanned is None:
        return None
    frame, bad, idx = scanned
    if bad.any():
        rows = np.flatnonzero(bad)
        frame = _fix_bad_ints(frame, rows, _decode_rows(lines, idx[rows]))
    return frame.insert_column(0, pl.Series("idx", idx, dtype=pl.UInt32)), idx.astype(np.int64)


def _decode_rows(lines: pa.LargeBinaryArray, rows: np.ndarray) -> pl.Series:
    """:func:`decode_lines` of the lines at ``rows`` (indices from buffers: pa.array() imports pandas)."""
    take = pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(np.ascontiguousarray(rows, dtype=np.int64))])
    return decode_lines(lines.take(take))[0]


def _scan_c(lines: pa.LargeBinaryArray, compact: bool) -> tuple[pl.DataFrame, np.ndarray, np.ndarray] | None:
    """The compiled scan of ``lines`` as a frame in the typed layout (before :func:`_fix_bad_ints`), each row's
    bad-integer bits, and (``compact``: one row per matched line) the rows' lines; None where it cannot run."""
    if _ctok is None or lines.null_count:
        return None
    n = len(lines)
    _, offsets_buf, data = lines.buffers()
    if data is None:
        data = pa.py_buffer(b"")
    if data.size > _CTOK_MAX_BYTES:
        return None
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=n + 1, offset=lines.offset * 8)
    bitmap_bytes = (n + 7) // 8
    n_str, n_int = len(STRING_FIELDS), len(INT_FIELDS)
    if compact:
        # record_fields writes every entry of the rows it gives (zero for a null): only the bitmaps need
        # zeroing, so the buffers come from a pool and are reused once the chunk made from them is gone
        # (fresh ones cost the kernel's zeroing of every page touched: ~17 MB a chunk, ~5% of a parse).
        views = SCAN_BUFFERS.take("views", n_str * n * 16, np.uint8)
        validity = SCAN_BUFFERS.take("validity", n_str * bitmap_bytes, np.uint8, zero=True)
        ints = SCAN_BUFFERS.take("ints", n_int * n, np.int64)
        int_validity = SCAN_BUFFERS.take("int_validity", n_int * bitmap_bytes, np.uint8, zero=True)
        bad = SCAN_BUFFERS.take("bad", n, np.uint16)
        shapes = SCAN_BUFFERS.take("shapes", n, np.uint8)
        plies = SCAN_BUFFERS.take("plies", n, np.int32)
        idx = SCAN_BUFFERS.take("idx", n, np.uint32)
    else:
        # Zeroed by calloc: typed_fields leaves the rows of unmatched lines untouched, and the pages of a
        # key the chunk never uses are never touched.
        views = np.zeros(n_str * n * 16, dtype=np.uint8)
        validity = np.zeros(n_str * bitmap_bytes, dtype=np.uint8)
        ints = np.zeros(n_int * n, dtype=np.int64)
        int_validity = np.zeros(n_int * bitmap_bytes, dtype=np.uint8)
        bad = np.zeros(n, dtype=np.uint16)
        shapes = np.zeros(n, dtype=np.uint8)
        plies = np.zeros(n, dtype=np.int32)
    outputs = (views, validity, ints, int_validity, bad, shapes, plies)
    if compact:
        m, null_counts = _ctok.record_fields(data, offsets, *outputs, idx)
        idx = idx[:m]
    else:
        null_counts = _ctok.typed_fields(data, offsets, *outputs)
        m, idx = n, np.zeros(0, dtype=np.uint32)
    views_buf, validity_buf = pa.py_buffer(views), pa.py_buffer(validity)
    ints_buf, int_validity_buf = pa.py_buffer(ints), pa.py_buffer(int_validity)
    columns: dict[str, pa.Array] = {}
    # Field f's buffers start at f * n (rows) and f * bitmap_bytes (bitmaps); the first m rows are the output.
    for f, name in enumerate(STRING_FIELDS):
        columns[name] = pa.Array.from_buffers(
            pa.string_view(), m,
            [validity_buf.slice(f * bitmap_bytes, bitmap_bytes), views_buf.slice(f * n * 16, m * 16), data],
            null_count=null_counts[f],
        )
    for k, name in enumerate(INT_FIELDS):
        columns[name] = pa.Array.from_buffers(
            pa.int64(), m,
            [int_validity_buf.slice(k * bitmap_bytes, bitmap_bytes), ints_buf.slice(k * n * 8, m * 8)],
            null_count=null_counts[n_str + k],
        )
    # (The path's validity is the plies' too: a length only where there is a path.)
    columns[PATH_SHAPE] = pa.Array.from_buffers(pa.uint8(), m, [None, pa.py_buffer(shapes[:m])])
    columns[PLIES] = pa.Array.from_buffers(
        pa.int32(), m, [validity_buf.slice(bitmap_bytes, bitmap_bytes), pa.py_buffer(plies[:m])],
        null_count=null_counts[1])
    columns[BAD_INT] = pa.Array.from_buffers(pa.uint16(), m, [None, pa.py_buffer(bad[:m])])
    names = [*FAST_FIELDS, PATH_SHAPE, PLIES, BAD_INT]
    frame = pl.from_arrow(pa.Table.from_arrays([columns[c] for c in names], names=names))
    assert isinstance(frame, pl.DataFrame)  # (a table gives a frame; for mypy)
    return frame, bad[:m], idx


class BufferPool:
    """Numpy buffers reused from chunk to chunk, by role: a buffer is handed out again only when nothing but the
    pool refers to it (the arrays, Arrow buffers and polars columns made from a chunk's buffers hold references
    to them, so a buffer is free once everything made from it is gone).

    A fresh large buffer costs its first-touch page faults, the kernel zeroing every page; a reused one costs
    nothing.  At most ``keep`` buffers a role are kept; when more chunks are alive at once (one tokenized
    ahead, one in the state machine, two waiting for the conversion, two for the writer, the visit stage's
    held ones), the others are allocated and dropped as before.  Kept buffers that are free still hold their
    memory, so ``keep`` is small: it bounds what a parse holds beyond its chunks in flight.  Thread-safe.
    """

    def __init__(self, keep: int = 3):
        self._keep = keep
        self._free: dict[str, list[np.ndarray]] = {}
        self._lock = threading.Lock()

    def take(self, role: str, count: int, dtype, zero: bool = False) -> np.ndarray:
        """A buffer of ``count`` items of ``dtype`` (contents arbitrary unless ``zero``)."""
        dtype = np.dtype(dtype)
        with self._lock:
            kept = self._free.setdefault(role, [])
            for buf in kept:
                # (references: the list, this loop's name, getrefcount's argument; a view handed out adds one)
                if sys.getrefcount(buf) == 3 and buf.dtype == dtype and len(buf) >= count:
                    out = buf[:count]
                    break
            else:
                buf = np.empty(count + count // 8 + 64, dtype=dtype)  # (room for a somewhat larger chunk)
                out = buf[:count]
                if len(kept) < self._keep:
                    kept.append(buf)
                else:
                    # Full: a free one too small goes (chunks grew); else this buffer is not kept (the kept
                    # ones cycle as they come free, so a few serve however many chunks are in flight).
                    small = [i for i, k in enumerate(kept) if sys.getrefcount(k) == 2 and len(k) < count]
                    if small:
                        kept[small[0]] = buf
        if zero:
            out.fill(0)
        return out

    def clear(self) -> None:
        """Forget the kept buffers (those in use stay alive with their users): memory goes back after a parse."""
        with self._lock:
            self._free.clear()


#: The compiled scan's output buffers (see :func:`_scan_c`).
SCAN_BUFFERS = BufferPool()


def _fix_bad_ints(frame: pl.DataFrame, rows: np.ndarray, text: pl.Series) -> pl.DataFrame:
    """Where the C code found an integer key whose value is not ``[+-]?[0-9]+`` within int64, the regex
    path's reading of those few lines (``text``: the decoded lines of ``rows``; polars' cast decides what
    is an integer, as on the regex path)."""
    fixed = typed_fields(fast_fields(text))
    index = pl.Series(rows, dtype=pl.UInt32)
    return frame.with_columns(
        *(frame.get_column(k).scatter(index, fixed.get_column(k)) for k in (*INT_FIELDS, BAD_INT))
    )


def is_int(value: str) -> bool:
    return bool(_INT_RE.match(value))


@dataclass
class ChunkTokens:
    """A chunk of lines, decoded and tokenized by the stateless fast path."""

    #: Each line as text ("" where it is not UTF-8).
    text: pl.Series
    #: True for lines that are not valid UTF-8.
    bad_utf8: np.ndarray
    #: :func:`typed_fields` of :func:`fast_fields` of ``text`` (or the compiled equivalent).
    fast: pl.DataFrame


def tokenize_chunk(lines: pa.LargeBinaryArray) -> ChunkTokens:
    """Everything about a chunk that needs no parser state (safe to run on another thread)."""
    text, bad_utf8 = decode_lines(lines)
    fast = fast_fields_c(lines, text) if ctok_available() else None
    if fast is None:
        fast = typed_fields(fast_fields(text))
    return ChunkTokens(text=text, bad_utf8=bad_utf8, fast=fast)


@dataclass
class ChunkRecords:
    """A chunk's fast-path records and the lines left to the slow path, by the stateless tokenizer."""

    #: The lines the fast path takes, in the typed layout with ``idx`` (UInt32, line in the chunk) first.
    fast: pl.DataFrame
    #: The other lines' indices in the chunk (int64, ascending).
    slow_idx: np.ndarray
    #: Those lines as text ("" where not UTF-8).
    slow_text: pl.Series
    #: True for those of them that are not valid UTF-8.
    slow_bad_utf8: np.ndarray


def tokenize_records(lines: pa.LargeBinaryArray) -> ChunkRecords:
    """:func:`tokenize_chunk` split into the fast path's rows and the slow path's lines (safe on another thread).

    The compiled tokenizer gives only the matched lines' rows and decodes nothing but the other lines;
    the regex fallback filters its frame of every line.  Both give the same.
    """
    compiled = record_fields_c(lines) if ctok_available() else None
    if compiled is not None:
        fast, matched = compiled
        unmatched = np.ones(len(lines), dtype=bool)
        unmatched[matched] = False
        slow_idx = np.flatnonzero(unmatched)
        slow_text, slow_bad = decode_lines(lines.take(pa.Array.from_buffers(
            pa.int64(), len(slow_idx), [None, pa.py_buffer(slow_idx)])))
        return ChunkRecords(fast=fast, slow_idx=slow_idx, slow_text=slow_text, slow_bad_utf8=slow_bad)
    tokens = tokenize_chunk(lines)
    fast_mask = tokens.fast.get_column("tag").is_not_null().to_numpy() & ~tokens.bad_utf8
    slow_idx = np.flatnonzero(~fast_mask)
    return ChunkRecords(
        fast=tokens.fast.with_row_index("idx").filter(pl.Series(fast_mask)),
        slow_idx=slow_idx,
        slow_text=tokens.text.gather(slow_idx),
        slow_bad_utf8=tokens.bad_utf8[slow_idx],
    )

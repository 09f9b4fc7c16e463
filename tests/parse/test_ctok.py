"""The compiled fast-path tokenizer (treediff/parse/_ctok.c) against the polars regex.

The regex (:func:`treediff.parse.tokenizer.fast_fields`) then polars' casts
(:func:`~treediff.parse.tokenizer.typed_fields`) are the reference: the C path's typed columns
must give the identical DataFrame on every input, including the lines it must reject and the
integers it must not take.
"""
from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from support.benchmark_scripts import load_benchmark
from treediff.parse import tokenizer
from treediff.parse.tokenizer import (
    BAD_INT,
    FAST_FIELDS,
    INT_BITS,
    INT_FIELDS,
    PLIES,
    STRING_FIELDS,
    PATH_NONE,
    PATH_OTHER,
    PATH_ROOT,
    PATH_SHAPE,
    PATH_UCI,
    ROW_KEYS,
    decode_lines,
    fast_fields,
    fast_fields_c,
    record_fields_c,
    split_lines,
    tokenize_chunk,
    tokenize_records,
    typed_fields,
)

_ctok = pytest.importorskip(
    "treediff.parse._ctok",
    reason="compiled tokenizer not built (no C compiler at `pip install -e .`); the regex path is used",
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_LOGS = sorted((ROOT / "fixtures" / "hand").glob("*.log")) + sorted((ROOT / "fixtures" / "traces").glob("*.log"))


def _from_lines(lines: list[bytes]) -> pa.LargeBinaryArray:
    return pa.array(lines, type=pa.large_binary())


def assert_same(lines: pa.LargeBinaryArray) -> pl.DataFrame:
    """C path == regex path on ``lines``; returns the frame."""
    text = decode_lines(lines)[0]
    compiled = fast_fields_c(lines, text)
    assert compiled is not None
    reference = typed_fields(fast_fields(text))
    assert compiled.columns == [*FAST_FIELDS, PATH_SHAPE, PLIES, BAD_INT]
    assert {k: compiled.schema[k] for k in FAST_FIELDS} == {
        k: pl.Int64 if k in INT_FIELDS else pl.String for k in FAST_FIELDS}
    assert [compiled.schema[k] for k in (PATH_SHAPE, PLIES, BAD_INT)] == [pl.UInt8, pl.Int32, pl.UInt16]
    assert_frame_equal(compiled, reference)
    # Without the decoded text (the lines with odd integers are then decoded alone): the same.
    assert_frame_equal(fast_fields_c(lines), reference)
    assert_same_records(lines, reference, text)
    return compiled


def assert_same_records(lines: pa.LargeBinaryArray, reference: pl.DataFrame, text: pl.Series) -> None:
    """The compact C scan (matched lines only) == the regex frame's matched rows, and tokenize_records
    (fast rows, slow lines and their text) is the same with either tokenizer."""
    matched = reference.get_column("tag").is_not_null()
    _poison_free_scan_buffers()  # (reused buffers hold anything: the scan must write every entry it gives)
    compiled = record_fields_c(lines)
    assert compiled is not None
    frame, idx = compiled
    assert_frame_equal(frame, reference.with_row_index("idx").filter(matched))
    assert idx.dtype == np.int64 and idx.tolist() == matched.arg_true().to_list()
    with_c = tokenize_records(lines)
    with mock.patch.dict(os.environ, {"TREEDIFF_TOKENIZER": "regex"}):
        regex = tokenize_records(lines)
    assert_frame_equal(with_c.fast, regex.fast)
    assert with_c.slow_idx.tolist() == regex.slow_idx.tolist() == (~matched).arg_true().to_list()
    assert with_c.slow_text.to_list() == regex.slow_text.to_list() == text.gather(with_c.slow_idx).to_list()
    assert with_c.slow_bad_utf8.tolist() == regex.slow_bad_utf8.tolist()


def _poison_free_scan_buffers() -> None:
    """Fill the compact scan's free pooled buffers with junk, as a reused buffer may hold."""
    for kept in tokenizer.SCAN_BUFFERS._free.values():
        for buf in kept:
            if sys.getrefcount(buf) == 3:  # (the list, this name, the argument: free)
                buf.view(np.uint8).fill(0xA5)


def test_buffer_pool_reuses_only_free_buffers():
    """(Buffers told apart by id: holding one here would count as a use.)"""
    pool = tokenizer.BufferPool(keep=3)
    a = pool.take("r", 100, np.int64)
    a[:] = 7
    a_id = id(a.base)
    b = pool.take("r", 100, np.int64)  # a is in use: another buffer
    assert not np.shares_memory(a, b)
    del a
    c = pool.take("r", 90, np.int64, zero=True)  # a's buffer is free again: reused, zeroed
    assert id(c.base) == a_id and len(c) == 90 and not c.any()
    derived = pa.py_buffer(c[10:20])  # an Arrow buffer over part of it keeps it in use
    del c
    d = pool.take("r", 90, np.int64)
    assert id(d.base) != a_id
    del derived, d
    e = pool.take("r", 50, np.int64)
    assert id(e.base) == a_id
    big = pool.take("r", 10_000, np.int64)  # larger than any kept one: a new buffer
    assert len(big) == 10_000 and id(big.base) != a_id
    assert pool.take("other", 5, np.uint8).dtype == np.uint8
    pool.clear()
    assert pool._free == {}


def test_record_fields_on_reused_buffers():
    """The compact scan over chunks of different shapes in turn, each time into buffers full of junk, gives the
    regex path's rows every time (nulls included: every entry of a row is written)."""
    chunks = [
        b"MOVE path=e2e4 ply=1 mn=1 d=10 nd=9 act=FULL a=-30 b=30 nt=PV see=5 hist=7\n" * 50,
        b"RESULT path=e2e4 ply=1 d=9 score=12 bound=exact ctx=x\nMOVE path=- act=X\nJUNK\n" * 40,
        b"MOVE path=e2e4/e7e5 ply=2 mn=3 d=8 act=LMR red=2 why=late\nRESULT path=- ply=0 d=1 score=-4\n" * 30,
    ]
    for _ in range(3):
        for data in chunks:
            lines, _ = tokenizer.split_lines(data)
            assert_same(lines)


def test_keys_match_the_python_order():
    assert _ctok.row_keys() == ROW_KEYS
    assert sorted((*STRING_FIELDS, *INT_FIELDS)) == sorted(FAST_FIELDS)
    assert set(INT_BITS) == tokenizer.INT_KEYS  # every integer key has its bit in _bad_int
    # The C code's int slots are the int keys in canonical order.
    assert INT_FIELDS == tuple(k for k in ROW_KEYS if k in INT_FIELDS)


def test_integers_by_hand():
    """What is an integer, written by hand from polars' non-strict cast: [+-]?[0-9]+ within int64."""
    cases = {
        b"0": 0, b"-0": 0, b"+5": 5, b"007": 7, b"-007": -7, b"9223372036854775807": 2**63 - 1,
        b"-9223372036854775808": -(2**63), b"9223372036854775808": None, b"-9223372036854775809": None,
        b"99999999999999999999": None, b"1e3": None, b"-": None, b"+": None, b"+-5": None, b"5.0": None,
        b"0x10": None, b"1_000": None, b"12a": None,
    }
    frame = assert_same(_from_lines([b"MOVE path=e2e4 ply=1 d=" + v + b" act=FULL\n" for v in cases]))
    assert frame.get_column("d").to_list() == list(cases.values())
    assert frame.get_column(BAD_INT).to_list() == [0 if v is not None else 1 << INT_BITS["d"] for v in cases.values()]
    assert frame.get_column("ply").to_list() == [1] * len(cases)
    # Several bad keys in one line: one bit each.
    frame = assert_same(_from_lines([b"RESULT path=- ply=x mn=2 score=y\n"]))
    assert frame.get_column(BAD_INT).to_list() == [(1 << INT_BITS["ply"]) | (1 << INT_BITS["score"])]
    assert frame.row(0, named=True)["mn"] == 2 and frame.row(0, named=True)[PLIES] == 0


def test_path_lengths_by_hand():
    frame = assert_same(_from_lines([b"MOVE path=e2e4 act=x\n", b"RESULT path=-\n", b"RESULT path=a/b/c\n",
                                     b"RESULT path=/\n", b"RESULT score=1\n", b"ITER d=3\n"]))
    assert frame.get_column(PLIES).to_list() == [1, 0, 3, 2, None, None]


def test_hand_cases():
    """Expected values written by hand from the pattern in docs/TREEDUMP_FORMAT.md."""
    lines = [
        b"MOVE path=e2e4 ply=1 d=3 act=search\n",  # 0: fine
        b"RESULT path=e2e4 score=-31 bound=exact\r\n",  # 1: fine, CRLF
        b"MOVE d=3 path=e2e4\n",  # 2: out of order
        b"MOVE path=e2e4  d=3\n",  # 3: double space
        b"MOVE path=e2e4\td=3\n",  # 4: tab
        b"MOVE path=e2e4 path=e2e4\n",  # 5: key twice
        b"MOVE path=\n",  # 6: empty value
        b"MOVE path=a=b why=x=y=z\n",  # 7: '=' inside values is allowed
        b"MOVE path=e2\xc3\xa9\n",  # 8: non-ASCII
        b"MOVE\n",  # 9: bare tag
        b"MOVEX path=a\n",  # 10: not the tag
        b"MOVE path=a ",  # 11: trailing space
        b"MOVE path=abcdefghijklmnopqrstuvwxyz",  # 12: long value, no newline, at the buffer end
        b"MOVE foo=1\n",  # 13: unknown key
        b"ITER d=3\n",  # 14: another tag
    ]
    frame = assert_same(_from_lines(lines))
    tags = frame.get_column("tag").to_list()
    assert tags == ["MOVE", "RESULT", None, None, None, None, None, "MOVE", None, "MOVE", None, None, "MOVE", None, None]
    assert frame.row(0, named=True) == {
        **{k: None for k in FAST_FIELDS},
        "tag": "MOVE", "path": "e2e4", "ply": 1, "d": 3, "act": "search", PATH_SHAPE: PATH_UCI, PLIES: 1, BAD_INT: 0,
    }
    assert frame.get_column("bound")[1] == "exact"
    assert frame.get_column("why")[7] == "x=y=z"
    assert frame.get_column("path")[12] == "abcdefghijklmnopqrstuvwxyz"
    # Unmatched lines and lines without a path have no shape; '=' in a value is not a move.
    assert frame.get_column(PATH_SHAPE).to_list()[:10] == [1, 1, 0, 0, 0, 0, 0, 3, 0, 0]


def test_path_shapes():
    """Shapes written by hand from UCI_PATH_PATTERN: UCI moves or 0000 joined by '/', the root '-', else other."""
    cases = {
        b"e2e4": PATH_UCI, b"e7e8q/0000/a1h8": PATH_UCI, b"0000": PATH_UCI, b"h1a8n": PATH_UCI,
        b"-": PATH_ROOT,
        b"e7e8Q": PATH_OTHER, b"e2e4/": PATH_OTHER, b"/e2e4": PATH_OTHER, b"e2e4//e7e5": PATH_OTHER,
        b"i2e4": PATH_OTHER, b"e9e4": PATH_OTHER, b"e2e4k": PATH_OTHER, b"e2e45": PATH_OTHER, b"e2e": PATH_OTHER,
        b"--": PATH_OTHER, b"-/e2e4": PATH_OTHER, b"(null)": PATH_OTHER, b"Nf3": PATH_OTHER, b"00000": PATH_OTHER,
        b"e2e4/(null)": PATH_OTHER, b"e2e4e7e5": PATH_OTHER,
    }
    frame = assert_same(_from_lines([b"MOVE path=" + path + b" act=FULL\n" for path in cases]))
    assert frame.get_column(PATH_SHAPE).to_list() == list(cases.values())
    assert assert_same(_from_lines([b"RESULT score=3\n"])).get_column(PATH_SHAPE).to_list() == [PATH_NONE]


def test_path_walk_a_move_at_a_time():
    """Shapes and lengths (hand-counted: one more move than '/') where a move-by-move walk of a path could go wrong:
    promotions (5 bytes) before and after 4-byte moves, a '/' where a fifth byte would be, a bad move after good
    ones (the '/' then counted over the whole path)."""
    cases = {
        b"e7e8q/e2e4": (PATH_UCI, 2), b"e2e4/e7e8q": (PATH_UCI, 2), b"0000/0000/0000": (PATH_UCI, 3),
        b"a7a8n/b2b1r/c7c8b/d2d1q": (PATH_UCI, 4), b"e2e4/e7e5/g1f3/b8c6/f1b5/a7a6": (PATH_UCI, 6),
        b"e2e4/e7e5/": (PATH_OTHER, 3), b"e2e4/e7e5/x": (PATH_OTHER, 3), b"e2e4/e7e5q5/g1f3": (PATH_OTHER, 3),
        b"e2e4/e7/e5": (PATH_OTHER, 3), b"e7e8q5": (PATH_OTHER, 1), b"e7e8qq/e2e4": (PATH_OTHER, 2),
        b"e2e4/0000x/a1a2": (PATH_OTHER, 3), b"/": (PATH_OTHER, 2), b"//": (PATH_OTHER, 3), b"a/b/c": (PATH_OTHER, 3),
    }
    frame = assert_same(_from_lines([b"MOVE path=" + path + b" d=1\n" for path in cases]))
    assert list(zip(frame.get_column(PATH_SHAPE).to_list(), frame.get_column(PLIES).to_list())) == list(cases.values())


def test_lines_around_the_mask_spans():
    """Lines of every length up to past 128 bytes after the tag (the compiled scan classifies up to 128 bytes at
    a time, longer lines byte by byte), each also with one byte of another class (space, DEL, 0x80, 0xff, tab,
    '=', '/') at each place: the same fields as the regex.  Filler lines after them keep the wide loads inside
    the chunk."""
    lines = []
    for size in range(1, 150):
        line = b"MOVE path=" + bytes(b"e2e4/"[i % 5] for i in range(size)) + b" d=12 act=FULL"
        lines.append(line + b"\n")
        for at in range(4, len(line), 7):
            for odd in (b" ", b"\x7f", b"\x80", b"\xff", b"\t", b"=", b"/", b"!", b"~"):
                lines.append(line[:at] + odd + line[at + 1:] + b"\n")
    filler = [b"RESULT path=e2e4 score=1\n"] * 20
    assert_same(_from_lines(lines + filler))


def test_integers_near_eighteen_digits():
    """Integers of 17 to 21 digits, signs and leading zeros (values by hand: int64 holds up to 9223372036854775807)."""
    cases = {
        b"99999999999999999": 10**17 - 1, b"999999999999999999": 10**18 - 1, b"-999999999999999999": -(10**18 - 1),
        b"+999999999999999999": 10**18 - 1, b"1000000000000000000": 10**18, b"-9999999999999999999": None,
        b"000000000000000000001": 1, b"-000000000000000000009": -9, b"9223372036854775807": 2**63 - 1,
        b"09223372036854775808": None, b"99999999999999999x": None, b"-99999999999999999x": None,
    }
    frame = assert_same(_from_lines([b"RESULT path=e2e4 score=" + v + b"\n" for v in cases]))
    assert frame.get_column("score").to_list() == list(cases.values())


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=lambda p: p.name)
def test_fixture_logs(path: Path):
    lines, _ = split_lines(path.read_bytes())
    frame = assert_same(lines)
    assert frame.get_column("tag").null_count() < frame.height  # the fast path does apply


@pytest.mark.parametrize("dialect", ["stockfish", "typhoon", "crafty"])
def test_generated_log(tmp_path: Path, dialect: str):
    log = tmp_path / f"{dialect}.log"
    load_benchmark("gen_logs").generate(dialect, 30_000, str(log))
    lines, _ = split_lines(log.read_bytes())
    assert_same(lines)
    assert_same(lines.slice(1234, 5000))  # a slice: offsets not starting at 0


def test_every_value_length_at_the_buffer_end():
    """Inline (<= 12 bytes) and referenced views, with the value ending exactly at the end of the data."""
    for length in range(1, 20):
        assert_same(_from_lines([b"RESULT path=x", b"MOVE path=" + b"v" * length]))


def test_value_ends_at_every_offset_of_a_word():
    """The C code scans values eight bytes at a time: a value of each length, ended by each kind of byte
    (the scan's two tests: below 0x21, above 0x7e; and the printable edges, which do not end it)."""
    enders = [b" ", b"\t", b"\r", b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xff", b"~", b"!", b""]
    lines = [b"MOVE path=" + b"e2e4/e7e5/g1f3"[:length] + end + b" act=FULL\n"
             for length in range(1, 15) for end in enders]
    assert_same(_from_lines(lines))
    chunk, _ = split_lines(b"".join(lines))
    assert_same(chunk)


def test_very_long_line_and_empty_input():
    assert_same(_from_lines([b"MOVE path=" + b"ab" * 100_000 + b" ply=7\n", b"RESULT score=1\n"]))
    assert_same(_from_lines([]))
    assert fast_fields_c(_from_lines([])).height == 0


def test_non_utf8_chunk():
    """A chunk with invalid UTF-8 takes decode_lines' per-line path: those lines match nothing."""
    lines, _ = split_lines(b"MOVE path=e2e4\nMOVE path=\xff\xfe\nRESULT score=3\n\xc3\n")
    frame = assert_same(lines)
    assert frame.get_column("tag").to_list() == ["MOVE", None, "RESULT", None]
    records = tokenize_records(lines)
    assert records.slow_idx.tolist() == [1, 3] and records.slow_bad_utf8.tolist() == [True, True]
    assert records.fast.get_column("idx").to_list() == [0, 2]


@pytest.mark.parametrize("data", [b"", b"abc", b"\n", b"a\nb", b"a\nb\n", b"\n\n\r\n", b"MOVE\x00\n\xff\n"])
def test_split_lines_compiled_and_numpy(monkeypatch, data: bytes):
    """Line offsets by memchr (C) and by numpy: 0, then one past each newline, written by hand here."""
    expected = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]
    lines, consumed = split_lines(data)
    assert lines.buffers()[1] is not None and consumed == expected[-1]
    assert np.frombuffer(lines.buffers()[1], dtype=np.int64).tolist() == expected
    monkeypatch.setattr(tokenizer, "_ctok", None)
    fallback, consumed_fallback = split_lines(data)
    assert fallback.equals(lines) and consumed_fallback == consumed


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"a", b"\xff", b"MOVE path=e2e4 ply=1", b"\n\n", b"x" * 15, b"y" * 16, b"z" * 17]),
                max_size=60))
def test_split_lines_compiled_by_blocks(data_parts: list[bytes]):
    """The compiled offsets (16 bytes a step, the last partial block byte by byte, the array grown as it
    fills) against the offsets written by hand, newlines at every place of a block; also of a slice
    starting mid-block (a memoryview, as the reader gives)."""
    data = b"".join(data_parts)
    for start in (0, 1, 7):
        view = memoryview(data)[start:] if start <= len(data) else memoryview(b"")
        expected = [0] + [i + 1 for i, byte in enumerate(bytes(view)) if byte == 10]
        lines, consumed = split_lines(view)
        assert np.frombuffer(lines.buffers()[1], dtype=np.int64).tolist() == expected
        assert consumed == expected[-1]


def test_split_lines_many_short_lines():
    """More lines than the first guess of the offsets' room (a line a byte: the array grows many times)."""
    data = b"\n" * 100_000 + b"ab\n" * 5 + b"tail"
    lines, consumed = split_lines(data)
    expected = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]
    assert np.frombuffer(lines.buffers()[1], dtype=np.int64).tolist() == expected and consumed == len(data) - 4


def test_null_lines_fall_back():
    assert fast_fields_c(_from_lines([b"MOVE path=a\n", None])) is None


def test_tokenize_chunk_uses_it_and_can_be_switched_off(monkeypatch):
    lines, _ = split_lines((FIXTURE_LOGS[0]).read_bytes())
    calls = []
    real = tokenizer.fast_fields_c
    monkeypatch.setattr(tokenizer, "fast_fields_c", lambda l, t=None: calls.append(1) or real(l, t))
    with_c = tokenize_chunk(lines).fast
    assert calls == [1]
    monkeypatch.setenv("TREEDIFF_TOKENIZER", "regex")
    assert not tokenizer.ctok_available()
    regex = tokenize_chunk(lines).fast
    assert calls == [1]
    assert_frame_equal(with_c, regex)


def test_bad_arguments_raise():
    data = b"MOVE path=a\n"
    def outputs():  # for one line: views, validity, ints, int validity, bad, shapes, plies
        return [np.zeros(7 * 16, dtype=np.uint8), np.zeros(7, dtype=np.uint8), np.zeros(10, dtype=np.int64),
                np.zeros(10, dtype=np.uint8), np.zeros(1, dtype=np.uint16), np.zeros(1, dtype=np.uint8),
                np.zeros(1, dtype=np.int32)]

    with pytest.raises(ValueError):
        _ctok.typed_fields(data, np.array([0, 99], dtype=np.int64), *outputs())  # past the end
    with pytest.raises(ValueError):
        _ctok.typed_fields(data, np.array([0, 12], dtype=np.int64), np.zeros(5, dtype=np.uint8), *outputs()[1:])
    with pytest.raises(ValueError):
        _ctok.typed_fields(data, np.array([0, 12], dtype=np.int64), *outputs()[:6], np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError):
        _ctok.typed_fields(data, np.array([5, 2], dtype=np.int64), *outputs())  # decreasing
    out = outputs()
    assert _ctok.typed_fields(data, np.array([0, 12], dtype=np.int64), *out)[0] == 0  # the tag: no null
    assert out[5][0] == PATH_OTHER and out[6][0] == 1


def test_record_fields_by_hand():
    """The compact scan: rows only for the matched lines (1 and 3 here), their lines in idx, the rest untouched."""
    data = b"ITER d=1\nMOVE path=a act=x\n# note\nRESULT path=- score=5\n"
    n = 4
    out = [np.zeros(7 * n * 16, dtype=np.uint8), np.zeros(7, dtype=np.uint8), np.zeros(10 * n, dtype=np.int64),
           np.zeros(10, dtype=np.uint8), np.zeros(n, dtype=np.uint16), np.zeros(n, dtype=np.uint8),
           np.zeros(n, dtype=np.int32)]
    idx = np.zeros(n, dtype=np.uint32)
    offsets = np.array([0, 9, 27, 34, 56], dtype=np.int64)
    rows, nulls = _ctok.record_fields(data, offsets, *out, idx)
    assert rows == 2 and idx.tolist() == [1, 3, 0, 0]
    # Null counts of the two rows: tag, path never null; act once (the RESULT); score once (the MOVE).
    assert nulls[:3] == (0, 0, 1) and nulls[7 + INT_FIELDS.index("score")] == 1
    assert out[5].tolist() == [PATH_OTHER, PATH_ROOT, 0, 0]  # shapes of rows 0, 1; rows 2, 3 not written
    assert out[2][INT_FIELDS.index("score") * n:][:n].tolist() == [0, 5, 0, 0]
    with pytest.raises(ValueError):
        _ctok.record_fields(data, offsets, *out, np.zeros(n - 1, dtype=np.uint32))


# ---------------------------------------------------------------- property tests

_REAL_LINES = [
    line + b"\n"
    for path in FIXTURE_LOGS
    for line in path.read_bytes().splitlines()
    if line.startswith((b"MOVE", b"RESULT"))
][::7]

_PIECES = [
    b" ", b"  ", b"\t", b"\r", b"\n", b"\r\n", b"=", b"==", b"\xc3\xa9", b"\xff", b"\x00", b"\x7f", b"~", b"!",
    b"MOVE", b"RESULT", b"-", b"12", b"e2e4", b"+", b"/", b"007", b"9223372036854775807", b"9223372036854775808",
    *(f" {k}=".encode() for k in ROW_KEYS),
    *(f"{k}=".encode() for k in ROW_KEYS),
]


def _mutate(line: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(8)
    pos = rng.randrange(len(line) + 1)
    if kind == 0:  # insert a piece
        return line[:pos] + rng.choice(_PIECES) + line[pos:]
    if kind == 1:  # delete a run
        return line[:pos] + line[pos + rng.randrange(1, 4):]
    if kind == 2:  # replace a byte
        return line[:pos] + bytes([rng.randrange(256)]) + line[pos + 1:]
    body, nl = (line[:-1], b"\n") if line.endswith(b"\n") else (line, b"")
    tokens = body.split(b" ")
    if kind == 3 and len(tokens) > 2:  # swap two tokens: keys out of order
        i, j = rng.sample(range(1, len(tokens)), 2)
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif kind == 4 and len(tokens) > 1:  # duplicate a key
        tokens.insert(rng.randrange(1, len(tokens) + 1), tokens[rng.randrange(1, len(tokens))])
    elif kind == 5:  # drop the newline or use CRLF / a lone CR
        return body + rng.choice([b"", b"\r\n", b"\r", b"\n\r"])
    elif kind == 6 and len(tokens) > 1:  # drop a token
        del tokens[rng.randrange(1, len(tokens))]
    elif kind == 7 and len(tokens) > 1:  # empty a value or stretch it
        i = rng.randrange(1, len(tokens))
        key = tokens[i].partition(b"=")[0]
        tokens[i] = key + b"=" + rng.choice([b"", b"x" * rng.randrange(1, 40), b"a=b"])
    return b" ".join(tokens) + nl


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=60), max_size=30))
def test_random_byte_lines(raw: list[bytes]):
    assert_same(_from_lines(raw))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map(b"".join), max_size=30))
def test_random_token_soup(raw: list[bytes]):
    assert_same(_from_lines(raw))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=60))
def test_mutated_real_lines(seed: int, count: int):
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        line = rng.choice(_REAL_LINES)
        for _ in range(rng.randrange(0, 3)):
            line = _mutate(line, rng)
        lines.append(line)
    as_array = _from_lines(lines)
    assert_same(as_array)
    # The same bytes as one chunk, cut into lines the way the parser does.
    chunk, _ = split_lines(b"".join(lines) + b"\n")
    assert_same(chunk)


# ---------------------------------------------------------------- whole parse, both tokenizers

_ODD_INTEGERS_LOG = b"""MOVE path=e2e4 ply=1 d=x act=FULL
TREEDUMP engine=stockfish v=1 unit=1 id=odd fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1
ITER d=2
MOVE path=e2e4 ply=1 mn=1 d=2 nd=1 act=FULL a=-30 b=+29 nt=PV
MOVE path=e2e4/e7e5 ply=2 mn=007 d=1e3 act=FULL nt=PV
MOVE path=e2e4/e7e5 ply=x mn=2 d=1 act=FULL nt=PV see=99999999999999999999
RESULT path=e2e4/e7e5 ply=2 d=1 score=-9223372036854775809
MOVE d=1 path=d2d4 ply=1 act=FULL
MOVE path=d2d4 act=FULL ply=q
RESULT path=e2e4 ply=3 d=1 score=12
RESULT path=- ply=0 d=2 score=+12 bound=exact
END nodes=7 best=e2e4 score=12
"""


def test_whole_parse_is_the_same_with_either_tokenizer(monkeypatch, tmp_path: Path):
    """Records, searches and warnings of a log full of odd integers: the compiled path and the regex agree,
    and the warnings are the ones counted by hand (line numbers from 1)."""
    from treediff.parse.pipeline import parse_logs

    log = tmp_path / "odd.log"
    log.write_bytes(_ODD_INTEGERS_LOG)
    compiled = parse_logs([log])
    monkeypatch.setenv("TREEDIFF_TOKENIZER", "regex")
    regex = parse_logs([log])
    assert compiled.records.equals(regex.records) and compiled.searches.equals(regex.searches)
    assert compiled.warnings == regex.warnings
    text = "\n".join(compiled.warnings)
    assert "1 line with a record before any TREEDUMP header (dropped) (line 1)" in text  # no number warning for it
    assert "1 line with a non-numeric d= (line 5)" in text
    assert "1 line with a non-numeric see= (line 6)" in text
    assert "1 line with a non-numeric score= (line 7)" in text
    # ply=x on the fast path (line 6) and ply=q on the slow path (keys out of order, line 9).
    assert "2 lines with a non-numeric ply= (line 6, 9)" in text
    records = compiled.records.to_pylist()
    by_line = {r["line"]: r for r in records}
    assert by_line[4]["beta"] == 29 and by_line[5]["mn"] == 7 and by_line[5]["depth"] is None
    assert by_line[6]["problem"] == "bad-number:ply" and by_line[6]["see"] is None  # two bad keys: ply before see
    assert by_line[7]["score"] is None and by_line[11]["score"] == 12
    assert by_line[10]["problem"] == "bad-ply"


def test_a_build_without_the_compact_scan_counts_as_stale(monkeypatch):
    """A _ctok built from older source (typed_fields but no record_fields): --version says stale, and the parser
    would refuse it the same way (tokenizer.py checks the same attribute at import)."""
    import types

    from treediff.cli import common

    old_build = types.SimpleNamespace(typed_fields=_ctok.typed_fields, line_offsets=_ctok.line_offsets)
    monkeypatch.setattr(common.importlib, "import_module", lambda name: old_build)
    assert "stale" in common.tokenizer_in_use()
    monkeypatch.setattr(common.importlib, "import_module", lambda name: _ctok)
    assert common.tokenizer_in_use() == "compiled _ctok"

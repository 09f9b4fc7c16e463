"""Assembling a chunk's records: from the state-stamped rows to a RECORDS_SCHEMA Arrow table.

The steps run on the parser's thread (:func:`number_records`,
:func:`check_numbers`, :func:`with_search_columns`, :func:`kinds_of_chunk`)
only read the searches' state, apart from the counts of unknown acts;
:func:`records_table`, the costly conversion to Arrow, is pure and runs on
the conversion thread when there is one.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from treediff.model.notation import NULL_UCI
from treediff.model.schema import DICT_STR, RECORDS_SCHEMA
from treediff.model.taxonomy import Kind
from treediff.parse.dialects import Dialect
from treediff.parse.problems import Problems
from treediff.parse.state import Runs, SearchState, run_starts
from treediff.parse.tokenizer import BAD_INT, INT_BITS, INT_KEYS, PLIES, compiled_function

#: The columns that hold the same value for every record of a search (dictionary-encoded).
SEARCH_CONSTANTS = ("engine", "position", "fen", "phase")

#: A chunk's UCI paths, from its rows: (paths, the rows whose move does not resolve or None).
UciPaths = Callable[[pl.DataFrame], "tuple[pl.Series, pl.Series | None]"]


def number_records(rows: pl.DataFrame, by_id: dict[int, SearchState], line_base: int) -> tuple[pl.DataFrame, Runs]:
    """``seq`` (within the search, continuing from earlier chunks) and ``line`` (in the file, from 1)."""
    search_col = rows.get_column("search").to_numpy()
    starts = run_starts(search_col)  # one run per search (records are in line order)
    runs = Runs(starts=starts, lengths=np.diff(np.append(starts, len(search_col))), present=search_col[starts].tolist())
    n = len(search_col)
    # (Arrays made in place: each full-length temporary costs about as much as the arithmetic.)
    if len(starts) == 1:  # one search in the chunk (the usual case)
        seq = np.arange(by_id[runs.present[0]].seq, by_id[runs.present[0]].seq + n, dtype=np.int64)
    else:
        seq = np.arange(n, dtype=np.int64)
        seq += np.repeat(np.array([by_id[s].seq for s in runs.present], dtype=np.int64) - starts, runs.lengths)
    idx = rows.get_column("idx")
    if idx.null_count():
        line = pl.Series("line", idx).cast(pl.Int64) + line_base
    else:
        line_values = idx.to_numpy().astype(np.int64)
        line_values += line_base
        line = pl.Series("line", line_values)
    rows = rows.with_columns(pl.Series("seq", seq), line.alias("line"))
    return rows, runs


def check_numbers(rows: pl.DataFrame, problems: Problems) -> pl.DataFrame:
    """Flag ``bad-number:KEY`` (and count the lines) where an integer key's value is not an integer.

    The tokenizer made the integer keys Int64, a value that is not an integer null, and set the
    key's bit in :data:`~treediff.parse.tokenizer.BAD_INT`; where several keys of a record are bad,
    the first in alphabetical order names the problem.
    """
    bits = rows.get_column(BAD_INT)
    if not bits.max():  # (0 or None: no bad value)
        return rows
    bit_values = bits.to_numpy()
    lines = rows.get_column("line").to_numpy()
    problem = pl.col("problem")
    for k in reversed(sorted(INT_KEYS)):
        mask = (bit_values & (1 << INT_BITS[k])) != 0
        if mask.any():
            problems.add_many(f"with a non-numeric {k}=", lines[mask])
            problem = pl.when(pl.lit(pl.Series(mask))).then(pl.lit(f"bad-number:{k}")).otherwise(problem)
    return rows.with_columns(problem.alias("problem"))


#: The problem of a record whose ``ply=`` is not the number of moves in its path.
BAD_PLY = "bad-ply"


def check_ply(rows: pl.DataFrame, problems: Problems) -> pl.DataFrame:
    """Flag ``bad-ply`` (and count the lines) where ``ply=`` is not the path's length in moves (root ``-``: 0).

    ``ply`` keys the per-ply tables and the EBF estimators, so a wrong one would
    shift them silently.  The path lengths (:data:`~treediff.parse.tokenizer.PLIES`) come from the
    tokenizer, which counted the ``/`` of every path.
    """
    bad = (rows.get_column("ply") != rows.get_column(PLIES)).fill_null(False)
    if not bad.any():
        return rows
    problems.add_many("with ply= not the number of moves in path= (flagged problem=bad-ply)",
                      rows.get_column("line").filter(bad).to_numpy())
    return rows.with_columns(
        pl.when(pl.lit(bad) & pl.col("problem").is_null()).then(pl.lit(BAD_PLY)).otherwise(pl.col("problem"))
        .alias("problem"))


def with_search_columns(rows: pl.DataFrame, by_id: dict[int, SearchState], present: list[int]) -> pl.DataFrame:
    """``_unit`` (depth ticks per ply) and ``_dialect`` (name) of each record's search, as lookups."""
    units = {s: by_id[s].unit for s in present}
    dialects = {s: by_id[s].dialect.name for s in present}
    return rows.with_columns(
        _per_search(units, pl.Float64).alias("_unit"),
        _per_search(dialects, pl.String).alias("_dialect"),
    )


def _per_search(values: Mapping[int, object], dtype: type[pl.DataType]) -> pl.Expr:
    """Each row's value of ``values`` (by its ``search``): a literal when the chunk's searches share one value
    (the usual case: one dialect and unit per log), else a lookup (polars' replace_strict is a hash join, about
    2 ms a column of a 109k-record chunk)."""
    distinct = set(values.values())
    if len(distinct) == 1:
        return pl.lit(next(iter(distinct)), dtype)
    return pl.col("search").replace_strict(list(values), list(values.values()), return_dtype=dtype)


def kinds_of_chunk(
    rows: pl.DataFrame, by_id: dict[int, SearchState], present: list[int]
) -> tuple[pl.DataFrame, dict[str, str] | None]:
    """``kind`` from ``act``, by each search's dialect (:meth:`Dialect.kind_table`); an unknown act is OTHER.

    With one dialect in the chunk (the usual case) the table is returned and
    ``kind`` is made from the act column's dictionary when the chunk's table
    is built (:func:`records_table`).  Else ``kind`` is added here, row by
    row, and the unknown acts are counted in their searches' ``other_acts``.
    """
    dialects = {by_id[s].dialect.name: by_id[s].dialect for s in present}
    if len(dialects) == 1:
        return rows, next(iter(dialects.values())).kind_table()
    rows = rows.with_columns(_kind_expr(dialects.values()).alias("kind"))
    other = rows.filter(pl.col("kind") == Kind.OTHER.value).group_by(["search", "act"], maintain_order=True).len()
    for search, act, n in other.iter_rows():
        by_id[search].other_acts[act] += n
    return rows, None


def _kind_expr(dialects: Iterable[Dialect]) -> pl.Expr:
    """``kind`` from ``_dialect`` and ``act`` row by row: the (dialect, act) pairs of ``dialects``; else OTHER."""
    pairs = {f"{d.name}|{act}": kind for d in dialects for act, kind in d.kind_table().items()}
    looked_up = pl.concat_str([pl.col("_dialect"), pl.col("act")], separator="|").replace_strict(
        list(pairs), list(pairs.values()), default=Kind.OTHER.value, return_dtype=pl.String
    )
    return pl.when(pl.col("act").is_null()).then(pl.lit(None, pl.String)).otherwise(looked_up)


def search_constants(by_id: dict[int, SearchState], present: list[int]) -> dict[str, dict[int, str | None]]:
    """Per column of :data:`SEARCH_CONSTANTS`, each present search's value."""
    def value(state: SearchState, name: str) -> str | None:
        return {"engine": state.dialect.name, "position": state.position, "fen": state.fen, "phase": state.phase}[name]

    return {name: {s: value(by_id[s], name) for s in present} for name in SEARCH_CONSTANTS}


# ---------------------------------------------------------------------- the Arrow table (conversion thread)
def records_table(
    rows: pl.DataFrame,
    constants: dict[str, dict[int, str | None]],
    present: list[int],
    uci_paths: UciPaths,
    kinds: dict[str, str] | None = None,
) -> tuple[pa.Table, list[tuple[int, str, int]]]:
    """One chunk's assembled rows as a RECORDS_SCHEMA table (depths to plies, strings dictionary-encoded).

    ``constants`` gives, per per-search column (:data:`SEARCH_CONSTANTS`),
    each present search's value; ``uci_paths`` gives the UCI paths the path
    columns are made from (it may wait for the SAN worker).  With ``kinds``
    (act -> kind), ``kind`` is made here from ``act`` and the second result
    lists the acts it does not know as (search, act, records); without, the
    rows have ``kind`` and the list is empty.  Pure: safe to run on another thread.
    """
    uci, unresolved = uci_paths(rows)
    # UCI paths (nothing unresolved): the move column is made with its dictionary from the path column
    # below, in one compiled pass (_uci_moves), instead of by polars here.
    moves_later = unresolved is None and compiled_function("view_dictionary") is not None
    rows = with_uci_paths(rows, uci, unresolved, moves=not moves_later)
    frame = rows.select(_record_columns(kinds is None))
    # Newest Arrow layout: strings stay string views (no copy); only the few plain string columns
    # are cast to the schema's string type below, and dictionary encoding reads views as fast.
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    # From polars: pyarrow's ChunkedArray.to_numpy imports pandas (0.15 s of start-up).
    search_arr = frame.get_column("search").to_numpy().astype(np.int64)
    shared: dict[bytes, pa.Array] = {}  # (position and fen usually have the same codes: one gather for both)
    columns = {name: _constant_column(constants[name], present, search_arr, shared) for name in SEARCH_CONSTANTS}
    other: list[tuple[int, str, int]] = []
    for fld in RECORDS_SCHEMA:
        if fld.name in columns:
            continue
        if fld.name == "kind" and kinds is not None:
            columns["kind"], unknown = _kinds_from_acts(columns["act"], kinds)
            if unknown:
                counted = frame.filter(pl.col("act").is_in(unknown)).group_by(["search", "act"], maintain_order=True).len()
                other = [(int(s), str(a), int(n)) for s, a, n in counted.iter_rows()]
            continue
        if fld.name == "move" and moves_later:
            columns["move"], columns["null_move"] = _uci_moves(table.column("path"), frame.get_column("path"))
            continue
        if fld.name == "null_move" and moves_later:
            continue  # (made with move, which comes first)
        col = table.column(fld.name)
        if fld.name in NARROWED_INTS:
            columns[fld.name] = narrowed_ints(col, fld.type)
            continue
        if fld.type == DICT_STR and col.null_count == len(col):
            # (ctx, why, problem are usually absent: what dictionary_encode gives, without hashing a row)
            col = pa.chunked_array([_all_null_dictionary(len(col))], type=DICT_STR)
        elif fld.type == DICT_STR:
            col = dictionary_encode(col)
        elif col.type != fld.type:
            col = col.cast(fld.type)
        columns[fld.name] = col
    return pa.Table.from_arrays([columns[f.name] for f in RECORDS_SCHEMA], schema=RECORDS_SCHEMA), other


#: At most this many distinct values a column and chunk are encoded by the compiled tokenizer's
#: ``view_dictionary`` (labels and moves have a few thousand at most); more go to pyarrow's kernel.
_MAX_DISTINCT = 1 << 16


def dictionary_encode(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``pc.dictionary_encode(col).cast(DICT_STR)``: the DICT_STR column of a string(-view) column, its dictionary
    the distinct values in order of first appearance, nulls as null indices.

    A one-chunk string-view column (what polars gives) is encoded by the compiled tokenizer when it is
    there (:func:`_compiled_dictionary`); the same arrays (tests/parse/test_assemble.py compares the two).
    """
    encoded = _compiled_dictionary(col, last_move=False)
    if encoded is not None:
        return encoded
    # Encoded before the cast, so only the (small) dictionary is converted to string.
    return pc.dictionary_encode(col).cast(DICT_STR)


def _compiled_dictionary(col: pa.ChunkedArray, last_move: bool) -> pa.ChunkedArray | None:
    """``_ctok.view_dictionary`` of a one-chunk string-view column as a DICT_STR column (``last_move``: of
    its values' UCI last moves, :func:`_last_uci_move`), or None where it does not apply (no compiled
    tokenizer, several chunks, too many distinct values, a non-ASCII move).

    One pass over the 16-byte views with a small hash table, instead of pyarrow's generic kernel (and,
    for moves, of polars' slice and strip then that kernel).
    """
    view_dictionary = compiled_function("view_dictionary")
    if view_dictionary is None or col.num_chunks != 1 or col.type != pa.string_view():
        return None
    chunk = col.chunk(0)
    n = len(chunk)
    buffers = chunk.buffers()
    codes = np.empty(n, dtype=np.int32)
    validity = np.empty((n + 7) // 8, dtype=np.uint8)
    found = view_dictionary(buffers[1], buffers[0] if chunk.null_count else None, chunk.offset, n,
                            tuple(buffers[2:]), codes, validity, _MAX_DISTINCT, 1 if last_move else 0)
    if found is None:
        return None
    values, value_offsets, nulls = found
    dictionary = pa.Array.from_buffers(pa.string(), len(value_offsets) // 4 - 1,
                                       [None, pa.py_buffer(value_offsets), pa.py_buffer(values)])
    indices = pa.Array.from_buffers(pa.int32(), n, [pa.py_buffer(validity) if nulls else None, pa.py_buffer(codes)],
                                    null_count=nulls)
    # (safe=False: the codes are within the dictionary by construction; checking them costs a pass)
    return pa.chunked_array([pa.DictionaryArray.from_arrays(indices, dictionary, safe=False)], type=DICT_STR)


def _all_null_dictionary(n: int) -> pa.DictionaryArray:
    """``n`` nulls as a DICT_STR array with an empty dictionary (``pc.dictionary_encode`` of an all-null column)."""
    # (The empty dictionary from buffers: pa.array() imports pandas.)
    empty = pa.Array.from_buffers(pa.string(), 0, [None, pa.py_buffer(np.zeros(1, dtype=np.int32)), pa.py_buffer(b"")])
    return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), empty)


#: The integer columns the records keep in a narrower type than the tokenizer's Int64, a value out of its range
#: becoming null (polars' non-strict cast): narrowed by :func:`narrowed_ints` when the table is built.
NARROWED_INTS = ("ply", "mn", "alpha", "beta", "score", "see", "visit")


def _record_columns(has_kind: bool) -> list[pl.Expr]:
    """The records' columns from the rows, depths divided by ``_unit`` into plies (``kind`` null if not made yet);
    the :data:`NARROWED_INTS` still Int64."""
    unit = pl.col("_unit")
    return [
        pl.col("search").cast(pl.Int32),
        pl.col("iter").cast(pl.Int16),
        pl.col("seq"),
        pl.col("line"),
        pl.col("tag"),
        pl.col("ctx"),
        pl.col("path"),
        pl.col("ply"),  # (narrowed by _narrowed_ints, as below)
        pl.col("move"),
        pl.col("null_move"),
        pl.col("mn"),
        (pl.col("d") / unit).cast(pl.Float32).alias("depth"),
        (pl.col("nd") / unit).cast(pl.Float32).alias("new_depth"),
        (pl.col("red") / unit).cast(pl.Float32).alias("reduction"),
        pl.col("act"),
        pl.col("kind") if has_kind else pl.lit(None, pl.String).alias("kind"),
        pl.col("a").alias("alpha"),
        pl.col("b").alias("beta"),
        pl.col("score"),
        pl.col("bound"),
        pl.col("nt").alias("node_type"),
        pl.col("see"),
        pl.col("hist"),
        pl.col("why"),
        pl.col("extra"),
        pl.col("problem"),
        # What the engine wrote (visit=, MOVE and RESULT alike); the visit post-pass
        # (treediff.parse.visits.records_with_visits) makes both columns.
        pl.col("visit"),
        pl.lit(None, pl.Int32).alias("parent_visit"),
        (pl.col("fh").cast(pl.Int8, strict=False) != 0).alias("fh"),
    ]


#: Integer types: Arrow -> (numpy, polars).
_INT_TYPES: dict[pa.DataType, tuple[type[np.signedinteger], type[pl.DataType]]] = {
    pa.int8(): (np.int8, pl.Int8), pa.int16(): (np.int16, pl.Int16), pa.int32(): (np.int32, pl.Int32),
    pa.int64(): (np.int64, pl.Int64),
}


def narrowed_ints(col: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
    """An integer column in the narrower integer type ``to``, values out of its range null: what polars'
    ``cast(..., strict=False)`` gives (the values under nulls aside, which nothing reads).

    From the buffers by numpy (a range test and a narrowing copy: about a fifth of polars' cast); a column of
    several chunks or with an offset goes through polars.
    """
    numpy_to, polars_to = _INT_TYPES[to]
    chunk = col.chunk(0) if col.num_chunks == 1 else None
    if chunk is None or chunk.offset or col.type not in _INT_TYPES:
        series = pl.from_arrow(col)
        assert isinstance(series, pl.Series)  # (a column gives a Series; for mypy)
        return pa.chunked_array([series.cast(polars_to, strict=False).to_arrow()], type=to)
    n = len(chunk)
    if n == 0:
        return pa.chunked_array([pa.nulls(0, to)], type=to)
    validity, data = chunk.buffers()[:2]
    values = np.frombuffer(data, dtype=_INT_TYPES[col.type][0], count=n)
    limits = np.iinfo(numpy_to)
    nulls = chunk.null_count
    # Two reductions first (no temporary arrays): almost always every value fits, and the mask is not needed.
    fits = limits.min <= values.min() and values.max() <= limits.max
    outside = None if fits else (values < limits.min) | (values > limits.max)
    if outside is not None:
        valid = ~outside
        if nulls:
            valid &= np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=n, bitorder="little").astype(bool)
        nulls = n - int(np.count_nonzero(valid))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    elif not nulls:
        validity = None
    # (out-of-range values wrap in the copy: they are null)
    narrowed = pa.py_buffer(values.astype(numpy_to))
    return pa.chunked_array([pa.Array.from_buffers(to, n, [validity, narrowed], null_count=nulls)], type=to)


def _constant_column(per_search: dict[int, str | None], present: list[int], search_arr: np.ndarray,
                     shared: dict[bytes, pa.Array] | None = None) -> pa.DictionaryArray:
    """A per-search column as a dictionary array: one entry per distinct value (searches often share one).

    ``shared``: index arrays already made for this chunk, by their per-search codes (reused, not rebuilt).
    """
    base = min(present)
    values = list(dict.fromkeys(per_search.values()))
    code_of = {v: i for i, v in enumerate(values)}
    codes = np.full(max(present) - base + 1, -1, dtype=np.int32)
    for s, v in per_search.items():
        codes[s - base] = code_of[v]
    null_code = code_of.get(None, -1)
    key = codes.tobytes() + null_code.to_bytes(4, "little", signed=True)
    indices = shared.get(key) if shared is not None else None
    if indices is None:
        if len(values) == 1:
            row_codes = np.zeros(len(search_arr), dtype=np.int32)  # (one value: no gather)
        else:
            row_codes = codes[search_arr - base]
        validity = None
        nulls = 0
        if null_code >= 0:
            # A null value is a null index, not a null dictionary entry (Arrow cannot unify those).
            valid = row_codes != null_code
            nulls = len(valid) - int(np.count_nonzero(valid))
            validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        # Arrays from buffers: pa.array() imports pandas (0.15 s of start-up) the first time.
        indices = pa.Array.from_buffers(pa.int32(), len(row_codes), [validity, pa.py_buffer(row_codes)],
                                        null_count=nulls)
        if shared is not None:
            shared[key] = indices
    names = [v if v is not None else "" for v in values]
    return pa.DictionaryArray.from_arrays(indices, _string_array(names), safe=False)


def _string_array(values: list[str]) -> pa.Array:
    """``values`` (no nulls) as a pa.string() array, from buffers (pa.array() imports pandas)."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _kinds_from_acts(acts: pa.ChunkedArray, kinds: dict[str, str]) -> tuple[pa.ChunkedArray, list[str]]:
    """``kind`` from the dictionary-encoded ``act`` column, and the acts ``kinds`` does not know (OTHER).

    A chunk has a handful of distinct acts: each dictionary entry is looked up
    once and the rows follow their act's index (``take``), instead of a lookup
    per row.  The kinds' dictionary lists the kinds present, in order of first
    appearance, as dictionary-encoding the strings would; null act, null kind.
    """
    chunks: list[pa.DictionaryArray] = []
    unknown: list[str] = []
    for chunk in acts.chunks:
        act_values = chunk.dictionary.to_pylist()
        kind_values = [kinds.get(a, Kind.OTHER.value) for a in act_values]
        unknown.extend(a for a in act_values if a not in kinds and a not in unknown)
        present = list(dict.fromkeys(kind_values))
        code_of = {k: i for i, k in enumerate(present)}
        lookup = np.array([code_of[k] for k in kind_values], dtype=np.int32)
        indices = chunk.indices
        # (Arrays built from buffers: pa.array() would import pandas.)
        if indices.offset == 0 and len(lookup):
            # The act codes through the lookup by numpy (clip: what lies under a null act is arbitrary),
            # the act's validity kept.
            codes = np.frombuffer(indices.buffers()[1], dtype=np.int32, count=len(indices))
            kind_codes = np.take(lookup, codes, mode="clip")
            kind_indices = pa.Array.from_buffers(pa.int32(), len(indices), [indices.buffers()[0], pa.py_buffer(kind_codes)],
                                                 null_count=indices.null_count)
        else:
            lookup_array = pa.Array.from_buffers(pa.int32(), len(lookup), [None, pa.py_buffer(lookup)])
            kind_indices = pc.take(lookup_array, indices)
        chunks.append(pa.DictionaryArray.from_arrays(kind_indices, _string_array(present), safe=False))
    return pa.chunked_array(chunks, type=DICT_STR), unknown


def _uci_moves(path: pa.ChunkedArray, path_series: pl.Series) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """The ``move`` (DICT_STR) and ``null_move`` columns of UCI paths (``path``: string views; ``path_series``:
    the same paths from polars, for the fallback): what :func:`with_uci_paths` then the dictionary encoding give.

    The moves and their dictionary come from one compiled pass over the paths' views (``view_dictionary``
    mode 1), ``null_move`` from the dictionary's code of ``0000``.  Where that pass does not apply (see
    :func:`_compiled_dictionary`), polars' :func:`_last_uci_move` and :func:`dictionary_encode`.
    """
    move = _compiled_dictionary(path, last_move=True)
    if move is None:
        last = _last_uci_move(path_series)
        move = dictionary_encode(pl.DataFrame([last.alias("move")]).to_arrow(
            compat_level=pl.CompatLevel.newest()).column("move"))
    chunk = move.chunk(0) if move.num_chunks else None
    if chunk is None:
        return move, pa.chunked_array([], type=pa.bool_())
    values = chunk.dictionary.to_pylist()
    indices = chunk.indices
    codes = np.frombuffer(indices.buffers()[1], dtype=np.int32, count=len(indices), offset=indices.offset * 4)
    is_null_move = codes == values.index(NULL_UCI) if NULL_UCI in values else np.zeros(len(codes), dtype=bool)
    bits = pa.py_buffer(np.packbits(is_null_move, bitorder="little"))
    validity = indices.buffers()[0] if indices.null_count else None
    if validity is not None and indices.offset:  # (a bitmap starting mid-array: realigned to the codes)
        valid = pl.Series(indices).is_not_null().to_numpy()  # (polars: pyarrow's to_numpy may import pandas)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    null_move = pa.Array.from_buffers(pa.bool_(), len(codes), [validity, bits], null_count=indices.null_count)
    return move, pa.chunked_array([null_move], type=pa.bool_())


def with_uci_paths(rows: pl.DataFrame, uci: pl.Series, unresolved: pl.Series | None = None,
                   moves: bool = True) -> pl.DataFrame:
    """``path``, ``move``, ``null_move``, ``ply`` and ``problem`` from the UCI paths (``unresolved``: flagged rows).

    ``moves=False``: ``move`` and ``null_move`` are left to the caller (null here; see :func:`_uci_moves`).
    """
    last_move: pl.Series | pl.Expr = pl.lit(None, pl.String)
    if moves:
        last_move = _last_uci_move(uci) if unresolved is None else uci.str.extract(r"([^/]+)$")
    problem = pl.col("problem")
    if unresolved is not None:
        problem = pl.when(unresolved).then(pl.lit("unresolved-move")).otherwise(problem)
    ply = pl.col("ply")
    if rows.get_column("ply").null_count():
        ply = pl.coalesce(ply, pl.when(uci == "").then(0).otherwise(uci.str.count_matches("/") + 1))
    return rows.with_columns(
        uci.alias("path"),
        last_move.alias("move"),
        (last_move == NULL_UCI).alias("null_move") if moves else pl.lit(None, pl.Boolean).alias("null_move"),
        ply.alias("ply"),
        problem.alias("problem"),
    )


def _last_uci_move(paths: pl.Series) -> pl.Series:
    """The last move of each UCI path (4 or 5 characters after the last ``/``); null for the root ``""``.

    Only for paths that match :data:`~treediff.model.notation.UCI_PATH_PATTERN`; cheaper than a regex.
    """
    tail = paths.str.slice(-5)
    # A UCI path's last five characters are its last move, or "/" and a four-character move: one strip.
    return pl.select(pl.when(tail != "").then(tail.str.strip_chars_start("/"))).to_series()


def concat_records(tables: list[pa.Table]) -> pa.Table:
    """The chunks' tables as one RECORDS_SCHEMA table (dictionaries unified); empty without chunks."""
    if not tables:
        return pa.Table.from_batches([], schema=RECORDS_SCHEMA)  # (empty_table() imports pandas)
    records = pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    return records.cast(RECORDS_SCHEMA) if records.schema != RECORDS_SCHEMA else records

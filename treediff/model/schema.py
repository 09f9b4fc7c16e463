"""The normalized tables every dialect's log becomes.

Two tables come out of a parse:

* **records**: one row per ``MOVE`` or ``RESULT`` record (see :data:`RECORDS_SCHEMA`).
* **searches**: one row per ``TREEDUMP`` search (see :data:`SEARCHES_SCHEMA`).

Units: depths (``depth``, ``new_depth``, ``reduction``) are float plies
(ticks / the search's ``unit``); ``alpha``, ``beta``, ``score``, ``see`` are
centipawns as the engine wrote them; ``visit`` (RESULT) and ``parent_visit``
(MOVE) number node visits.  ``docs/TREEDUMP_FORMAT.md`` is the
normative description of every column.
"""
from __future__ import annotations

import pyarrow as pa

from treediff.model.taxonomy import Kind

FORMAT_VERSION = 1

#: ``treediff.format`` of each table's Parquet file (schema metadata, with the keys below).
RECORDS_FORMAT = "treediff-records"
SEARCHES_FORMAT = "treediff-searches"
#: Keys of the Parquet schema metadata every table treediff writes carries (values are text).
META_FORMAT = "treediff.format"                  # RECORDS_FORMAT, SEARCHES_FORMAT, ...
META_FORMAT_VERSION = "treediff.format_version"  # FORMAT_VERSION
META_PRODUCER = "treediff.version"               # the treediff release that wrote the file
META_DIALECTS = "treediff.dialects"              # comma-joined TREEDUMP dialects of the file's searches
#: Keys of each field's metadata.
FIELD_UNIT = "unit"
FIELD_DESCRIPTION = "description"

#: Unit and one-line description of every records column (Parquet field metadata, ``treediff info
#: --schema``); docs/TREEDUMP_FORMAT.md §3 is the long form.
RECORDS_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    "engine": ("label", "dialect name (typhoon, stockfish, crafty)"),
    "search": ("ordinal", "search number within the file, 0-based in log order; joins the searches table"),
    "position": ("label", "position id: the header's id, an EPD id matched by FEN, else fen: + a hash"),
    "fen": ("FEN", "the search's root position"),
    "phase": ("label", "opening, middlegame or endgame"),
    "iter": ("plies", "root depth of the enclosing ITER; 0 without ITER markers"),
    "seq": ("ordinal", "0-based order of the record within its search"),
    "line": ("line number", "1-based line of the record in the source log"),
    "tag": ("label", "record type: MOVE, RESULT or SHADOW"),
    "ctx": ("label", "the record's context (null when none was given)"),
    "path": ("UCI path", "moves from the root joined by /; empty for the root"),
    "ply": ("plies", "distance from the root (moves in path)"),
    "move": ("UCI move", "last move of path (null move 0000); null for the root"),
    "null_move": ("flag", "move is a null move"),
    "mn": ("ordinal", "1-based move number within the node (MOVE only)"),
    "depth": ("plies", "remaining depth d at the node (ticks / the search's unit)"),
    "new_depth": ("plies", "depth nd the move was searched to (null if not searched)"),
    "reduction": ("plies", "reduction red applied to the move"),
    "act": ("label", "the engine's raw act= decision"),
    "kind": ("label", "the shared decision taxonomy (SEARCH, REDUCE, PRUNE, ...; MOVE only)"),
    "alpha": ("centipawns", "alpha bound a as the engine wrote it"),
    "beta": ("centipawns", "beta bound b as the engine wrote it"),
    "score": ("centipawns", "RESULT score"),
    "bound": ("label", "RESULT bound: exact, lower or upper"),
    "node_type": ("label", "expected node type nt: PV, CUT, ALL"),
    "see": ("centipawns", "static exchange evaluation of the move"),
    "hist": ("history score", "the engine's history score of the move"),
    "why": ("label", "free-form reason the engine gave for the decision"),
    "extra": ("text", "unknown key=value tokens, space-joined in line order; null if none"),
    "problem": ("label", "null for a clean record, else what is wrong with it"),
    "visit": ("ordinal", "RESULT: which visit of its node (path within an iteration) it closes, 1-based"),
    "parent_visit": ("ordinal", "MOVE: the visit of the parent node the decision belongs to"),
    "fh": ("flag", "SHADOW: the full-depth side search reached the node's beta"),
}

#: Unit and one-line description of every searches column (docs/TREEDUMP_FORMAT.md §4).
SEARCHES_COLUMN_DOCS: dict[str, tuple[str, str]] = {
    "engine": ("label", "dialect"),
    "search": ("ordinal", "search number within the file; joins the records table"),
    "position": ("label", "position id, as in records"),
    "fen": ("FEN", "the header's FEN"),
    "phase": ("label", "opening, middlegame or endgame"),
    "phase_source": ("label", "where the phase came from: header, epd or material"),
    "unit": ("ticks per ply", "depth ticks per ply of this search"),
    "producer": ("text", "the header's producer="),
    "source": ("path", "the log file the search came from"),
    "first_line": ("line number", "line of the TREEDUMP header"),
    "contexts": ("text", "every context seen and its record count, ctx:count comma-joined"),
    "kept_context": ("label", "the context kept (all with --all-contexts)"),
    "iterations": ("count", "ITER records kept"),
    "max_iter": ("plies", "deepest ITER d; 0 without ITER"),
    "records": ("records", "MOVE + RESULT rows kept"),
    "moves": ("records", "MOVE rows kept"),
    "result_nodes": ("nodes", "RESULT rows kept: the node count"),
    "end_nodes": ("nodes", "the END record's nodes= (null without END)"),
    "end_best": ("UCI move", "the END record's best="),
    "end_score": ("centipawns", "the END record's score="),
    "node_source": ("label", "result (counted from RESULT records) or engine (the engine's own count)"),
    "warnings": ("text", "newline-joined warnings about this search"),
}


def format_metadata(fmt: str, dialects: "list[str] | tuple[str, ...] | None" = None) -> dict[str, str]:
    """The schema metadata of a table ``fmt`` (format name and version, producer; dialects when known)."""
    from treediff import __version__

    meta = {META_FORMAT: fmt, META_FORMAT_VERSION: str(FORMAT_VERSION), META_PRODUCER: __version__}
    if dialects is not None:
        meta[META_DIALECTS] = ",".join(dict.fromkeys(str(d) for d in dialects))
    return meta


def dialects_of(searches: pa.Table) -> list[str]:
    """The dialects (``engine`` values) of a searches table, in first-seen order."""
    return [str(d) for d in dict.fromkeys(searches.column("engine").to_pylist())]


def described(schema: pa.Schema, docs: dict[str, tuple[str, str]], fmt: str | None = None) -> pa.Schema:
    """``schema`` with each documented field's unit and description as field metadata, and (``fmt``) the
    format's schema metadata; undocumented fields are left bare (tests/model/test_schema_metadata.py
    requires every column to be documented)."""
    fields = [f.with_metadata({FIELD_UNIT: docs[f.name][0], FIELD_DESCRIPTION: docs[f.name][1]})
              if f.name in docs else f for f in schema]
    return pa.schema(fields, metadata=format_metadata(fmt) if fmt else schema.metadata)


def with_format(table: pa.Table, fmt: str, dialects: "list[str] | tuple[str, ...] | None" = None) -> pa.Table:
    """``table`` carrying the schema metadata of ``fmt`` (and its dialects), field metadata kept."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **{
        k.encode(): v.encode() for k, v in format_metadata(fmt, dialects).items()}})


def column_docs(schema: pa.Schema) -> list[dict[str, str]]:
    """Name, Arrow type, unit and description of each field of ``schema`` (from its field metadata)."""
    rows = []
    for f in schema:
        meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        rows.append({"column": f.name, "type": str(f.type), "unit": meta.get(FIELD_UNIT, ""),
                     "description": meta.get(FIELD_DESCRIPTION, "")})
    return rows


def schema_info(schema: pa.Schema) -> dict[str, str]:
    """The treediff schema metadata of a file's schema, as text (empty for a file treediff did not write)."""
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    return {k: v for k, v in meta.items() if k.startswith("treediff.")}


KIND_VALUES = [k.value for k in Kind]

# Tags that become rows of the records table (SHADOW: typhoon_py's --shadow side searches; only the fh and
# whatif reports read them, every other consumer looks at MOVE and RESULT rows only).
ROW_TAGS = ("MOVE", "RESULT", "SHADOW")

DICT_STR = pa.dictionary(pa.int32(), pa.string())

RECORDS_SCHEMA = described(pa.schema(
    [
        pa.field("engine", DICT_STR, nullable=False),
        pa.field("search", pa.int32(), nullable=False),
        pa.field("position", DICT_STR),
        pa.field("fen", DICT_STR),
        pa.field("phase", DICT_STR),
        pa.field("iter", pa.int16()),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("line", pa.int64(), nullable=False),
        pa.field("tag", DICT_STR, nullable=False),
        pa.field("ctx", DICT_STR),
        pa.field("path", pa.string()),
        pa.field("ply", pa.int16()),
        pa.field("move", DICT_STR),
        pa.field("null_move", pa.bool_()),
        pa.field("mn", pa.int16()),
        pa.field("depth", pa.float32()),
        pa.field("new_depth", pa.float32()),
        pa.field("reduction", pa.float32()),
        pa.field("act", DICT_STR),
        pa.field("kind", DICT_STR),
        pa.field("alpha", pa.int32()),
        pa.field("beta", pa.int32()),
        pa.field("score", pa.int32()),
        pa.field("bound", DICT_STR),
        pa.field("node_type", DICT_STR),
        pa.field("see", pa.int32()),
        pa.field("hist", pa.int64()),
        pa.field("why", DICT_STR),
        pa.field("extra", pa.string()),
        pa.field("problem", DICT_STR),
        # Node visits (docs/TREEDUMP_FORMAT.md §3): RESULT records number their node's visits
        # (1-based, per node = path within one iteration); a MOVE record names its parent's visit.
        pa.field("visit", pa.int32()),
        pa.field("parent_visit", pa.int32()),
        # SHADOW records (docs/TREEDUMP_FORMAT.md): fh=1, the full-depth side search reached the node's beta.
        pa.field("fh", pa.bool_()),
    ]
), RECORDS_COLUMN_DOCS, RECORDS_FORMAT)

RECORD_COLUMNS = RECORDS_SCHEMA.names

SEARCHES_SCHEMA = described(pa.schema(
    [
        pa.field("engine", pa.string(), nullable=False),
        pa.field("search", pa.int32(), nullable=False),
        pa.field("position", pa.string()),
        pa.field("fen", pa.string()),
        pa.field("phase", pa.string()),
        pa.field("phase_source", pa.string()),
        pa.field("unit", pa.int32()),
        pa.field("producer", pa.string()),
        pa.field("source", pa.string()),
        pa.field("first_line", pa.int64()),
        pa.field("contexts", pa.string()),
        pa.field("kept_context", pa.string()),
        pa.field("iterations", pa.int32()),
        pa.field("max_iter", pa.int16()),
        pa.field("records", pa.int64()),
        pa.field("moves", pa.int64()),
        pa.field("result_nodes", pa.int64()),
        pa.field("end_nodes", pa.int64()),
        pa.field("end_best", pa.string()),
        pa.field("end_score", pa.int32()),
        pa.field("node_source", pa.string()),
        pa.field("warnings", pa.string()),
    ]
), SEARCHES_COLUMN_DOCS, SEARCHES_FORMAT)

SEARCH_COLUMNS = SEARCHES_SCHEMA.names


def searches_path_for(records_path: str) -> str:
    """Where ``parse -o X.parquet`` writes its searches table: ``X.searches.parquet``."""
    if records_path.endswith(".parquet"):
        return records_path[: -len(".parquet")] + ".searches.parquet"
    return records_path + ".searches.parquet"

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


KIND_VALUES = [k.value for k in Kind]

# Tags that become rows of the records table (SHADOW: typhoon_py's --shadow side searches; only the fh and
# whatif reports read them, every other consumer looks at MOVE and RESULT rows only).
ROW_TAGS = ("MOVE", "RESULT", "SHADOW")

DICT_STR = pa.dictionary(pa.int32(), pa.string())

RECORDS_SCHEMA = pa.schema(
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
)

RECORD_COLUMNS = RECORDS_SCHEMA.names

SEARCHES_SCHEMA = pa.schema(
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
)

SEARCH_COLUMNS = SEARCHES_SCHEMA.names


def searches_path_for(records_path: str) -> str:
    """Where ``parse -o X.parquet`` writes its searches table: ``X.searches.parquet``."""
    if records_path.endswith(".parquet"):
        return records_path[: -len(".parquet")] + ".searches.parquet"
    return records_path + ".searches.parquet"

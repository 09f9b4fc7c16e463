"""store/source.records_frame: the pandas frames a source's batches hold, bool columns as pandas' nullable
``boolean`` (not objects), and the report's numbers the same as from the object columns a plain
``to_pandas`` gives."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from treediff.parse.source import open_source
from treediff.report.core import build_report
from treediff.report.table import flag_values
from treediff.store.source import FrameSource, records_frame

ROOT = Path(__file__).resolve().parents[2]
LOGS = [ROOT / "fixtures" / "real" / "mid_a_d7.log", ROOT / "fixtures" / "traces" / "typhoon_batch3.log"]


def _as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``boolean`` columns as a plain ``to_pandas`` gives them: objects, None for a null."""
    out = frame.copy()
    for name in out.columns:
        if isinstance(out[name].dtype, pd.BooleanDtype):
            out[name] = pd.Series([None if v is pd.NA else bool(v) for v in out[name]], dtype=object, index=out.index)
    return out


def test_bool_columns_become_boolean_and_the_others_stay_as_to_pandas_gives_them():
    table = pa.table({"null_move": pa.array([True, None, False, None]), "whole": pa.array([True, False, True, True]),
                      "fh": pa.array([None, None, None, None], pa.bool_()), "mn": pa.array([1, None, 3, 4], pa.int16()),
                      "tag": pa.array(["MOVE", "RESULT", "MOVE", "RESULT"]).dictionary_encode()})
    frame = records_frame(table)
    for name in ("null_move", "whole", "fh"):
        assert isinstance(frame[name].dtype, pd.BooleanDtype)
    assert frame["null_move"].isna().tolist() == [False, True, False, True]
    assert frame["null_move"].fillna(False).tolist() == [True, False, False, False]
    assert frame["fh"].isna().all()
    plain = table.to_pandas()
    for name in ("mn", "tag"):
        pd.testing.assert_series_equal(frame[name], plain[name])
    pd.testing.assert_frame_equal(_as_objects(frame), plain.assign(whole=plain["whole"].astype(object)),
                                  check_dtype=False)
    # The flag the tables read: the same from either form.
    for name in ("null_move", "whole", "fh"):
        np.testing.assert_array_equal(flag_values(frame[name]), flag_values(plain[name]))
        np.testing.assert_array_equal(flag_values(frame[name]), np.asarray(plain[name].fillna(False), dtype=bool))


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_a_parsed_log_batches_hold_boolean_flags(log: Path):
    source = open_source(log)
    batches = list(source.batches(["ply", "null_move"]))
    assert batches and all(isinstance(b["null_move"].dtype, pd.BooleanDtype) for b in batches)
    records = pd.concat(batches, ignore_index=True)
    # null_move is null where the path has no last move (the root's records), set everywhere else.
    root = (records["ply"] == 0).to_numpy()
    assert root.any() and (records["null_move"].isna().to_numpy() == root).all()


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_every_table_is_the_same_from_boolean_and_from_object_flags(log: Path):
    source = open_source(log)
    records = source.records()
    assert isinstance(records["null_move"].dtype, pd.BooleanDtype)
    assert bool(records["null_move"].fillna(False).any())  # the fixtures have null moves to count
    objects = _as_objects(records)
    assert objects["null_move"].dtype == object
    got = build_report(source, "all")
    want = build_report(FrameSource(objects, source.searches), "all")
    assert got.names == want.names
    for g, w in zip(got.sections, want.sections):
        assert (g.name, g.keys, g.notes) == (w.name, w.keys, w.notes)
        pd.testing.assert_frame_equal(g.frame, w.frame, check_exact=True)

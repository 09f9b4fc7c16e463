"""What every report table starts from: the loaded tables, the groups, and a few shared masks."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from treediff.report.grouping import (
    RecordGroups,
    SearchGroups,
    codes_of,
    group_records,
    group_searches,
    search_rows,
)


@dataclass
class Context:
    """Loaded records and searches plus their grouping, computed once and shared by the tables.

    ``records`` must hold the columns the requested tables need (see
    :data:`treediff.report.core.TABLE_COLUMNS`); ``keys`` always starts with
    ``engine``.
    """

    records: pd.DataFrame
    searches: pd.DataFrame
    keys: tuple[str, ...]
    _cache: dict = field(default_factory=dict, repr=False)

    @cached_property
    def search_groups(self) -> SearchGroups:
        """Groups of the search-level keys only (iteration ignored)."""
        return group_searches(self.searches, self.keys)

    @cached_property
    def srow(self) -> np.ndarray:
        """Each record's row in the searches table."""
        return search_rows(self.records, self.searches)

    @cached_property
    def record_groups(self) -> RecordGroups:
        """Groups of all keys, including ``iter`` when asked."""
        return group_records(self.records, self.srow, self.search_groups, self.keys)

    @cached_property
    def is_move(self) -> np.ndarray:
        return self._tag_mask("MOVE")

    @cached_property
    def is_result(self) -> np.ndarray:
        return self._tag_mask("RESULT")

    def _tag_mask(self, tag: str) -> np.ndarray:
        codes, cats = codes_of(self.records["tag"])
        hits = np.flatnonzero(cats == tag)
        if len(hits) == 0:
            return np.zeros(len(codes), dtype=bool)
        return codes == hits[0]

    def codes(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """Cached integer codes and categories of a string column of the records."""
        if column not in self._cache:
            self._cache[column] = codes_of(self.records[column])
        return self._cache[column]

    def kind_mask(self, kind: str) -> np.ndarray:
        codes, cats = self.codes("kind")
        hits = np.flatnonzero(cats == kind)
        if len(hits) == 0:
            return np.zeros(len(codes), dtype=bool)
        return codes == hits[0]

    @cached_property
    def iters(self) -> np.ndarray:
        """Each record's iteration (root depth in plies; 0 without ITER markers)."""
        return np.asarray(self.records["iter"].fillna(0), dtype=np.int64)

    @cached_property
    def plies(self) -> np.ndarray:
        return np.asarray(self.records["ply"].fillna(0), dtype=np.int64)

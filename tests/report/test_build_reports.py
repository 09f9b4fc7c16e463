"""Several reports from one read of a source (:func:`treediff.report.core.build_reports`, issue 17).

Every request's report must be what its own :func:`build_report` over ``source.select(rows)`` gives (the
source's own selection, read separately: an independent path), frame for frame; the source is read once;
a partial asked twice is computed once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pytest

from support.pairing_traces import DEEP
import treediff.report.tables.acts as acts_module
from treediff.model.errors import InputError
from treediff.parse.source import open_source, open_sources
import treediff.report.compare as compare_module
from treediff.report.compare import Side, compare
from treediff.report.core import Fold, ReportRequest, build_report, build_reports, fold_many
from treediff.report.filters import IterationCut
from treediff.report.pairing import cut_filter, cut_view, pair_positions, side_depths
from treediff.report.table import Batch, Grouping, Section
from treediff.store.source import FrameSource, Source

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
LOGS = [TRACES / f"{engine}_batch3.log" for engine in ("typhoon", "stockfish", "crafty")]


class CountingSource(Source):
    """A source that counts the reads of its records (each :meth:`batches` call, its relabelled copies' too).

    ``profile``: whether it passes on its inner source's iteration profile (a spilled log's), else it has
    none, as a source that must be read for it."""

    def __init__(self, inner: Source, counter: list[int] | None = None, profile: bool = False):
        self.inner = inner
        self.warnings = []
        self.counter = [0] if counter is None else counter
        self.profile = profile

    def iteration_profile(self) -> pd.DataFrame | None:
        return self.inner.iteration_profile() if self.profile else None

    @property
    def reads(self) -> int:
        return self.counter[0]

    @property
    def searches(self) -> pd.DataFrame:
        return self.inner.searches

    def batches(self, columns: Sequence[str] | None = None, target: int = 1_000_000) -> Iterator[pd.DataFrame]:
        self.counter[0] += 1
        yield from self.inner.batches(columns, target)

    def select(self, keep: np.ndarray) -> Source:
        return self.inner.select(keep)

    def with_searches(self, searches: pd.DataFrame) -> Source:
        return CountingSource(self.inner.with_searches(searches), self.counter, self.profile)


@pytest.fixture(scope="module")
def nine() -> Source:
    """Three engines x three positions (fixtures/traces/*_batch3.log), 198 to 2655 records a search."""
    return open_sources([str(p) for p in LOGS])


def _assert_same_report(got, want) -> None:
    assert got.names == want.names
    assert got.keys == want.keys
    for g, w in zip(got.sections, want.sections):
        assert (g.name, g.title, g.keys, g.notes) == (w.name, w.title, w.keys, w.notes)
        pd.testing.assert_frame_equal(g.frame, w.frame, check_exact=True)


def _alone(source: Source, request: ReportRequest, target: int):
    chosen = source if request.rows is None else source.select(request.rows)
    return build_report(chosen, request.tables, request.by, target, request.options, request.keep)


@pytest.mark.parametrize("target", [10**9, 500])  # one batch per input; one batch per search
def test_each_request_gets_what_its_own_build_report_gives(nine: Source, target: int) -> None:
    # (Each population keeps a search of every input: a selection holding none of an input's searches reads an
    # empty batch of it, whose missing visit columns blank ebf_ply's nodes_main for the whole report.)
    not_start = (nine.searches["position"].astype(str) != "start").to_numpy()
    three_searches = np.isin(nine.searches["search"].to_numpy(), [1, 5, 6])
    cut = IterationCut({0: 2, 1: 3, 4: 1, 7: 2})
    requests = [
        ReportRequest(None, ("engine", "position")),
        ReportRequest(("acts", "lmr", "ebf", "skips"), ("engine",), keep=cut, rows=not_start),
        ReportRequest(("lmr",), ("engine", "phase"), keep=cut, rows=not_start),
        ReportRequest(("ebf", "lmr", "skips"), ("engine", "position"), keep=cut),
        ReportRequest(("nodes", "acts", "fh"), ("engine", "depth"), rows=three_searches),
        ReportRequest(("lmr", "residual"), ("engine", "iter"), keep=cut, rows=three_searches),
    ]
    counted = CountingSource(nine)
    reports = build_reports(counted, requests, target)
    assert counted.reads == 1
    for request, report in zip(requests, reports):
        _assert_same_report(report, _alone(nine, request, target))


def test_every_row_selected_is_the_whole_source(nine: Source) -> None:
    every = np.ones(len(nine.searches), dtype=bool)
    got, = build_reports(nine, [ReportRequest(("ebf", "acts"), ("engine",), rows=every)])
    _assert_same_report(got, build_report(nine, ("ebf", "acts"), ("engine",)))


def test_a_population_without_records_is_one_empty_batch(nine: Source) -> None:
    """Search 4's records left out of a frame source: selecting it alone reads one empty batch."""
    records = nine.records()
    source = FrameSource(records[records["search"] != 4].reset_index(drop=True), nine.searches)
    only_4 = (nine.searches["search"] == 4).to_numpy()
    request = ReportRequest(("acts", "lmr", "ebf", "skips", "nodes"), ("engine",), rows=only_4)
    got, = build_reports(source, [request])
    _assert_same_report(got, _alone(source, request, 1_000_000))
    assert got["ebf"]["searches"].tolist() == [1]
    assert got["lmr"]["moves"].tolist() == [0]


def test_a_population_of_no_searches_is_refused(nine: Source) -> None:
    with pytest.raises(InputError, match="no searches"):
        build_reports(nine, [ReportRequest(("acts",), rows=np.zeros(len(nine.searches), dtype=bool))])
    with pytest.raises(ValueError, match="one flag per searches row"):
        build_reports(nine, [ReportRequest(("acts",), rows=np.ones(2, dtype=bool))])


class _Counter:
    """A table counting its partial's calls (records per batch)."""

    name = "counter"
    columns = ("tag",)

    def __init__(self) -> None:
        self.calls: list[int] = []

    def partial(self, batch: Batch) -> int:
        self.calls.append(len(batch.records))
        return len(batch.records)

    def finish(self, partials: Sequence[int], grouping: Grouping) -> list[Section]:
        return []


def test_a_partial_asked_by_several_folds_is_computed_once_a_batch(nine: Source) -> None:
    counter = _Counter()
    cut = IterationCut({1: 1})
    folds = [Fold((counter,), ("engine",)), Fold((counter,), ("engine", "position")),  # one Batch: shared
             Fold((counter,), ("engine",), keep=cut)]  # another record filter: its own Batch
    out = fold_many(nine, folds, target=500)
    sizes = nine.searches["records"].astype(int).tolist()
    assert out[0].partials[0] == sizes == out[1].partials[0]
    assert len(counter.calls) == 2 * len(sizes)
    records = nine.records(["iter"])
    kept = records[(records["search"] != 1) | (records["iter"].fillna(0) <= 1)]
    cut_records = kept.groupby("search").size().tolist()
    assert out[2].partials[0] == cut_records


def test_acts_and_skips_count_the_moves_once(nine: Source, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = acts_module.act_counts

    def counting(batch):
        calls.append(len(batch.records))
        return real(batch)

    monkeypatch.setattr(acts_module, "act_counts", counting)
    both = build_report(nine, ("acts", "skips"), ("engine",), target=500)
    assert len(calls) == len(nine.searches)  # one batch per search, one act count each
    monkeypatch.setattr(acts_module, "act_counts", real)
    for name, table in (("acts", "acts"), ("kinds", "acts"), ("skips", "skips")):
        pd.testing.assert_frame_equal(both[name], build_report(nine, (table,), ("engine",), target=500)[name],
                                      check_exact=True)


def test_compare_figures_are_the_separate_reports_of_the_cut_views() -> None:
    """compare of typhoon's three positions with stockfish's start position (one paired): the nodes
    figures, the paired sides' tables and lmr per phase equal the three reports the figures were built
    from before (per position over the cut view; per engine and per phase over its paired searches)."""
    a = open_sources([str(TRACES / "typhoon_batch3.log")])
    b = open_sources([str(TRACES / "stockfish_start.log")])
    result = compare(Side("typhoon", a), Side("stockfish", b), allow_different_positions=True, target=500,
                     lmr_by_phase=True)
    depths = [side_depths(a, 500), side_depths(b, 500)]
    pairing = pair_positions(depths, [a.searches, b.searches])
    assert len(pairing.paired) == 1 < len(pairing.order)
    lmr_rows, phase_rows, per_position = [], [], []
    for i, source in enumerate((a, b)):
        view = cut_view(source, depths[i], pairing, i)
        keep = cut_filter(pairing, i)
        paired = np.asarray([k in set(pairing.paired) for k in depths[i].keys.tolist()])
        population = view.select(paired)
        per_position.append(build_report(view, ("ebf",), ("engine", "position"), 500, keep=keep)["ebf"])
        lmr_rows.append(build_report(population, ("lmr",), ("engine",), 500, keep=keep)["lmr"])
        phase_rows.append(build_report(population, ("lmr",), ("engine", "phase"), 500, keep=keep)["lmr"])
    assert result.lmr["moves"].tolist() == [int(f["moves"].iloc[0]) for f in lmr_rows]
    want_phase = pd.concat([f.drop(columns="engine") for f in phase_rows], ignore_index=True)
    pd.testing.assert_frame_equal(result.lmr_phase.drop(columns="side"), want_phase, check_exact=True)
    nodes = result.nodes.set_index("position")
    for x, ebf in zip("ab", per_position):
        for position, mean in zip(ebf["position"].astype(str), ebf["mean_nodes"]):
            assert nodes.loc[position, f"nodes_{x}"] == mean


# ------------------------------------------------- compare: a side read once when the cut keeps everything

#: The same search stopped before iteration 3 completed (its root RESULT missing): completed 1 and 2.
STOPPED = DEEP.replace("RESULT path=- ply=0 d=3 score=10 bound=exact\n", "")


def _compare_counting(tmp_path: Path, text_a: str, text_b: str, monkeypatch, one_read: bool, profile: bool = False,
                      **options):
    sources = []
    for name, text in (("a", text_a), ("b", text_b)):
        path = tmp_path / f"{name}.log"
        path.write_text(text)
        sources.append(CountingSource(open_source(path), profile=profile))
    if not one_read:
        monkeypatch.setattr(compare_module, "_cut_expected_to_keep_everything", lambda *args: False)
    result = compare(Side("a", sources[0]), Side("b", sources[1]), lmr_by_phase=True, **options)
    monkeypatch.undo()
    return result, [s.reads for s in sources]


def _assert_same_comparison(got, want) -> None:
    for name in ("nodes", "acts", "kinds", "lmr", "ebf", "skips", "lmr_phase"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
    assert got.pairing_notes == want.pairing_notes


def test_compare_reads_a_side_once_when_the_cut_keeps_every_record(tmp_path, monkeypatch):
    got, reads = _compare_counting(tmp_path, DEEP, DEEP.replace("id=k", "id=k2"), monkeypatch, one_read=True)
    assert reads == [1, 1]
    row = got.nodes.iloc[0]
    assert (row["depth_a"], row["nodes_a"], row["nodes_b"]) == (3, 7, 7)
    assert row["lmr_pct_a"] == pytest.approx(100 * 3 / 11) and row["skip_pct_b"] == pytest.approx(100 / 11)
    want, reads = _compare_counting(tmp_path, DEEP, DEEP.replace("id=k", "id=k2"), monkeypatch, one_read=False)
    assert reads == [2, 2]
    _assert_same_comparison(got, want)


def test_compare_reads_again_when_the_cut_drops_records(tmp_path, monkeypatch):
    """Both searches list iteration 3 (the one-read guess), but B's did not complete it: compared at 2, the
    records of iteration 3 are dropped, so the first read's tables are not used and the cut views are read."""
    got, reads = _compare_counting(tmp_path, DEEP, STOPPED, monkeypatch, one_read=True)
    assert reads == [2, 2]
    row = got.nodes.iloc[0]
    assert (row["depth_a"], row["nodes_a"], row["nodes_b"]) == (2, 3, 3)
    assert row["lmr_pct_a"] == row["lmr_pct_b"] == pytest.approx(20.0)
    want, _ = _compare_counting(tmp_path, DEEP, STOPPED, monkeypatch, one_read=False)
    _assert_same_comparison(got, want)


# ------------------------------------------------- compare: a spilled log's iteration profile, no first read


@pytest.mark.parametrize("options", [{}, {"depth": 1}, {"depth": 2}], ids=["deepest", "depth1", "depth2"])
def test_compare_reads_each_side_once_with_the_spills_iteration_profile(tmp_path, monkeypatch, options):
    """A log's spill counted every search's iteration profile as it was written: compare pairs before reading
    and reads each side once, cut to the pairing, where without the profile it reads each twice (the cut drops
    records: B did not complete iteration 3, or --depth); the comparison is the same."""
    got, reads = _compare_counting(tmp_path, DEEP, STOPPED, monkeypatch, one_read=True, profile=True, **options)
    assert reads == [1, 1]
    want, reads = _compare_counting(tmp_path, DEEP, STOPPED, monkeypatch, one_read=True, **options)
    assert reads == [2, 2]
    _assert_same_comparison(got, want)
    row = got.nodes.iloc[0]
    # Hand counts (tests/support/pairing_traces.py): nodes through iteration 1, 2: 1, 3.
    depth = options.get("depth", 2)  # (default: the deepest iteration both completed, 2)
    assert (row["depth_a"], row["nodes_a"], row["nodes_b"]) == (depth, {1: 1, 2: 3}[depth], {1: 1, 2: 3}[depth])


def test_compare_with_the_profile_pairs_unpaired_positions_as_before():
    """typhoon's three positions against stockfish's start position (one paired; --allow-different-positions):
    one read a side with the profiles, and every table as the read profile gives it."""
    sides = []
    for profile in (True, False):
        a = CountingSource(open_sources([str(TRACES / "typhoon_batch3.log")]), profile=profile)
        b = CountingSource(open_sources([str(TRACES / "stockfish_start.log")]), profile=profile)
        result = compare(Side("typhoon", a), Side("stockfish", b), allow_different_positions=True, target=500,
                         lmr_by_phase=True)
        sides.append((result, [a.reads, b.reads]))
    (got, reads_profiled), (want, reads_read) = sides
    assert reads_profiled == [1, 1] and reads_read == [2, 2]
    _assert_same_comparison(got, want)
    assert got.only_a == want.only_a and len(got.only_a) == 2


def test_a_cut_that_keeps_every_record_does_not_copy_the_batch():
    """compare cuts each side to its compared depth; a batch the cut keeps whole is counted as it is (a copy of
    each batch cost ~50 MB of peak at 1M + 1M lines), and a batch it cuts is counted cut."""
    from treediff.report.core import _fold_batch, _Population, _row_of

    source = open_source(TRACES / "typhoon_batch3.log")
    records = source.records()
    searches = source.searches
    row_of = _row_of(searches)
    srow = row_of[records["search"].to_numpy(dtype=np.int64)]
    whole = _Population(searches, row_of, None)
    top = int(records["iter"].max())
    everything = IterationCut({int(s): top for s in searches["search"]})
    batch = _fold_batch(records, srow, everything, whole, (), {})
    assert batch is not None and batch.records is records
    cut = IterationCut({int(s): top - 1 for s in searches["search"]})
    batch = _fold_batch(records, srow, cut, whole, (), {})
    assert batch is not None and 0 < len(batch.records) < len(records)
    assert int(batch.records["iter"].max()) == top - 1
    # A population of one search: its records only, however the cut reads.
    member = np.zeros(len(searches), dtype=bool)
    member[0] = True
    one = _Population(searches.iloc[[0]].reset_index(drop=True), _row_of(searches.iloc[[0]]), member)
    batch = _fold_batch(records, srow, everything, one, (), {})
    assert batch is not None and set(batch.records["search"]) == {int(searches["search"].iloc[0])}

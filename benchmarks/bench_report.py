"""Benchmark: ``treediff report --table all`` on a 5M-record parsed file vs a straightforward pandas version.

    python benchmarks/bench_report.py            # 5,000,000 records (generated once into benchmarks/data/)
    python benchmarks/bench_report.py --records 500000 --repeat 1

The synthetic input is deterministic (fixed seeds): three engine-like act
mixes (typhoon-like: wide LMP `continue`, little LMR; stockfish-like: heavy
LMR with re-searches and several narrow prunes; crafty-like: prunes that
abandon the node), each a genuine depth-first iterative-deepening trace with
RESULT records closing every node visit, tiled over 20 positions per engine
with phases 7/7/6, like the user's batch; each search's last iteration is
cut where its share of the record budget ends.

Both implementations run in the same process on the same file, each timed
end to end, best of ``--repeat`` runs: ``treediff report PATH --table all -o
FILE`` through the click command (reading the Parquet file, computing, rendering
and writing the tables), and the straightforward version (reading, computing).
The script checks that they agree on the numbers before it prints the ratio.

The analytics commands (issue 13: ``report --table cutoffs|fh|residual|depths`` and ``whatif --rule
'mn >= 6 and depth <= 4'``) are each run end to end in a process of their own (start-up and reading the
Parquet file included), timed in wall and CPU seconds (``resource.getrusage``: the figure a loaded machine
distorts least), with the compiled move-try derivation (``treediff/report/_ctries.c``) and, in the same
run, with the numpy one (``TREEDIFF_NUMPY_TRIES=1``), whose outputs must be byte-identical; and against
the straightforward baseline, the record-by-record statement of the definitions in
``tests/support/analytics_reference.py`` (one search at a time; depths: a pandas groupby), whose figures
must agree (``--no-reference`` skips it: minutes at 5M records).

    python benchmarks/bench_report.py --no-all --repeat 1                   # the analytics part only
    python benchmarks/bench_report.py --no-all --no-reference --repeat 1    # without the slow baseline
    python benchmarks/bench_report.py --fresh-analytics --baseline-commit REV   # fresh interpreters, vs REV
"""
from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from treediff.model.schema import RECORDS_SCHEMA, SEARCHES_SCHEMA, searches_path_for  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
ENGINES = ("typhoon", "stockfish", "crafty")
KIND = {"FULL": "SEARCH", "LMR": "REDUCE", "LMR-RESEARCH": "RESEARCH", "EXT": "EXTEND", "LMP": "PRUNE",
        "FP-QUIET": "PRUNE", "FP-CAP": "PRUNE", "SEE-QUIET": "PRUNE", "SEE-CAP": "PRUNE", "HIST-PRUNE": "PRUNE",
        "NMP": "NULL_PROBE", "PROBCUT": "NODE_CUT", "NULLBAILOUT": "NODE_CUT"}
SQUARES = [f"{f}{r}" for f in "abcdefgh" for r in "12345678"]
MOVES = [a + b for a in SQUARES[:16] for b in SQUARES[16:32]]
PHASES = ["opening"] * 7 + ["middlegame"] * 7 + ["endgame"] * 6
NULL = {"typhoon": "(null)", "stockfish": "0000", "crafty": "0000"}


# ------------------------------------------------------------------ the synthetic input

class _Tree:
    """One engine-like iterative-deepening search, written depth-first as records (lists of columns)."""

    def __init__(self, engine: str, seed: int):
        self.engine = engine
        self.rng = random.Random(seed)
        self.cols: dict[str, list] = {k: [] for k in ("iter", "tag", "path", "ply", "move", "null_move", "mn",
                                                      "depth", "new_depth", "reduction", "act", "bound")}
        self.iter = 0

    def _emit(self, tag, path, ply, move, null, mn, depth, nd, red, act, bound=None):
        c = self.cols
        c["bound"].append(bound)
        c["iter"].append(self.iter)
        c["tag"].append(tag)
        c["path"].append(path)
        c["ply"].append(ply)
        c["move"].append(move)
        c["null_move"].append(null)
        c["mn"].append(mn)
        c["depth"].append(depth)
        c["new_depth"].append(nd)
        c["reduction"].append(red)
        c["act"].append(act)

    def _decide(self, i: int, depth: float) -> tuple[str, float]:
        """(act, reduction in plies) for the i-th move (1-based) of a node."""
        r = self.rng.random()
        if i <= 2:
            return ("EXT", 0.0) if r < 0.08 else ("FULL", 0.0)
        if self.engine == "typhoon":
            if r < 0.60:
                return "LMP", 0.0
            if r < 0.66:
                return "LMR", self.rng.choice([1.0, 1.0, 1.25, 1.5, 1.75])
        elif self.engine == "stockfish":
            if r < 0.20:
                return "FP-QUIET", 0.0
            if r < 0.25:
                return "SEE-QUIET", 0.0
            if r < 0.27:
                return "FP-CAP", 0.0
            if r < 0.28:
                return "HIST-PRUNE", 0.0
            if r < 0.55:
                return "LMR", float(self.rng.choice([1, 1, 2, 2, 3, 4]))
        else:
            if r < 0.12:
                return "FP-QUIET", 0.0
            if r < 0.18:
                return "LMP", 0.0
            if r < 0.21:
                return "LMR", float(self.rng.choice([1, 1, 2]))
        return "FULL", 0.0

    def node(self, path: str, ply: int, depth: float) -> None:
        rng = self.rng
        prefix = path + "/" if path else ""
        if ply > 0 and depth >= 2 and rng.random() < 0.25:
            null = NULL[self.engine]
            self._emit("MOVE", prefix + null, ply + 1, null, True, 0, depth, None, None, "NMP")
            if rng.random() < 0.4:  # the null move cut the node
                self._emit("RESULT", path, ply, None, False, None, depth, None, None, None, "lower")
                return
        n_moves = rng.randint(12, 30)
        for i in range(1, n_moves + 1):
            mv = MOVES[rng.randrange(len(MOVES))]
            act, red = self._decide(i, depth)
            child = prefix + mv
            if KIND[act] == "PRUNE":
                self._emit("MOVE", child, ply + 1, mv, False, i, depth, None, None, act)
                if self.engine == "crafty":
                    break  # Crafty-like: the prune abandons the node
                continue
            nd = depth - 1 + (1 if act == "EXT" else 0) - red
            self._emit("MOVE", child, ply + 1, mv, False, i, depth, max(nd, 0.0), red if act == "LMR" else None, act)
            if nd >= 1:
                self.node(child, ply + 1, nd)
            if act == "LMR" and self.engine != "typhoon" and rng.random() < 0.08:
                self._emit("MOVE", child, ply + 1, mv, False, i, depth, depth - 1, None, "LMR-RESEARCH")
                if depth - 1 >= 1:
                    self.node(child, ply + 1, depth - 1)
            if ply > 0 and rng.random() < 0.25:
                # beta cutoff (the bound costs no random draw: the records are those of earlier runs)
                self._emit("RESULT", path, ply, None, False, None, depth, None, None, None, "lower")
                return
        self._emit("RESULT", path, ply, None, False, None, depth, None, None, None, "upper" if ply else "exact")

    def run(self, target: int) -> dict[str, list]:
        d = 0
        while len(self.cols["tag"]) < target:
            d += 1
            self.iter = d
            self.node("", 0, float(d))
        return self.cols


def _visits(cols: dict[str, list]) -> tuple[list, list]:
    """The parser's ``visit`` (RESULT) and ``parent_visit`` (MOVE) columns of one search's records."""
    from treediff.parse.visits import visit_numbers

    tag = np.asarray(cols["tag"], dtype=object)
    is_result = tag == "RESULT"
    path = cols["path"]
    parent = ["" if "/" not in p else p.rpartition("/")[0] for p in path]
    iters = np.asarray(cols["iter"], dtype=np.int64)
    keys = pd.factorize(pd.Series([f"{i}:{p if r else q}" for i, p, q, r in zip(iters.tolist(), path, parent,
                                                                               is_result.tolist())]))[0]
    visit, parent_visit = visit_numbers(np.asarray(keys, dtype=np.int64), is_result,
                                        np.asarray(cols["depth"], dtype=np.float64))
    return ([int(v) if r else None for v, r in zip(visit.tolist(), is_result.tolist())],
            [int(v) if not r else None for v, r in zip(parent_visit.tolist(), is_result.tolist())])


def generate(path: Path, records: int, positions: int = 20) -> Path:
    """Write ``path`` (records) and its searches table; deterministic for a given ``records``."""
    per_search = -(-records // (len(ENGINES) * positions))
    rec_tables, searches = [], []
    search = 0
    for e_i, engine in enumerate(ENGINES):
        # The last iteration is cut where the record budget ends, like a search stopped by time.
        template = {k: v[:per_search] for k, v in _Tree(engine, seed=1000 + e_i).run(per_search).items()}
        n = len(template["tag"])
        visit, parent_visit = _visits(template)
        base = pa.table({
            "iter": pa.array(template["iter"], pa.int16()),
            "seq": pa.array(np.arange(n), pa.int64()),
            "line": pa.array(np.arange(n) + 3, pa.int64()),
            "tag": pa.array(template["tag"]).dictionary_encode(),
            "path": pa.array(template["path"], pa.string()),
            "ply": pa.array(template["ply"], pa.int16()),
            "move": pa.array(template["move"], pa.string()).dictionary_encode(),
            "null_move": pa.array(template["null_move"], pa.bool_()),
            "mn": pa.array(template["mn"], pa.int16()),
            "depth": pa.array(template["depth"], pa.float32()),
            "new_depth": pa.array(template["new_depth"], pa.float32()),
            "reduction": pa.array(template["reduction"], pa.float32()),
            "act": pa.array(template["act"], pa.string()).dictionary_encode(),
            "kind": pa.array([KIND.get(a) if a else None for a in template["act"]], pa.string()).dictionary_encode(),
            "bound": pa.array(template["bound"], pa.string()).dictionary_encode(),
            "visit": pa.array(visit, pa.int32()),
            "parent_visit": pa.array(parent_visit, pa.int32()),
        })
        n_results = template["tag"].count("RESULT")
        max_iter = max(template["iter"])
        for p in range(positions):
            pos, phase = f"pos{p:02d}", PHASES[p % len(PHASES)]
            cols = {}
            for field in RECORDS_SCHEMA:
                name = field.name
                if name in base.column_names:
                    col = base.column(name)
                elif name == "engine":
                    col = pa.array([engine] * n).dictionary_encode()
                elif name == "search":
                    col = pa.array(np.full(n, search, np.int32))
                elif name == "position":
                    col = pa.array([pos] * n).dictionary_encode()
                elif name == "fen":
                    col = pa.array([f"fen-{pos}"] * n).dictionary_encode()
                elif name == "phase":
                    col = pa.array([phase] * n).dictionary_encode()
                else:
                    col = pa.nulls(n, field.type)
                cols[name] = col.cast(field.type) if col.type != field.type else col
            rec_tables.append(pa.table(cols, schema=RECORDS_SCHEMA))
            searches.append({"engine": engine, "search": search, "position": pos, "fen": f"fen-{pos}",
                             "phase": phase, "phase_source": "header", "unit": 64 if engine == "typhoon" else 1,
                             "producer": "bench", "source": "synthetic", "first_line": 1, "contexts": None,
                             "kept_context": None, "iterations": max_iter, "max_iter": max_iter, "records": n,
                             "moves": n - n_results, "result_nodes": n_results, "end_nodes": n_results,
                             "end_best": None, "end_score": None, "node_source": "result", "warnings": None})
            search += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, RECORDS_SCHEMA, compression="zstd") as writer:
        for t in rec_tables:
            writer.write_table(t)
    pq.write_table(pa.Table.from_pylist(searches, schema=SEARCHES_SCHEMA), searches_path_for(str(path)))
    return path


# ------------------------------------------------------------------ the straightforward pandas version

def straightforward(path: Path) -> dict[str, pd.DataFrame]:
    """What one writes without thinking about speed: read everything, groupby, string paths."""
    rec = pd.read_parquet(path)
    srch = pd.read_parquet(searches_path_for(str(path)))
    rec["engine"] = rec["engine"].astype(str)
    rec["tag"] = rec["tag"].astype(str)
    rec["kind"] = rec["kind"].astype(str)
    rec["act"] = rec["act"].astype(str)
    moves = rec[rec["tag"] == "MOVE"]
    out = {}
    acts = moves.groupby(["engine", "act"]).size().rename("count").reset_index()
    acts["pct_of_moves"] = 100 * acts["count"] / acts.groupby("engine")["count"].transform("sum")
    out["acts"] = acts
    lmr_rows = []
    for engine, m in moves.groupby("engine"):
        lmr = m[m["kind"] == "REDUCE"]
        lmr_rows.append({"engine": engine, "moves": len(m), "real_moves": int((~m["null_move"]).sum()),
                         "lmr": len(lmr), "mean_red": lmr["reduction"].mean(), "median_red": lmr["reduction"].median(),
                         "p90_red": lmr["reduction"].quantile(0.9),
                         "research": int((m["kind"] == "RESEARCH").sum())})
    out["lmr"] = pd.DataFrame(lmr_rows)
    res = rec[rec["tag"] == "RESULT"]
    per_search = res.groupby("search").size()
    srch = srch.assign(nodes=srch["search"].map(per_search).fillna(0))
    ebf = srch.groupby("engine").agg(mean_nodes=("nodes", "mean"), depth=("max_iter", "max")).reset_index()
    ebf["ebf"] = ebf["mean_nodes"] ** (1 / ebf["depth"])
    per_iter = res.groupby(["engine", "search", "iter"]).size().rename("n").reset_index()
    out["ebf"] = ebf
    out["ebf_iter_counts"] = per_iter
    final = res[res["iter"] == res["search"].map(srch.set_index("search")["max_iter"])]
    out["ebf_ply"] = final.groupby(["engine", "ply"]).size().rename("nodes").reset_index()
    prunes = moves[moves["kind"] == "PRUNE"]
    out["skips"] = prunes.groupby(["engine", "act"]).size().rename("count").reset_index()
    # scope, by paths: a node visit ends with the RESULT whose path is the node
    node = rec["path"].where(rec["tag"] == "RESULT", rec["path"].str.rsplit("/", n=1).str[0].where(
        rec["path"].str.contains("/"), ""))
    frame = pd.DataFrame({"engine": rec["engine"], "search": rec["search"], "iter": rec["iter"], "node": node,
                          "seq": rec["seq"], "is_result": rec["tag"] == "RESULT", "kind": rec["kind"],
                          "act": rec["act"]})
    frame = frame.sort_values(["search", "iter", "node", "seq"])
    frame["visit"] = frame.groupby(["search", "iter", "node"])["is_result"].cumsum() - frame["is_result"]
    mv = frame[~frame["is_result"]]
    last_move = mv.groupby(["search", "iter", "node", "visit"])["seq"].max().rename("last_seq")
    pr = mv[mv["kind"] == "PRUNE"]
    first = pr.groupby(["engine", "act", "search", "iter", "node", "visit"])["seq"].min().rename("first").reset_index()
    first = first.join(last_move, on=["search", "iter", "node", "visit"])
    first["continued"] = first["last_seq"] > first["first"]
    out["scope"] = first.groupby(["engine", "act"]).agg(nodes=("continued", "size"),
                                                        continued=("continued", "sum")).reset_index()
    return out


# ------------------------------------------------------------------ running both

def run_cli(path: Path, out: Path) -> None:
    """``treediff report PATH --table all -o OUT`` in this process (click's test runner)."""
    from click.testing import CliRunner

    from treediff.cli import main as cli_main

    result = CliRunner().invoke(cli_main, ["report", str(path), "--table", "all", "-o", str(out)])
    if result.exit_code != 0:
        raise RuntimeError(f"treediff report failed: {result.output}")


def treediff_frames(path: Path) -> dict[str, pd.DataFrame]:
    """The report's tables as DataFrames (for the agreement check; not timed)."""
    from treediff.parse.source import open_source
    from treediff.report.core import TABLES, build_report

    report = build_report(open_source(path), TABLES, ("engine",))
    return {s.name: s.frame for s in report.sections}


def breakdown(path: Path) -> dict[str, float]:
    """Seconds spent loading (one batch held in memory), computing each table, and rendering, in one run."""
    from treediff.parse.source import open_source
    from treediff.render.output import render
    from treediff.report.core import TABLES, build_report, columns_for
    from treediff.store.source import FrameSource

    out = {}
    t0 = time.perf_counter()
    source = open_source(path)
    loaded = FrameSource(source.records(columns_for(TABLES)), source.searches)
    out["load"] = time.perf_counter() - t0
    sections = []
    for table in TABLES:
        t0 = time.perf_counter()
        sections += build_report(loaded, (table,), ("engine",)).sections
        out[table] = time.perf_counter() - t0
    t0 = time.perf_counter()
    render(sections, "table")
    out["render"] = time.perf_counter() - t0
    return out


def check_agreement(ours: dict[str, pd.DataFrame], base: dict[str, pd.DataFrame]) -> None:
    a = ours["acts"].set_index(["engine", "act"])["count"].astype(int)
    b = base["acts"].set_index(["engine", "act"])["count"].astype(int)
    assert a.sort_index().equals(b.sort_index()), "acts differ"
    lo, lb = ours["lmr"].set_index("engine"), base["lmr"].set_index("engine")
    for col in ("moves", "real_moves", "lmr", "research"):
        assert (lo.loc[lb.index, col].astype(int) == lb[col].astype(int)).all(), col
    for col in ("mean_red", "median_red", "p90_red"):
        assert np.allclose(lo.loc[lb.index, col], lb[col], rtol=1e-6), col
    eo, eb = ours["ebf"].set_index("engine"), base["ebf"].set_index("engine")
    assert np.allclose(eo.loc[eb.index, "ebf"], eb["ebf"], rtol=1e-9), "ebf differs"
    po = ours["ebf_ply"].set_index(["engine", "ply"])["nodes"]
    pb = base["ebf_ply"].set_index(["engine", "ply"])["nodes"]
    assert po.sort_index().equals(pb.sort_index().astype(po.dtype)), "per-ply nodes differ"
    so = ours["scope"][ours["scope"]["act"] != "(all)"].set_index(["engine", "act"])[["nodes", "continued"]]
    sb = base["scope"].set_index(["engine", "act"])[["nodes", "continued"]]
    assert (so.loc[sb.index].astype(int).to_numpy() == sb.astype(int).to_numpy()).all(), "scope differs"


# ------------------------------------------------------------------ the analytics tables (issue 13)

#: The whatif rule timed (a typical late-move rule: admits SEARCH/REDUCE/EXTEND tries late in the order).
RULE = 'mn >= 6 and depth <= 4'
ANALYTICS = ("cutoffs", "fh", "residual", "depths", "whatif")


def run_analytics_cli(path: Path, name: str, out: Path, numpy: bool = False) -> None:
    """One analytics command end to end in its own process (start-up and reading the Parquet file included);
    ``numpy``: with the numpy derivation (TREEDIFF_NUMPY_TRIES=1)."""
    import os
    import subprocess

    args = (["whatif", str(path), "--rule", RULE] if name == "whatif"
            else ["report", str(path), "--table", name])
    env = dict(os.environ)
    env.pop("TREEDIFF_NUMPY_TRIES", None)
    if numpy:
        env["TREEDIFF_NUMPY_TRIES"] = "1"
    done = subprocess.run([sys.executable, "-c", "from treediff.cli import main; main()", *args, "-o", str(out)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"treediff {' '.join(args)} failed: {done.stdout}{done.stderr}")


def straightforward_analytics(path: Path) -> tuple[dict[str, tuple[float, float]], dict]:
    """tests/support/analytics_reference.py (record-by-record Python, one search at a time: searches are
    independent) and a pandas groupby for depths: (wall, CPU) seconds per table (the shared record reading and
    derivation counted in each, as each table does it on its own) and the summed figures."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support import analytics_reference as ref

    w0, c0 = time.perf_counter(), _cpu()
    rec = pd.read_parquet(path)
    read = (time.perf_counter() - w0, _cpu() - c0)
    times = {name: list(read) for name in ANALYTICS}
    totals: dict = {"cutoffs": {}, "fh": {}, "whatif": {}, "residual": {"paths": 0, "stalled": 0, "growth": []}}
    derive_time = [0.0, 0.0]
    for _, part in rec.groupby("search", sort=True):
        w0, c0 = time.perf_counter(), _cpu()
        r = ref.derive(ref.rows_of(part))
        derive_time[0] += time.perf_counter() - w0
        derive_time[1] += _cpu() - c0
        for name, fn in (("cutoffs", lambda: ref.cutoffs(r)), ("fh", lambda: ref.fh_by_kind(r)),
                         ("whatif", lambda: ref.whatif(r, lambda row: row["mn"] is not None and row["mn"] >= 6
                                                       and row["depth"] <= 4)),
                         ("residual", lambda: ref.residual(r))):
            w0, c0 = time.perf_counter(), _cpu()
            got = fn()
            times[name][0] += time.perf_counter() - w0
            times[name][1] += _cpu() - c0
            acc = totals[name]
            for k, v in got.items():
                if k == "growth":
                    acc["growth"] += v
                elif isinstance(v, tuple):
                    old = acc.get(k, (0, 0))
                    acc[k] = (old[0] + v[0], old[1] + v[1])
                elif k not in ("mean_mn", "median_growth"):
                    acc[k] = acc.get(k, 0) + v
    for name in ("cutoffs", "fh", "whatif", "residual"):
        times[name][0] += derive_time[0]
        times[name][1] += derive_time[1]
    w0, c0 = time.perf_counter(), _cpu()
    moves = rec[(rec["tag"].astype(str) == "MOVE") & rec["new_depth"].notna()]
    step = (moves["depth"] - moves["new_depth"]).rename("step")
    totals["depths"] = step.groupby(moves["act"].astype(str)).agg(["size", "mean", "median"])
    times["depths"][0] += time.perf_counter() - w0
    times["depths"][1] += _cpu() - c0
    return {k: (v[0], v[1]) for k, v in times.items()}, totals


def check_analytics(path: Path, totals: dict) -> None:
    """Our tables' figures, summed over the engines, equal the reference's."""
    from treediff.parse.source import open_source
    from treediff.report.core import build_report
    from treediff.report.table import ReportOptions
    from treediff.report.whatif import whatif

    source = open_source(path)
    report = build_report(source, ("cutoffs", "fh", "residual", "depths"), ("engine",),
                          options=ReportOptions(fh_buckets=("kind",)))
    cut = report["cutoffs"].groupby("class")["cutoffs"].sum().to_dict()
    want = totals["cutoffs"]
    assert all(cut[c] == want[c] for c in ("all", "move", "null", "probcut", "multicut", "none")), (cut, want)
    assert int(report["cutoffs"][report["cutoffs"]["class"] == "all"]["visits"].sum()) == want["visits"]
    fh = report["fh"].groupby("kind")[["tries", "fail_highs"]].sum()
    assert {k: (int(v.tries), int(v.fail_highs)) for k, v in fh.iterrows()} == totals["fh"], "fh differs"
    w = whatif(source, RULE)[0].frame[["all_tries", "tries", "fail_highs", "baseline_tries", "baseline_fail_highs",
                                       "subtree_nodes"]].sum().to_dict()
    assert {k: int(v) for k, v in w.items()} == totals["whatif"], (w, totals["whatif"])
    res = report["residual"]
    assert int(res["paths"].sum()) == totals["residual"]["paths"]
    assert int(res["stalled"].sum()) == totals["residual"]["stalled"]
    d = report["depths"].groupby("act")["count"].sum()
    assert {k: int(v) for k, v in d.items()} == {k: int(v) for k, v in totals["depths"]["size"].items()}


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its finished child processes so far: the figure
    that a loaded machine distorts least."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def best_of(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def measure(fn, repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``, each the least over ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(_cpu() - c0)
    return min(walls), min(cpus)


def analytics(path: Path, repeat: int, reference: bool) -> None:
    """The analytics commands end to end (each in its own process), compiled derivation (treediff.report._ctries, when built) against
    the numpy derivation (TREEDIFF_NUMPY_TRIES=1) in the same run, their outputs compared byte for byte; and,
    with ``reference``, against the straightforward record-by-record reference (tests/support/
    analytics_reference.py), the figures checked to agree."""
    from treediff.report import tries

    print(f"compiled derivation: {'built' if tries._ctries is not None else 'NOT built (both runs are numpy)'}")
    ours: dict[str, tuple[float, float]] = {}
    numpy: dict[str, tuple[float, float]] = {}
    for name in ANALYTICS:
        out, out_np = DATA / f"bench_{name}.txt", DATA / f"bench_{name}_numpy.txt"
        ours[name] = measure(lambda: run_analytics_cli(path, name, out), repeat)
        numpy[name] = measure(lambda: run_analytics_cli(path, name, out_np, numpy=True), repeat)
        if out.read_bytes() != out_np.read_bytes():
            raise AssertionError(f"{name}: the compiled and numpy derivations give different outputs")
    print("compiled and numpy derivations give byte-identical outputs for all five commands")
    base = None
    if reference:
        base, totals = straightforward_analytics(path)
        check_analytics(path, totals)
        print("the analytics tables agree with the straightforward reference (cutoff classes, fh by kind, "
              "whatif, residual paths and stalled, depths counts)")
    print(f"seconds (wall / CPU; best of {repeat}); target <= 5 s per command")
    for name in ANALYTICS:
        (w, c), (wn, cn) = ours[name], numpy[name]
        line = f"{name:9s}: treediff {w:6.2f} / {c:6.2f}   numpy derivation {wn:6.2f} / {cn:6.2f} ({cn / c:4.1f}x CPU)"
        if base is not None:
            wb, cb = base[name]
            line += f"   straightforward {wb:7.2f} / {cb:7.2f} ({cb / c:5.1f}x CPU)"
        print(line)


# ------------------------------------------------------------------ fresh-interpreter wall and peak RSS (issue 17)

BASIC = "nodes,acts,lmr,ebf,skips,scope"


def fresh_run(path: Path, tables: str, pythonpath: str | None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of ``treediff report PATH --table TABLES -o FILE`` in a new interpreter."""
    import os
    import tempfile

    from bench_startup import run_once

    entry = "import sys; from treediff.cli import main; sys.argv[0] = 'treediff'; sys.exit(main())"
    out = Path(tempfile.gettempdir()) / f"bench_report_fresh_{os.getpid()}.txt"
    try:
        # this script stays far below the child's peak, so the child's ru_maxrss is the command's own
        return run_once([sys.executable, "-c", entry, "report", str(path), "--table", tables, "-o", str(out)],
                        pythonpath)
    finally:
        out.unlink(missing_ok=True)


def fresh(path: Path, repeat: int, baseline_rev: str | None) -> None:
    """``--table all`` and the six basic tables, each in a fresh interpreter (wall, peak RSS), alternating
    run by run with a worktree of ``baseline_rev`` when given (same load for both): target <= 5 s and
    <= 1.5 GB at 20M records."""
    import contextlib
    import statistics

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_startup import baseline_worktree

    with contextlib.ExitStack() as stack:
        base = stack.enter_context(baseline_worktree(baseline_rev)) if baseline_rev else None
        sides = [("now", None)] + ([("base", base)] if base else [])
        for tables in ("all", BASIC):
            runs: dict[str, list[tuple[float, float]]] = {s: [] for s, _ in sides}
            for _ in range(repeat):
                for side, pythonpath in sides:
                    runs[side].append(fresh_run(path, tables, pythonpath))
            line = f"--table {tables:32}"
            for side, _ in sides:
                wall = statistics.median(w for w, _ in runs[side])
                rss = max(m for _, m in runs[side])
                line += f"  {side} {wall:7.2f} s {rss:7.0f} MB"
            if base:
                ratio = statistics.median(w for w, _ in runs["now"]) / statistics.median(w for w, _ in runs["base"])
                line += f"  now/base {ratio:5.2f}"
            print(line + f"   (median of {repeat}; target <= 5 s, <= 1536 MB)", flush=True)


def fresh_command(argv: list[str], pythonpath: str | None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one child process (``bench_startup.run_once``; its CPU,
    user + system and its threads', from this process's RUSAGE_CHILDREN before and after the wait)."""
    from bench_startup import run_once

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, rss = run_once(argv, pythonpath)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rss


def fresh_analytics(path: Path, repeat: int, baseline_rev: str | None) -> None:
    """The five analytics commands (issue 13: ``report --table cutoffs|fh|residual|depths``, ``whatif --rule
    RULE``), each end to end in a fresh interpreter (start-up and reading included), alternating run by run
    with a worktree of ``baseline_rev`` when given (same load for both): median wall and CPU seconds, peak
    RSS; target <= 5 s wall per command on an idle machine."""
    import contextlib
    import os
    import statistics
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_startup import baseline_worktree

    entry = "import sys; from treediff.cli import main; sys.argv[0] = 'treediff'; sys.exit(main())"
    out = Path(tempfile.gettempdir()) / f"bench_report_analytics_{os.getpid()}.txt"
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(baseline_worktree(baseline_rev)) if baseline_rev else None
        sides = [("now", None)] + ([("base", base)] if base else [])
        try:
            for name in ANALYTICS:
                args = (["whatif", str(path), "--rule", RULE] if name == "whatif"
                        else ["report", str(path), "--table", name])
                runs: dict[str, list[tuple[float, float, float]]] = {s: [] for s, _ in sides}
                for _ in range(repeat):
                    for side, pythonpath in sides:
                        runs[side].append(fresh_command([sys.executable, "-c", entry, *args, "-o", str(out)],
                                                        pythonpath))
                line = f"{name:9s}"
                for side, _ in sides:
                    wall = statistics.median(w for w, _, _ in runs[side])
                    cpu = statistics.median(c for _, c, _ in runs[side])
                    rss = max(m for _, _, m in runs[side])
                    line += f"  {side} {wall:6.2f} s wall {cpu:6.2f} s CPU {rss:6.0f} MB"
                if base:
                    ratio = (statistics.median(w for w, _, _ in runs["now"])
                             / statistics.median(w for w, _, _ in runs["base"]))
                    line += f"  now/base wall {ratio:5.2f}"
                print(line + f"   (median of {repeat}; load {os.getloadavg()[0]:.1f})", flush=True)
        finally:
            out.unlink(missing_ok=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--analytics", action=argparse.BooleanOptionalAction, default=True,
                    help="Also time cutoffs, fh, residual, depths and whatif against the numpy derivation and the "
                         "straightforward reference.")
    ap.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True,
                    help="Run the record-by-record reference as the analytics baseline (slow: minutes at 5M).")
    ap.add_argument("--all", action=argparse.BooleanOptionalAction, default=True,
                    help="Time report --table all against the straightforward pandas version.")
    ap.add_argument("--fresh", action="store_true",
                    help="Only time --table all and the six basic tables in fresh interpreters (wall, peak RSS).")
    ap.add_argument("--fresh-analytics", action="store_true",
                    help="Only time the five analytics commands in fresh interpreters (wall, CPU, peak RSS).")
    ap.add_argument("--baseline-commit", metavar="REV",
                    help="With --fresh or --fresh-analytics: alternate with a worktree of REV.")
    args = ap.parse_args(argv)
    # v2: RESULT bounds and the visit columns (the analytics tables read them)
    path = DATA / f"bench_report_{args.records}_v2.parquet"
    if not path.exists() or not Path(searches_path_for(str(path))).exists():
        t0 = time.perf_counter()
        generate(path, args.records)
        print(f"generated {path} in {time.perf_counter() - t0:.1f} s")
    n = pq.ParquetFile(path).metadata.num_rows
    print(f"input: {n:,} records, {path.stat().st_size / 1e6:.1f} MB")
    if args.fresh:
        fresh(path, args.repeat, args.baseline_commit)
        return 0
    if args.fresh_analytics:
        fresh_analytics(path, args.repeat, args.baseline_commit)
        return 0
    status = 0
    if args.all:
        out = DATA / "bench_report_output.txt"
        t_ours, _ = best_of(lambda: run_cli(path, out), args.repeat)
        t_base, base = best_of(lambda: straightforward(path), args.repeat)
        check_agreement(treediff_frames(path), base)
        print("both implementations agree on acts, lmr, ebf, per-ply nodes and scope")
        print(f"treediff report --table all : {t_ours:6.2f} s  (best of {args.repeat})")
        print(f"straightforward pandas      : {t_base:6.2f} s  (best of {args.repeat})")
        print(f"speed-up                    : {t_base / t_ours:6.2f}x   target: <= 5 s and >= 1x")
        status = 0 if t_ours <= t_base else 1
    if args.analytics:
        analytics(path, args.repeat, args.reference)
    if args.all:
        parts = breakdown(path)
        print("one run, seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
              + "  (tables computed separately here, so shared work is counted in each)")
    return status


if __name__ == "__main__":
    sys.exit(main())

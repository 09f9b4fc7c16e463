"""Deterministic synthetic search trees for benchmarks and cross-checks of the aligner.

Two engine profiles walk the same game tree: every node's move list is a pure
function of the node's path hash, and every move carries one shared random
number, so both engines see the same moves but decide them with different
thresholds (LMR, pruning, cutoffs).  The trees overlap a lot and diverge in
realistic places: moves one side pruned, subtrees one side never reached
(after an earlier cutoff), re-searches, null-move probes.

Records follow the records table's columns that the aligner reads; rows are
in depth-first ``seq`` order like a real trace (MOVE before the subtree,
RESULT after it).  Depths are in plies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treediff.parse.dialects import DIALECTS
from treediff.parse.visits import visit_numbers

_SQUARES = [f + r for r in "12345678" for f in "abcdefgh"]
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _move_pool() -> np.ndarray:
    moves = []
    for i, frm in enumerate(_SQUARES):
        for j, to in enumerate(_SQUARES):
            if i == j:
                continue
            promo = "q" if frm[1] == "7" and to[1] == "8" and abs(i % 8 - j % 8) <= 1 else ""
            moves.append(frm + to + promo)
    return np.asarray(moves, dtype=object)


_POOL = _move_pool()  # 4032 moves
_STEPS = np.array([5, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67], dtype=np.int64)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer on uint64 arrays."""
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        return x ^ (x >> np.uint64(31))


def _unit(x: np.ndarray) -> np.ndarray:
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


@dataclass(frozen=True)
class Profile:
    """How one synthetic engine decides moves.  Depths in plies."""

    engine: str
    full_moves: int          #: the first moves always searched at full depth
    lmr_min_depth: int       #: LMR from this node depth on
    lmr_rate: float          #: share of late moves reduced (the rest searched fully)
    deep_reduction: float    #: chance that a reduction is 2 plies instead of 1
    research_rate: float     #: share of reductions re-searched at full depth
    prune_max_depth: int     #: forward pruning at node depths up to this
    prune_rate: float        #: share of late moves pruned at shallow depth
    prune_acts: tuple[str, ...]
    cutoff_shift: float      #: how much earlier than the shared cutoff point this engine cuts
    null_min_depth: int      #: null-move probe from this depth on
    null_reduction: int      #: null-move search depth = depth - this
    salt: int                #: seeds this engine's own share of move judgements


TYPHOON_LIKE = Profile("typhoon", 3, 3, 0.45, 0.3, 0.08, 3, 0.5, ("LMP",), 0.0, 3, 3, 0xA1)
STOCKFISH_LIKE = Profile(
    "stockfish", 3, 3, 0.5, 0.4, 0.05, 3, 0.5, ("FP-QUIET", "SEE-QUIET", "HIST-PRUNE"), 0.05, 3, 3, 0xB2
)

_ACTS = ["FULL", "LMR", "LMR-RESEARCH", "NMP", "LMP", "FP-QUIET", "SEE-QUIET", "HIST-PRUNE"]
#: The kind of each act, as the dialects of the two profiles define it (they agree on the acts they share).
_KIND = {act: kind.value for name in (TYPHOON_LIKE.engine, STOCKFISH_LIKE.engine)
         for act, kind in DIALECTS[name].acts.items() if act in _ACTS}
assert set(_KIND) == set(_ACTS), "every synthetic act must be one of the profiles' dialects"


def synthetic_tree(profile: Profile, root_depth: int, seed: int = 1, position: str = "synthetic") -> pd.DataFrame:
    """All MOVE and RESULT records of one iteration of ``profile`` searching to ``root_depth`` plies."""
    acts_idx = {a: i for i, a in enumerate(_ACTS)}
    # Per level: node arrays (hash, depth, path, order key) -> children.
    node_hash = _mix(np.array([seed], dtype=np.uint64))
    node_depth = np.array([root_depth], dtype=np.int64)
    node_path = np.array([""], dtype=object)
    node_key = np.array([b""], dtype=object)
    out: dict[str, list] = {k: [] for k in ("path", "ply", "mn", "depth", "nd", "red", "act", "key", "result")}

    def emit(path, ply, mn, depth, nd, red, act, key, result):
        out["path"].append(path)
        out["ply"].append(np.full(len(path), ply, dtype=np.int16))
        out["mn"].append(mn)
        out["depth"].append(depth)
        out["nd"].append(nd)
        out["red"].append(red)
        out["act"].append(act)
        out["key"].append(key)
        out["result"].append(np.full(len(path), result))

    ply = 0
    while len(node_hash):
        n = len(node_hash)
        emit(node_path, ply, np.full(n, np.nan), node_depth.astype(float), np.full(n, np.nan), np.full(n, np.nan),
             np.full(n, -1), node_key + b"\xff", True)
        n_moves = 8 + (node_hash % np.uint64(28)).astype(np.int64)
        parent = np.repeat(np.arange(n), n_moves)
        i = np.arange(len(parent)) - np.repeat(np.cumsum(n_moves) - n_moves, n_moves)
        h = node_hash[parent]
        base = (h >> np.uint64(20)).astype(np.int64) % len(_POOL)
        step = _STEPS[(h >> np.uint64(8)).astype(np.int64) % len(_STEPS)]
        move = _POOL[(base + i * step) % len(_POOL)]
        child_hash = _mix(h ^ (np.uint64(0x2545F4914F6CDD1D) * (i.astype(np.uint64) + np.uint64(1))))
        u = _unit(child_hash)
        u2 = _unit(_mix(child_hash))
        depth = node_depth[parent]

        # Most nodes are cut nodes: they stop deciding moves after their cutoff
        # move.  The cutoff point is shared; a profile with a cutoff shift
        # sometimes cuts one move earlier.
        v = _unit(_mix(h ^ np.uint64(7)))
        cut_at = 1 + np.floor(3 * v * v)
        earlier = _unit(_mix(h ^ np.uint64(17))) < profile.cutoff_shift
        cut_at = np.where(earlier & (cut_at > 1), cut_at - 1, cut_at)
        is_cut = (_unit(_mix(h ^ np.uint64(3))) < 0.65) & (ply > 0)
        keep = ~is_cut | (i < cut_at)
        late = i >= profile.full_moves
        # Engines agree on most moves' merit, not all: a fifth of the moves get
        # an engine-specific draw, so each side prunes some moves the other searches.
        own = _unit(_mix(child_hash ^ np.uint64(profile.salt)))
        u_prune = np.where(_unit(_mix(child_hash ^ np.uint64(99))) < 0.8, u, own)
        prune = late & (depth <= profile.prune_max_depth) & (u_prune < profile.prune_rate)
        reduce = late & ~prune & (depth >= profile.lmr_min_depth) & (u2 < profile.lmr_rate)
        red = np.where(reduce, 1 + (_unit(_mix(child_hash ^ np.uint64(5))) < profile.deep_reduction), 0)
        research = reduce & (_unit(_mix(child_hash ^ np.uint64(9))) < profile.research_rate)
        act = np.where(prune, acts_idx[profile.prune_acts[0]], np.where(reduce, acts_idx["LMR"], acts_idx["FULL"]))
        if len(profile.prune_acts) > 1:
            pick = (u2 * 1000).astype(np.int64) % len(profile.prune_acts)
            for j, name in enumerate(profile.prune_acts):
                act = np.where(prune & (pick == j), acts_idx[name], act)
        nd = np.where(prune, np.nan, depth - 1 - red)

        child_path = np.where(node_path[parent] == "", move, node_path[parent] + "/" + move)
        child_key = node_key[parent] + np.asarray([bytes([3 + k]) for k in range(64)], dtype=object)[np.minimum(i, 63)]
        sel = keep
        emit(child_path[sel], ply + 1, (i + 1)[sel].astype(float), depth[sel].astype(float), nd[sel],
             np.where(reduce, red, np.nan)[sel], act[sel], child_key[sel], False)
        rs = sel & research
        emit(child_path[rs], ply + 1, (i + 1)[rs].astype(float), depth[rs].astype(float), (depth - 1)[rs].astype(float),
             np.zeros(rs.sum()), np.full(rs.sum(), acts_idx["LMR-RESEARCH"]), child_key[rs] + b"\x01", False)

        # Null-move probe, decided before the moves (mn 0), its subtree searched shallower.
        probe = (node_depth >= profile.null_min_depth) & (_unit(_mix(node_hash ^ np.uint64(11))) < 0.4)
        null_path = np.where(node_path == "", "0000", node_path + "/0000")
        null_depth = node_depth - profile.null_reduction
        emit(null_path[probe], ply + 1, np.zeros(probe.sum()), node_depth[probe].astype(float),
             null_depth[probe].astype(float), np.full(probe.sum(), np.nan), np.full(probe.sum(), acts_idx["NMP"]),
             node_key[probe] + b"\x02", False)

        searched = sel & ~prune & (np.where(research, depth - 1, nd) >= 1)
        nulls = probe & (null_depth >= 1)
        node_hash = np.concatenate([child_hash[searched], _mix(node_hash[nulls] ^ np.uint64(13))])
        node_depth = np.concatenate([np.where(research, depth - 1, nd)[searched].astype(np.int64), null_depth[nulls]])
        node_path = np.concatenate([child_path[searched], null_path[nulls]])
        node_key = np.concatenate([child_key[searched], node_key[nulls] + b"\x02"])
        ply += 1

    key = np.concatenate(out["key"])
    order = np.argsort(key.astype(bytes), kind="stable")
    act_code = np.concatenate(out["act"])[order]
    is_result = np.concatenate(out["result"])[order]
    path = np.concatenate(out["path"])[order]
    n = len(path)
    acts = pd.Categorical.from_codes(act_code, categories=_ACTS)
    kinds = pd.Categorical(pd.Series(acts).map(_KIND).astype(object), categories=sorted(set(_KIND.values())))
    return pd.DataFrame(
        {
            "engine": pd.Categorical([profile.engine] * n),
            "search": np.zeros(n, dtype=np.int32),
            "position": pd.Categorical([position] * n),
            "fen": pd.Categorical(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"] * n),
            "iter": np.full(n, root_depth, dtype=np.int16),
            "seq": np.arange(n, dtype=np.int64),
            "tag": pd.Categorical.from_codes(is_result.astype(np.int8), categories=["MOVE", "RESULT"]),
            "path": pd.Series(path, dtype="str"),
            "ply": np.concatenate(out["ply"])[order],
            "mn": pd.array(np.concatenate(out["mn"])[order], dtype="Float64").astype("Int16"),
            "depth": np.concatenate(out["depth"])[order].astype(np.float32),
            "new_depth": np.concatenate(out["nd"])[order].astype(np.float32),
            "reduction": np.concatenate(out["red"])[order].astype(np.float32),
            "act": acts,
            "kind": kinds,
        }
    ).pipe(with_visit_columns)


def with_visit_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``line`` (seq + 2: after a header line) and the parser's ``visit`` / ``parent_visit`` columns
    (docs/TREEDUMP_FORMAT.md §3.1) of one iteration's records, as ``treediff parse`` would write them."""
    frame = frame.copy()
    is_result = (frame["tag"] == "RESULT").to_numpy()
    path = frame["path"].to_numpy(dtype=object)
    parent = np.asarray([p.rpartition("/")[0] for p in path], dtype=object)
    node, _ = pd.factorize(np.where(is_result, path, parent))
    visit, parent_visit = visit_numbers(node.astype(np.int64), is_result, frame["depth"].to_numpy(dtype=np.float64))
    frame["line"] = frame["seq"].to_numpy(dtype=np.int64) + 2
    frame["visit"] = pd.arrays.IntegerArray(visit.astype(np.int32), ~is_result)
    frame["parent_visit"] = pd.arrays.IntegerArray(parent_visit.astype(np.int32), is_result)
    return frame


def synthetic_pair(records: int, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Two profiles on the same tree and root depth, cut to ``records`` records each.

    The root depth is the smallest at which both profiles have at least
    ``records`` records.  Both sides keep the subtrees of the same first root
    moves (in the typhoon-like side's order), as few as give each side
    ``records`` records, and then the first ``records`` records: like two
    iterations stopped by the clock at about the same place.  Returns
    (typhoon-like records, stockfish-like records, root depth).
    """
    depth = 2
    while True:
        a = synthetic_tree(TYPHOON_LIKE, depth, seed)
        b = synthetic_tree(STOCKFISH_LIKE, depth, seed)
        if (len(a) >= records and len(b) >= records) or depth >= 40:
            break
        depth += 1
    root_a = a["path"].str.split("/").str[0].to_numpy(dtype=object)
    root_b = b["path"].str.split("/").str[0].to_numpy(dtype=object)
    order = list(dict.fromkeys(m for m in root_a if m))  # A's root moves in search order
    order += [m for m in dict.fromkeys(root_b) if m and m not in set(order)]
    count_a = pd.Series(root_a).value_counts()
    count_b = pd.Series(root_b).value_counts()
    kept: set[str] = {""}
    for move in order:
        if count_a.reindex(list(kept)).fillna(0).sum() >= records and count_b.reindex(list(kept)).fillna(0).sum() >= records:
            break
        kept.add(move)
    a = a[np.isin(root_a, list(kept))]
    b = b[np.isin(root_b, list(kept))]
    # Visits numbered again on what is kept, as the parser would on a trace stopped there.
    a = with_visit_columns(a.iloc[:records].reset_index(drop=True))
    b = with_visit_columns(b.iloc[:records].reset_index(drop=True))
    return a, b, depth

"""typhoon_py: a small pure-Python alpha-beta engine that writes TREEDUMP traces.

Its profiles emulate typhoon's, Stockfish's and Crafty's pruning and
reduction mechanisms and write each engine's TREEDUMP dialect; they are
emulations, not those engines.  See docs/ENGINE.md.
"""
from typhoon_py.engine import EpdPosition, make_config, read_epd, run_batch, run_search
from typhoon_py.profiles import ONE_PLY, PROFILES, LmrPolicy, Profile, PruneScope, get_profile
from typhoon_py.search import SearchConfig, SearchOutcome, Searcher

__all__ = [
    "EpdPosition", "LmrPolicy", "ONE_PLY", "PROFILES", "Profile", "PruneScope", "SearchConfig",
    "SearchOutcome", "Searcher", "get_profile", "make_config", "read_epd", "run_batch", "run_search",
]

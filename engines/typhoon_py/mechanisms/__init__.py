"""Each profile's prune, reduce, extend and re-search rules, one module per emulated engine.

* :mod:`~typhoon_py.mechanisms.base`: the hooks the generic search asks, with plain-PVS defaults;
* :mod:`~typhoon_py.mechanisms.typhoon`, :mod:`~typhoon_py.mechanisms.stockfish`,
  :mod:`~typhoon_py.mechanisms.crafty`: one engine's rules each;
* :mod:`~typhoon_py.mechanisms.see_history`: ``--lmr-policy see-history``, which replaces
  any profile's reduction and re-search rules.

``--prune-scope`` and the check extension are the same for every profile and
stay in the search.
"""
from __future__ import annotations

from typhoon_py.mechanisms.base import SKIP, Mechanisms, Node
from typhoon_py.mechanisms.crafty import CraftyMechanisms
from typhoon_py.mechanisms.see_history import SeeHistoryLmr
from typhoon_py.mechanisms.stockfish import StockfishMechanisms
from typhoon_py.mechanisms.typhoon import TyphoonMechanisms
from typhoon_py.profiles import LmrPolicy

#: The mechanisms class of each profile, by profile name.
MECHANISMS: dict[str, type[Mechanisms]] = {
    "typhoon": TyphoonMechanisms,
    "stockfish": StockfishMechanisms,
    "crafty": CraftyMechanisms,
}

_SEE_HISTORY: dict[type, type] = {}


def mechanisms_class(profile_name: str, lmr_policy: LmrPolicy = LmrPolicy.PROFILE) -> type[Mechanisms]:
    """The class answering the search's questions for this profile and LMR policy."""
    cls = MECHANISMS[profile_name]
    if lmr_policy == LmrPolicy.SEE_HISTORY:
        mixed = _SEE_HISTORY.get(cls)
        if mixed is None:
            name = "SeeHistory" + cls.__name__
            namespace = {"__module__": __name__, "__slots__": ()}
            mixed = _SEE_HISTORY[cls] = type(name, (SeeHistoryLmr, cls), namespace)
        cls = mixed
    return cls


def make_mechanisms(config, searcher) -> Mechanisms:
    """The mechanisms object for one search (``config`` is a ``SearchConfig``)."""
    return mechanisms_class(config.profile.name, config.lmr_policy)(searcher)


__all__ = ["MECHANISMS", "SKIP", "CraftyMechanisms", "Mechanisms", "Node", "SeeHistoryLmr",
           "StockfishMechanisms", "TyphoonMechanisms", "make_mechanisms", "mechanisms_class"]

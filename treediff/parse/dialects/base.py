"""What a dialect is: a small declarative description of one engine's TREEDUMP."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

from treediff.model.taxonomy import Kind


class Notation(str, enum.Enum):
    """How moves are written in ``path=``."""

    UCI = "uci"      #: ``e2e4``, ``e7e8q``, castling ``e1g1``
    COORD = "coord"  #: coordinates with upper-case promotion: ``e7e8Q``
    SAN = "san"      #: ``Nf3``, ``exd5``, ``O-O``, ``e8=Q``, optional ``+``/``#``


@dataclass(frozen=True)
class Dialect:
    """One engine's TREEDUMP dialect.

    ``unit`` is the default number of depth ticks per ply (a header's
    ``unit=`` overrides it).  ``acts`` maps the raw ``act=`` vocabulary to the
    shared :class:`~treediff.model.schema.Kind` taxonomy; an act not listed becomes
    ``Kind.OTHER`` with a warning.
    """

    name: str
    unit: int
    notation: Notation
    null_moves: tuple[str, ...]
    acts: Mapping[str, Kind]
    context_key: str = "ctx"
    description: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def kind_of(self, act: str) -> Kind:
        """The kind of one raw act (``Kind.OTHER`` if the dialect does not know it)."""
        return self.acts.get(act, Kind.OTHER)

    def kind_table(self) -> dict[str, str]:
        """The act vocabulary as strings: raw act -> kind value (a fresh dict; an act not in it is OTHER)."""
        return {act: kind.value for act, kind in self.acts.items()}

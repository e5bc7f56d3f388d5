"""Invented names for fictional entities: syllable compounds, unique within one control split and never a name of
the template engine's pools of real names."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import date, timedelta

from agents.template.values import NameValue, Value
from clkt.domains import import_side
from clkt.errors import SnapshotError

__all__ = ["NAMES_PER_POOL", "WORDS", "Namer", "day_in"]

# syllables that read as a name in English, French and Spanish alike (and transliterate cleanly)
_ONSETS = ("b", "br", "d", "dr", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "tr", "v", "z", "th", "qu", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ia", "ou")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "nd", "rt", "x", "m")
_PLACE_ENDS = ("holm", "vale", "mora", "stad", "brook", "ford", "ria", "mont", "burg", "port", "ton", "dell")
WORDS = (
    "Amber", "Harbor", "Lantern", "Silver", "Hollow", "Winter", "Ember", "River", "Glass", "Velvet", "Paper",
    "Northern", "Quiet", "Copper", "Marble", "Signal", "Orchard", "Distant", "Crimson", "Static", "Tide",
    "Meadow", "Falcon", "Echo", "Mirror", "Cinder", "Willow", "Neon", "Harvest", "Compass", "Ivory", "Thunder",
)
_COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW", "NNE", "ENE", "ESE", "SSE", "SSW", "WSW", "WNW", "NNW")
NAMES_PER_POOL = 12  # fictional distractor candidates of each kind per entity

# every registered domain's pools of real names (its folder's `pools.py`: `POOLS`)
_REAL: frozenset[str] = frozenset(
    n.casefold() for module in import_side("pools") for pool in getattr(module, "POOLS", ()) for n in pool
)


def day_in(rng: random.Random, start: date, end: date) -> date:
    """A day of [start, end) (`start` when the span is empty)."""
    span = max((end - start).days, 1)
    return start + timedelta(days=rng.randrange(span))


class Namer:
    """Invented names, unique within one snapshot's control split and never one of the real pools'."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _syllable(self) -> str:
        r = self.rng
        return r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS)

    def _fresh(self, make: Callable[[], str]) -> str:
        for _ in range(1000):
            name = make()
            if name.casefold() not in self.used and name.casefold() not in _REAL:
                self.used.add(name.casefold())
                return name
        raise SnapshotError("control split: could not invent a fresh name")  # pragma: no cover

    def word(self, n: int = 2) -> str:
        return "".join(self._syllable() for _ in range(n)).capitalize()

    def place(self) -> str:
        return self._fresh(lambda: (self._syllable() + self.rng.choice(_PLACE_ENDS)).capitalize())

    def person(self) -> str:
        return self._fresh(lambda: f"{self.word(2)} {self.word(2)}")

    def suffixed(self, suffixes: Sequence[str], *, place: bool = True) -> str:
        return self._fresh(
            lambda: f"{(self._syllable() + self.rng.choice(_PLACE_ENDS)).capitalize() if place else self.word(2)} "
            f"{self.rng.choice(suffixes)}"
        )

    def title(self) -> str:
        r = self.rng
        return self._fresh(lambda: f"{r.choice(WORDS)} {r.choice(WORDS)}" if r.random() < 0.6 else f"The {r.choice(WORDS)} of {self.place()}")

    def quake_place(self, country: str) -> str:
        r = self.rng
        return self._fresh(lambda: f"{r.randint(3, 60)} km {r.choice(_COMPASS)} of {self.place()}, {country}")

    def pool(self, make: Callable[[], str], n: int = NAMES_PER_POOL) -> tuple[Value, ...]:
        return tuple(NameValue(make()) for _ in range(n))

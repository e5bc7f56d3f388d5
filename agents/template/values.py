"""Typed option values: one value renders into each language with the document's own formatter.

Because options are typed values rather than strings, a question's four options can be rendered into any
language with the same order and the same digits as the document sentence of that language.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from clkt.documents.formatting import Formatter
from clkt.outputs import normalize

__all__ = [
    "CoordValue", "DateValue", "FloatUnit", "FloatValue", "IntUnit", "IntValue", "LabelValue", "NameValue", "ScoreValue",
    "Value", "same",
]


IntUnit = Literal["count", "minutes", "usd"]
FloatUnit = Literal["magnitude", "km", "mmi"]


@dataclass(frozen=True, slots=True)
class DateValue:
    d: date

    def render(self, fmt: Formatter) -> str:
        return fmt.date(self.d)


@dataclass(frozen=True, slots=True)
class ScoreValue:
    home: int
    away: int

    def render(self, fmt: Formatter) -> str:
        return fmt.score(self.home, self.away)


@dataclass(frozen=True, slots=True)
class IntValue:
    n: int
    unit: IntUnit = "count"

    def render(self, fmt: Formatter) -> str:
        if self.unit == "minutes":
            return fmt.minutes(self.n)
        if self.unit == "usd":
            return fmt.usd(self.n)
        return fmt.integer(self.n)


@dataclass(frozen=True, slots=True)
class FloatValue:
    x: float
    unit: FloatUnit = "magnitude"

    def render(self, fmt: Formatter) -> str:
        if self.unit == "km":
            return fmt.km(self.x)
        if self.unit == "mmi":
            return fmt.intensity(self.x)
        return fmt.magnitude(self.x)


@dataclass(frozen=True, slots=True)
class CoordValue:
    """A signed latitude or longitude in degrees; renders with its hemisphere ("34.213° N", "北緯34.213度")."""

    x: float
    axis: Literal["lat", "lon"] = "lat"

    def render(self, fmt: Formatter) -> str:
        return fmt.latitude(self.x) if self.axis == "lat" else fmt.longitude(self.x)


@dataclass(frozen=True, slots=True)
class NameValue:
    """A proper name: identical in every language."""

    name: str

    def render(self, fmt: Formatter) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class LabelValue:
    """A controlled-vocabulary value (genre, alert level, release type...), translated per language."""

    category: str
    key: str

    def render(self, fmt: Formatter) -> str:
        return fmt.label(self.category, self.key)


Value = DateValue | ScoreValue | IntValue | FloatValue | CoordValue | NameValue | LabelValue


def same(a: Value, b: Value, fmt: Formatter) -> bool:
    """Whether two values read the same in `fmt`'s language (what a reader would call equal)."""
    return normalize(a.render(fmt)) == normalize(b.render(fmt))

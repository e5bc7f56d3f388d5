"""Value formatters per language, shared by the document renderer and the question templates.

A question's answer string is produced by the same `Formatter` method as the document sentence that states
it, so the answer is always a verbatim substring of the document of that language. Digits never change
across languages (grouping and decimal marks do), proper names are never translated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from clkt.documents.labels import label_text
from clkt.errors import UserError

__all__ = ["LANGUAGES", "NARROW_NBSP", "Formatter", "formatter"]

LANGUAGES: tuple[str, ...] = ("en", "ja", "zh", "fr", "es")
NARROW_NBSP = "\u202f"  # French digit grouping

_MONTHS: dict[str, tuple[str, ...]] = {
    "en": (
        "January", "February", "March", "April", "May", "June",
        "July", "August", "September", "October", "November", "December",
    ),
    "fr": (
        "janvier", "février", "mars", "avril", "mai", "juin",
        "juillet", "août", "septembre", "octobre", "novembre", "décembre",
    ),
    "es": (
        "enero", "febrero", "marzo", "abril", "mayo", "junio",
        "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre",
    ),
}
# hemisphere words: (north, south, east, west); ja/zh write them before the number, in words
_HEMISPHERES: dict[str, tuple[str, str, str, str]] = {
    "en": ("N", "S", "E", "W"),
    "ja": ("北緯", "南緯", "東経", "西経"),
    "zh": ("北纬", "南纬", "东经", "西经"),
    "fr": ("N", "S", "E", "O"),
    "es": ("N", "S", "E", "O"),
}


@dataclass(frozen=True, slots=True)
class Formatter:
    """Formats typed values the one way language `lang` writes them in documents and options."""

    lang: str

    # -- numbers ---------------------------------------------------------------------------------------
    def integer(self, n: int) -> str:
        sign = "-" if n < 0 else ""
        digits = str(abs(n))
        if self.lang == "es" and len(digits) <= 4:
            return sign + digits  # Spanish does not group four-digit numbers
        groups: list[str] = []
        while digits:
            groups.insert(0, digits[-3:])
            digits = digits[:-3]
        sep = {"fr": NARROW_NBSP, "es": "."}.get(self.lang, ",")
        return sign + sep.join(groups)

    def decimal(self, x: float, places: int = 1) -> str:
        text = f"{x:.{places}f}"
        if text.startswith("-") and float(text) == 0:
            text = text[1:]
        return text.replace(".", ",") if self.lang in ("fr", "es") else text

    def magnitude(self, x: float) -> str:
        return self.decimal(x, 1)

    def intensity(self, x: float) -> str:
        """A (Modified Mercalli) intensity as the USGS estimates it: one decimal, "8.8" / "8,8"."""
        return self.decimal(x, 1)

    def km(self, x: float) -> str:
        return f"{self.decimal(x, 1)} km"

    def coordinate(self, x: float) -> str:
        return self.decimal(x, 3)

    def latitude(self, lat: float) -> str:
        """A signed latitude with its hemisphere: "34.213° N", "北緯34.213度", "34,213° S"."""
        north, south, _, _ = _HEMISPHERES[self.lang]
        return self._hemisphere(lat, north if lat >= 0 else south)

    def longitude(self, lon: float) -> str:
        """A signed longitude with its hemisphere: "118.537° W", "西経118.537度", "118,537° O"."""
        _, _, east, west = _HEMISPHERES[self.lang]
        return self._hemisphere(lon, east if lon >= 0 else west)

    def _hemisphere(self, x: float, word: str) -> str:
        number = self.coordinate(abs(x))
        return f"{word}{number}度" if self.lang in ("ja", "zh") else f"{number}° {word}"

    def minutes(self, n: int) -> str:
        unit = {"en": " minutes", "fr": " minutes", "es": " minutos", "ja": "分", "zh": "分钟"}[self.lang]
        return f"{self.integer(n)}{unit}"

    def usd(self, n: int) -> str:
        num = self.integer(n)
        if self.lang == "en":
            return f"US${num}"
        return {"fr": f"{num} dollars US", "es": f"{num} USD", "ja": f"{num}米ドル", "zh": f"{num}美元"}[self.lang]

    def score(self, home: int, away: int) -> str:
        return f"{home}–{away}"

    # -- dates -----------------------------------------------------------------------------------------
    def date(self, d: date) -> str:
        if self.lang in ("ja", "zh"):
            return f"{d.year}年{d.month}月{d.day}日"
        month = _MONTHS[self.lang][d.month - 1]
        if self.lang == "fr":
            day = "1er" if d.day == 1 else str(d.day)
            return f"{day} {month} {d.year}"
        if self.lang == "es":
            return f"{d.day} de {month} de {d.year}"
        return f"{d.day} {month} {d.year}"

    @staticmethod
    def utc(dt: datetime) -> datetime:
        """`dt` in UTC (naive datetimes are taken as UTC)."""
        return dt.astimezone(UTC) if dt.tzinfo is not None else dt.replace(tzinfo=UTC)

    def clock(self, dt: datetime) -> str:
        dt = self.utc(dt)
        return f"{dt.hour:02d}:{dt.minute:02d}"

    def datetime_utc(self, dt: datetime) -> str:
        """Date and minute in UTC; always starts with `date(utc(dt).date())`."""
        day = self.date(self.utc(dt).date())
        sep = {"en": ", ", "fr": " à ", "es": " a las ", "ja": " ", "zh": " "}[self.lang]
        return f"{day}{sep}{self.clock(dt)} UTC"

    # -- words -----------------------------------------------------------------------------------------
    def label(self, category: str, value: str) -> str:
        """A controlled-vocabulary value (alert level, genre, release type...) in this language."""
        return label_text(category, value, self.lang)

    def join(self, items: list[str]) -> str:
        """A list of names, e.g. 'A, B and C'."""
        if not items:
            return ""
        if len(items) == 1:
            return items[0]
        if self.lang in ("ja", "zh"):
            return "、".join(items)
        last = {"en": " and ", "fr": " et ", "es": " y "}[self.lang]
        return ", ".join(items[:-1]) + last + items[-1]

    def quote(self, name: str) -> str:
        """A title as written in running text."""
        if self.lang in ("ja", "zh"):
            return f"「{name}」" if self.lang == "ja" else f"《{name}》"
        if self.lang == "fr":
            return f"« {name} »"
        if self.lang == "es":
            return f"«{name}»"
        return f"“{name}”"


_FORMATTERS = {lang: Formatter(lang) for lang in LANGUAGES}


def formatter(lang: str) -> Formatter:
    try:
        return _FORMATTERS[lang]
    except KeyError:
        raise UserError(f"unsupported document language {lang!r}; supported: {', '.join(LANGUAGES)}") from None

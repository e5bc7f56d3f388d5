"""Dates in short answers, in each language's conventions, as partial dates (a year, a month of a year, a day).

Read (`find_dates`): ISO (`2024-03-15`, `2024-03`), `2024/3/15`; numeric day-first `15/03/2024` and `15.03.2024`
(fr, es; en too when the first number is over 12) and month-first `3/15/2024` (en, the US convention); month
names in full and abbreviated (en *March 15, 2024* / *15 March 2024*; fr *15 mars 2024*, *1er mars*; es *15 de
marzo de 2024*); `2024年3月15日` (ja, zh; 号 too), with CJK numerals (`二〇二四年三月十五日`) and the Japanese eras
(令和, 平成, 昭和; 元年 is year 1); a lone year (1000-2999) where no fuller date is written.

`matches(gold, answer)`: every part the gold has is in the answer and the same; an answer more precise than the
gold (*March 2024* for *2024*) is right, a less precise one (*2024* for *2024-03-15*) is not.

Hand-written rather than `dateparser`: it fills the parts a text leaves out from today's date (a year-only answer
would become a day, a different one each day), so it is neither deterministic nor able to say what was stated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clkt.openqa.numbers import cjk_to_digits
from clkt.openqa.text import fold

__all__ = ["PartialDate", "find_dates", "matches", "parse_gold_date"]


@dataclass(frozen=True, slots=True)
class PartialDate:
    year: int | None
    month: int | None = None
    day: int | None = None

    def valid(self) -> bool:
        return (self.month is None or 1 <= self.month <= 12) and (self.day is None or 1 <= self.day <= 31)


def matches(gold: PartialDate, answer: PartialDate) -> bool:
    parts = (("year", gold.year), ("month", gold.month), ("day", gold.day))
    return all(value is None or getattr(answer, name) == value for name, value in parts)


_MONTHS: dict[str, dict[str, int]] = {
    "en": {"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
           "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9,
           "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12},
    "fr": {"janvier": 1, "janv": 1, "fevrier": 2, "fevr": 2, "fev": 2, "mars": 3, "avril": 4, "avr": 4, "mai": 5,
           "juin": 6, "juillet": 7, "juil": 7, "aout": 8, "septembre": 9, "sept": 9, "octobre": 10, "oct": 10,
           "novembre": 11, "nov": 11, "decembre": 12, "dec": 12},
    "es": {"enero": 1, "ene": 1, "febrero": 2, "feb": 2, "marzo": 3, "mar": 3, "abril": 4, "abr": 4, "mayo": 5,
           "junio": 6, "jun": 6, "julio": 7, "jul": 7, "agosto": 8, "ago": 8, "septiembre": 9, "setiembre": 9,
           "sept": 9, "sep": 9, "octubre": 10, "oct": 10, "noviembre": 11, "nov": 11, "diciembre": 12, "dic": 12},
}
_ERAS = {"令和": 2018, "平成": 1988, "昭和": 1925}
_DAY = r"(\d{1,2})(?:st|nd|rd|th|er|eme|º|°|o)?"
_YEAR = r"(\d{4})"


def _patterns(lang: str) -> list[tuple[re.Pattern[str], str]]:
    """(pattern, the order of its groups: y m d, with M for a month name)."""
    names = _MONTHS.get(lang, _MONTHS["en"])
    month = "(" + "|".join(sorted(names, key=len, reverse=True)) + r")\.?"
    of = r"\s+(?:de\s+|del\s+|of\s+)?"  # es "15 de marzo de 2024", en "5th of September"
    numeric_dm = ([(rf"(?<!\d)(\d{{1,2}})[/.](\d{{1,2}})[/.]{_YEAR}(?!\d)", "mdy")] if lang == "en"
                  else [(rf"(?<!\d)(\d{{1,2}})[/.](\d{{1,2}})[/.]{_YEAR}(?!\d)", "dmy")])
    return [(re.compile(p), order) for p, order in [
        (rf"(?<!\d){_YEAR}\s*年\s*(\d{{1,2}})\s*月\s*(\d{{1,2}})\s*[日号號]?", "ymd"),
        (rf"(?<!\d){_YEAR}\s*年\s*(\d{{1,2}})\s*月", "ym"),
        (r"(?<!\d)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]", "md"),
        (rf"(?<!\d){_YEAR}-(\d{{1,2}})-(\d{{1,2}})(?!\d)", "ymd"),
        (rf"(?<!\d){_YEAR}/(\d{{1,2}})/(\d{{1,2}})(?!\d)", "ymd"),
        (rf"(?<!\d){_YEAR}-(\d{{1,2}})(?![\d-])", "ym"),
        *numeric_dm,
        (rf"(?<!\d){_DAY}{of}{month}(?:,?{of}{_YEAR})?(?![\w])", "dMy"),
        (rf"\b{month}\s+{_DAY}(?:,?\s+{_YEAR})?(?![\w])", "Mdy"),
        (rf"\b{month}(?:,?{of}){_YEAR}(?!\d)", "My"),
        (rf"(?<!\d){_YEAR}\s*年?(?!\d)", "y"),
    ]]


def _date_of(groups: tuple[str | None, ...], order: str, names: dict[str, int]) -> PartialDate | None:
    parts: dict[str, int | None] = {"y": None, "m": None, "d": None}
    for key, value in zip(order, groups, strict=True):
        if value is None:
            continue
        parts["m" if key == "M" else key] = names[value] if key == "M" else int(value)
    if order == "mdy" and parts["m"] is not None and parts["m"] > 12:  # en "15/03/2024": day first after all
        parts["m"], parts["d"] = parts["d"], parts["m"]
    year = parts["y"]
    if year is not None and not 1000 <= year <= 2999:
        return None
    date = PartialDate(year=year, month=parts["m"], day=parts["d"])
    return date if date.valid() else None


def _eras(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        n = 1 if m.group(2) == "元" else int(m.group(2))
        return f"{_ERAS[m.group(1)] + n}年"

    return re.sub(r"(令和|平成|昭和)\s*(元|\d{1,2})\s*年", repl, text)


def find_dates(text: str, lang: str) -> list[PartialDate]:
    """Every date `text` states, in reading order; a span read once (the fullest pattern first)."""
    folded = fold(text)
    if lang in ("ja", "zh"):
        folded = _eras(cjk_to_digits(folded))
    names = _MONTHS.get(lang, _MONTHS["en"])
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, PartialDate]] = []
    for pattern, order in _patterns(lang):
        for m in pattern.finditer(folded):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            date = _date_of(m.groups(), order, names)
            if date is not None:
                taken.append((m.start(), m.end()))
                found.append((m.start(), date))
    return [d for _, d in sorted(found, key=lambda t: t[0])]


def parse_gold_date(text: str, lang: str) -> PartialDate | None:
    """The one date a gold answer states, or None (none, or several)."""
    found = set(find_dates(text, lang))
    return found.pop() if len(found) == 1 else None

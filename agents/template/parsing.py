"""Reading numbers, dates and scores back out of free text in en, ja, zh, fr and es.

Used by the fact-matcher judge on probe responses. Text is NFKC-normalised first, so full-width digits
("２０１４年１２月２９日") and full-width punctuation read like their ASCII forms.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date

__all__ = ["Number", "digits", "find_dates", "find_numbers", "find_scores", "prepare"]

_MONTHS: dict[str, int] = {}
for _i, _names in enumerate(
    [
        ("january", "jan", "janvier", "janv", "enero", "ene"),
        ("february", "feb", "février", "fevrier", "févr", "fev", "febrero"),
        ("march", "mar", "mars", "marzo"),
        ("april", "apr", "avril", "avr", "abril", "abr"),
        ("may", "mai", "mayo"),
        ("june", "jun", "juin", "junio"),
        ("july", "jul", "juillet", "juil", "julio"),
        ("august", "aug", "août", "aout", "agosto", "ago"),
        ("september", "sep", "sept", "septembre", "septiembre", "setiembre"),
        ("october", "oct", "octobre", "octubre"),
        ("november", "nov", "novembre", "noviembre"),
        ("december", "dec", "décembre", "decembre", "déc", "diciembre", "dic"),
    ],
    1,
):
    for _n in _names:
        _MONTHS[_n] = _i

_MONTH_RE = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th|er|º|°)?"
_DATE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "ymd"),
    (re.compile(r"(?<![\d./-])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d])"), "ymd"),
    (re.compile(rf"(?<![\w]){_DAY}\.?\s+(?:de\s+)?({_MONTH_RE})\.?,?\s+(?:de(?:l)?\s+)?(\d{{4}})(?!\d)"), "dmy_name"),
    (re.compile(rf"(?<![\w])({_MONTH_RE})\.?\s+{_DAY},?\s+(\d{{4}})(?!\d)"), "mdy_name"),
    (re.compile(r"(?<![\d./-])(\d{1,2})[./-](\d{1,2})[./-](\d{4})(?![\d])"), "numeric"),
)


def prepare(text: str) -> str:
    """NFKC (full-width digits and punctuation become ASCII), dashes unified, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text)
    t = re.sub(r"[\u2010-\u2015\u2212\uff0d]", "–", t)
    return re.sub(r"\s+", " ", t)


def _mk(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def find_dates(text: str) -> set[date]:
    """Full year-month-day dates stated in `text` (bare years and month-years are not dates)."""
    t = prepare(text).casefold().replace("–", "-")
    out: set[date] = set()
    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(t):
            g = m.groups()
            found: list[date | None] = []
            if kind == "ymd":
                found.append(_mk(int(g[0]), int(g[1]), int(g[2])))
            elif kind == "dmy_name":
                found.append(_mk(int(g[2]), _MONTHS[g[1]], int(g[0])))
            elif kind == "mdy_name":
                found.append(_mk(int(g[2]), _MONTHS[g[0]], int(g[1])))
            else:  # d/m/y or m/d/y: only when unambiguous (or both readings agree)
                a, b, y = int(g[0]), int(g[1]), int(g[2])
                readings = {x for x in (_mk(y, b, a), _mk(y, a, b)) if x is not None}
                if len(readings) == 1:
                    found.append(readings.pop())
            out.update(x for x in found if x is not None)
    return out


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    start: int
    end: int


_NUM = re.compile(r"(?<![\d.,])\d+(?:[,.]\d{3})*(?:[.,]\d+)?(?!\d)")
_NUM_FR = re.compile(r"(?<![\d.,])\d+(?:[,. ]\d{3})*(?:[.,]\d+)?(?!\d)")  # French groups with (narrow) spaces
_MULTIPLIERS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"^\s*(?:billion|bn|milliards?|mil millones)\b"), 1e9),
    (re.compile(r"^\s*(?:million|millions|millones|millón|millon|mln|m)\b"), 1e6),
    (re.compile(r"^\s*千万"), 1e7),
    (re.compile(r"^\s*百万"), 1e6),
    (re.compile(r"^\s*[億亿]"), 1e8),
    (re.compile(r"^\s*万"), 1e4),
)


def _value(raw: str, lang: str) -> float | None:
    decimal_sep = "," if lang in ("fr", "es") else "."
    seps = [(i, c) for i, c in enumerate(raw) if not c.isdigit()]
    if not seps:
        return float(raw)
    last_i, last_c = seps[-1]
    tail = raw[last_i + 1 :]
    is_decimal = len(tail) != 3 or (last_c == decimal_sep and sum(1 for _, c in seps if c == last_c) == 1)
    if last_c == " ":
        is_decimal = False
    head = raw[:last_i] if is_decimal else raw
    digits_only = re.sub(r"\D", "", head)
    if not digits_only:
        return None
    return float(f"{digits_only}.{tail}") if is_decimal else float(digits_only)


def find_numbers(text: str, lang: str, *, multipliers: bool = False) -> list[Number]:
    """Numbers with their positions in `prepare(text)`; grouping and decimal marks read per language."""
    t = prepare(text)
    out: list[Number] = []
    for m in (_NUM_FR if lang == "fr" else _NUM).finditer(t):
        raw = m.group(0).rstrip(" ")
        v = _value(raw, lang)
        if v is None:
            continue
        end = m.start() + len(raw)
        if multipliers:
            rest = t[end : end + 16].casefold()
            for pattern, factor in _MULTIPLIERS:
                mm = pattern.match(rest)
                if mm:
                    v *= factor
                    end += mm.end()
                    break
        out.append(Number(value=v, start=m.start(), end=end))
    return out


_SCORE = re.compile(
    r"(?<!\d)(?<!\d[.,:/–-])(\d{1,3})\s*(?:(–|-|:|対|比)|\s(?:to|à|a)\s)\s*(\d{1,3})"
    r"(?!\d|[.,:/–-]\d|\s*(?:utc|gmt|am|pm|h\b|時|点))",
    re.IGNORECASE,
)


def find_scores(text: str) -> set[tuple[int, int]]:
    """Score-like pairs: "3-1", "3–1", "3:1", "3 to 1", "3対1", "3比1" (clock times are not scores)."""
    out: set[tuple[int, int]] = set()
    for m in _SCORE.finditer(prepare(text)):
        a, sep, b = m.group(1), m.group(2), m.group(3)
        if sep == ":" and len(b) == 2 and b.startswith("0"):
            continue  # 20:00 is a time
        out.add((int(a), int(b)))
    return out


def digits(text: str) -> str:
    """The ASCII digits of `text`, in order (for "numbers agree across languages" checks)."""
    return re.sub(r"\D", "", unicodedata.normalize("NFKC", text))

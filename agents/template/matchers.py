"""The fact matchers of the judge: does a probe response state one concrete fact of an entity?

A `Fact` is a label and a matcher over a response in one language: a number in its context (final score,
runtime, magnitude, depth, attendance, deaths...), a full year-month-day date, a participant's name, a track
title, a label. `FactList` collects an entity's facts (each kind's `judge_facts`, `agents.template.domains`),
leaving out what the entity's own name already gives away; `agents.template.judge` runs them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from agents.template.parsing import find_dates, find_numbers, find_scores, prepare
from clkt.outputs import normalize

__all__ = [
    "CONTEXT",
    "Fact",
    "FactList",
    "contains_name",
    "date_fact",
    "depth_fact",
    "in_name",
    "label_fact",
    "magnitude_fact",
    "money_fact",
    "name_fact",
    "number_fact",
    "runtime_fact",
    "score_fact",
    "title_fact",
]

# Context words (all five languages, casefolded) that must sit near a number for it to count.
CONTEXT: dict[str, tuple[str, ...]] = {
    "spectators": ("spectator", "attendance", "crowd", "fans", "観客", "観衆", "观众", "spectateur", "affluence",
                   "espectador", "asistencia", "público"),
    "felt": ("felt", "report", "有感", "報告", "报告", "ressenti", "signalement", "sentido", "reporte"),
    "deaths": ("dead", "death", "died", "killed", "fatalit", "死者", "死亡", "犠牲", "遇难", "罹难", "mort",
               "décès", "tué", "muert", "fallecid", "víctima"),
    "affected": ("affected", "被災", "影響", "影响", "受灾", "touché", "sinistré", "affecté", "afectad",
                 "damnificad"),
    "tracks": ("track", "song", "曲", "首", "titre", "morceau", "chanson", "canci", "pista", "tema"),
    "magnitude": ("magnitude", "magnitud", "mw", "richter", "マグニチュード", "震级", "规模", "級", "级"),
    "depth": ("depth", "deep", "深さ", "深度", "深", "profondeur", "profond", "profundidad"),
    "money": ("$", "usd", "dollar", "ドル", "美元", "dólar"),
}
_WINDOW = 40
_MINUTES = re.compile(r"(\d{1,3})\s*(?:minutes?|mins?|minutos?|分钟|分間|分)(?![a-z])", re.IGNORECASE)
_HOURS = re.compile(
    r"(\d)\s*(?:hours?|hrs?|h|heures?|horas?|時間|小时|小時)\s*(?:and|et|y)?\s*(\d{1,2})\s*(?:minutes?|mins?|minutos?|m|分钟|分)?",
    re.IGNORECASE,
)
_KM = re.compile(r"(\d+(?:[.,]\d+)?)\s*(?:km|kilom|キロ|公里|千米)", re.IGNORECASE)
_LABEL_WORDS = ("label", "レーベル", "厂牌", "唱片", "sello", "discográfica", "maison de disques", "records")
_LABEL_SUFFIX = re.compile(r"\s+(?:records|recordings|music|entertainment|ltd\.?|inc\.?|label)$", re.IGNORECASE)
_LATIN = "A-Za-z0-9À-ÖØ-öø-ÿ"
_QUOTES = ("\"{}\"", "“{}”", "'{}'", "‘{}’", "「{}」", "『{}』", "《{}》", "«{}»", "« {} »")


@dataclass(frozen=True, slots=True)
class Fact:
    """One checkable fact: `label` names it in the verdict; `match(text, lang)` says if `text` states it."""

    label: str
    match: Callable[[str, str], bool]


# -- matchers --------------------------------------------------------------------------------------------
def _near(text: str, start: int, end: int, words: tuple[str, ...]) -> bool:
    window = text[max(0, start - _WINDOW) : end + _WINDOW].casefold()
    return any(w in window for w in words)


def number_fact(label: str, value: float, context: str | tuple[str, ...], *, tol: float = 0.0) -> Fact:
    """`value` (within `tol`) near one of the context words: `CONTEXT[context]`, or the casefolded words given."""
    words = CONTEXT[context] if isinstance(context, str) else context

    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        return any(
            abs(n.value - value) <= tol + 1e-9 and _near(t, n.start, n.end, words)
            for n in find_numbers(text, lang)
        )

    return Fact(label, match)


def money_fact(label: str, value: int) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        return any(
            abs(n.value - value) <= 0.01 * value and _near(t, n.start, n.end, CONTEXT["money"])
            for n in find_numbers(text, lang, multipliers=True)
        )

    return Fact(label, match)


def date_fact(label: str, d: date) -> Fact:
    return Fact(label, lambda text, lang: d in find_dates(text))


def score_fact(home: int, away: int, shown: str) -> Fact:
    return Fact(f"final_score: {shown}", lambda text, lang: bool({(home, away), (away, home)} & find_scores(text)))


def runtime_fact(minutes: int) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        if any(int(m.group(1)) == minutes for m in _MINUTES.finditer(t)):
            return True
        return any(int(m.group(1)) * 60 + int(m.group(2)) == minutes for m in _HOURS.finditer(t))

    return Fact(f"runtime: {minutes} min", match)


def depth_fact(depth_km: float) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        for m in _KM.finditer(t):
            v = float(m.group(1).replace(",", "."))
            if abs(v - depth_km) <= 0.5 and _near(t, m.start(), m.end(), CONTEXT["depth"]):
                return True
        return False

    return Fact(f"depth: {depth_km:.1f} km", match)


def magnitude_fact(mag: float) -> Fact:
    target = round(mag, 1)
    glued = re.compile(r"\bm[wlsb]?\s?(\d(?:[.,]\d)?)(?!\d)", re.IGNORECASE)

    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        if any(abs(float(m.group(1).replace(",", ".")) - target) < 1e-9 for m in glued.finditer(t)):
            return True
        return any(
            abs(n.value - target) < 1e-9 and _near(t, n.start, n.end, CONTEXT["magnitude"])
            for n in find_numbers(text, lang)
        )

    return Fact(f"magnitude: {target}", match)


def contains_name(text: str, name: str) -> bool:
    n = prepare(name).strip()
    if len(n) < 4:
        return False
    t = prepare(text)
    single = " " not in n
    flags = 0 if single else re.IGNORECASE  # one-word names must match their capitalisation
    return re.search(rf"(?<![{_LATIN}]){re.escape(n)}(?![{_LATIN}])", t, flags) is not None


def name_fact(label: str, name: str) -> Fact:
    return Fact(f"{label}: {name}", lambda text, lang: contains_name(text, name))


def title_fact(label: str, title: str) -> Fact:
    """A track title: long multi-word titles anywhere, any title of 3+ characters when quoted."""

    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        if any(q.format(title).casefold() in t.casefold() for q in _QUOTES) and len(title.strip()) >= 3:
            return True
        return len(title.split()) >= 2 and len(title) >= 9 and contains_name(text, title)

    return Fact(f"{label}: {title}", match)


def label_fact(label_name: str) -> Fact:
    short = _LABEL_SUFFIX.sub("", label_name.strip())

    def match(text: str, lang: str) -> bool:
        if contains_name(text, label_name):
            return True
        if short != label_name and len(short) >= 4 and contains_name(text, short):
            return any(w in prepare(text).casefold() for w in _LABEL_WORDS)
        return False

    return Fact(f"label: {label_name}", match)


# -- an entity's facts --------------------------------------------------------------------------------
def in_name(entity_name: str, value: str) -> bool:
    """`value` is part of the entity's own name (or the name part of it): saying it proves nothing."""
    a, b = normalize(value), normalize(entity_name)
    return bool(a) and (a in b or b in a)


class FactList:
    """The checkable facts of one entity, collected by its kind's `judge_facts`, minus what its name gives away."""

    def __init__(self, entity_name: str) -> None:
        self.entity_name = entity_name
        self.name_dates = find_dates(entity_name)
        self.name_numbers = {n.value for n in find_numbers(entity_name, "en")}
        self.facts: list[Fact] = []

    def add(self, fact: Fact) -> None:
        self.facts.append(fact)

    def num(self, label: str, value: float | None, context: str | tuple[str, ...], tol: float = 0.0) -> None:
        """A positive number near one of its context words (`number_fact`)."""
        if value is not None and value > 0 and value not in self.name_numbers:
            self.facts.append(number_fact(f"{label}: {value:g}", value, context, tol=tol))

    def day(self, label: str, d: date) -> None:
        if d not in self.name_dates:
            self.facts.append(date_fact(f"{label}: {d.isoformat()}", d))

    def person(self, label: str, name: str | None) -> None:
        """A name (person, team, country...) that is not part of the entity's own name."""
        if name and not in_name(self.entity_name, name):
            self.facts.append(name_fact(label, name))

"""The deterministic fact matcher: is a probe response evidence that the model already knows the entity?

"Known" when the response states at least one concrete fact of the document: a number in its context (final
score, runtime, magnitude, depth, attendance, deaths...), a full year-month-day date, or a participant's
name that is not part of the entity's own name (director, cast member, opposing team, label, track).
Conservative by design: bare years, the entity's own name and its parts, venues, competitions, genres and
other generic words never count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from agents.template.parsing import find_dates, find_numbers, find_scores, prepare
from clkt.documents.formatting import Formatter
from clkt.documents.movies import MAIN_CAST
from clkt.documents.music import ordered_tracks
from clkt.facts import DisasterFacts, EntityFacts, FilmFacts, MatchFacts, QuakeFacts, ReleaseFacts
from clkt.outputs import KnownVerdict, normalize

__all__ = ["Fact", "facts_of", "judge_response"]

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


def _number_fact(label: str, value: float, context: str, *, tol: float = 0.0) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        return any(
            abs(n.value - value) <= tol + 1e-9 and _near(t, n.start, n.end, CONTEXT[context])
            for n in find_numbers(text, lang)
        )

    return Fact(label, match)


def _money_fact(label: str, value: int) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        return any(
            abs(n.value - value) <= 0.01 * value and _near(t, n.start, n.end, CONTEXT["money"])
            for n in find_numbers(text, lang, multipliers=True)
        )

    return Fact(label, match)


def _date_fact(label: str, d: date) -> Fact:
    return Fact(label, lambda text, lang: d in find_dates(text))


def _score_fact(home: int, away: int, shown: str) -> Fact:
    return Fact(f"final_score: {shown}", lambda text, lang: bool({(home, away), (away, home)} & find_scores(text)))


def _runtime_fact(minutes: int) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        if any(int(m.group(1)) == minutes for m in _MINUTES.finditer(t)):
            return True
        return any(int(m.group(1)) * 60 + int(m.group(2)) == minutes for m in _HOURS.finditer(t))

    return Fact(f"runtime: {minutes} min", match)


def _depth_fact(depth_km: float) -> Fact:
    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        for m in _KM.finditer(t):
            v = float(m.group(1).replace(",", "."))
            if abs(v - depth_km) <= 0.5 and _near(t, m.start(), m.end(), CONTEXT["depth"]):
                return True
        return False

    return Fact(f"depth: {depth_km:.1f} km", match)


def _magnitude_fact(mag: float) -> Fact:
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


def _contains_name(text: str, name: str) -> bool:
    n = prepare(name).strip()
    if len(n) < 4:
        return False
    t = prepare(text)
    single = " " not in n
    flags = 0 if single else re.IGNORECASE  # one-word names must match their capitalisation
    return re.search(rf"(?<![{_LATIN}]){re.escape(n)}(?![{_LATIN}])", t, flags) is not None


def _name_fact(label: str, name: str) -> Fact:
    return Fact(f"{label}: {name}", lambda text, lang: _contains_name(text, name))


def _title_fact(label: str, title: str) -> Fact:
    """A track title: long multi-word titles anywhere, any title of 3+ characters when quoted."""

    def match(text: str, lang: str) -> bool:
        t = prepare(text)
        if any(q.format(title).casefold() in t.casefold() for q in _QUOTES) and len(title.strip()) >= 3:
            return True
        return len(title.split()) >= 2 and len(title) >= 9 and _contains_name(text, title)

    return Fact(f"{label}: {title}", match)


def _label_fact(label_name: str) -> Fact:
    short = _LABEL_SUFFIX.sub("", label_name.strip())

    def match(text: str, lang: str) -> bool:
        if _contains_name(text, label_name):
            return True
        if short != label_name and len(short) >= 4 and _contains_name(text, short):
            return any(w in prepare(text).casefold() for w in _LABEL_WORDS)
        return False

    return Fact(f"label: {label_name}", match)


# -- facts per domain ------------------------------------------------------------------------------------
def _in_name(entity_name: str, value: str) -> bool:
    a, b = normalize(value), normalize(entity_name)
    return bool(a) and (a in b or b in a)


def facts_of(facts: EntityFacts, entity_name: str) -> list[Fact]:
    """The checkable facts of an entity, minus those its own name already gives away."""
    out: list[Fact] = []
    name_dates = find_dates(entity_name)
    name_numbers = {n.value for n in find_numbers(entity_name, "en")}

    def num(label: str, value: float | None, context: str, tol: float = 0.0) -> None:
        if value is not None and value > 0 and value not in name_numbers:
            out.append(_number_fact(f"{label}: {value:g}", value, context, tol=tol))

    def day(label: str, d: date) -> None:
        if d not in name_dates:
            out.append(_date_fact(f"{label}: {d.isoformat()}", d))

    def person(label: str, name: str | None) -> None:
        if name and not _in_name(entity_name, name):
            out.append(_name_fact(label, name))

    if isinstance(facts, MatchFacts):
        out.append(_score_fact(facts.home_score, facts.away_score, f"{facts.home_score}–{facts.away_score}"))
        day("date", facts.date)
        person("home_team", facts.home_team)
        person("away_team", facts.away_team)
        num("spectators", facts.spectators, "spectators")
    elif isinstance(facts, FilmFacts):
        day("release_date", facts.release_date)
        for d in facts.directors:
            person("director", d)
        for c in facts.cast[:MAIN_CAST]:
            person("cast", c.name)
        if facts.runtime_min:
            out.append(_runtime_fact(facts.runtime_min))
        for label, money in (("budget", facts.budget_usd), ("revenue", facts.revenue_usd)):
            if money and float(money) not in name_numbers:
                out.append(_money_fact(f"{label}: {money}", money))
    elif isinstance(facts, ReleaseFacts):
        day("release_date", facts.release_date)
        for a in facts.artists:
            person("artist", a)
        if facts.label and not _in_name(entity_name, facts.label):
            out.append(_label_fact(facts.label))
        num("track_count", len(facts.tracks) or None, "tracks")
        for title in dict.fromkeys(ordered_tracks(facts)):
            if not _in_name(entity_name, title) and normalize(title) != normalize(facts.title):
                out.append(_title_fact("track", title))
    elif isinstance(facts, QuakeFacts):
        day("time", Formatter.utc(facts.time_utc).date())
        if round(facts.magnitude, 1) not in name_numbers:
            out.append(_magnitude_fact(facts.magnitude))
        out.append(_depth_fact(facts.depth_km))
        num("felt", facts.felt, "felt")
        num("fatalities", facts.fatalities, "deaths")
    elif isinstance(facts, DisasterFacts):
        day("date", facts.date)
        num("deaths", facts.deaths, "deaths")
        num("affected", facts.affected, "affected")
        if facts.glide:
            out.append(_name_fact("glide", facts.glide))
        person("country", facts.country)
    return out


def judge_response(*, entity_name: str, facts: EntityFacts, response: str, lang: str) -> KnownVerdict:
    """KnownVerdict for one probe response (in `lang`) about the entity named `entity_name`."""
    if not response.strip():
        return KnownVerdict(known=False, matched_facts=[], reason="The response is empty.")
    matched = [f.label for f in facts_of(facts, entity_name) if f.match(response, lang)]
    if matched:
        return KnownVerdict(
            known=True,
            matched_facts=matched,
            reason=f"The response states {len(matched)} concrete fact(s) of the document: {'; '.join(matched)}.",
        )
    return KnownVerdict(
        known=False,
        matched_facts=[],
        reason="The response states no concrete fact of the document (only the entity's own name, "
        "generic words or facts that do not match).",
    )

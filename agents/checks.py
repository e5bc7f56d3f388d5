"""Translation checks shared by the LLM translator's output validators and the translate stage.

- the language of the text is identified (lingua) as the target language;
- every number of the source is in the translation (digit grouping and decimal marks may change);
- the proper names of the entity's facts that the source contains are kept verbatim;
- the option count and the answer index are kept.
A check returns a list of problems (empty = fine), each naming what is wrong.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import cache
from typing import ClassVar

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from agents.template.domains import agent_kind
from clkt.facts import EntityFacts
from clkt.outputs import MCQ, TranslatedDocument, TranslatedMCQ

__all__ = [
    "LanguageCheck",
    "check_language",
    "check_names",
    "check_numbers",
    "check_translated_document",
    "check_translated_mcq",
    "language_detector",
    "numbers_in",
    "proper_names",
]

# a number of the source: digits with grouping or decimal marks (1,234 / 1.234 / 6,5 / 1\u202f234)
_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f]\d+)*")
# separators a translation may put between the digits of one number (including a plain space: "63 000 000")
_DIGIT_SEP = re.compile(r"(?<=\d)[.,\u00a0\u202f ](?=\d)")
_KANA = re.compile(r"[\u3040-\u30ff]")


def numbers_in(text: str) -> Counter[str]:
    """Numeric values of `text` as digit strings without separators ("1,234.5" -> "12345")."""
    text = unicodedata.normalize("NFKC", text)
    out: Counter[str] = Counter()
    for m in _NUMBER.finditer(text):
        digits = re.sub(r"\D", "", m.group()).lstrip("0") or "0"
        out[digits] += 1
    return out


def _digit_runs(text: str) -> str:
    """The digit runs of `text` once separators between digits are removed, joined by '|'."""
    compact = _DIGIT_SEP.sub("", unicodedata.normalize("NFKC", text))
    return "|" + "|".join(r.lstrip("0") or "0" for r in re.findall(r"\d+", compact)) + "|"


def proper_names(facts: EntityFacts) -> set[str]:
    """Names of people, teams, organisations and labels: kept verbatim by every translation (each kind's
    `AgentKind.proper_names`; places and countries are translated)."""
    names = agent_kind(facts.kind).proper_names(facts)
    return {n.strip() for n in names if n and len(n.strip()) >= 3}


class LanguageCheck:
    """Language identification over the spec's languages (lingua); one detector per language set."""

    MIN_CONFIDENCE: ClassVar[float] = 0.3  # accept a short/ambiguous text when the target is this likely

    def __init__(self, langs: Iterable[str]) -> None:
        self.langs = tuple(sorted(set(langs)))
        self._detector = _detector(self.langs)

    def problems(self, text: str, lang: str) -> list[str]:
        if lang == "ja" and _KANA.search(text):
            return []
        values = self._detector.compute_language_confidence_values(text)
        if not values:
            return [f"language not identified (expected {lang})"]
        top = values[0].language.iso_code_639_1.name.lower()
        if top == lang:
            return []
        conf = {v.language.iso_code_639_1.name.lower(): v.value for v in values}
        if conf.get(lang, 0.0) >= self.MIN_CONFIDENCE:
            return []
        return [f"language identified as {top}, expected {lang}"]


def language_detector(langs: Iterable[str]) -> LanguageDetector:
    """The lingua detector over `langs` (one per language set, built once): the translation checks' and the open
    answers' (`clkt.openqa.langid`)."""
    return _detector(tuple(sorted(set(langs))))


@cache
def _detector(langs: tuple[str, ...]) -> LanguageDetector:
    languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in langs]
    return LanguageDetectorBuilder.from_languages(*languages).build()


def check_language(text: str, lang: str, *, langs: Iterable[str]) -> list[str]:
    return LanguageCheck(langs).problems(text, lang)


def check_numbers(source: str, translated: str) -> list[str]:
    """Every number of `source` appears in `translated` (grouping, decimal marks and spacing may change)."""
    runs = _digit_runs(translated)
    missing = sorted(n for n in numbers_in(source) if n not in runs)
    if missing:
        return [f"numbers not preserved: {sorted(missing)}"]
    return []


def check_names(source: str, translated: str, names: Iterable[str]) -> list[str]:
    lost = sorted(n for n in names if n in source and n not in translated)
    if lost:
        return [f"proper names not preserved: {lost}"]
    return []


def _without(text: str, names: Iterable[str]) -> str:
    """`text` without the proper names it keeps verbatim (they say nothing about its language)."""
    for n in sorted(names, key=len, reverse=True):
        text = text.replace(n, " ")
    return text


def _mcq_text(q: str, options: list[str]) -> str:
    return "\n".join([q, *options])


def check_translated_mcq(
    src: MCQ, tr: TranslatedMCQ, *, lang: str, facts: EntityFacts, langs: Iterable[str]
) -> list[str]:
    problems: list[str] = []
    if tr.lang != lang:
        problems.append(f"lang is {tr.lang!r}, expected {lang!r}")
    if len(tr.options) != len(src.options):
        problems.append(f"{len(tr.options)} options, expected {len(src.options)}")
    if tr.answer_index != src.answer_index:
        problems.append(f"answer_index changed from {src.answer_index} to {tr.answer_index}")
    if lang != "en" or tr.question != src.question:
        problems += LanguageCheck(langs).problems(_without(tr.question, proper_names(facts)), lang)
    source, translated = _mcq_text(src.question, src.options), _mcq_text(tr.question, tr.options)
    problems += check_numbers(source, translated)
    problems += check_names(source, translated, proper_names(facts))
    return problems


def check_translated_document(
    source: str,
    tr: TranslatedDocument,
    *,
    lang: str,
    facts: EntityFacts,
    langs: Iterable[str],
    fact_sentences: Iterable[str] = (),
) -> list[str]:
    """Checks of a translated document; numbers and names are checked over the sentences that state facts
    (`RenderedDocument.sentences`) when given, since free text (an overview) may stay in the source only."""
    problems: list[str] = []
    if tr.lang != lang:
        problems.append(f"lang is {tr.lang!r}, expected {lang!r}")
    problems += LanguageCheck(langs).problems(_without(tr.text, proper_names(facts)), lang)
    scope = " \n".join(fact_sentences) or source
    problems += check_numbers(scope, tr.text)
    problems += check_names(scope, tr.text, proper_names(facts))
    return problems



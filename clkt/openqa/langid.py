"""The answer's language: its script first, then lingua (the detector the translation checks already build).

A short answer says little about its language: *Paris* is English, French and Spanish alike. So an answer is
called "in another language" only on evidence:
- its letters are in a script the test language does not write (Cyrillic or Hangul anywhere; kana in a Chinese
  answer is Japanese; an answer in Latin letters only, to a Japanese or Chinese question, is in a Latin-script
  language; Han or kana in an en/fr/es answer);
- or lingua, over the spec's languages, names another language with at least `MIN_CONFIDENCE` for an answer of
  at least `MIN_WORDS` words (Latin) or `MIN_HAN` letters (Han only: Japanese or Chinese; digits do not count),
  and, for Latin script, the answer without its capitalised words (names say nothing of the language: lingua
  read "The film was directed by Pedro Almodóvar" as Spanish, 0.74) is not read as the test language.
`clkt.openqa.score` asks this only of answers that matched no alias of the test language: what the aliases
accept is right whatever the detector says (a band's Latin name is its name in Japanese too, when the gold's
aliases say so).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from agents.checks import language_detector

__all__ = ["LangGuess", "identify", "scripts_of"]

MIN_CONFIDENCE = 0.7
MIN_WORDS = 3
MIN_HAN = 4

# the scripts each language writes its answers in (Latin in ja/zh only beside its own script: acronyms, units)
_NATIVE: dict[str, frozenset[str]] = {
    "en": frozenset({"Latin"}), "fr": frozenset({"Latin"}), "es": frozenset({"Latin"}),
    "de": frozenset({"Latin"}), "it": frozenset({"Latin"}), "pt": frozenset({"Latin"}),
    "ja": frozenset({"Han", "Hiragana", "Katakana"}), "zh": frozenset({"Han"}),
    "ko": frozenset({"Hangul", "Han"}), "ru": frozenset({"Cyrillic"}),
}
_SCRIPT_PREFIXES = (("CJK", "Han"), ("HIRAGANA", "Hiragana"), ("KATAKANA", "Katakana"), ("LATIN", "Latin"),
                    ("CYRILLIC", "Cyrillic"), ("HANGUL", "Hangul"), ("GREEK", "Greek"), ("ARABIC", "Arabic"),
                    ("HEBREW", "Hebrew"), ("DEVANAGARI", "Devanagari"), ("THAI", "Thai"))
_SCRIPT_LANG = {"Hiragana": "ja", "Katakana": "ja", "Hangul": "ko", "Cyrillic": "ru", "Greek": "el",
                "Arabic": "ar", "Hebrew": "he", "Devanagari": "hi", "Thai": "th"}


@dataclass(frozen=True, slots=True)
class LangGuess:
    """The answer's language as far as it can be told (`lang` None: not told), and whether it is another one."""

    lang: str | None
    other: bool
    why: str = ""


@cache
def _script(c: str) -> str | None:
    if not c.isalpha():
        return None
    name = unicodedata.name(c, "")
    for prefix, script in _SCRIPT_PREFIXES:
        if name.startswith(prefix):
            return script
    return "Other"


def scripts_of(text: str) -> frozenset[str]:
    """The scripts of `text`'s letters (digits, punctuation and symbols have none)."""
    return frozenset(s for s in map(_script, text) if s is not None)


def _by_script(text: str, lang: str) -> LangGuess | None:
    scripts = scripts_of(text)
    native = _NATIVE.get(lang, frozenset({"Latin"}))
    if not scripts or scripts <= native or (lang in ("ja", "zh") and "Latin" in scripts and scripts & native):
        return None
    foreign = sorted(scripts - native - {"Latin"})
    if lang == "zh" and {"Hiragana", "Katakana"} & scripts:
        return LangGuess(lang="ja", other=True, why="kana in a Chinese answer")
    if foreign:
        told = _SCRIPT_LANG.get(foreign[0])
        return LangGuess(lang=told, other=True, why=f"{', '.join(foreign)} script in a {lang} answer")
    return LangGuess(lang=None, other=True, why=f"Latin script only in a {lang} answer")


def _without_names(text: str) -> str:
    """The words of a Latin-script answer but capitalised ones after the first: names say nothing of the language
    (lingua read "The film was directed by Pedro Almodóvar" as Spanish, 0.74)."""
    words = text.split()
    return " ".join(words[:1] + [w for w in words[1:] if not w[:1].isupper()])


def _top(text: str, pool: tuple[str, ...]) -> tuple[str | None, float]:
    values = language_detector(pool).compute_language_confidence_values(text)
    if not values:
        return None, 0.0
    return values[0].language.iso_code_639_1.name.lower(), values[0].value


def identify(text: str, lang: str, *, langs: Iterable[str], lingua: bool = True) -> LangGuess:
    """Whether `text` (an answer to a question in `lang`) is in another language, on the evidence above; without
    `lingua`, on its script alone."""
    guess = _by_script(text, lang)
    if guess is not None and not (guess.lang is None and guess.other):
        return guess
    if not lingua:
        return guess or LangGuess(lang=None, other=False)
    pool = tuple(sorted(set(langs) | {lang}))
    told, confidence = _top(text, pool)
    if guess is not None:  # Latin letters only, to a ja/zh question: which Latin-script language, if lingua knows
        return LangGuess(lang=told if told not in ("ja", "zh") else None, other=True, why=guess.why)
    scripts = scripts_of(text)
    if "Latin" in scripts:
        long_enough = len(text.split()) >= MIN_WORDS
        # the words without the names must not point back to the test language
        consistent = _top(_without_names(text), pool)[0] != lang
    else:
        long_enough = sum(_script(c) is not None for c in text) >= MIN_HAN
        consistent = True
    if told is not None and told != lang and confidence >= MIN_CONFIDENCE and long_enough and consistent:
        return LangGuess(lang=told, other=True, why=f"identified as {told} ({confidence:.2f})")
    return LangGuess(lang=lang if told == lang else None, other=False)

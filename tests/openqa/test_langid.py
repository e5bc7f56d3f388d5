"""The answer's language: told by its script, or by lingua only with confidence on a long enough answer."""

from __future__ import annotations

import pytest

from clkt.openqa.langid import identify, scripts_of

LANGS = ("en", "ja", "zh", "fr", "es")


def test_scripts_of_letters_only() -> None:
    assert scripts_of("東京タワー 3 km!") == {"Han", "Katakana", "Latin"}
    assert scripts_of("1,234 — 56%") == frozenset()


@pytest.mark.parametrize(("text", "lang", "other", "told"), [
    ("Москва", "fr", True, "ru"),  # a script no test language writes
    ("도쿄", "ja", True, "ko"),
    ("ペキン", "zh", True, "ja"),  # kana in a Chinese answer
    ("東京", "en", True, None),  # Han in an English answer: which of ja/zh is not told by two characters
    ("Tokyo Tower", "ja", True, None),  # Latin only, to a Japanese question
    ("Paris", "fr", False, None),  # one word: no evidence of another language
    ("East Tokyo 3", "ja", True, None),
    ("La película fue dirigida por Pedro Almodóvar", "en", True, "es"),  # lingua, confident, long enough
    ("The film was directed by Pedro Almodóvar", "en", False, None),  # lingua: es 0.74; without the name: en
    ("テイラー Swift", "ja", False, None),  # a Japanese answer may hold Latin letters
    ("3人", "ja", False, None),
])
def test_identify(text: str, lang: str, other: bool, told: str | None) -> None:
    guess = identify(text, lang, langs=LANGS)
    assert guess.other is other, guess
    if told is not None:
        assert guess.lang == told, guess


def test_without_lingua_only_the_script_speaks() -> None:
    assert not identify("La película fue dirigida por Pedro Almodóvar", "en", langs=LANGS, lingua=False).other
    assert identify("Москва", "en", langs=LANGS, lingua=False).other

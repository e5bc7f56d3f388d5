"""The short-answer question model: an empty gold is refused at construction (never scored 1.0), aliases are
cleaned and deduplicated by their normalised form, number and date golds must be readable; `score` uses the
question's other languages to tell an answer in another language."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clkt.openqa.numbers import Num, find_numbers, matches
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.score import Verdict, score


def question(**over: Any) -> ShortAnswerQuestion:
    base: dict[str, Any] = {
        "qid": "q1", "entity": "Barbie (2023)", "fact": "director", "kind": "name",
        "questions": {"en": "Who directed Barbie?", "fr": "Qui a réalisé Barbie ?", "ja": "『バービー』の監督は？"},
        "golds": {"en": {"answer": "Greta Gerwig", "aliases": ["Gerwig", " gerwig ", "GRETA GERWIG", ""]},
                  "fr": {"answer": "Greta Gerwig"}, "ja": {"answer": "グレタ・ガーウィグ", "aliases": ["ガーウィグ"]}},
    }
    base.update(over)
    return ShortAnswerQuestion.model_validate(base)


def test_aliases_are_cleaned_and_deduplicated() -> None:
    q = question()
    assert q.gold("en").aliases == ("Gerwig",)  # " gerwig " is Gerwig, "GRETA GERWIG" the gold, "" nothing
    assert q.langs == ("en", "fr", "ja")
    with pytest.raises(KeyError, match="no gold answer in 'zh'"):
        q.gold("zh")


@pytest.mark.parametrize("gold", ["", "   ", "\u200b", "...", "<br>"])
def test_an_empty_gold_is_refused_at_construction(gold: str) -> None:
    with pytest.raises(ValidationError, match="empty"):
        question(golds={"en": {"answer": gold}, "fr": {"answer": "x"}, "ja": {"answer": "x"}})


def test_number_and_date_golds_must_be_readable() -> None:
    langs = {"en": "How many?", "fr": "Combien ?"}
    with pytest.raises(ValidationError, match="no single number"):
        question(kind="number", questions=langs, golds={"en": {"answer": "many"}, "fr": {"answer": "3"}})
    with pytest.raises(ValidationError, match="no single number"):
        question(kind="number", questions=langs, golds={"en": {"answer": "3 or 4"}, "fr": {"answer": "3"}})
    with pytest.raises(ValidationError, match="no single date"):
        question(kind="date", questions=langs, golds={"en": {"answer": "soon"}, "fr": {"answer": "mars 2024"}})
    q = question(kind="date", questions=langs, golds={"en": {"answer": "March 2024"}, "fr": {"answer": "mars 2024"}})
    assert q.kind is AnswerKind.date


def test_languages_must_agree_and_questions_be_non_empty() -> None:
    with pytest.raises(ValidationError, match="differ"):
        question(questions={"en": "Who?"})
    with pytest.raises(ValidationError, match="empty question"):
        question(questions={"en": " ", "fr": "Qui ?", "ja": "誰？"})
    with pytest.raises(ValidationError):
        LangGold(answer="x", aliases=("y",) * 65)


def test_score_tells_an_answer_in_another_language_by_the_other_golds() -> None:
    q = question()
    assert score(q, "ja", "ガーウィグです。").verdict is Verdict.CORRECT
    wrong = score(q, "ja", "Greta Gerwig")
    assert wrong.verdict is Verdict.INCORRECT and wrong.other_language and wrong.answer_lang in ("en", "fr")
    assert score(q, "en", "Who directed Barbie?").verdict is Verdict.NOT_ATTEMPTED
    assert score(q, "fr", "").verdict is Verdict.NOT_ATTEMPTED


def test_simpleqa_number_rule() -> None:
    gold = find_numbers("120k", "en")[0]
    assert gold == Num(value=gold.value, exponent=4)
    ok = {a: matches(gold, find_numbers(a, "en")[0]) for a in ("120k", "124k", "115k", "100k", "113k")}
    assert ok == {"120k": True, "124k": True, "115k": True, "100k": False, "113k": False}

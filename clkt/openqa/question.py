"""A short-answer question: the open track's unit, beside the MCQ (the paper's first future work).

One `ShortAnswerQuestion` asks one fact of one entity in every evaluation language: the question text per
language, the answer kind (a name, a number, a date or a short phrase) and, per language, the gold answer with
its accepted aliases (names in their usual forms per language and script; numbers and dates in the language's
conventions). It refuses what would score wrongly later:
- a gold answer that is empty, only whitespace, only punctuation or markup (MultiLoKo's blank gold scored 1.0:
  here it cannot be built);
- a number or date gold that states no number or date, or several (the scorer could not read it);
- question and gold languages that differ, or a question text that is empty.
Aliases are stripped, emptied ones dropped, and deduplicated by their normalised form (`clkt.openqa.text`), the
gold answer first.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clkt.openqa.dates import parse_gold_date
from clkt.openqa.numbers import parse_gold_number
from clkt.openqa.text import normalise

__all__ = ["AnswerKind", "LangGold", "ShortAnswerQuestion"]


class AnswerKind(StrEnum):
    name = "name"
    number = "number"
    date = "date"
    phrase = "phrase"


class LangGold(BaseModel):
    """The gold answer in one language and the other forms accepted for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: str = Field(max_length=300)
    aliases: tuple[str, ...] = Field(default=(), max_length=64)

    @field_validator("answer")
    @classmethod
    def _answer(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("the gold answer is empty (only whitespace)")
        return v

    def forms(self) -> tuple[str, ...]:
        """The gold answer, then its aliases."""
        return (self.answer, *self.aliases)

    def checked(self, lang: str, kind: AnswerKind) -> LangGold:
        """This gold with its aliases cleaned for `lang`; a `ValueError` naming what cannot be scored."""
        if not normalise(self.answer, lang):
            raise ValueError(f"{lang}: the gold answer {self.answer!r} is empty once normalised")
        if kind is AnswerKind.number and parse_gold_number(self.answer, lang) is None:
            raise ValueError(f"{lang}: the gold answer {self.answer!r} states no single number")
        if kind is AnswerKind.date and parse_gold_date(self.answer, lang) is None:
            raise ValueError(f"{lang}: the gold answer {self.answer!r} states no single date")
        seen = {normalise(self.answer, lang)}
        aliases: list[str] = []
        for alias in self.aliases:
            key = normalise(alias, lang)
            if key and key not in seen:
                seen.add(key)
                aliases.append(alias.strip())
        return LangGold(answer=self.answer, aliases=tuple(aliases))


class ShortAnswerQuestion(BaseModel):
    """One fact of one entity asked as an open question in every evaluation language."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    qid: str = Field(min_length=1, max_length=200)
    entity: str = Field(min_length=1, max_length=300)  # the entity's name (or id) the fact is about
    fact: str = Field(min_length=1, max_length=100)  # the fact slot asked (`clkt.facts` field), e.g. "director"
    kind: AnswerKind
    questions: dict[str, str] = Field(min_length=1)  # lang -> the question text
    golds: dict[str, LangGold] = Field(min_length=1)  # lang -> the gold answer and aliases

    @field_validator("questions")
    @classmethod
    def _questions(cls, v: dict[str, str]) -> dict[str, str]:
        empty = sorted(lang for lang, text in v.items() if not text.strip())
        if empty:
            raise ValueError(f"empty question text in {empty}")
        return {lang: text.strip() for lang, text in v.items()}

    @model_validator(mode="after")
    def _golds(self) -> ShortAnswerQuestion:
        if set(self.questions) != set(self.golds):
            raise ValueError(f"question languages {sorted(self.questions)} differ from gold languages "
                             f"{sorted(self.golds)}")
        for lang, gold in list(self.golds.items()):
            self.golds[lang] = gold.checked(lang, self.kind)
        return self

    @property
    def langs(self) -> tuple[str, ...]:
        return tuple(sorted(self.golds))

    def gold(self, lang: str) -> LangGold:
        try:
            return self.golds[lang]
        except KeyError:
            raise KeyError(f"{self.qid}: no gold answer in {lang!r} (has {self.langs})") from None

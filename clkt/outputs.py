"""Typed outputs of the question-writing tasks (judge, generate, verify, translate): kernel facts shared by every
agent backend (pydantic-ai LLM agents and the offline template engine), the pipeline stages and the store.

Validators enforce what code can enforce; checks that need the document (evidence is a verbatim substring,
the answer is not given away in the question) live in `check_against_document()` so both backends and the
verify stage run exactly the same code.
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CRITERIA",
    "MCQ",
    "KnownVerdict",
    "TranslatedDocument",
    "TranslatedMCQ",
    "VerifierReport",
    "check_against_document",
    "normalize",
]

CRITERIA = ("grounded", "specific", "verifiable", "answer_correct", "distractors_plausible_wrong")


def normalize(text: str) -> str:
    """NFKC, casefold and collapsed whitespace: for 'is X inside Y' checks, never for storage."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


class KnownVerdict(BaseModel):
    """The judge's answer to "does this probe response show the model already knows the entity?"."""

    known: bool
    matched_facts: list[str] = Field(default_factory=list, description="Concrete document facts the response states")
    reason: str = Field(description="One or two sentences explaining the verdict")


class MCQ(BaseModel):
    """A grounded multiple-choice question with exactly four distinct options."""

    model_config = ConfigDict(frozen=True)

    question: str = Field(min_length=8)
    options: list[str] = Field(min_length=4, max_length=4)
    answer_index: int = Field(ge=0, le=3)
    evidence: str = Field(min_length=3, description="A verbatim quote from the document that proves the answer")
    slot: str = Field(min_length=1, max_length=64, description="The fact slot asked about, e.g. final_score")

    @field_validator("options")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if any(not o.strip() for o in v):
            raise ValueError("options must be non-empty")
        if len({normalize(o) for o in v}) != 4:
            raise ValueError("the 4 options must be distinct")
        return v

    @property
    def answer(self) -> str:
        return self.options[self.answer_index]


def check_against_document(mcq: MCQ, document: str) -> list[str]:
    """Problems that make `mcq` unusable for `document` (empty list = fine)."""
    problems: list[str] = []
    if mcq.evidence not in document:
        problems.append("evidence is not a verbatim substring of the document")
    answer = normalize(mcq.answer)
    if len(answer) >= 3 and answer in normalize(mcq.question):
        problems.append("the answer text is given away in the question")
    if normalize(mcq.answer) not in normalize(mcq.evidence) and normalize(mcq.answer) not in normalize(document):
        problems.append("the answer does not appear in the document")
    return problems


class VerifierReport(BaseModel):
    """One boolean per criterion of the paper, plus reasons."""

    grounded: bool = Field(description="The question is explicitly grounded in the document")
    specific: bool = Field(description="The question is specific to this entity, not general")
    verifiable: bool = Field(description="The answer can be verified from the document")
    answer_correct: bool = Field(description="The marked answer is the correct one per the document")
    distractors_plausible_wrong: bool = Field(description="Every distractor is plausible but wrong")
    reasons: dict[str, str] = Field(default_factory=dict, description="Criterion -> short reason")

    @property
    def passed(self) -> bool:
        return all(getattr(self, c) for c in CRITERIA)

    def criteria(self) -> dict[str, bool]:
        return {c: bool(getattr(self, c)) for c in CRITERIA}


class TranslatedMCQ(BaseModel):
    """A translation of an MCQ: same option order, same answer index."""

    model_config = ConfigDict(frozen=True)

    lang: str
    question: str = Field(min_length=2)
    options: list[str] = Field(min_length=4, max_length=4)
    answer_index: int = Field(ge=0, le=3)

    @model_validator(mode="after")
    def _distinct(self) -> TranslatedMCQ:
        if len({normalize(o) for o in self.options}) != 4:
            raise ValueError("the 4 translated options must be distinct")
        return self


class TranslatedDocument(BaseModel):
    model_config = ConfigDict(frozen=True)

    lang: str
    text: str = Field(min_length=10)

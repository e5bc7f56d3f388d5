"""The open track's LLM agent roles: a writer, a verifier and a translator of short-answer questions (issue 47).

The offline template engine writes the open track from each entity's typed facts (`clkt.openqa.from_facts`); with
`agents.backend = "llm"` these three roles write it from the entity's source document instead, through the same
`LlmBackend` as the MCQ roles (its models, pacing, call cache, budget, output modes and repairs: `agents.llm`):
- `generate_open` (the generator's model, prompt `generate_open.v<N>.md`): short-answer questions whose answer is a
  name, a number, a date or a short phrase, each with its gold answer, accepted aliases and a verbatim evidence quote
  (`OpenDraftSet`); the entity's typed facts, where present, are given beside the document as hints;
- `verify_open` (the verifier's model, `verify_open.v<N>.md`): answerable from the document alone, the gold
  supported by it, the question not stating its answer (`OpenVerdict`, a reason per failed criterion);
- `translate_open` (the translator's model, `translate_open.v<N>.md`): the question, gold and aliases into one
  evaluation language (`TranslatedOpen`); whether the gold can be scored is `ShortAnswerQuestion`'s to decide
  (`clkt.openqa.from_llm`), never this role's.

This module holds what the roles add to `agents.llm`: their output models, output validators (each problem sent
back as `ModelRetry` through `deps.retry`, the MCQ roles' repair loop) and user prompts. Every untrusted string (the
document, the entity's name, a drafted question) enters a prompt only through `data_block()`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import RunContext

from agents._prompting import data_block
from agents._repair import reasons_given, set_validator
from clkt.outputs import normalize

__all__ = ["OPEN_AGENTS", "OPEN_OUTPUTS", "OPEN_VALIDATORS", "OpenDraft", "OpenDraftSet", "OpenKind", "OpenVerdict",
           "TranslatedOpen", "open_user_prompt"]

# agent name -> the backend role whose model and limits it uses (`agents.factory.ROLES`)
OPEN_AGENTS = {"generate_open": "generate", "verify_open": "verify", "translate_open": "translate"}
OPEN_CRITERIA = ("answerable", "supported", "not_given_away")
# `clkt.openqa.question.AnswerKind`'s values (agents/ imports only the kernel of clkt)
OpenKind = Literal["name", "number", "date", "phrase"]


class OpenDraft(BaseModel):
    """One short-answer question the writer drafted, in the document's language."""

    slot: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$", description="The fact asked, a short snake_case label")
    kind: OpenKind = Field(description="What the answer is: a name, a number, a date or a short phrase")
    question: str = Field(min_length=1, max_length=500)
    answer: str = Field(max_length=300, description="The gold answer, as short as possible")
    aliases: list[str] = Field(default_factory=list, max_length=16, description="Other accepted forms of the answer")
    evidence: str = Field(min_length=1, max_length=1000, description="A verbatim substring of the document")


class OpenDraftSet(BaseModel):
    """The writer's output."""

    open_questions: list[OpenDraft] = Field(min_length=1)


class OpenVerdict(BaseModel):
    """The verifier's verdict on one drafted question."""

    answerable: bool = Field(description="The question can be answered from the document alone")
    supported: bool = Field(description="The gold answer is what the document says")
    not_given_away: bool = Field(description="The question does not state or imply its own answer")
    reasons: dict[str, str] = Field(default_factory=dict, description="Criterion -> short reason")

    def criteria(self) -> dict[str, bool]:
        return {c: bool(getattr(self, c)) for c in OPEN_CRITERIA}

    @property
    def passed(self) -> bool:
        return all(self.criteria().values())

    def why(self) -> str:
        """The failed criteria with their reasons, one line."""
        return "; ".join(f"{c}: {self.reasons.get(c, '')}".rstrip(": ") for c, ok in self.criteria().items() if not ok)


class TranslatedOpen(BaseModel):
    """The translator's output: the question, its gold and aliases in one language (an empty gold is kept, so
    that `ShortAnswerQuestion` refuses it by name)."""

    lang: str = Field(min_length=2, max_length=8)
    question: str = Field(max_length=500)
    answer: str = Field(max_length=300)
    aliases: list[str] = Field(default_factory=list, max_length=16)


def _draft_problems(d: OpenDraft, document: str) -> list[str]:
    """What makes a draft unusable before any verifier reads it (the deterministic checks of the MCQ's
    `check_against_document`, for a short answer); the per-language normaliser's check is `clkt.openqa.from_llm`'s."""
    problems: list[str] = []
    if d.evidence not in document:
        problems.append("evidence is not a verbatim substring of the document")
    answer = normalize(d.answer)
    if not answer:
        problems.append("the answer is empty")
    elif answer in normalize(d.question):
        problems.append("the question states its own answer")
    elif not any(normalize(f) and normalize(f) in normalize(d.evidence) for f in (d.answer, *d.aliases)):
        problems.append("neither the answer nor an alias appears in the evidence")
    return problems


def _validate_translate_open(ctx: RunContext[Any], out: TranslatedOpen) -> TranslatedOpen:
    deps = ctx.deps
    problems: list[str] = []
    if out.lang != deps.lang:
        problems.append(f"lang must be {deps.lang!r}, got {out.lang!r}")
    if not out.question.strip():
        problems.append("the question is empty")
    if problems:
        raise deps.retry(ctx, problems)
    return out


OPEN_OUTPUTS: dict[str, type[BaseModel]] = {
    "generate_open": OpenDraftSet, "verify_open": OpenVerdict, "translate_open": TranslatedOpen,
}
OPEN_VALIDATORS: dict[str, Callable[[RunContext[Any], Any], Any]] = {
    "generate_open": set_validator(items=lambda o: o.open_questions, check=_draft_problems,
                                   rebuild=lambda good: OpenDraftSet(open_questions=good)),
    "verify_open": reasons_given,
    "translate_open": _validate_translate_open,
}


def _draft_json(d: OpenDraft, *, evidence: bool) -> str:
    q: dict[str, Any] = {"question": d.question, "kind": d.kind, "answer": d.answer, "aliases": d.aliases}
    if evidence:
        q["evidence"] = d.evidence
    return json.dumps(q, ensure_ascii=False, indent=1)


def open_user_prompt(agent: str, *, lang_name: str, **kw: Any) -> str:
    """The user message of one open-track call (the entity and document first: the provider's prefix cache serves
    them across the calls of one entity); `lang_name`: the language written ("French")."""
    if agent == "generate_open":
        facts = data_block("facts", kw["facts"]) + "\n\n" if kw.get("facts") else ""
        return (
            "Write short-answer questions about distinct facts of the document.\n\n"
            + data_block("entity", kw["entity_name"]) + "\n\n"
            + data_block("document", kw["document"]) + "\n\n" + facts
            + f"Write {kw['n']} short-answer questions in {lang_name} (lang = {kw['lang']!r})."
        )
    if agent == "verify_open":
        return (
            "Verify the short-answer question against the document on every criterion.\n\n"
            + data_block("document", kw["document"]) + "\n\n"
            + data_block("question", _draft_json(kw["draft"], evidence=True))
        )
    if agent == "translate_open":
        return (
            "Translate the source question, its answer and the answer's other forms.\n\n"
            + data_block("source", _draft_json(kw["draft"], evidence=False)) + "\n\n"
            + f"Translate into {lang_name} (lang = {kw['lang']!r})."
        )
    raise KeyError(agent)

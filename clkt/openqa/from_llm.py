"""Short-answer questions from an entity's source document, by the LLM agent roles (`agents.backend = "llm"`).

The counterpart of `clkt.openqa.from_facts` (the offline template engine, the default) when the configured agents
are LLMs: the writer drafts questions from the document (its typed facts given as hints where present), the
verifier checks each, the translator writes it in every other evaluation language (`agents.open_roles`). For one
entity, `llm_questions`:
1. asks the writer for up to `n` drafts in the document's language; a writer with no valid output after its
   repairs (`AgentError`) gives no question, its reason counted in `failed` (never guessed);
2. drops a draft whose question states its answer in the per-language normaliser's eyes (`states_answer`, the
   template engine's rule) before any verifier is paid, then asks the verifier: a rejected draft is dropped, the
   failed criteria and reasons recorded in `dropped` and logged; a verifier with no valid output counts in `failed`;
3. translates each kept draft into every other language (a failed translation costs the question, counted), and
   builds the `ShortAnswerQuestion`: a gold that cannot be scored in a language (empty, no number for a number...),
   or a number or date gold whose value is not the source's, is refused there, by name, in `refused`, and the
   question never reaches the snapshot.
A spent budget (`BudgetExhausted`) and a cancel are raised, as from every paid stage.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.open_roles import OpenDraft, OpenVerdict, TranslatedOpen
from clkt.errors import AgentError, BudgetExhausted
from clkt.openqa.dates import parse_gold_date
from clkt.openqa.numbers import parse_gold_number
from clkt.openqa.question import AnswerKind, LangGold, ShortAnswerQuestion
from clkt.openqa.text import states_answer

__all__ = ["LLM_GENERATOR_VERSION", "LlmGenerated", "OpenRoles", "llm_questions"]

log = logging.getLogger(__name__)
# names this generator: a snapshot records it (`manifest.open.engine`); its rows are read back from the frozen files
LLM_GENERATOR_VERSION = "open-llm-1"


@runtime_checkable
class OpenRoles(Protocol):
    """The open track's LLM roles (`agents.llm.LlmBackend` implements them)."""

    def prompt_version(self, role: str) -> str:
        """The version of `role`'s prompt ("generate_open" -> "generate_open.v1"), recorded in the manifest."""
        ...

    async def generate_open(
        self, *, entity_name: str, document: str, facts: str | None, lang: str, n: int
    ) -> list[OpenDraft]: ...

    async def verify_open(self, *, document: str, draft: OpenDraft) -> OpenVerdict: ...

    async def translate_open(self, *, draft: OpenDraft, target_lang: str) -> TranslatedOpen: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class LlmGenerated:
    """What the roles made of one entity: its questions; the drafts dropped (slot, why: the verifier's reasons, or
    a question stating its answer); the ones refused (slot, why: a gold that cannot be scored); the calls that gave
    no valid output (role: why)."""

    questions: tuple[ShortAnswerQuestion, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    failed: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class _Entity:
    entity_id: str
    name: str
    document: str
    lang: str  # the document's
    langs: tuple[str, ...]  # the evaluation languages


@dataclass
class _Tally:
    questions: list[ShortAnswerQuestion]
    dropped: list[tuple[str, str]]
    refused: list[tuple[str, str]]
    failed: list[str]

    def done(self) -> LlmGenerated:
        return LlmGenerated(questions=tuple(self.questions), dropped=tuple(self.dropped), refused=tuple(self.refused),
                            failed=tuple(self.failed))


async def llm_questions(
    roles: OpenRoles, *, entity_id: str, entity_name: str, document: str, doc_lang: str, langs: Sequence[str],
    facts_json: str | None = None, n: int = 5,
) -> LlmGenerated:
    """The entity's short-answer questions in every language of `langs` (see the module docstring)."""
    e = _Entity(entity_id=entity_id, name=entity_name, document=document, lang=doc_lang, langs=tuple(langs))
    tally = _Tally(questions=[], dropped=[], refused=[], failed=[])
    try:
        drafts = await roles.generate_open(entity_name=entity_name, document=document, facts=facts_json, lang=doc_lang,
                                           n=n)
    except BudgetExhausted:  # an AgentError too: raised, never counted as a failed call
        raise
    except AgentError as err:
        log.warning("open track: entity %s: the writer gave no valid output: %s", entity_id, err)
        tally.failed.append(f"generate_open: {err}")
        return tally.done()
    for draft in drafts:
        if await _kept(roles, e, draft, tally):
            q = await _translated(roles, e, draft, tally)
            if q is not None:
                tally.questions.append(q)
    return tally.done()


async def _kept(roles: OpenRoles, e: _Entity, draft: OpenDraft, tally: _Tally) -> bool:
    """Whether the draft passes the normaliser's check and the verifier (else dropped or failed, recorded)."""
    if states_answer(draft.question, draft.answer, e.lang):
        tally.dropped.append((draft.slot, "the question states its own answer"))
        log.warning("open track: entity %s, %s dropped: the question states its own answer", e.entity_id, draft.slot)
        return False
    try:
        verdict = await roles.verify_open(document=e.document, draft=draft)
    except BudgetExhausted:  # an AgentError too: raised, never counted as a failed call
        raise
    except AgentError as err:
        tally.failed.append(f"verify_open {draft.slot}: {err}")
        log.warning("open track: entity %s, %s: the verifier gave no valid output: %s", e.entity_id, draft.slot, err)
        return False
    if not verdict.passed:
        tally.dropped.append((draft.slot, verdict.why()))
        log.warning("open track: entity %s, %s rejected by the verifier: %s", e.entity_id, draft.slot, verdict.why())
        return False
    return True


async def _translated(roles: OpenRoles, e: _Entity, draft: OpenDraft, tally: _Tally) -> ShortAnswerQuestion | None:
    """The draft in every language, or None (a failed translation, or a gold refused: recorded)."""
    texts: dict[str, str] = {}
    golds: dict[str, tuple[str, tuple[str, ...]]] = {}
    for lang in e.langs:
        if lang == e.lang:
            texts[lang], golds[lang] = draft.question, (draft.answer, tuple(draft.aliases))
            continue
        try:
            tr = await roles.translate_open(draft=draft, target_lang=lang)
        except BudgetExhausted:  # an AgentError too: raised, never counted as a failed call
            raise
        except AgentError as err:
            tally.failed.append(f"translate_open {draft.slot} {lang}: {err}")
            log.warning("open track: entity %s, %s: no valid %s translation: %s", e.entity_id, draft.slot, lang, err)
            return None
        texts[lang], golds[lang] = tr.question, (tr.answer, tuple(tr.aliases))
    try:
        built = {lang: _gold(lang, answer, aliases) for lang, (answer, aliases) in golds.items()}
        q = ShortAnswerQuestion(qid=f"{e.entity_id}:{draft.slot}", entity=e.name, fact=draft.slot,
                                kind=AnswerKind(draft.kind), questions=texts, golds=built)
        _value_kept(q, e.lang)
        return q
    except ValueError as err:  # pydantic's ValidationError is one: a gold (or question) that cannot be scored
        why = _message(err)
        tally.refused.append((draft.slot, why))
        log.warning("open track: entity %s, %s refused: %s", e.entity_id, draft.slot, why)
        return None


def _value_kept(q: ShortAnswerQuestion, src: str) -> None:
    """A `ValueError` naming the language whose number or date gold states another value than the source's (the
    translator may rewrite its form, never its value)."""
    def value(lang: str) -> object:
        gold = q.gold(lang).answer
        if q.kind is AnswerKind.number:
            n = parse_gold_number(gold, lang)
            return n.value if n is not None else None
        return parse_gold_date(gold, lang)

    if q.kind not in (AnswerKind.number, AnswerKind.date) or src not in q.golds:
        return
    want = value(src)
    for lang in q.langs:
        if value(lang) != want:
            raise ValueError(f"{lang}: the gold {q.gold(lang).answer!r} states another {q.kind.value} than the "
                             f"source's {q.gold(src).answer!r}")


def _gold(lang: str, answer: str, aliases: tuple[str, ...]) -> LangGold:
    try:
        return LangGold(answer=answer, aliases=aliases)
    except ValueError as err:
        raise ValueError(f"{lang}: {_message(err)}") from err


def _message(err: ValueError) -> str:
    """The refusal's one line: the validator's own message where pydantic wraps it."""
    errors = getattr(err, "errors", None)
    if callable(errors):
        msg = str(errors()[0]["msg"])
        return msg.removeprefix("Value error, ")[:300]
    return str(err)[:300]

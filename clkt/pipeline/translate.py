"""Stage `translate`: every verified question and the document into every language (one task per entity).

For each spec language (the source language "en" included: its `Translation` rows carry the source text,
translator "source"), the document gets a `Document` row (origin "translation"; "en" is the source row) and
each verified question a `Translation` row with the same option order and answer index. Every translation
passes `agents.checks` (language identified, numbers and proper names kept, option count and answer index
kept); the LLM translator already repairs failures by retrying, so a failure here drops the question
(`dropped`, with the reason). A document that fails its checks rejects the entity (no question can be
asked in that language). When done the entity advances along the flow to its end, `ready` (at least one
question survived in all languages), or is `rejected`. Everything is written in the transaction that
finishes the task; the LLM cache makes a re-run after a crash free.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Self

from agents.backend import AgentBackend
from agents.checks import check_translated_document, check_translated_mcq
from clkt.config import AgentSettings, DaemonSettings, SpecSettings
from clkt.context import ServiceContext
from clkt.errors import AgentError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import TranslatedDocument, TranslatedMCQ
from clkt.pipeline._entities import SOURCE_LANG, facts_of, gather_all, load_entity, paid, source_document
from clkt.pipeline.backends import backend_for
from clkt.pipeline.batches import prefetch
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from clkt.pipeline.verify import mcq_of
from storage.engine import Session
from storage.entities import add_translated_documents, document_langs
from storage.enums import EntityStatus, QuestionStatus
from storage.questions import (
    QuestionRecord,
    TranslationRecord,
    add_translations,
    count_questions,
    move_question,
    questions_of,
    translated_langs,
)
from storage.tasks import TaskLease
from storage.types import utcnow

__all__ = ["SOURCE_TRANSLATOR", "TranslateWorker"]

SOURCE_TRANSLATOR = "source"


class TranslateWorker(StageWorker):
    def __init__(
        self, *, step: Step, daemon: DaemonSettings, spec: SpecSettings, agents: AgentSettings, concurrency: int = 2
    ) -> None:
        """`spec`: the languages; `agents`: the translator's mode and how many of its calls run at once."""
        super().__init__(step=step, daemon=daemon, concurrency=concurrency)
        self.spec = spec
        self.agents = agents

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        return cls(step=step, daemon=config.daemon, spec=config.spec, agents=config.agents,
                   concurrency=config.agents.concurrency)

    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        langs = [SOURCE_LANG] + [lang for lang in self.spec.languages if lang != SOURCE_LANG]
        async with ctx.store.session() as s:
            entity = await load_entity(s, task.entity_id)
            facts = facts_of(entity)
            document = await source_document(s, entity, facts)
            questions = await questions_of(s, entity.id, status=QuestionStatus.verified)
            docs = await document_langs(s, entity.id)
            have = await translated_langs(s, [q.id for q in questions])
        backend = backend_for(ctx)
        run = _Run(backend=backend, document=document, facts=facts, langs=langs, have=have,
                   sem=asyncio.Semaphore(self.agents.concurrency), producer=backend.producer("translate"),
                   version=backend.prompt_version("translate"))
        now = utcnow()
        if self.agents.batched(self.step.role):  # every translation of the task in one batch round
            await prefetch([
                *(backend.translate_document(document=document, facts=facts, target_lang=lang)
                  for lang in langs[1:] if lang not in docs),
                *(backend.translate_mcq(mcq=mcq_of(q), document=document, facts=facts, target_lang=lang)
                  for q in questions for lang in langs[1:] if (q.id, lang) not in have),
            ])
        documents_out, doc_problem = await run.documents(docs)  # 1. the document in every language
        # 2. every verified question in every language
        results = [] if doc_problem else await gather_all(run.question(q) for q in questions)

        async with ctx.store.transaction() as s:
            if doc_problem:
                await self.drop(s, task, EntityStatus.rejected, doc_problem)
                await finish(s, task, ctx)
                return
            await add_translated_documents(
                s, entity_id=entity.id, content_hash=entity.content_hash, documents=documents_out,
                producer=run.producer, prompt_version=run.version, created_at=now,
            )
            for q, rows, problem in results:
                if problem is None:
                    await add_translations(s, rows, created_at=now)
                await move_question(
                    s, q.id, from_status=QuestionStatus.verified,
                    to_status=QuestionStatus.translated if problem is None else QuestionStatus.dropped, reason=problem,
                )
            survivors = await count_questions(s, task.entity_id, statuses=[QuestionStatus.translated])
            if survivors:
                await self.advance(s, task)
            else:
                await self.drop(s, task, EntityStatus.rejected, "no question survived translation")
            await finish(s, task, ctx)

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:
        await self.drop(session, task, EntityStatus.failed, f"translate: {error}")



@dataclass(frozen=True, kw_only=True)
class _Run:
    """One task's translations: the source document and facts, the languages, what is already translated."""

    backend: AgentBackend
    document: RenderedDocument
    facts: EntityFacts
    langs: list[str]
    have: set[tuple[int, str]]
    sem: asyncio.Semaphore
    producer: str
    version: str

    async def documents(self, docs: set[str]) -> tuple[list[TranslatedDocument], str | None]:
        """The document in every language it lacks, or the first failure (which rejects the entity)."""
        out: list[TranslatedDocument] = []
        for lang in self.langs[1:]:
            if lang in docs:
                continue
            try:
                async with self.sem:
                    tr = await paid(self.backend.translate_document(document=self.document, facts=self.facts,
                                                                    target_lang=lang))
                problems = check_translated_document(
                    self.document.text, tr, lang=lang, facts=self.facts, langs=self.langs,
                    fact_sentences=self.document.sentences.values(),
                )
            except AgentError as e:
                tr, problems = None, [str(e)]
            if problems or tr is None:
                return out, f"document translation to {lang} failed: {'; '.join(problems)}"
            out.append(tr)
        return out, None

    async def question(self, q: QuestionRecord) -> tuple[QuestionRecord, list[TranslationRecord], str | None]:
        """One verified question in every language it lacks, or why it is dropped."""
        mcq = mcq_of(q)
        rows: list[TranslationRecord] = []
        for lang in self.langs:
            if (q.id, lang) in self.have:
                continue
            if lang == SOURCE_LANG:
                tr = TranslatedMCQ(lang=lang, question=mcq.question, options=list(mcq.options),
                                   answer_index=mcq.answer_index)
                rows.append(TranslationRecord(question_id=q.id, translation=tr, translator=SOURCE_TRANSLATOR,
                                              prompt_version=SOURCE_TRANSLATOR, checks={"source": True}))
                continue
            try:
                async with self.sem:
                    tr = await paid(self.backend.translate_mcq(mcq=mcq, document=self.document, facts=self.facts,
                                                               target_lang=lang))
                problems = check_translated_mcq(mcq, tr, lang=lang, facts=self.facts, langs=self.langs)
            except AgentError as e:
                return q, [], f"translation to {lang} failed: {e}"[:500]
            if problems:
                return q, [], f"translation to {lang} failed its checks: {'; '.join(problems)}"[:500]
            rows.append(TranslationRecord(question_id=q.id, translation=tr, translator=self.producer,
                                          prompt_version=self.version, checks={"passed": True}))
        return q, rows, None

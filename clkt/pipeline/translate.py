"""Stage `translate`: every verified question and the document into every language (one task per entity).

For each spec language (the source language "en" included: its `Translation` rows carry the source text,
translator "source"), the document gets a `Document` row (origin "translation"; "en" is the source row) and
each verified question a `Translation` row with the same option order and answer index. Every translation
passes `agents.checks` (language identified, numbers and proper names kept, option count and answer index
kept); the LLM translator already repairs failures by retrying, so a failure here drops the question
(`dropped`, with the reason). A document that fails its checks rejects the entity (no question can be
asked in that language). When done the entity is `ready` (at least one question survived in all languages)
or `rejected`. Everything is written in the transaction that finishes the task; the LLM cache makes a re-run
after a crash free.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agents.checks import check_translated_document, check_translated_mcq
from agents.types import TranslatedDocument, TranslatedMCQ
from clkt.context import ServiceContext
from clkt.errors import AgentError
from clkt.pipeline._entities import (
    SOURCE_LANG,
    facts_of,
    gather_all,
    load_entity,
    paid,
    set_entity_status,
    sha256_text,
    source_document,
)
from clkt.pipeline.backends import backend_for
from clkt.pipeline.batches import batched, prefetch
from clkt.pipeline.verify import mcq_of
from clkt.pipeline.worker import StageWorker, finish
from storage.models import Document, EntityStatus, Question, QuestionStatus, Stage, Task, Translation
from storage.tasks import insert_ignore
from storage.types import utcnow

__all__ = ["TranslateWorker", "SOURCE_TRANSLATOR"]

SOURCE_TRANSLATOR = "source"


class TranslateWorker(StageWorker):
    stage = Stage.translate

    async def process(self, task: Task, ctx: ServiceContext) -> None:
        settings = ctx.settings
        langs = [SOURCE_LANG] + [lang for lang in settings.spec.languages if lang != SOURCE_LANG]
        async with ctx.store.session() as s:
            entity = await load_entity(s, task.entity_id)
            facts = facts_of(entity)
            document = await source_document(s, entity, facts)
            questions = (
                await s.execute(
                    select(Question).where(Question.entity_id == entity.id, Question.status == QuestionStatus.verified)
                    .order_by(Question.id)
                )
            ).scalars().all()
            docs = {d.lang: d for d in (await s.execute(select(Document).where(Document.entity_id == entity.id))).scalars()}
            have = {
                (t.question_id, t.lang)
                for t in (
                    await s.execute(select(Translation).where(Translation.question_id.in_([q.id for q in questions])))
                ).scalars()
            }
        backend = backend_for(ctx)
        producer, version = backend.producer("translate"), backend.prompt_version("translate")
        sem = asyncio.Semaphore(settings.agents.concurrency)
        now = utcnow()

        if batched(settings, "translate"):  # every translation of the task in one batch round
            await prefetch([
                *(backend.translate_document(document=document, facts=facts, target_lang=lang)
                  for lang in langs[1:] if lang not in docs),
                *(backend.translate_mcq(mcq=mcq_of(q), document=document, facts=facts, target_lang=lang)
                  for q in questions for lang in langs[1:] if (q.id, lang) not in have),
            ])

        # 1. the document in every language
        doc_rows: list[dict[str, Any]] = []
        doc_problem: str | None = None
        for lang in langs[1:]:
            if lang in docs:
                continue
            try:
                async with sem:
                    tr = await paid(backend.translate_document(document=document, facts=facts, target_lang=lang))
                problems = check_translated_document(
                    document.text, tr, lang=lang, facts=facts, langs=langs, fact_sentences=document.sentences.values()
                )
            except AgentError as e:
                tr, problems = None, [str(e)]
            if problems or tr is None:
                doc_problem = f"document translation to {lang} failed: {'; '.join(problems)}"
                break
            doc_rows.append(_doc_row(entity.id, entity.content_hash, tr, producer, version, now))

        # 2. every verified question in every language
        async def one(q: Question) -> tuple[Question, list[dict[str, Any]], str | None]:
            mcq = mcq_of(q)
            rows: list[dict[str, Any]] = []
            for lang in langs:
                if (q.id, lang) in have:
                    continue
                if lang == SOURCE_LANG:
                    tr = TranslatedMCQ(lang=lang, question=mcq.question, options=list(mcq.options), answer_index=mcq.answer_index)
                    rows.append(_tr_row(q.id, tr, SOURCE_TRANSLATOR, SOURCE_TRANSLATOR, {"source": True}, now))
                    continue
                try:
                    async with sem:
                        tr = await paid(backend.translate_mcq(mcq=mcq, document=document, facts=facts, target_lang=lang))
                    problems = check_translated_mcq(mcq, tr, lang=lang, facts=facts, langs=langs)
                except AgentError as e:
                    return q, [], f"translation to {lang} failed: {e}"[:500]
                if problems:
                    return q, [], f"translation to {lang} failed its checks: {'; '.join(problems)}"[:500]
                rows.append(_tr_row(q.id, tr, producer, version, {"passed": True}, now))
            return q, rows, None

        results = [] if doc_problem else await gather_all(one(q) for q in questions)

        async with ctx.store.transaction() as s:
            if doc_problem:
                await set_entity_status(s, task.entity_id, EntityStatus.rejected, doc_problem[:500])
                await finish(s, task, ctx)
                return
            await insert_ignore(s, Document, doc_rows)
            for q, rows, problem in results:
                if problem is None:
                    await insert_ignore(s, Translation, rows)
                await s.execute(
                    update(Question).where(Question.id == q.id, Question.status == QuestionStatus.verified)
                    .values(
                        status=QuestionStatus.translated if problem is None else QuestionStatus.dropped,
                        status_reason=problem,
                    ).execution_options(synchronize_session=False)
                )
            survivors = (
                await s.execute(
                    select(func.count()).where(
                        Question.entity_id == task.entity_id, Question.status == QuestionStatus.translated
                    )
                )
            ).scalar()
            if survivors:
                await set_entity_status(s, task.entity_id, EntityStatus.ready)
            else:
                await set_entity_status(s, task.entity_id, EntityStatus.rejected, "no question survived translation")
            await finish(s, task, ctx)

    async def on_failed(self, session: AsyncSession, task: Task, error: str) -> None:
        await set_entity_status(session, task.entity_id, EntityStatus.failed, f"translate: {error}"[:500])


def _doc_row(
    entity_id: int | None, content_hash: str, tr: TranslatedDocument, producer: str, version: str, now: Any
) -> dict[str, Any]:
    return dict(
        entity_id=entity_id, lang=tr.lang, origin="translation", text=tr.text, text_hash=sha256_text(tr.text),
        producer=producer, prompt_version=version, content_hash=content_hash, created_at=now,
    )


def _tr_row(
    question_id: int | None, tr: TranslatedMCQ, translator: str, version: str, checks: dict[str, Any], now: Any
) -> dict[str, Any]:
    return dict(
        question_id=question_id, lang=tr.lang, question=tr.question, options=list(tr.options),
        answer_index=tr.answer_index, translator=translator, prompt_version=version, checks=checks, created_at=now,
    )

"""Stage `generate`: grounded MCQs from the entity's English document (one task per entity, key "").

The backend writes up to `agents.questions_per_entity` questions (distinct fact slots; a domain of
`agents.questions_per_domain` has its own cap); they are stored as
`generated` (unique per entity and slot, so a re-run writes nothing twice) and a verify task is queued, in
the transaction that finishes the task. No usable question → the entity is `rejected` with the reason.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from clkt.context import ServiceContext
from clkt.errors import AgentError
from clkt.pipeline._entities import SOURCE_LANG, facts_of, load_entity, paid, set_entity_status, source_document
from clkt.pipeline.backends import backend_for
from clkt.pipeline.worker import StageWorker, finish
from storage.models import EntityStatus, Question, QuestionStatus, Stage, Task
from storage.tasks import enqueue, insert_ignore
from storage.types import utcnow

__all__ = ["GenerateWorker"]


class GenerateWorker(StageWorker):
    stage = Stage.generate

    async def process(self, task: Task, ctx: ServiceContext) -> None:
        async with ctx.store.session() as s:
            entity = await load_entity(s, task.entity_id)
            facts = facts_of(entity)
            document = await source_document(s, entity, facts)
        backend = backend_for(ctx)
        n = ctx.settings.agents.question_cap(entity.domain)
        try:
            mcqs = await paid(backend.generate(entity_name=entity.name, document=document, facts=facts, n=n))
            error = None
        except AgentError as e:
            mcqs, error = [], str(e)
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        for q in mcqs:
            if q.slot in seen:
                continue
            seen.add(q.slot)
            rows.append(dict(
                entity_id=task.entity_id, slot=q.slot, lang=SOURCE_LANG, question=q.question, options=list(q.options),
                answer_index=q.answer_index, evidence=q.evidence, generator=backend.producer("generate"),
                prompt_version=backend.prompt_version("generate"), status=QuestionStatus.generated,
                created_at=utcnow(),
            ))
        async with ctx.store.transaction() as s:
            await insert_ignore(s, Question, rows)
            if rows:
                await enqueue(s, Stage.verify, task.entity_id, "")
            else:
                await set_entity_status(s, task.entity_id, EntityStatus.rejected, f"no question generated: {error}"[:500])
            await finish(s, task, ctx)

    async def on_failed(self, session: AsyncSession, task: Task, error: str) -> None:
        await set_entity_status(session, task.entity_id, EntityStatus.failed, f"generate: {error}"[:500])

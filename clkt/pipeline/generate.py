"""Stage `generate`: grounded MCQs from the entity's English document (one task per entity, key "").

The backend writes up to `agents.questions_per_entity` questions (distinct fact slots; a domain of
`agents.questions_per_domain` has its own cap); they are stored as
`generated` (unique per entity and slot, so a re-run writes nothing twice) and the entity advances along the
flow (a verify task), in the transaction that finishes the task. No usable question → the entity is
`rejected` with the reason.
"""

from __future__ import annotations

from typing import Self

from clkt.config import AgentSettings, DaemonSettings
from clkt.context import ServiceContext
from clkt.errors import AgentError
from clkt.outputs import MCQ
from clkt.pipeline._entities import SOURCE_LANG, facts_of, load_entity, paid, source_document
from clkt.pipeline.backends import backend_for
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from storage.engine import Session
from storage.enums import EntityStatus
from storage.questions import add_questions
from storage.tasks import TaskLease
from storage.types import utcnow

__all__ = ["GenerateWorker"]


class GenerateWorker(StageWorker):
    def __init__(self, *, step: Step, daemon: DaemonSettings, agents: AgentSettings, concurrency: int = 2) -> None:
        """`agents`: how many questions per entity (`questions_per_entity`, `questions_per_domain`)."""
        super().__init__(step=step, daemon=daemon, concurrency=concurrency)
        self.agents = agents

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        return cls(step=step, daemon=config.daemon, agents=config.agents, concurrency=config.agents.concurrency)

    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        async with ctx.store.session() as s:
            entity = await load_entity(s, task.entity_id)
            facts = facts_of(entity)
            document = await source_document(s, entity, facts)
        backend = backend_for(ctx)
        n = self.agents.question_cap(entity.domain)
        try:
            mcqs = await paid(backend.generate(entity_name=entity.name, document=document, facts=facts, n=n))
            error = None
        except AgentError as e:
            mcqs, error = [], str(e)
        questions: list[MCQ] = []  # one question per fact slot, the first one written
        seen: set[str] = set()
        for q in mcqs:
            if q.slot in seen:
                continue
            seen.add(q.slot)
            questions.append(q)
        created_at = utcnow()
        async with ctx.store.transaction() as s:
            await add_questions(
                s, entity_id=task.entity_id, questions=questions, lang=SOURCE_LANG, generator=backend.producer("generate"),
                prompt_version=backend.prompt_version("generate"), created_at=created_at,
            )
            if questions:
                await self.advance(s, task)
            else:
                await self.drop(s, task, EntityStatus.rejected, f"no question generated: {error}")
            await finish(s, task, ctx)

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:
        await self.drop(session, task, EntityStatus.failed, f"generate: {error}")

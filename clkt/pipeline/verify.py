"""Stage `verify`: deterministic checks, then the verifier on the paper's criteria (one task per entity).

Each `generated` question is checked in code first (`clkt.outputs.check_against_document`: evidence is a
verbatim substring, the answer is not given away, the answer is in the document); a question that fails is
`rejected` without an LLM call (its `Verification` row has verifier "checks"). The rest go to the backend's
verifier; any failed criterion rejects. Rows are unique per (question, verifier): a re-run adds nothing.
No verified question left → the entity is `rejected`; otherwise it advances along the flow (a translate task).
"""

from __future__ import annotations

import asyncio
from typing import Self

from clkt.config import AgentSettings, DaemonSettings
from clkt.context import ServiceContext
from clkt.errors import AgentError
from clkt.outputs import CRITERIA, MCQ, check_against_document
from clkt.pipeline._entities import facts_of, gather_all, load_entity, paid, source_document
from clkt.pipeline.backends import backend_for
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from storage.engine import Session
from storage.enums import EntityStatus, QuestionStatus
from storage.questions import (
    QuestionRecord,
    VerificationRecord,
    add_verifications,
    count_questions,
    move_question,
    questions_of,
)
from storage.tasks import TaskLease
from storage.types import utcnow

__all__ = ["CHECKS_VERIFIER", "VerifyWorker", "mcq_of"]

CHECKS_VERIFIER = "checks"


def mcq_of(q: QuestionRecord) -> MCQ:
    return MCQ(question=q.question, options=list(q.options), answer_index=q.answer_index, evidence=q.evidence, slot=q.slot)


class VerifyWorker(StageWorker):
    def __init__(self, *, step: Step, daemon: DaemonSettings, agents: AgentSettings, concurrency: int = 2) -> None:
        """`agents`: how many verifier calls of one task run at once (`concurrency`)."""
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
            questions = await questions_of(s, entity.id, status=QuestionStatus.generated)
        backend = backend_for(ctx)
        sem = asyncio.Semaphore(self.agents.concurrency)

        async def one(q: QuestionRecord) -> VerificationRecord:
            mcq = mcq_of(q)
            problems = check_against_document(mcq, document.text)
            if problems:
                return VerificationRecord(
                    question_id=q.id, verifier=CHECKS_VERIFIER, prompt_version=CHECKS_VERIFIER,
                    criteria={"deterministic_checks": False}, reasons={"checks": "; ".join(problems)}, passed=False,
                )
            async with sem:
                try:
                    report = await paid(backend.verify(document=document, facts=facts, mcq=mcq))
                except AgentError as e:
                    return VerificationRecord(
                        question_id=q.id, verifier=backend.producer("verify"),
                        prompt_version=backend.prompt_version("verify"), criteria={c: False for c in CRITERIA},
                        reasons={"error": str(e)[:500]}, passed=False,
                    )
            return VerificationRecord(
                question_id=q.id, verifier=backend.producer("verify"), prompt_version=backend.prompt_version("verify"),
                criteria=report.criteria(), reasons=dict(report.reasons), passed=report.passed,
            )

        results = await gather_all(one(q) for q in questions)
        async with ctx.store.transaction() as s:
            await add_verifications(s, results, created_at=utcnow())
            for v in results:
                await move_question(
                    s, v.question_id, from_status=QuestionStatus.generated,
                    to_status=QuestionStatus.verified if v.passed else QuestionStatus.rejected,
                    reason=None if v.passed else _reason(v),
                )
            left = await count_questions(  # questions that passed verification (later stages may have moved them on)
                s, task.entity_id,
                statuses=[QuestionStatus.verified, QuestionStatus.translated, QuestionStatus.dropped],
            )
            if left:
                await self.advance(s, task)
            else:
                await self.drop(s, task, EntityStatus.rejected, "no question passed verification")
            await finish(s, task, ctx)

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:
        await self.drop(session, task, EntityStatus.failed, f"verify: {error}")


def _reason(v: VerificationRecord) -> str:
    failed = [c for c, ok in v.criteria.items() if not ok]
    why = "; ".join(f"{k}: {r}" for k, r in v.reasons.items() if r)
    return f"{v.verifier} failed {failed}" + (f" ({why})" if why else "")

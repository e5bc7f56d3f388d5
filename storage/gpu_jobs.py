"""The GPU job queue's repository: enqueue a snapshot's jobs, write a job's results, read them back.

A job is one (snapshot, target model, strategy, train language); the unique constraint makes
`enqueue_gpu_jobs` idempotent. Results are written by `write_job_results` in the caller's transaction,
together with the fenced completion of the job (see `clkt.inject.consumer`). Results reference this store's
question rows; `results_for_snapshot` also returns each question's identity (entity source and external id,
slot), from which `clkt.snapshots.ids` derives the public qid that the snapshot's files use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Entity, GpuJob, LeaseStatus, Question, QuestionResult
from storage.tasks import insert_ignore
from storage.types import utcnow

__all__ = [
    "ResultRecord",
    "JobResultRow",
    "enqueue_gpu_jobs",
    "get_job",
    "jobs_for_snapshot",
    "gpu_job_counts",
    "snapshot_jobs_finished",
    "write_job_results",
    "results_for_snapshot",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRecord:
    """One scored answer, as the training child reports it."""

    question_id: int
    lang: str
    variant: str  # "base" | "injected"
    scorer: str  # "generate" | "letter-logprob"
    split: str
    predicted: str | None
    correct: bool
    raw: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResultRow:
    """A stored result joined with its job's identity (what metrics and reports read)."""

    job_id: int
    target_model: str
    strategy: str
    train_lang: str
    question_id: int
    lang: str
    variant: str
    scorer: str
    split: str
    predicted: str | None
    correct: bool
    domain: str = ""
    source: str = ""  # the question's identity: entity source, external id and slot
    external_id: str = ""
    slot: str = ""


async def enqueue_gpu_jobs(
    session: AsyncSession,
    *,
    snapshot_id: str,
    targets: list[str],
    strategies: list[str],
    train_langs: list[str],
    config: Mapping[str, Any] | BaseModel,
    max_attempts: int,
) -> int:
    """One pending job per (target, strategy, train language) of a snapshot; returns how many were new."""
    cfg = config.model_dump(mode="json") if isinstance(config, BaseModel) else dict(config)
    now = utcnow()
    rows = [
        dict(
            snapshot_id=snapshot_id, target_model=t, strategy=s, train_lang=lang, config=cfg,
            status=LeaseStatus.pending, attempts=0, max_attempts=max_attempts, not_before=now,
            summary={}, created_at=now, updated_at=now,
        )
        for t in targets
        for s in strategies
        for lang in train_langs
    ]
    return await insert_ignore(session, GpuJob, rows)


async def get_job(session: AsyncSession, job_id: int) -> GpuJob | None:
    return await session.get(GpuJob, job_id)


async def jobs_for_snapshot(session: AsyncSession, snapshot_id: str) -> list[GpuJob]:
    rows = await session.execute(select(GpuJob).where(GpuJob.snapshot_id == snapshot_id).order_by(GpuJob.id))
    return list(rows.scalars().all())


async def gpu_job_counts(session: AsyncSession, snapshot_id: str | None = None) -> dict[str, int]:
    stmt = select(GpuJob.status, func.count()).group_by(GpuJob.status)
    if snapshot_id is not None:
        stmt = stmt.where(GpuJob.snapshot_id == snapshot_id)
    return {LeaseStatus(s).value: int(n) for s, n in (await session.execute(stmt)).all()}


async def snapshot_jobs_finished(session: AsyncSession, snapshot_id: str) -> bool:
    """True when the snapshot has jobs and none of them is pending or leased."""
    counts = await gpu_job_counts(session, snapshot_id)
    if not counts:
        return False
    return counts.get(LeaseStatus.pending.value, 0) == 0 and counts.get(LeaseStatus.leased.value, 0) == 0


async def write_job_results(session: AsyncSession, job_id: int, records: Iterable[ResultRecord]) -> int:
    """Replace the job's results with `records` (in the caller's transaction: all or nothing)."""
    await session.execute(delete(QuestionResult).where(QuestionResult.job_id == job_id))
    rows = [
        dict(
            job_id=job_id, question_id=r.question_id, lang=r.lang, variant=r.variant, scorer=r.scorer,
            split=r.split, predicted=r.predicted, correct=r.correct, raw=r.raw[:2000],
        )
        for r in records
    ]
    total = 0
    for i in range(0, len(rows), 500):
        total += await insert_ignore(session, QuestionResult, rows[i : i + 500])
    return total


async def results_for_snapshot(session: AsyncSession, snapshot_id: str, *, done_only: bool = True) -> list[JobResultRow]:
    stmt = (
        select(
            GpuJob.id, GpuJob.target_model, GpuJob.strategy, GpuJob.train_lang, QuestionResult.question_id,
            QuestionResult.lang, QuestionResult.variant, QuestionResult.scorer, QuestionResult.split,
            QuestionResult.predicted, QuestionResult.correct, Entity.domain, Entity.source, Entity.external_id,
            Question.slot,
        )
        .join(QuestionResult, QuestionResult.job_id == GpuJob.id)
        .join(Question, Question.id == QuestionResult.question_id)
        .join(Entity, Entity.id == Question.entity_id)
        .where(GpuJob.snapshot_id == snapshot_id)
        .order_by(GpuJob.id, QuestionResult.id)
    )
    if done_only:
        stmt = stmt.where(GpuJob.status == LeaseStatus.done)
    return [
        JobResultRow(
            job_id=r[0], target_model=r[1], strategy=r[2], train_lang=r[3], question_id=r[4], lang=r[5],
            variant=r[6], scorer=r[7], split=r[8], predicted=r[9], correct=bool(r[10]), domain=r[11], source=r[12],
            external_id=r[13], slot=r[14],
        )
        for r in (await session.execute(stmt)).all()
    ]

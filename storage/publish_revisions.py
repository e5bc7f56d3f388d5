"""Publish revisions: what was committed to the Hub (one row per commit, with the state key it was built from, so
the same state is never committed twice), and what a revision publishes of the stored results (every answer of
every finished job). Records leave this module as frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import Entity, GpuJob, LeaseStatus, PublishRevision, PublishTask, Question, QuestionResult
from storage.tasks import insert_ignore
from storage.types import stored_id, utcnow

__all__ = [
    "PredictionRow",
    "RevisionRecord",
    "latest_revisions",
    "predictions_for_snapshot",
    "recent_revisions",
    "record_revision",
    "revisions_of",
    "snapshots_in_publishing",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RevisionRecord:
    """One publish revision (one Hub commit) of a snapshot on a repo and branch."""

    repo: str
    branch: str
    snapshot_id: str
    revision: int
    state_key: str
    commit_oid: str
    held: bool
    retracted: int
    report_fingerprint: str | None
    files: int
    found_on_hub: bool
    committed_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionRow:
    """One stored answer of a finished GPU job, with the question's identity (the public qid derives from it)."""

    job_id: int
    target_model: str
    strategy: str
    train_lang: str
    lang: str
    variant: str
    scorer: str
    split: str
    predicted: str | None
    correct: bool
    raw: str
    domain: str
    source: str
    external_id: str
    slot: str
    seed: int = 0  # the job's training seed (`spec.seeds`)


def _revision(row: PublishRevision) -> RevisionRecord:
    return RevisionRecord(
        repo=row.repo, branch=row.branch, snapshot_id=row.snapshot_id, revision=row.revision, state_key=row.state_key,
        commit_oid=row.commit_oid, held=row.held, retracted=row.retracted, report_fingerprint=row.report_fingerprint,
        files=row.files, found_on_hub=row.found_on_hub, committed_at=row.committed_at,
    )


async def record_revision(
    session: AsyncSession, *, repo: str, branch: str, snapshot_id: str, revision: int, state_key: str, commit_oid: str,
    held: bool, retracted: int, report_fingerprint: str | None, files: int, found_on_hub: bool = False,
    committed_at: datetime | None = None,
) -> RevisionRecord:
    """Record a revision committed to the Hub (idempotent on (repo, branch, snapshot, revision)), in the caller's
    transaction; the stored record."""
    await insert_ignore(session, PublishRevision, [dict(
        repo=repo, branch=branch, snapshot_id=snapshot_id, revision=revision, state_key=state_key, commit_oid=commit_oid,
        held=held, retracted=retracted, report_fingerprint=report_fingerprint, files=files, found_on_hub=found_on_hub,
        committed_at=committed_at or utcnow(),
    )])
    row = (await session.execute(select(PublishRevision).where(
        col(PublishRevision.repo) == repo, col(PublishRevision.branch) == branch,
        col(PublishRevision.snapshot_id) == snapshot_id, col(PublishRevision.revision) == revision,
    ))).scalars().one()
    return _revision(row)


async def revisions_of(session: AsyncSession, *, repo: str, branch: str, snapshot_id: str) -> list[RevisionRecord]:
    """The snapshot's revisions on (repo, branch), oldest first."""
    rows = (await session.execute(select(PublishRevision).where(
        col(PublishRevision.repo) == repo, col(PublishRevision.branch) == branch,
        col(PublishRevision.snapshot_id) == snapshot_id,
    ).order_by(col(PublishRevision.revision)))).scalars().all()
    return [_revision(r) for r in rows]


async def latest_revisions(session: AsyncSession, *, repo: str, branch: str) -> dict[str, RevisionRecord]:
    """Snapshot id -> its latest revision on (repo, branch)."""
    rows = (await session.execute(select(PublishRevision).where(
        col(PublishRevision.repo) == repo, col(PublishRevision.branch) == branch,
    ).order_by(col(PublishRevision.snapshot_id), col(PublishRevision.revision)))).scalars().all()
    return {r.snapshot_id: _revision(r) for r in rows}


async def recent_revisions(session: AsyncSession, *, limit: int = 20) -> list[RevisionRecord]:
    """The latest revisions committed anywhere, newest first."""
    rows = (await session.execute(
        select(PublishRevision).order_by(col(PublishRevision.committed_at).desc(), col(PublishRevision.id).desc())
        .limit(limit)
    )).scalars().all()
    return [_revision(r) for r in rows]


async def snapshots_in_publishing(session: AsyncSession) -> set[str]:
    """The snapshots a Hub repo holds a revision of, or that a publish task will publish: what a retention pass must
    keep (their frozen folders, their results and, with `publish.include_adapters`, their jobs' artifacts)."""
    published = (await session.execute(select(col(PublishRevision.snapshot_id)).distinct())).scalars().all()
    queued = (await session.execute(
        select(col(PublishTask.snapshot_id)).where(col(PublishTask.status).in_([LeaseStatus.pending, LeaseStatus.leased]))
    )).scalars().all()
    return set(published) | set(queued)


async def predictions_for_snapshot(session: AsyncSession, snapshot_id: str) -> list[PredictionRow]:
    """Every stored answer of the snapshot's finished (`done`) GPU jobs, by job, then result row."""
    stmt = (
        select(
            col(GpuJob.id), col(GpuJob.target_model), col(GpuJob.strategy), col(GpuJob.train_lang),
            col(QuestionResult.lang), col(QuestionResult.variant), col(QuestionResult.scorer), col(QuestionResult.split),
            col(QuestionResult.predicted), col(QuestionResult.correct), col(QuestionResult.raw), col(Entity.domain),
            col(Entity.source), col(Entity.external_id), col(Question.slot), col(GpuJob.seed),
        )
        .join(QuestionResult, col(QuestionResult.job_id) == col(GpuJob.id))
        .join(Question, col(Question.id) == col(QuestionResult.question_id))
        .join(Entity, col(Entity.id) == col(Question.entity_id))
        .where(col(GpuJob.snapshot_id) == snapshot_id, col(GpuJob.status) == LeaseStatus.done)
        .order_by(col(GpuJob.id), col(QuestionResult.id))
    )
    return [
        PredictionRow(
            job_id=stored_id(r[0]), target_model=r[1], strategy=r[2], train_lang=r[3], lang=r[4], variant=r[5],
            scorer=r[6], split=r[7], predicted=r[8], correct=bool(r[9]), raw=r[10] or "", domain=r[11], source=r[12],
            external_id=r[13], slot=r[14], seed=int(r[15]),
        )
        for r in (await session.execute(stmt)).all()
    ]

"""Status counts: what `clkt status`, `/status`, `/metrics`, the progress line and the demo watcher count.

Every figure is one GROUP BY over its table, read in one session; the records are plain and frozen, so the
layers above map them to their report without seeing a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlmodel import col

from storage.engine import Session
from storage.enums import EntityStatus, LeaseStatus, SnapshotStatus, Stage
from storage.models import Entity, GpuJob, SkipCount, Snapshot, Task

__all__ = ["FailedWork", "FirstSnapshot", "StoreCounts", "first_frozen_snapshot", "store_counts"]

FAILED_TASKS_SHOWN = 10
FAILED_JOBS_SHOWN = 5


@dataclass(frozen=True, kw_only=True)
class FailedWork:
    """A stage task or GPU job that used up its attempts (GPU jobs: stage "gpu", no entity)."""

    stage: str
    entity_id: int | None
    key: str
    attempts: int
    error: str | None


@dataclass(frozen=True, kw_only=True)
class StoreCounts:
    entities: dict[str, int] = field(default_factory=dict)  # by status
    entities_by_domain: dict[str, int] = field(default_factory=dict)
    stages: dict[str, dict[str, int]] = field(default_factory=dict)  # stage -> status -> n
    gpu_jobs: dict[str, int] = field(default_factory=dict)  # by status
    snapshots: dict[str, int] = field(default_factory=dict)  # by status
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)  # source -> reason -> n
    failures: list[FailedWork] = field(default_factory=list)  # newest failed tasks, then newest failed GPU jobs


@dataclass(frozen=True, kw_only=True)
class FirstSnapshot:
    """The first frozen snapshot and the statuses of its GPU jobs (the demo waits for them)."""

    id: str
    export_path: str | None
    job_statuses: list[LeaseStatus]


async def store_counts(session: Session) -> StoreCounts:
    ent = {
        EntityStatus(k).value: int(n)
        for k, n in (await session.execute(select(col(Entity.status), func.count()).group_by(col(Entity.status)))).all()
    }
    dom = {k: int(n) for k, n in (await session.execute(select(col(Entity.domain), func.count()).group_by(col(Entity.domain)))).all()}
    stages: dict[str, dict[str, int]] = {}
    for stage, status, n in (
        await session.execute(select(col(Task.stage), col(Task.status), func.count()).group_by(col(Task.stage), col(Task.status)))
    ).all():
        stages.setdefault(Stage(stage).value, {})[LeaseStatus(status).value] = int(n)
    jobs = {
        LeaseStatus(k).value: int(n)
        for k, n in (await session.execute(select(col(GpuJob.status), func.count()).group_by(col(GpuJob.status)))).all()
    }
    snaps = {
        SnapshotStatus(k).value: int(n)
        for k, n in (await session.execute(select(col(Snapshot.status), func.count()).group_by(col(Snapshot.status)))).all()
    }
    skipped: dict[str, dict[str, int]] = {}
    for row in (await session.execute(select(SkipCount))).scalars():
        skipped.setdefault(row.source, {})[row.reason] = row.count
    failed_tasks = (
        await session.execute(
            select(Task).where(col(Task.status) == LeaseStatus.failed).order_by(col(Task.updated_at).desc()).limit(FAILED_TASKS_SHOWN)
        )
    ).scalars().all()
    failed_jobs = (
        await session.execute(
            select(GpuJob).where(col(GpuJob.status) == LeaseStatus.failed).order_by(col(GpuJob.updated_at).desc()).limit(FAILED_JOBS_SHOWN)
        )
    ).scalars().all()
    failures = [
        FailedWork(stage=Stage(t.stage).value, entity_id=t.entity_id, key=t.key, attempts=t.attempts, error=t.last_error)
        for t in failed_tasks
    ] + [
        FailedWork(stage="gpu", entity_id=None, key=f"{j.target_model}/{j.strategy}/{j.train_lang}", attempts=j.attempts,
                   error=j.last_error)
        for j in failed_jobs
    ]
    return StoreCounts(entities=ent, entities_by_domain=dom, stages=stages, gpu_jobs=jobs, snapshots=snaps,
                       skipped=skipped, failures=failures)


async def first_frozen_snapshot(session: Session) -> FirstSnapshot | None:
    snap = (
        await session.execute(select(Snapshot).where(col(Snapshot.status) == SnapshotStatus.frozen).order_by(col(Snapshot.built_at)))
    ).scalars().first()
    if snap is None:
        return None
    statuses = (await session.execute(select(col(GpuJob.status)).where(col(GpuJob.snapshot_id) == snap.id))).scalars().all()
    return FirstSnapshot(id=snap.id, export_path=snap.export_path, job_statuses=[LeaseStatus(s) for s in statuses])

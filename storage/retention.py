"""What the retention of the data directory reads from the store: each GPU job's state and files, which (snapshot,
target) pairs still have work in flight, the recorded reports and the snapshots' folders. Read-only; frozen
records. The rules (what may go) are `clkt.retention`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import GpuJob, LeaseStatus, QuestionResult, Snapshot, SnapshotReport
from storage.types import stored_id

__all__ = ["JobFiles", "job_files", "jobs_in_flight", "recorded_reports", "result_counts", "snapshot_folders"]

_IN_FLIGHT = (LeaseStatus.pending, LeaseStatus.leased)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobFiles:
    """A GPU job as its folder's retention sees it."""

    id: int
    snapshot_id: str
    target: str
    strategy: str
    status: LeaseStatus
    best_epoch: int | None
    artifacts_dir: str | None
    updated_at: datetime  # for a done job: when it was committed


async def job_files(session: AsyncSession, job_id: int | None = None) -> list[JobFiles]:
    """Every GPU job (or the one named), by id."""
    stmt = select(col(GpuJob.id), col(GpuJob.snapshot_id), col(GpuJob.target_model), col(GpuJob.strategy),
                  col(GpuJob.status), col(GpuJob.best_epoch), col(GpuJob.artifacts_dir),
                  col(GpuJob.updated_at)).order_by(col(GpuJob.id))
    if job_id is not None:
        stmt = stmt.where(col(GpuJob.id) == job_id)
    return [
        JobFiles(id=stored_id(i), snapshot_id=sid, target=t, strategy=strategy, status=LeaseStatus(st), best_epoch=best,
                 artifacts_dir=art, updated_at=upd)
        for i, sid, t, strategy, st, best, art, upd in (await session.execute(stmt)).all()
    ]


async def jobs_in_flight(session: AsyncSession) -> set[tuple[str, str]]:
    """(snapshot id, target) of every GPU job that is pending or leased."""
    stmt = select(col(GpuJob.snapshot_id), col(GpuJob.target_model)).where(col(GpuJob.status).in_(_IN_FLIGHT)).distinct()
    return {(sid, t) for sid, t in (await session.execute(stmt)).all()}


async def recorded_reports(session: AsyncSession) -> dict[str, str]:
    """Snapshot id -> the folder of the report last recorded for it."""
    return {sid: path for sid, path in (await session.execute(select(col(SnapshotReport.snapshot_id), col(SnapshotReport.path)))).all()}


async def snapshot_folders(session: AsyncSession) -> dict[str, str | None]:
    """Snapshot id -> its export folder (or archive of a superseded one), for every snapshot of the store."""
    return {sid: path for sid, path in (await session.execute(select(col(Snapshot.id), col(Snapshot.export_path)))).all()}


async def result_counts(session: AsyncSession) -> dict[int, int]:
    """Job id -> how many question results it stored."""
    stmt = select(col(QuestionResult.job_id), func.count()).group_by(col(QuestionResult.job_id))
    return {int(j): int(n) for j, n in (await session.execute(stmt)).all()}

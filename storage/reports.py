"""The reports written for snapshots: which snapshot's GPU jobs have all finished, and which report is due.

A snapshot's report is due when every one of its GPU jobs has finished (done or failed, at least one job)
and no report was recorded for it, or the recorded one was built from other jobs: the `fingerprint` of a
snapshot's finished jobs is the sha256 of each job's (id, status, attempts, updated_at), so a job that ran
again or joined later makes the recorded report stale. `record_report` keeps one row per snapshot (the
latest report); `reports_written(since=...)` is how a later step (publishing) learns "a report was written
for snapshot X, in folder P, at time T". Records leave this module as frozen `ReportRecord`s.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import GpuJob, LeaseStatus, SnapshotReport
from storage.types import utcnow

__all__ = [
    "FinishedJobs",
    "ReportRecord",
    "current_report",
    "due_reports",
    "find_report",
    "finished_snapshots",
    "record_report",
    "reports_written",
]

_FINISHED = (LeaseStatus.done, LeaseStatus.failed)


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedJobs:
    """A snapshot whose GPU jobs have all finished, and the fingerprint of those jobs."""

    snapshot_id: str
    fingerprint: str
    jobs: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportRecord:
    """The report last written for a snapshot."""

    snapshot_id: str
    fingerprint: str  # of the finished jobs it was built from (`FinishedJobs.fingerprint`)
    jobs: int
    path: str  # the report folder
    written_at: datetime


def _record(row: SnapshotReport) -> ReportRecord:
    return ReportRecord(snapshot_id=row.snapshot_id, fingerprint=row.fingerprint, jobs=row.jobs, path=row.path,
                        written_at=row.written_at)


async def finished_snapshots(session: AsyncSession, snapshot_id: str | None = None) -> list[FinishedJobs]:
    """The snapshots (or the one named) that have GPU jobs, none of them pending or leased; by snapshot id."""
    stmt = select(
        col(GpuJob.snapshot_id), col(GpuJob.id), col(GpuJob.status), col(GpuJob.attempts), col(GpuJob.updated_at)
    ).order_by(col(GpuJob.snapshot_id), col(GpuJob.id))
    if snapshot_id is not None:
        stmt = stmt.where(col(GpuJob.snapshot_id) == snapshot_id)
    jobs: dict[str, list[tuple[int, LeaseStatus, int, datetime]]] = defaultdict(list)
    for sid, jid, status, attempts, updated in (await session.execute(stmt)).all():
        assert jid is not None  # a stored row has its id
        jobs[sid].append((jid, LeaseStatus(status), attempts, updated))
    out: list[FinishedJobs] = []
    for sid, rows in jobs.items():
        if any(status not in _FINISHED for _, status, _, _ in rows):
            continue
        stamp = "\n".join(f"{jid} {status.value} {attempts} {updated.isoformat()}" for jid, status, attempts, updated in rows)
        out.append(FinishedJobs(snapshot_id=sid, fingerprint=hashlib.sha256(stamp.encode()).hexdigest(), jobs=len(rows)))
    return out


async def find_report(session: AsyncSession, snapshot_id: str) -> ReportRecord | None:
    row = await session.get(SnapshotReport, snapshot_id)
    return _record(row) if row is not None else None


async def due_reports(session: AsyncSession) -> list[FinishedJobs]:
    """The finished snapshots whose report is missing or was built from other jobs."""
    recorded = {r.snapshot_id: r.fingerprint for r in (await session.execute(select(SnapshotReport))).scalars().all()}
    return [f for f in await finished_snapshots(session) if recorded.get(f.snapshot_id) != f.fingerprint]


async def current_report(session: AsyncSession, snapshot_id: str) -> ReportRecord | None:
    """The snapshot's report when its jobs have all finished and it was built from exactly those jobs."""
    finished = await finished_snapshots(session, snapshot_id)
    report = await find_report(session, snapshot_id)
    if not finished or report is None or report.fingerprint != finished[0].fingerprint:
        return None
    return report


async def record_report(
    session: AsyncSession, *, snapshot_id: str, fingerprint: str, jobs: int, path: str, written_at: datetime | None = None,
) -> ReportRecord:
    """Record (or replace) the snapshot's report, in the caller's transaction."""
    values = {"snapshot_id": snapshot_id, "fingerprint": fingerprint, "jobs": jobs, "path": path,
              "written_at": written_at or utcnow()}
    bind = session.get_bind()
    ins = pg_insert(SnapshotReport) if bind.dialect.name == "postgresql" else sqlite_insert(SnapshotReport)
    update = {k: v for k, v in values.items() if k != "snapshot_id"}
    await session.execute(ins.values(values).on_conflict_do_update(index_elements=["snapshot_id"], set_=update))
    row = await session.get(SnapshotReport, snapshot_id, populate_existing=True)
    assert row is not None
    return _record(row)


async def reports_written(session: AsyncSession, *, since: datetime | None = None) -> list[ReportRecord]:
    """Every recorded report (written after `since`, when given), oldest first."""
    stmt = select(SnapshotReport).order_by(col(SnapshotReport.written_at), col(SnapshotReport.snapshot_id))
    if since is not None:
        stmt = stmt.where(col(SnapshotReport.written_at) > since)
    return [_record(r) for r in (await session.execute(stmt)).scalars().all()]

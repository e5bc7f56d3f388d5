"""The publish queue: publishing a snapshot to a Hub repo and branch as a task on the lease machinery of
`storage.claim` (the same claim, heartbeat and fenced completion as stage tasks and GPU jobs).

One row per (repo, branch, snapshot). `enqueue_publish` puts it back to `pending`; a task that is running is marked
asked again, and `finish_publish_task` then sends it back to `pending` instead of `done`. A Hub that does not answer
spends no attempt (`defer_publish_task`: released with a growing `not_before`, `hub_failures` + 1); other failures
spend attempts (`fail_publish_task`). What was committed is in `storage.publish_revisions`, the errata in
`storage.retractions`. Records leave this module as frozen dataclasses; statuses are `storage.enums.LeaseStatus`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage import claim as _lease
from storage.models import LeaseStatus, PublishTask
from storage.tasks import insert_ignore
from storage.types import affected_rows, stored_id, utcnow

__all__ = [
    "PublishLease",
    "PublishTaskRecord",
    "cancel_publish_tasks",
    "claim_publish_tasks",
    "defer_publish_task",
    "enqueue_publish",
    "fail_publish_task",
    "find_publish_task",
    "finish_publish_task",
    "heartbeat_publish_task",
    "publish_task_counts",
    "publish_tasks",
    "recover_publish_leases",
    "release_publish_task",
    "release_publish_tasks_of",
    "reset_failed_publish_tasks",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishTaskRecord:
    """One `publish_task` row."""

    id: int
    repo: str
    branch: str
    snapshot_id: str
    private: bool
    reason: str
    status: LeaseStatus
    lease_owner: str | None
    lease_expires_at: datetime | None
    attempts: int
    max_attempts: int
    not_before: datetime
    last_error: str | None
    hub_failures: int
    outcome: str | None
    requested_at: datetime
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishLease:
    """A publish task leased to a worker; `claimed_at` tells a later request (`requested_at`) from an earlier one."""

    task: PublishTaskRecord
    claimed_at: datetime

    @property
    def id(self) -> int:
        return self.task.id


def _task(row: PublishTask) -> PublishTaskRecord:
    return PublishTaskRecord(
        id=stored_id(row.id), repo=row.repo, branch=row.branch, snapshot_id=row.snapshot_id, private=row.private,
        reason=row.reason, status=LeaseStatus(row.status), lease_owner=row.lease_owner,
        lease_expires_at=row.lease_expires_at, attempts=row.attempts, max_attempts=row.max_attempts,
        not_before=row.not_before, last_error=row.last_error, hub_failures=row.hub_failures, outcome=row.outcome,
        requested_at=row.requested_at, created_at=row.created_at, updated_at=row.updated_at,
    )


# -- the queue -----------------------------------------------------------------------------------------------------


def _target(repo: str, branch: str, snapshot_id: str) -> tuple[ColumnElement[bool], ...]:
    return (col(PublishTask.repo) == repo, col(PublishTask.branch) == branch, col(PublishTask.snapshot_id) == snapshot_id)


async def find_publish_task(session: AsyncSession, *, repo: str, branch: str, snapshot_id: str) -> PublishTaskRecord | None:
    row = (await session.execute(select(PublishTask).where(*_target(repo, branch, snapshot_id)))).scalars().first()
    return _task(row) if row is not None else None


async def enqueue_publish(
    session: AsyncSession, *, repo: str, branch: str, snapshot_id: str, private: bool, reason: str, max_attempts: int,
    reset_failed: bool = True, urgent: bool = False, now: datetime | None = None,
) -> PublishTaskRecord:
    """Ask for a publish of the snapshot to (repo, branch), in the caller's transaction: a new `pending` task, or the
    existing one back to `pending` (a `done` one; a `failed` one when `reset_failed`; attempts and the Hub backoff
    start again), or a pending or running one marked asked again (a pending one keeps its backoff unless `urgent`)."""
    now = now or utcnow()
    await insert_ignore(session, PublishTask, [dict(
        repo=repo, branch=branch, snapshot_id=snapshot_id, private=private, reason=reason[:64],
        status=LeaseStatus.pending, attempts=0, max_attempts=max_attempts, not_before=now, hub_failures=0,
        requested_at=now, created_at=now, updated_at=now,
    )])
    restart = [LeaseStatus.done, *((LeaseStatus.failed, LeaseStatus.cancelled) if reset_failed else ())]
    await session.execute(
        update(PublishTask).where(*_target(repo, branch, snapshot_id), col(PublishTask.status).in_(restart)).values(
            status=LeaseStatus.pending, attempts=0, max_attempts=max_attempts, hub_failures=0, not_before=now,
            requested_at=now, reason=reason[:64], private=private, updated_at=now,
        ).execution_options(synchronize_session=False)
    )
    await session.execute(
        update(PublishTask).where(
            *_target(repo, branch, snapshot_id), col(PublishTask.status).in_([LeaseStatus.pending, LeaseStatus.leased]),
            col(PublishTask.requested_at) < now,
        ).values(requested_at=now, reason=reason[:64], private=private).execution_options(synchronize_session=False)
    )
    if urgent:
        await session.execute(
            update(PublishTask).where(*_target(repo, branch, snapshot_id), col(PublishTask.status) == LeaseStatus.pending)
            .values(not_before=now).execution_options(synchronize_session=False)
        )
    found = await find_publish_task(session, repo=repo, branch=branch, snapshot_id=snapshot_id)
    assert found is not None  # inserted above or there already
    return found


async def claim_publish_tasks(
    session: AsyncSession, *, owner: str, lease: timedelta, limit: int = 1, task_id: int | None = None,
    now: datetime | None = None,
) -> list[PublishLease]:
    """Lease up to `limit` claimable publish tasks (or the one `task_id`) to `owner` (attempts += 1)."""
    now = now or utcnow()
    where = (col(PublishTask.id) == task_id,) if task_id is not None else ()
    rows = await _lease.claim(session, PublishTask, owner=owner, lease=lease, limit=limit, where=where, now=now)
    return [PublishLease(task=_task(r), claimed_at=now) for r in rows]


async def heartbeat_publish_task(session: AsyncSession, task_id: int, *, owner: str, lease: timedelta) -> None:
    """Extend `owner`'s lease (`LeaseLost` when it no longer holds it)."""
    await _lease.heartbeat(session, PublishTask, task_id, owner=owner, lease=lease)


async def finish_publish_task(session: AsyncSession, lease: PublishLease, *, owner: str, outcome: str) -> LeaseStatus:
    """The try succeeded (fenced on `owner`): `done`, or back to `pending` when it was asked again after the claim."""
    row = await session.get(PublishTask, lease.id, populate_existing=True)
    again = row is not None and row.requested_at > lease.claimed_at
    if again:
        await _lease.release(session, PublishTask, lease.id, owner=owner, refund=True)
        await session.execute(
            update(PublishTask).where(col(PublishTask.id) == lease.id).values(
                outcome=outcome[:500], hub_failures=0, last_error=None, attempts=0,
            ).execution_options(synchronize_session=False)
        )
        return LeaseStatus.pending
    await _lease.complete(session, PublishTask, lease.id, owner=owner, outcome=outcome[:500], hub_failures=0,
                          last_error=None)
    return LeaseStatus.done


async def fail_publish_task(
    session: AsyncSession, task_id: int, *, owner: str, error: str, retry_in: timedelta | None = None,
    permanent: bool = False,
) -> LeaseStatus:
    """A failure that is not the Hub's: `pending` again after `retry_in`, `failed` when permanent or out of attempts."""
    return await _lease.fail(session, PublishTask, task_id, owner=owner, error=error, retry_in=retry_in,
                             permanent=permanent)


async def defer_publish_task(session: AsyncSession, task_id: int, *, owner: str, reason: str, defer: timedelta) -> None:
    """The Hub did not answer (or refused for now): back to `pending` after `defer`, no attempt spent, one more
    consecutive Hub failure counted (fenced: a lease `owner` no longer holds is left alone)."""
    res = await session.execute(
        update(PublishTask).where(
            col(PublishTask.id) == task_id, col(PublishTask.status) == LeaseStatus.leased,
            col(PublishTask.lease_owner) == owner,
        ).values(hub_failures=col(PublishTask.hub_failures) + 1).execution_options(synchronize_session=False)
    )
    if affected_rows(res):
        await _lease.release(session, PublishTask, task_id, owner=owner, defer=defer, refund=True, reason=reason)


async def release_publish_task(session: AsyncSession, task_id: int, *, owner: str) -> None:
    """Give the lease back, refunded, without counting a failure (a try cancelled by a stop); fenced on `owner`."""
    await _lease.release(session, PublishTask, task_id, owner=owner, refund=True)


async def release_publish_tasks_of(session: AsyncSession, *, owner: str) -> int:
    """Every publish task `owner` holds back to `pending`, attempts refunded (a stop); how many."""
    return await _lease.release_owner(session, PublishTask, owner=owner)


async def recover_publish_leases(session: AsyncSession, *, is_dead: Callable[[str | None], bool]) -> int:
    """Publish tasks leased by a process that `is_dead` says is gone (killed) back to `pending`, refunded."""
    rows = (await session.execute(
        select(col(PublishTask.id), col(PublishTask.lease_owner)).where(col(PublishTask.status) == LeaseStatus.leased)
    )).all()
    dead = [tid for tid, owner in rows if is_dead(owner)]
    if dead:
        await session.execute(
            update(PublishTask).where(col(PublishTask.id).in_(dead), col(PublishTask.status) == LeaseStatus.leased)
            .values(status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, updated_at=utcnow(),
                    not_before=utcnow(),
                    attempts=case((col(PublishTask.attempts) > 0, col(PublishTask.attempts) - 1), else_=0))
            .execution_options(synchronize_session=False)
        )
    return len(dead)


async def reset_failed_publish_tasks(session: AsyncSession) -> int:
    """Failed publish tasks back to `pending` with their attempts again (a daemon start retries them once more)."""
    now = utcnow()
    res = await session.execute(
        update(PublishTask).where(col(PublishTask.status) == LeaseStatus.failed).values(
            status=LeaseStatus.pending, attempts=0, hub_failures=0, not_before=now, updated_at=now,
        ).execution_options(synchronize_session=False)
    )
    return affected_rows(res)


async def cancel_publish_tasks(session: AsyncSession, *, snapshot_id: str, repo: str | None = None,
                               branch: str | None = None) -> list[PublishTaskRecord]:
    """Withdraw the snapshot's waiting (pending or failed) publish tasks, of one repo and branch when named: they
    become `cancelled` (a later publish asks again); a running one is left to its owner. The tasks cancelled."""
    where = [col(PublishTask.snapshot_id) == snapshot_id,
             col(PublishTask.status).in_([LeaseStatus.pending, LeaseStatus.failed])]
    if repo is not None:
        where.append(col(PublishTask.repo) == repo)
    if branch is not None:
        where.append(col(PublishTask.branch) == branch)
    rows = (await session.execute(select(PublishTask).where(*where))).scalars().all()
    if rows:
        await session.execute(
            update(PublishTask).where(col(PublishTask.id).in_([r.id for r in rows]), *where)
            .values(status=LeaseStatus.cancelled, updated_at=utcnow()).execution_options(synchronize_session=False)
        )
    return [_task(r) for r in rows]


async def publish_tasks(session: AsyncSession, *, limit: int = 50) -> list[PublishTaskRecord]:
    """The publish tasks, most recently changed first."""
    rows = (await session.execute(
        select(PublishTask).order_by(col(PublishTask.updated_at).desc(), col(PublishTask.id).desc()).limit(limit)
    )).scalars().all()
    return [_task(r) for r in rows]


async def publish_task_counts(session: AsyncSession) -> dict[str, int]:
    rows = (await session.execute(select(col(PublishTask.status), func.count()).group_by(col(PublishTask.status)))).all()
    return {LeaseStatus(s).value: int(n) for s, n in rows}

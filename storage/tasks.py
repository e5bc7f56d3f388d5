"""Task queue repository: enqueue stage work idempotently, lease it to stage workers, count it for `clkt status`.

Stage workers see a task only as a `TaskLease` (a frozen record of the claimed row). They claim through
`claim_tasks()` and end the lease through `complete_task()` / `fail_task()` / `release_task()`, which are
fenced on the owner (the lease machinery of `storage.claim`): a worker whose lease expired and was
re-claimed elsewhere gets `LeaseLost` and writes nothing. Each takes the caller's session, so completion
lands in the transaction that wrote the task's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.errors import LeaseLost
from storage import claim as _claim
from storage.models import Entity, LeaseStatus, Stage, Task
from storage.types import affected_rows, utcnow

__all__ = [
    "LeaseLost",
    "TaskLease",
    "claim_tasks",
    "complete_task",
    "count_keyed_tasks",
    "enqueue",
    "fail_task",
    "heartbeat_task",
    "insert_ignore",
    "release_task",
]


@dataclass(frozen=True, slots=True)
class TaskLease:
    """A task leased to a worker: what the stage needs to do it and to end the lease."""

    id: int
    stage: Stage
    entity_id: int
    key: str
    attempts: int  # including this one
    max_attempts: int


def _lease_of(row: Task) -> TaskLease:
    assert row.id is not None
    return TaskLease(
        id=row.id, stage=Stage(row.stage), entity_id=row.entity_id, key=row.key, attempts=row.attempts,
        max_attempts=row.max_attempts,
    )


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


async def insert_ignore(session: AsyncSession, table: type[Any], rows: list[dict[str, Any]]) -> int:
    """INSERT ... ON CONFLICT DO NOTHING on SQLite and PostgreSQL; returns how many rows were new."""
    if not rows:
        return 0
    ins = pg_insert(table) if _dialect(session) == "postgresql" else sqlite_insert(table)
    res = await session.execute(ins.values(rows).on_conflict_do_nothing())
    return affected_rows(res)


async def enqueue(
    session: AsyncSession, stage: Stage, entity_id: int, key: str = "", *, max_attempts: int
) -> bool:
    """Add a task unless the same (stage, entity, key) exists; True when it was new. `max_attempts` has no
    default: every stage's tasks get the configured `daemon.max_attempts` (`StageWorker.advance`)."""
    now = utcnow()
    n = await insert_ignore(
        session,
        Task,
        [
            dict(
                stage=stage, entity_id=entity_id, key=key, status=LeaseStatus.pending, attempts=0,
                max_attempts=max_attempts, not_before=now, created_at=now, updated_at=now,
            )
        ],
    )
    return n > 0


async def count_keyed_tasks(
    session: AsyncSession, *, stage: Stage, key: str, occurred_from: datetime, occurred_to: datetime,
) -> int:
    """How many tasks of `stage` with `key` there are for entities that occurred in [occurred_from, occurred_to)."""
    stmt = (
        select(func.count()).select_from(Task).join(Entity, col(Entity.id) == col(Task.entity_id))
        .where(col(Task.stage) == stage, col(Task.key) == key, col(Entity.occurred_at) >= occurred_from,
               col(Entity.occurred_at) < occurred_to)
    )
    return int((await session.execute(stmt)).scalar_one())


async def claim_tasks(
    session: AsyncSession, *, stage: Stage, owner: str, lease: timedelta, limit: int = 1, now: datetime | None = None,
    keyed: bool | None = None,
) -> list[TaskLease]:
    """Lease up to `limit` claimable tasks of `stage` to `owner` for `lease` (attempts += 1), oldest first; in the
    probe stage an entity's own probe (key "") before the observing tasks (a target added late asking about frozen
    snapshots' entities, the gate's sampled rejects): a backlog of those never holds up the entities a period's
    snapshot waits for. `keyed`: only tasks with a key (True) or only those without one (False); None: both."""
    if limit <= 0:
        return []
    first = (col(Task.key) != "",) if stage == Stage.probe else ()
    where: tuple[Any, ...] = (col(Task.stage) == stage,)
    if keyed is not None:
        where += ((col(Task.key) != "") if keyed else (col(Task.key) == ""),)
    rows = await _claim.claim(session, Task, owner=owner, lease=lease, limit=limit, where=where, first=first, now=now)
    return [_lease_of(r) for r in rows]


async def complete_task(session: AsyncSession, task_id: int, *, owner: str) -> None:
    """Mark the task done, fenced on `owner`'s lease (`LeaseLost` otherwise), in the caller's transaction."""
    await _claim.complete(session, Task, task_id, owner=owner)


async def heartbeat_task(session: AsyncSession, task_id: int, *, owner: str, lease: timedelta) -> None:
    """Extend `owner`'s lease of the task to `lease` from now (a long try of a live worker); `LeaseLost` when
    it is no longer ours."""
    await _claim.heartbeat(session, Task, task_id, owner=owner, lease=lease)


async def fail_task(
    session: AsyncSession, task_id: int, *, owner: str, error: str, retry_in: timedelta | None = None,
    permanent: bool = False,
) -> LeaseStatus:
    """Record a failure (fenced): `pending` again after `retry_in`, or `failed` once the attempts are spent."""
    return await _claim.fail(session, Task, task_id, owner=owner, error=error, retry_in=retry_in, permanent=permanent)


async def release_task(
    session: AsyncSession, task_id: int, *, owner: str, defer: timedelta | None = None, refund: bool = True,
    reason: str | None = None,
) -> None:
    """Give the lease back without counting a failure (shutdown, `RetryLater`); a no-op when no longer ours."""
    await _claim.release(session, Task, task_id, owner=owner, defer=defer, refund=refund, reason=reason)

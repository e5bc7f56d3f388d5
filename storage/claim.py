"""The one lease-based claim used by every stage (and by the GPU queue).

A claimable table has: status, lease_owner, lease_expires_at, attempts, max_attempts, not_before,
last_error, updated_at (see `Task`, `GpuJob` and `PublishTask`). `claim()` takes up to `limit` rows that are pending (or
whose lease expired) in one statement: `UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING` on SQLite
(the write lock makes it atomic), `... FOR UPDATE SKIP LOCKED` on PostgreSQL. Rows whose lease expired
after their last allowed attempt are marked `failed` with the reason kept.

Completion is fenced: `complete()`/`fail()`/`release()` only touch a row still leased by the caller, so a
worker whose lease expired (and was re-claimed elsewhere) cannot overwrite the new owner's work.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import and_, func, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.errors import LeaseLost
from storage.models import GpuJob, LeaseStatus, PublishTask, Task
from storage.types import affected_rows, utcnow

__all__ = ["Claimable", "LeaseLost", "claim", "complete", "fail", "heartbeat", "reap_expired", "release", "release_owner"]

Claimable = TypeVar("Claimable", Task, GpuJob, PublishTask)


def _claimable_filter(table: type[Any], now: datetime) -> Any:
    return or_(
        and_(table.status == LeaseStatus.pending, table.not_before <= now),
        and_(table.status == LeaseStatus.leased, table.lease_expires_at < now),
    )


async def reap_expired(session: AsyncSession, table: type[Any], *, now: datetime | None = None) -> int:
    """Rows whose lease expired on their last allowed attempt become `failed` (reason kept); so do pending
    rows with no attempt left (never claimable again), so no work is ever stuck unseen."""
    now = now or utcnow()
    await session.execute(
        update(table)
        .where(table.status == LeaseStatus.pending, table.attempts >= table.max_attempts)
        .values(
            status=LeaseStatus.failed,
            last_error=func.coalesce(table.last_error + literal(" | "), literal("")) + literal("no attempt left"),
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    res = await session.execute(
        update(table)
        .where(
            table.status == LeaseStatus.leased,
            table.lease_expires_at < now,
            table.attempts >= table.max_attempts,
        )
        .values(
            status=LeaseStatus.failed,
            lease_owner=None,
            lease_expires_at=None,
            last_error=_concat_error(table),
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return affected_rows(res)


def _concat_error(table: type[Any]) -> Any:
    return func.coalesce(table.last_error + literal(" | "), literal("")) + literal(
        "lease expired on the last allowed attempt (worker died or timed out)"
    )


async def claim(
    session: AsyncSession,
    table: type[Claimable],
    *,
    owner: str,
    lease: timedelta,
    limit: int = 1,
    where: tuple[Any, ...] = (),
    first: tuple[Any, ...] = (),
    now: datetime | None = None,
) -> list[Claimable]:
    """Lease up to `limit` claimable rows of `table` matching `where`, oldest first (after the orderings `first`,
    when given); returns them (attempts += 1)."""
    now = now or utcnow()
    await reap_expired(session, table, now=now)
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    inner = (
        select(col(table.id))
        .where(_claimable_filter(table, now), col(table.attempts) < col(table.max_attempts), *where)
        .order_by(*first, col(table.id))
        .limit(limit)
    )
    if dialect == "postgresql":
        inner = inner.with_for_update(skip_locked=True)
    stmt = (
        update(table)
        .where(col(table.id).in_(inner.scalar_subquery()))
        .values(
            status=LeaseStatus.leased,
            lease_owner=owner,
            lease_expires_at=now + lease,
            attempts=col(table.attempts) + 1,
            updated_at=now,
        )
        .returning(table)
        .execution_options(synchronize_session=False)
    )
    rows = (await session.execute(stmt)).scalars().all()
    return sorted(rows, key=lambda r: r.id or 0)


def _owned(table: type[Any], row_id: int, owner: str) -> tuple[Any, ...]:
    return (table.id == row_id, table.status == LeaseStatus.leased, table.lease_owner == owner)


async def complete(session: AsyncSession, table: type[Any], row_id: int, *, owner: str, **values: Any) -> None:
    """Mark the row done (fenced). Extra column values are written in the same statement."""
    res = await session.execute(
        update(table)
        .where(*_owned(table, row_id, owner))
        .values(status=LeaseStatus.done, lease_owner=None, lease_expires_at=None, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    if not affected_rows(res):
        raise LeaseLost(f"{table.__tablename__} {row_id} is no longer leased by {owner}")


async def fail(
    session: AsyncSession,
    table: type[Any],
    row_id: int,
    *,
    owner: str,
    error: str,
    retry_in: timedelta | None = None,
    permanent: bool = False,
) -> LeaseStatus:
    """Record a failure: back to pending after `retry_in`, or `failed` when attempts are spent."""
    now = utcnow()
    row = (await session.execute(select(table).where(*_owned(table, row_id, owner)))).scalar_one_or_none()
    if row is None:
        raise LeaseLost(f"{table.__tablename__} {row_id} is no longer leased by {owner}")
    final = permanent or row.attempts >= row.max_attempts
    status = LeaseStatus.failed if final else LeaseStatus.pending
    await session.execute(
        update(table)
        .where(*_owned(table, row_id, owner))
        .values(
            status=status,
            lease_owner=None,
            lease_expires_at=None,
            last_error=error[:4000],
            not_before=now + (retry_in or timedelta(0)),
            updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return status


async def release(
    session: AsyncSession, table: type[Any], row_id: int, *, owner: str, defer: timedelta | None = None,
    refund: bool = True, reason: str | None = None,
) -> None:
    """Give a lease back without counting a failure (shutdown, RetryLater, backoff)."""
    now = utcnow()
    values: dict[str, Any] = dict(
        status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, not_before=now + (defer or timedelta(0)),
        updated_at=now,
    )
    if refund:
        values["attempts"] = table.attempts - 1
    if reason is not None:
        values["last_error"] = reason[:4000]
    await session.execute(
        update(table).where(*_owned(table, row_id, owner)).values(**values).execution_options(synchronize_session=False)
    )


async def release_owner(session: AsyncSession, table: type[Any], *, owner: str) -> int:
    """Release every lease held by `owner` (shutdown). Attempts are refunded: it was not their fault."""
    now = utcnow()
    res = await session.execute(
        update(table)
        .where(table.status == LeaseStatus.leased, table.lease_owner == owner)
        .values(
            status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, attempts=table.attempts - 1,
            not_before=now, updated_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return affected_rows(res)


async def heartbeat(session: AsyncSession, table: type[Any], row_id: int, *, owner: str, lease: timedelta) -> None:
    """Extend a lease held by `owner` (long GPU jobs)."""
    res = await session.execute(
        update(table)
        .where(*_owned(table, row_id, owner))
        .values(lease_expires_at=utcnow() + lease, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not affected_rows(res):
        raise LeaseLost(f"{table.__tablename__} {row_id} is no longer leased by {owner}")

"""Task queue repository: enqueue stage work idempotently, count it for `clkt status`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import LeaseStatus, Stage, Task
from storage.types import utcnow

__all__ = ["insert_ignore", "enqueue", "task_counts", "recent_failures"]


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


async def insert_ignore(session: AsyncSession, table: type[Any], rows: list[dict[str, Any]]) -> int:
    """INSERT ... ON CONFLICT DO NOTHING on SQLite and PostgreSQL; returns how many rows were new."""
    if not rows:
        return 0
    ins = pg_insert(table) if _dialect(session) == "postgresql" else sqlite_insert(table)
    res = await session.execute(ins.values(rows).on_conflict_do_nothing())
    return int(res.rowcount or 0)


async def enqueue(
    session: AsyncSession, stage: Stage, entity_id: int, key: str = "", *, max_attempts: int = 5
) -> bool:
    """Add a task unless the same (stage, entity, key) exists; True when it was new."""
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


async def task_counts(session: AsyncSession) -> dict[str, dict[str, int]]:
    rows = (await session.execute(select(Task.stage, Task.status, func.count()).group_by(Task.stage, Task.status))).all()
    out: dict[str, dict[str, int]] = {}
    for stage, status, n in rows:
        out.setdefault(Stage(stage).value, {})[LeaseStatus(status).value] = int(n)
    return out


async def recent_failures(session: AsyncSession, limit: int = 10) -> list[dict[str, Any]]:
    rows = (
        await session.execute(
            select(Task).where(Task.status == LeaseStatus.failed).order_by(Task.updated_at.desc()).limit(limit)
        )
    ).scalars().all()
    return [
        dict(stage=Stage(t.stage).value, entity_id=t.entity_id, key=t.key, attempts=t.attempts, error=t.last_error)
        for t in rows
    ]

"""Lease recovery across the store: what a daemon does with leases at start and at stop.

- `recover_stage_leases`: at start, under the store lock, every stage task still `leased` belongs to a dead
  daemon: back to `pending`, its attempt refunded (a kill must not use up a task's tries).
- `recover_gpu_leases`: GPU jobs may be leased by standalone workers on other machines; only those whose
  owner `is_dead(owner)` says is gone (a process of this host that no longer exists) are put back, the same
  way; the others expire with their lease.
- `release_owned`: at stop, every lease `owner` holds, tasks and GPU jobs, back to `pending` (refunded).

Lease owner ids are `<host>:<pid>:<nonce>` (see `clkt.owner`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import case, select, update
from sqlmodel import col

from storage.claim import release_owner
from storage.engine import Session
from storage.enums import LeaseStatus
from storage.models import GpuJob, Task
from storage.types import affected_rows, utcnow

__all__ = ["recover_gpu_leases", "recover_stage_leases", "release_owned"]


def _back_to_pending(table: type[Any]) -> dict[str, Any]:
    return dict(
        status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, updated_at=utcnow(),
        attempts=case((table.attempts > 0, table.attempts - 1), else_=0),
    )


async def recover_stage_leases(session: Session) -> int:
    """Every leased stage task back to pending, attempts refunded; returns how many."""
    res = await session.execute(
        update(Task).where(col(Task.status) == LeaseStatus.leased).values(**_back_to_pending(Task))
        .execution_options(synchronize_session=False)
    )
    return affected_rows(res)


async def recover_gpu_leases(session: Session, *, is_dead: Callable[[str | None], bool]) -> int:
    """Leased GPU jobs whose owner `is_dead` back to pending, attempts refunded; returns how many."""
    rows = (await session.execute(select(col(GpuJob.id), col(GpuJob.lease_owner)).where(col(GpuJob.status) == LeaseStatus.leased))).all()
    dead = [jid for jid, owner in rows if is_dead(owner)]
    if dead:
        await session.execute(
            update(GpuJob).where(col(GpuJob.id).in_(dead), col(GpuJob.status) == LeaseStatus.leased)
            .values(**_back_to_pending(GpuJob)).execution_options(synchronize_session=False)
        )
    return len(dead)


async def release_owned(session: Session, *, owner: str) -> int:
    """Every lease `owner` holds (stage tasks and GPU jobs) back to pending, attempts refunded."""
    return await release_owner(session, Task, owner=owner) + await release_owner(session, GpuJob, owner=owner)

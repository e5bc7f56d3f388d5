"""Where entities landed: the one frozen snapshot of a spec that holds each (`SnapshotEntity`), and the accounting of
every entity (`v_entity_accounting`: in its own period's snapshot, carried into a later one, ready and waiting, in
the pipeline, or dropped with its reason).

Contracts:

- `place_entities` runs in the freezing transaction (`storage.snapshots.freeze_snapshot`): it first removes the
  placements of the snapshot the new one supersedes (a forced rebuild places that period's entities anew), then
  inserts one row per entity. The primary key (spec, entity) makes "exactly one snapshot" the store's own
  constraint: a builder that would place an entity a concurrent one placed fails its flush with `IntegrityError`,
  and its whole freeze rolls back (nothing carried twice, on SQLite and PostgreSQL alike).
- `expire_entities` marks ready entities that waited past the carry window `expired` (one UPDATE, in the same
  transaction as the freeze that gave up on them); an entity placed meanwhile is never expired.
- The accounting is read from the view `v_entity_accounting` (the migration declares it), so `clkt status`, the
  status page and a researcher's SQL count the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, exists, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.enums import EntityStatus
from storage.models import Entity, Snapshot, SnapshotEntity
from storage.types import UTCDateTime, affected_rows

__all__ = [
    "AccountingCount",
    "NewPlacement",
    "Placement",
    "accounting_counts",
    "expire_entities",
    "place_entities",
    "placed_in_other_periods",
    "placements_in",
    "unplaced_ready_before",
    "waiting_since",
]

_CHUNK = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class NewPlacement:
    """An entity a freeze places: its store row, its own period's label, whether it is carried (not of the period)."""

    entity_id: int
    own_period: str
    carried: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    spec: str
    entity_id: int
    snapshot_id: str
    own_period: str
    carried: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountingCount:
    """How many entities of one month of occurrence are in one state (`reason` for the dropped)."""

    month: str
    state: str  # pipeline | ready | frozen | carried | dropped
    reason: str | None
    n: int


async def place_entities(
    session: AsyncSession, *, spec: str, snapshot_id: str, placements: Sequence[NewPlacement],
    supersedes: str | None, now: datetime,
) -> None:
    """Record where the entities of a freezing snapshot landed (see the module docstring)."""
    if supersedes is not None:
        await session.execute(delete(SnapshotEntity).where(col(SnapshotEntity.snapshot_id) == supersedes))
    session.add_all(
        SnapshotEntity(spec=spec, entity_id=p.entity_id, snapshot_id=snapshot_id, own_period=p.own_period,
                       carried=p.carried, placed_at=now)
        for p in placements
    )
    await session.flush()


async def placed_in_other_periods(session: AsyncSession, *, spec: str, period: str) -> set[int]:
    """Entities a frozen snapshot of `spec` for another period than `period` holds (carried there): a forced
    rebuild of `period` never takes them back."""
    rows = await session.execute(
        select(col(SnapshotEntity.entity_id))
        .join(Snapshot, col(Snapshot.id) == col(SnapshotEntity.snapshot_id))
        .where(col(SnapshotEntity.spec) == spec, col(Snapshot.period) != period)
    )
    return {int(r) for (r,) in rows}


async def expire_entities(session: AsyncSession, *, spec: str, entity_ids: Sequence[int], reason: str, now: datetime) -> int:
    """Mark the ready entities among `entity_ids` that no snapshot of `spec` holds `expired`; how many."""
    n = 0
    ids = sorted(set(entity_ids))
    placed = exists().where(col(SnapshotEntity.entity_id) == col(Entity.id), col(SnapshotEntity.spec) == spec)
    for i in range(0, len(ids), _CHUNK):
        res = await session.execute(
            update(Entity)
            .where(col(Entity.id).in_(ids[i : i + _CHUNK]), col(Entity.status) == EntityStatus.ready, ~placed)
            .values(status=EntityStatus.expired, status_reason=reason, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        n += affected_rows(res)
    return n


async def accounting_counts(session: AsyncSession) -> list[AccountingCount]:
    """Per month of occurrence, state and reason: how many entities (`v_entity_accounting`), oldest month first."""
    rows = await session.execute(
        text("SELECT month, state, reason, COUNT(*) FROM v_entity_accounting GROUP BY month, state, reason "
             "ORDER BY month, state, reason")
    )
    return [AccountingCount(month=str(m), state=str(s), reason=r, n=int(n)) for m, s, r, n in rows]


async def waiting_since(session: AsyncSession, *, before: datetime) -> int:
    """Ready entities in no snapshot whose own date is before `before` (the daemon warns when any waited past a
    period)."""
    stmt = text("SELECT COUNT(*) FROM v_entity_accounting WHERE state = 'ready' AND occurred_at < :before").bindparams(
        bindparam("before", type_=UTCDateTime())
    )
    return int((await session.execute(stmt, {"before": before})).scalar_one())


async def unplaced_ready_before(session: AsyncSession, *, spec: str, before: datetime) -> list[int]:
    """Ready entities that occurred before `before` and that no frozen snapshot of `spec` holds (row ids, sorted)."""
    placed = exists().where(col(SnapshotEntity.entity_id) == col(Entity.id), col(SnapshotEntity.spec) == spec)
    rows = await session.execute(
        select(col(Entity.id)).where(col(Entity.status) == EntityStatus.ready, col(Entity.occurred_at) < before, ~placed)
        .order_by(col(Entity.id))
    )
    return [int(r) for (r,) in rows if r is not None]


async def placements_in(session: AsyncSession, *, spec: str, snapshot_ids: Sequence[str] | None = None,
                        carried_only: bool = False) -> list[Placement]:
    """The placements of `spec` (in `snapshot_ids` when given; only the carried ones with `carried_only`)."""
    stmt = select(SnapshotEntity).where(col(SnapshotEntity.spec) == spec)
    if snapshot_ids is not None:
        stmt = stmt.where(col(SnapshotEntity.snapshot_id).in_(list(snapshot_ids)))
    if carried_only:
        stmt = stmt.where(col(SnapshotEntity.carried))
    rows = (await session.execute(stmt)).scalars().all()
    return [Placement(spec=r.spec, entity_id=r.entity_id, snapshot_id=r.snapshot_id, own_period=r.own_period,
                      carried=r.carried) for r in rows]

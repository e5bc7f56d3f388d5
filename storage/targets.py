"""Targets over time: the registry of every target a store has had, each frozen snapshot's validity per target,
and the entities a target added after a freeze recognised (its exclusions for that snapshot).

- `sync_targets` records the configuration's targets at start-up: new names are added, names no longer in the
  configuration become inactive (their probes, jobs and results stay), and a name that now names ANOTHER model
  is refused with a `ConfigError` (a name is the identity that probes, exclusions and results carry).
- `record_snapshot_target` / `snapshot_targets`: per (snapshot, target), `ready` (valid, minus its exclusions),
  `probing` (a target added after the freeze is being asked about the snapshot's entities) or `out_of_window`.
- `add_exclusions` / `excluded_entities` / `exclusions_of`: what a target recognised in a frozen snapshot.

Records leave this module as frozen dataclasses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.errors import ConfigError
from storage.models import SnapshotExclusion, SnapshotTarget, SnapshotTargetStatus, TargetModel
from storage.tasks import insert_ignore
from storage.types import utcnow

__all__ = [
    "ExclusionRecord",
    "SnapshotTargetRecord",
    "TargetIdentity",
    "TargetRecord",
    "TargetSync",
    "add_exclusions",
    "check_targets",
    "excluded_entities",
    "exclusion_counts",
    "exclusions_of",
    "list_targets",
    "record_snapshot_target",
    "snapshot_targets",
    "sync_targets",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetIdentity:
    """A target as the configuration names it."""

    name: str
    model: str
    kind: str
    cutoff: date | None = None
    fresh_from: datetime | None = None  # resolved cutoff + the spec's temporal buffer (`v_fresh_entities`)


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetRecord:
    name: str
    model: str
    kind: str
    cutoff: date | None
    active: bool
    first_seen_at: datetime
    last_seen_at: datetime
    fresh_from: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetSync:
    """What `sync_targets` changed: names new to the store, names that left the configuration."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    returned: tuple[str, ...]  # inactive names that are in the configuration again


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotTargetRecord:
    snapshot_id: str
    target_name: str
    status: SnapshotTargetStatus
    entities: int
    excluded: int
    updated_at: datetime

    @property
    def valid(self) -> int:
        """Entities of the snapshot valid for the target (0 unless ready)."""
        return self.entities - self.excluded if self.status is SnapshotTargetStatus.ready else 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ExclusionRecord:
    snapshot_id: str
    target_name: str
    entity_id: int
    reason: str
    probed_at: datetime


def _target(row: TargetModel) -> TargetRecord:
    return TargetRecord(
        name=row.name, model=row.model, kind=row.kind, cutoff=row.cutoff, active=row.active,
        first_seen_at=row.first_seen_at, last_seen_at=row.last_seen_at, fresh_from=row.fresh_from,
    )


def _refuse_renames(rows: dict[str, TargetModel], targets: Sequence[TargetIdentity]) -> None:
    for t in targets:
        old = rows.get(t.name)
        if old is not None and old.model != t.model:
            raise ConfigError(
                "spec.targets",
                f"target {t.name!r} is model {old.model!r} in this store (since {old.first_seen_at.date().isoformat()}), "
                f"not {t.model!r}: its probes and results belong to that model; give the new model a new name",
            )


async def check_targets(session: AsyncSession, targets: Sequence[TargetIdentity]) -> None:
    """`ConfigError` when a known name now names another model, writing nothing (a GPU worker's check: its
    configuration must not change the daemon's registry)."""
    _refuse_renames({r.name: r for r in (await session.execute(select(TargetModel))).scalars().all()}, targets)


async def sync_targets(
    session: AsyncSession, targets: Sequence[TargetIdentity], *, now: datetime | None = None
) -> TargetSync:
    """Record the configuration's targets (see the module docstring); raises `ConfigError` before writing
    anything when a known name now names another model."""
    now = now or utcnow()
    rows = {r.name: r for r in (await session.execute(select(TargetModel))).scalars().all()}
    _refuse_renames(rows, targets)
    added: list[str] = []
    returned: list[str] = []
    for t in targets:
        old = rows.get(t.name)
        if old is None:
            session.add(TargetModel(name=t.name, model=t.model, kind=t.kind, cutoff=t.cutoff, active=True,
                                    fresh_from=t.fresh_from, first_seen_at=now, last_seen_at=now))
            added.append(t.name)
            continue
        if not old.active:
            returned.append(t.name)
        old.active, old.kind, old.cutoff, old.last_seen_at = True, t.kind, t.cutoff, now
        if t.fresh_from is not None:
            old.fresh_from = t.fresh_from
    names = {t.name for t in targets}
    removed = [n for n, r in sorted(rows.items()) if n not in names and r.active]
    for n in removed:
        rows[n].active = False
    await session.flush()
    return TargetSync(added=tuple(added), removed=tuple(removed), returned=tuple(returned))


async def list_targets(session: AsyncSession, *, active_only: bool = False) -> list[TargetRecord]:
    stmt = select(TargetModel).order_by(col(TargetModel.first_seen_at), col(TargetModel.name))
    if active_only:
        stmt = stmt.where(col(TargetModel.active).is_(True))
    return [_target(r) for r in (await session.execute(stmt)).scalars().all()]


async def record_snapshot_target(
    session: AsyncSession, *, snapshot_id: str, target: str, status: SnapshotTargetStatus, entities: int,
    excluded: int = 0, now: datetime | None = None,
) -> None:
    """Insert or replace the (snapshot, target) validity row."""
    values = dict(snapshot_id=snapshot_id, target_name=target, status=status, entities=entities, excluded=excluded,
                  updated_at=now or utcnow())
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    ins = pg_insert(SnapshotTarget) if dialect == "postgresql" else sqlite_insert(SnapshotTarget)
    stmt = ins.values(values).on_conflict_do_update(
        index_elements=["snapshot_id", "target_name"],
        set_={k: v for k, v in values.items() if k not in ("snapshot_id", "target_name")},
    )
    await session.execute(stmt)


async def snapshot_targets(
    session: AsyncSession, *, snapshot_id: str | None = None, target: str | None = None,
    status: SnapshotTargetStatus | None = None,
) -> list[SnapshotTargetRecord]:
    stmt = select(SnapshotTarget).order_by(col(SnapshotTarget.snapshot_id), col(SnapshotTarget.target_name))
    if snapshot_id is not None:
        stmt = stmt.where(col(SnapshotTarget.snapshot_id) == snapshot_id)
    if target is not None:
        stmt = stmt.where(col(SnapshotTarget.target_name) == target)
    if status is not None:
        stmt = stmt.where(col(SnapshotTarget.status) == status)
    return [
        SnapshotTargetRecord(snapshot_id=r.snapshot_id, target_name=r.target_name, status=SnapshotTargetStatus(r.status),
                             entities=r.entities, excluded=r.excluded, updated_at=r.updated_at)
        for r in (await session.execute(stmt)).scalars().all()
    ]


async def add_exclusions(
    session: AsyncSession, *, snapshot_id: str, target: str, entities: Iterable[tuple[int, str]],
    now: datetime | None = None,
) -> int:
    """Record (entity id, reason) pairs the target recognised in the snapshot; how many were new."""
    at = now or utcnow()
    rows = [dict(snapshot_id=snapshot_id, target_name=target, entity_id=e, reason=reason[:500], probed_at=at)
            for e, reason in entities]
    return await insert_ignore(session, SnapshotExclusion, rows)


async def excluded_entities(session: AsyncSession, snapshot_id: str, target: str) -> frozenset[int]:
    stmt = select(col(SnapshotExclusion.entity_id)).where(
        col(SnapshotExclusion.snapshot_id) == snapshot_id, col(SnapshotExclusion.target_name) == target
    )
    return frozenset(int(e) for e in (await session.execute(stmt)).scalars().all())


async def exclusions_of(
    session: AsyncSession, *, snapshot_id: str | None = None, target: str | None = None
) -> list[ExclusionRecord]:
    stmt = select(SnapshotExclusion).order_by(
        col(SnapshotExclusion.snapshot_id), col(SnapshotExclusion.target_name), col(SnapshotExclusion.entity_id)
    )
    if snapshot_id is not None:
        stmt = stmt.where(col(SnapshotExclusion.snapshot_id) == snapshot_id)
    if target is not None:
        stmt = stmt.where(col(SnapshotExclusion.target_name) == target)
    return [
        ExclusionRecord(snapshot_id=r.snapshot_id, target_name=r.target_name, entity_id=r.entity_id, reason=r.reason,
                        probed_at=r.probed_at)
        for r in (await session.execute(stmt)).scalars().all()
    ]


async def exclusion_counts(session: AsyncSession) -> dict[tuple[str, str], int]:
    """(snapshot id, target) -> how many of its entities the target recognised."""
    stmt = select(col(SnapshotExclusion.snapshot_id), col(SnapshotExclusion.target_name), func.count()).group_by(
        col(SnapshotExclusion.snapshot_id), col(SnapshotExclusion.target_name)
    )
    return {(s, t): int(n) for s, t, n in (await session.execute(stmt)).all()}

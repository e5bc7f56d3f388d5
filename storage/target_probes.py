"""The queries of targets over time beyond the registry (`storage.targets`): which frozen snapshots lack a validity
row for a target, what a late target's observing probe tasks and verdicts are, and the backfill of stores made
before validity rows existed.

Records leave this module as frozen dataclasses; nothing here decides a rule (the window, what a failed probe
means): `clkt.roster` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import (
    Entity,
    EntityStatus,
    LeaseStatus,
    Probe,
    Snapshot,
    SnapshotItem,
    SnapshotStatus,
    SnapshotTarget,
    SnapshotTargetStatus,
    Stage,
    Task,
)
from storage.targets import record_snapshot_target
from storage.types import stored_id

__all__ = [
    "ObserveTask",
    "SnapshotRef",
    "Verdict",
    "backfill_snapshot_targets",
    "observe_progress",
    "observe_tasks",
    "open_entities_unprobed_by",
    "probing_progress",
    "snapshot_entity_ids",
    "snapshots_of_spec",
    "verdicts_of",
]

_CHUNK = 500
_ENDED = (LeaseStatus.done, LeaseStatus.failed, LeaseStatus.cancelled)


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRef:
    """A frozen snapshot as targets over time see it."""

    id: str
    spec: str
    period: str
    status: SnapshotStatus
    # ISO date from the manifest (None: no manifest): its period's start, or the own date of the earliest entity
    # carried into it (`clkt.snapshots.carry`), whichever is earlier: what a target's window is checked against
    period_start: str | None
    manifest_targets: tuple[str, ...]  # the targets it was built for
    languages: tuple[str, ...]
    entities: int  # distinct real entities of its items
    rows: frozenset[str]  # targets that have a validity row for it


@dataclass(frozen=True, slots=True, kw_only=True)
class ObserveTask:
    entity_id: int
    status: LeaseStatus
    attempts: int
    last_error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    entity_id: int
    lang: str
    known: bool
    reason: str


def _chunks(ids: Sequence[int]) -> list[list[int]]:
    return [list(ids[i : i + _CHUNK]) for i in range(0, len(ids), _CHUNK)]


async def _entity_counts(session: AsyncSession) -> dict[str, int]:
    stmt = select(col(SnapshotItem.snapshot_id), func.count(func.distinct(col(SnapshotItem.entity_id)))).group_by(
        col(SnapshotItem.snapshot_id)
    )
    return {sid: int(n) for sid, n in (await session.execute(stmt)).all()}


async def _rows_by_snapshot(session: AsyncSession) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for sid, name in (await session.execute(select(col(SnapshotTarget.snapshot_id), col(SnapshotTarget.target_name)))).all():
        out.setdefault(sid, set()).add(name)
    return out


def _earliest_day(manifest: dict[str, Any]) -> str | None:
    """The manifest's `period_start`, or the earliest `occurred_on` of its carried entities when earlier (ISO dates
    compare as text); as `clkt.snapshots.layout.SnapshotManifest.earliest_day`."""
    start = manifest.get("period_start")
    if not start:
        return None
    carried = [str(c["occurred_on"]) for c in manifest.get("carried") or [] if isinstance(c, dict) and c.get("occurred_on")]
    return min([str(start), *carried])


async def snapshots_of_spec(
    session: AsyncSession, *, spec: str | None = None, statuses: Sequence[SnapshotStatus] = (SnapshotStatus.frozen,)
) -> list[SnapshotRef]:
    """The snapshots (of `spec`, or every spec) in `statuses`, oldest period first."""
    stmt = select(Snapshot).where(col(Snapshot.status).in_(list(statuses))).order_by(
        col(Snapshot.period), col(Snapshot.built_at)
    )
    if spec is not None:
        stmt = stmt.where(col(Snapshot.spec) == spec)
    snaps = (await session.execute(stmt)).scalars().all()
    counts = await _entity_counts(session)
    rows = await _rows_by_snapshot(session)
    out: list[SnapshotRef] = []
    for s in snaps:
        m = dict(s.manifest or {})
        targets = tuple(str(t.get("name")) for t in m.get("targets") or [] if isinstance(t, dict) and t.get("name"))
        start = _earliest_day(m)
        out.append(SnapshotRef(
            id=s.id, spec=s.spec, period=s.period, status=SnapshotStatus(s.status),
            period_start=str(start) if start else None, manifest_targets=targets,
            languages=tuple(str(x) for x in m.get("languages") or []), entities=counts.get(s.id, 0),
            rows=frozenset(rows.get(s.id, set())),
        ))
    return out


async def backfill_snapshot_targets(session: AsyncSession, *, now: datetime) -> int:
    """A `ready` row for every target a frozen or superseded snapshot was built for (its manifest's `targets`)
    that has none: stores made before validity rows existed. Idempotent; how many rows were written."""
    n = 0
    for ref in await snapshots_of_spec(session, statuses=(SnapshotStatus.frozen, SnapshotStatus.superseded)):
        for name in ref.manifest_targets:
            if name in ref.rows:
                continue
            await record_snapshot_target(session, snapshot_id=ref.id, target=name, status=SnapshotTargetStatus.ready,
                                         entities=ref.entities, now=now)
            n += 1
    return n


async def snapshot_entity_ids(session: AsyncSession, snapshot_id: str) -> list[int]:
    """The snapshot's real entities (store ids), ascending."""
    stmt = select(col(SnapshotItem.entity_id)).where(col(SnapshotItem.snapshot_id) == snapshot_id).distinct()
    return sorted(int(e) for e in (await session.execute(stmt)).scalars().all())


async def observe_tasks(session: AsyncSession, *, key: str, entity_ids: Sequence[int]) -> dict[int, ObserveTask]:
    """The probe tasks keyed `key` of `entity_ids` (entity id -> task)."""
    out: dict[int, ObserveTask] = {}
    for chunk in _chunks(sorted(entity_ids)):
        stmt = select(Task).where(col(Task.stage) == Stage.probe, col(Task.key) == key, col(Task.entity_id).in_(chunk))
        for t in (await session.execute(stmt)).scalars().all():
            out[t.entity_id] = ObserveTask(entity_id=t.entity_id, status=LeaseStatus(t.status), attempts=t.attempts,
                                           last_error=t.last_error)
    return out


async def observe_progress(session: AsyncSession, *, key: str, entity_ids: Sequence[int]) -> tuple[int, int]:
    """(tasks ended, tasks) among the probe tasks keyed `key` of `entity_ids`."""
    tasks = await observe_tasks(session, key=key, entity_ids=entity_ids)
    return sum(t.status in _ENDED for t in tasks.values()), len(tasks)


async def verdicts_of(
    session: AsyncSession, *, target: str, model: str, entity_ids: Sequence[int]
) -> dict[int, list[Verdict]]:
    """The stored probe verdicts of `target` (a probe row names the target or its model) on `entity_ids`."""
    out: dict[int, list[Verdict]] = {}
    for chunk in _chunks(sorted(entity_ids)):
        stmt = select(col(Probe.entity_id), col(Probe.lang), col(Probe.known), col(Probe.reason)).where(
            col(Probe.entity_id).in_(chunk), or_(col(Probe.target_model) == target, col(Probe.target_model) == model)
        ).order_by(col(Probe.entity_id), col(Probe.lang))
        for eid, lang, known, reason in (await session.execute(stmt)).all():
            out.setdefault(eid, []).append(Verdict(entity_id=eid, lang=lang, known=bool(known), reason=reason or ""))
    return out


async def open_entities_unprobed_by(
    session: AsyncSession, *, target: str, model: str, fresh_from: datetime, statuses: Sequence[EntityStatus]
) -> list[int]:
    """Entities in `statuses` that occurred at or after `fresh_from`, are in no snapshot yet and have no probe
    verdict of `target`: the ones a target added now would otherwise never be asked about."""
    in_snapshot = select(col(SnapshotItem.entity_id))
    probed = select(col(Probe.entity_id)).where(or_(col(Probe.target_model) == target, col(Probe.target_model) == model))
    stmt = select(col(Entity.id)).where(
        col(Entity.status).in_(list(statuses)), col(Entity.occurred_at) >= fresh_from,
        col(Entity.id).not_in(in_snapshot), col(Entity.id).not_in(probed),
    ).order_by(col(Entity.id))
    return [stored_id(e) for e in (await session.execute(stmt)).scalars().all()]


async def probing_progress(
    session: AsyncSession, *, key_of: Callable[[str], str]
) -> dict[tuple[str, str], tuple[int, int]]:
    """(snapshot id, target) of every probing row -> (its observe tasks ended, its entities); `key_of(target)` is
    the key of the target's observing tasks."""
    rows = (await session.execute(
        select(col(SnapshotTarget.snapshot_id), col(SnapshotTarget.target_name)).where(
            col(SnapshotTarget.status) == SnapshotTargetStatus.probing)
    )).all()
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for sid, name in rows:
        ids = await snapshot_entity_ids(session, sid)
        ended, _ = await observe_progress(session, key=key_of(name), entity_ids=ids)
        out[(sid, name)] = (ended, len(ids))
    return out

"""What the daemon records about its targets when it starts (after the store opens, before any service runs).

`prepare_targets` does, in ONE transaction (a refusal writes nothing):

1. `storage.targets.sync_targets`: the configuration's targets into the registry (new names added, names that
   left the configuration inactive with their results kept, each one's first fresh instant recorded); a name
   that now names another model is a `ConfigError` (one line, exit 2, nothing started);
2. the backfill of stores made before validity rows existed: every frozen or superseded snapshot gets a `ready`
   row for each target its manifest names (idempotent);
3. for every active target and every frozen (not superseded) snapshot of the spec without a row for it (a
   target added after the freeze): `probing`, with one observing probe task (`probe_only_key`) per entity of the
   snapshot, when the snapshot lies in the target's window (`clkt.roster.window`), else `out_of_window`.
   `clkt.roster.service.LateTargetService` finishes the probing rows;
4. entities not in any snapshot yet that already passed the probe (status generating or ready) without a
   verdict of an active target (it was added after they were probed) get an observing task for it too, when
   they are fresh for it: the open period's selection needs every current target's clean verdict, so without
   this they would be left out of the next snapshot. Their tasks are enqueued before those of step 3, so they are
   claimed first: in a year run (`bench/year.py`, a target added in June) entities of May waited behind the
   catch-up of five frozen months' entities until they expired.

`check_worker_targets` is the GPU worker's part: the same rename refusal, writing nothing (a worker's
configuration must not change the daemon's registry).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime

from clkt.config import DaemonSettings, SpecSettings, TargetSettings
from clkt.pipeline.probe import probe_only_key
from clkt.roster.window import in_window, known_fresh_from
from storage.engine import Session, Store
from storage.enums import EntityStatus, SnapshotTargetStatus, Stage
from storage.target_probes import (
    backfill_snapshot_targets,
    open_entities_unprobed_by,
    snapshot_entity_ids,
    snapshots_of_spec,
)
from storage.targets import TargetIdentity, TargetSync, check_targets, record_snapshot_target, sync_targets
from storage.tasks import enqueue
from storage.types import utcnow

__all__ = ["RosterStart", "check_worker_targets", "identities", "prepare_targets"]

log = logging.getLogger(__name__)

_PASSED_PROBE = (EntityStatus.generating, EntityStatus.ready)


@dataclass(frozen=True, kw_only=True)
class RosterStart:
    """What `prepare_targets` recorded."""

    sync: TargetSync
    backfilled: int  # ready rows written from manifests
    probing: list[tuple[str, str]] = field(default_factory=list)  # (snapshot, target) now probed
    out_of_window: list[tuple[str, str]] = field(default_factory=list)
    observe_tasks: int = 0  # observing probe tasks enqueued for probing snapshots
    open_tasks: int = 0  # ... for entities of the open period


def identities(spec: SpecSettings) -> list[TargetIdentity]:
    """The configuration's targets as the registry records them."""
    return [
        TargetIdentity(name=t.name, model=t.model, kind=t.kind, cutoff=t.cutoff,
                       fresh_from=known_fresh_from(t, spec.temporal_buffer_days))
        for t in spec.targets
    ]


async def check_worker_targets(store: Store, spec: SpecSettings) -> None:
    """`ConfigError` when the worker's configuration gives a known target name another model; writes nothing."""
    async with store.session() as s:
        await check_targets(s, [TargetIdentity(name=t.name, model=t.model, kind=t.kind) for t in spec.targets])


async def prepare_targets(
    store: Store, *, spec: SpecSettings, daemon: DaemonSettings, now: datetime | None = None
) -> RosterStart:
    """Steps 1-4 of the module docstring, in one transaction; logs what changed."""
    now = now or utcnow()
    async with store.transaction() as s:
        synced = await sync_targets(s, identities(spec), now=now)
        backfilled = await backfill_snapshot_targets(s, now=now)
        open_tasks = await _open_entities(s, spec=spec, daemon=daemon)  # first: claimed first (oldest task first)
        res = await _late_targets(s, spec=spec, daemon=daemon, now=now)
    out = RosterStart(sync=synced, backfilled=backfilled, probing=res.probing, out_of_window=res.out_of_window,
                      observe_tasks=res.observe_tasks, open_tasks=open_tasks)
    _log(out)
    return out


@dataclass(kw_only=True)
class _Late:
    probing: list[tuple[str, str]] = field(default_factory=list)
    out_of_window: list[tuple[str, str]] = field(default_factory=list)
    observe_tasks: int = 0


async def _late_targets(session: Session, *, spec: SpecSettings, daemon: DaemonSettings, now: datetime) -> _Late:
    out = _Late()
    for snap in await snapshots_of_spec(session, spec=spec.name):
        for target in spec.targets:
            if target.name in snap.rows:
                continue
            ids = await snapshot_entity_ids(session, snap.id)
            if snap.period_start is not None and in_window(date.fromisoformat(snap.period_start), target,
                                                          spec.temporal_buffer_days):
                await record_snapshot_target(session, snapshot_id=snap.id, target=target.name,
                                             status=SnapshotTargetStatus.probing, entities=len(ids), now=now)
                for eid in ids:
                    out.observe_tasks += await enqueue(session, Stage.probe, eid, probe_only_key(target.name),
                                                       max_attempts=daemon.max_attempts)
                out.probing.append((snap.id, target.name))
            else:
                await record_snapshot_target(session, snapshot_id=snap.id, target=target.name,
                                             status=SnapshotTargetStatus.out_of_window, entities=len(ids), now=now)
                out.out_of_window.append((snap.id, target.name))
    return out


async def _open_entities(session: Session, *, spec: SpecSettings, daemon: DaemonSettings) -> int:
    n = 0
    for target in spec.targets:
        ids = await _unprobed(session, target, spec.temporal_buffer_days)
        for eid in ids:
            n += await enqueue(session, Stage.probe, eid, probe_only_key(target.name), max_attempts=daemon.max_attempts)
    return n


async def _unprobed(session: Session, target: TargetSettings, buffer_days: int) -> list[int]:
    start = known_fresh_from(target, buffer_days)
    if start is None:  # no known cutoff: the gate refuses to start without one; nothing to ask here
        return []
    return await open_entities_unprobed_by(
        session, target=target.name, model=target.model, fresh_from=start, statuses=_PASSED_PROBE,
    )


def _log(r: RosterStart) -> None:
    if r.sync.added:
        log.info("targets new to this store: %s", ", ".join(r.sync.added))
    if r.sync.returned:
        log.info("targets back in the configuration: %s", ", ".join(r.sync.returned))
    if r.sync.removed:
        log.info("targets no longer in the configuration (inactive; their results stay): %s", ", ".join(r.sync.removed))
    if r.backfilled:
        log.info("recorded %d snapshot validity rows from the frozen snapshots' manifests", r.backfilled)
    for sid, name in r.probing:
        log.info("target %s joined after snapshot %s froze: probing its entities (observe tasks)", name, sid)
    for sid, name in r.out_of_window:
        log.info("snapshot %s is out of target %s's window (its period starts before cutoff + buffer)", sid, name)
    if r.open_tasks:
        log.info("%d entities of the open period passed the probe before a target joined: asking it too", r.open_tasks)

"""Service `late-targets`: finishes the `probing` rows a target added after a freeze gets (`clkt.roster.startup`).

Every `daemon.poll_interval_s` it looks at the probing (snapshot, target) rows of the configuration's targets.
Once every observing probe task of that target on the snapshot's entities has ended, ONE transaction records:

- the target's exclusions for the snapshot (`storage.targets.add_exclusions`), one per entity that is not valid
  for it, with the reason: recognised (`known in <lang>: <the judge's reason>`), or, conservatively, an entity
  whose probe could not be completed: `probe failed: <error>` (its task used up its tries) or `not probed in
  <languages>` (no verdict in some language of the snapshot, e.g. the task ran while the target was not in the
  configuration). An entity is valid for a late target only when it was asked in every language of the
  snapshot and recognised in none, so a failed probe never lets a possibly known entity in, and never leaves
  the snapshot probing forever;
- the row `ready`, with the snapshot's entities and how many were excluded;
- that target's GPU jobs for the snapshot (strategies x train languages, as a freeze enqueues them:
  `clkt.snapshots.service.enqueue_spec_jobs`) when `[gpu]` is enabled and at least one entity is valid; the
  jobs leave the excluded entities out (`JobSpec.exclude_entities`);
- a `snapshot.target_ready` event.

A probing row of a target that is no longer in the configuration waits (it is finished if the target returns).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from clkt.config import DaemonSettings, GpuSettings, SpecSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.pipeline.probe import probe_only_key
from clkt.snapshots.service import enqueue_spec_jobs
from storage.engine import Session
from storage.enums import LeaseStatus, SnapshotTargetStatus
from storage.snapshots import add_event, find_snapshot
from storage.target_probes import ObserveTask, Verdict, observe_tasks, snapshot_entity_ids, verdicts_of
from storage.targets import (
    SnapshotTargetRecord,
    add_exclusions,
    excluded_entities,
    record_snapshot_target,
    snapshot_targets,
)
from storage.types import utcnow

__all__ = ["LateTargetService", "TargetJobs", "exclusion_reasons"]

log = logging.getLogger(__name__)

_ENDED = (LeaseStatus.done, LeaseStatus.failed, LeaseStatus.cancelled)

# (session, snapshot id, target name) -> GPU jobs enqueued; called inside the transaction that makes the row ready
TargetJobs = Callable[[Session, str, str], Awaitable[int]]


def exclusion_reasons(
    entity_ids: Sequence[int], *, languages: Sequence[str], tasks: dict[int, ObserveTask],
    verdicts: dict[int, list[Verdict]],
) -> dict[int, str]:
    """Entity id -> why it is not valid for the target (see the module docstring); the valid ones are absent."""
    out: dict[int, str] = {}
    for eid in entity_ids:
        mine = verdicts.get(eid, [])
        known = next((v for v in mine if v.known), None)
        task = tasks.get(eid)
        if known is not None:
            out[eid] = f"known in {known.lang}: {known.reason}"
        elif task is not None and task.status is not LeaseStatus.done:
            out[eid] = f"probe failed: {task.last_error or task.status.value}"
        else:
            missing = [lang for lang in languages if lang not in {v.lang for v in mine}]
            if missing:
                out[eid] = f"not probed in {', '.join(missing)}"
    return out


class LateTargetService:
    """Service `late-targets`: a probing snapshot becomes ready for its target once its observe tasks ended."""

    name = "late-targets"

    def __init__(
        self, *, spec: SpecSettings, daemon: DaemonSettings, gpu: GpuSettings, enqueue_jobs: TargetJobs | None = None
    ) -> None:
        """`spec`: the targets it finishes (and the jobs' strategies and train languages); `daemon`: how often it
        looks; `gpu`: whether and which GPU jobs a ready target gets (`enqueue_jobs` instead: tests)."""
        self.targets: dict[str, TargetSettings] = {t.name: t for t in spec.targets}
        self.spec = spec
        self.gpu = gpu
        self.poll_interval_s = daemon.poll_interval_s
        self._enqueue: TargetJobs = enqueue_jobs or self._spec_jobs
        self.finished: list[SnapshotTargetRecord] = []

    async def _spec_jobs(self, session: Session, snapshot_id: str, target: str) -> int:
        if not self.gpu.enabled:
            return 0
        return await enqueue_spec_jobs(session, snapshot_id, spec=self.spec, gpu=self.gpu, targets=[target],
                                       catch_up=True)

    async def run(self, ctx: ServiceContext) -> None:
        while not ctx.stopping.is_set():
            await self.finish_ready(ctx)
            if await ctx.sleep(self.poll_interval_s):
                return

    async def finish_ready(self, ctx: ServiceContext) -> list[SnapshotTargetRecord]:
        """One pass: every probing row whose observe tasks have all ended becomes ready; the rows finished."""
        async with ctx.store.session() as s:
            rows = await snapshot_targets(s, status=SnapshotTargetStatus.probing)
        done: list[SnapshotTargetRecord] = []
        for row in rows:
            target = self.targets.get(row.target_name)
            if target is None:
                continue
            async with ctx.store.transaction() as s:
                rec = await self._finish(s, row.snapshot_id, target)
            if rec is not None:
                done.append(rec)
                log.info("snapshot %s is ready for target %s: %d of %d entities valid (%d excluded)",
                         rec.snapshot_id, rec.target_name, rec.valid, rec.entities, rec.excluded)
        self.finished.extend(done)
        return done

    async def _finish(self, session: Session, snapshot_id: str, target: TargetSettings) -> SnapshotTargetRecord | None:
        current = await snapshot_targets(session, snapshot_id=snapshot_id, target=target.name)
        if not current or current[0].status is not SnapshotTargetStatus.probing:
            return None  # finished meanwhile
        ids = await snapshot_entity_ids(session, snapshot_id)
        tasks = await observe_tasks(session, key=probe_only_key(target.name), entity_ids=ids)
        if any(t.status not in _ENDED for t in tasks.values()):
            return None
        snap = await find_snapshot(session, snapshot_id)
        languages = [str(x) for x in (snap.manifest.get("languages") or [])] if snap is not None else []
        verdicts = await verdicts_of(session, target=target.name, model=target.model, entity_ids=ids)
        reasons = exclusion_reasons(ids, languages=languages, tasks=tasks, verdicts=verdicts)
        now = utcnow()
        await add_exclusions(session, snapshot_id=snapshot_id, target=target.name, entities=sorted(reasons.items()),
                             now=now)
        excluded = len(await excluded_entities(session, snapshot_id, target.name))
        await record_snapshot_target(session, snapshot_id=snapshot_id, target=target.name,
                                     status=SnapshotTargetStatus.ready, entities=len(ids), excluded=excluded, now=now)
        jobs = await self._enqueue(session, snapshot_id, target.name) if excluded < len(ids) else 0
        failed = sum(r.startswith(("probe failed", "not probed")) for r in reasons.values())
        await add_event(
            session, ts=now, kind="snapshot.target_ready",
            message=f"snapshot {snapshot_id} ready for target {target.name}: {len(ids) - excluded} of {len(ids)} "
                    f"entities valid ({excluded} excluded, {failed} of them because the probe failed); {jobs} GPU jobs",
            data={"snapshot_id": snapshot_id, "target": target.name, "entities": len(ids), "excluded": excluded,
                  "probe_failed": failed, "gpu_jobs": jobs},
        )
        (rec,) = await snapshot_targets(session, snapshot_id=snapshot_id, target=target.name)
        return rec

"""The gate stage worker: pass an entity on to probing only if it is fresh for EVERY target model.

For each `Stage.gate` task: when the entity occurred at least `spec.temporal_buffer_days` after every
target's knowledge cutoff, it advances along the flow (`probing`, one `Stage.probe` task, key ""); otherwise
it becomes `ineligible` with a reason naming the model. Output and task completion share one transaction.

A share `spec.ineligible_probe_rate` of the entities it turns away (chosen by entity id: `sampled`, the same
entities on every run) also get one observing probe task per current target (`probe_only_key`): their verdicts
are stored and nothing else changes (the entity stays `ineligible`). They show what each target knew before
its declared cutoff (`clkt.report.cutoff_curve`).
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from typing import Self

from clkt.config import DaemonSettings, SpecSettings
from clkt.context import ServiceContext
from clkt.cutoff import cutoff_for, eligible, first_eligible_day
from clkt.pipeline.probe import probe_only_key
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from storage.engine import Session
from storage.entities import get_entity, set_status
from storage.enums import EntityStatus, Stage
from storage.tasks import TaskLease, enqueue

__all__ = ["GateWorker", "sampled"]


def sampled(entity_id: int, rate: float) -> bool:
    """Whether an entity is among the `rate` share probed although the gate turned it away: a uniform number
    from a hash of its id (the same answer every time), below `rate`."""
    if rate <= 0:
        return False
    u = int.from_bytes(hashlib.sha256(f"ineligible-probe:{entity_id}".encode()).digest()[:8], "big") / 2**64
    return u < rate


class GateWorker(StageWorker):
    def __init__(self, *, step: Step, daemon: DaemonSettings, spec: SpecSettings, concurrency: int = 2) -> None:
        super().__init__(step=step, daemon=daemon, concurrency=concurrency)
        self.buffer_days = spec.temporal_buffer_days
        # resolved at construction: an unknown cutoff fails the daemon's start, loudly
        self.cutoffs: dict[str, date] = {t.name: cutoff_for(t) for t in spec.targets}
        self.probe_rate = spec.ineligible_probe_rate

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        return cls(step=step, daemon=config.daemon, spec=config.spec)

    def verdict(self, occurred_at: datetime) -> tuple[bool, str | None]:
        """(True, None) when fresh for every target, else (False, a reason naming the model)."""
        for name, cutoff in sorted(self.cutoffs.items(), key=lambda kv: kv[1], reverse=True):
            if not eligible(occurred_at, cutoff, self.buffer_days):
                first = first_eligible_day(cutoff, self.buffer_days)
                return False, (
                    f"occurred {occurred_at.date().isoformat()}, before {first.isoformat()} = the knowledge cutoff "
                    f"of {name} ({cutoff.isoformat()}) + {self.buffer_days} days"
                )
        return True, None

    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        async with ctx.store.transaction() as s:
            await self.decide(s, task)
            await finish(s, task, ctx)

    async def decide(self, session: Session, task: TaskLease) -> EntityStatus | None:
        entity = await get_entity(session, task.entity_id)
        if entity is None:
            return None
        if entity.status not in (EntityStatus.discovered, EntityStatus.ineligible):
            return entity.status  # already past the gate: nothing to redo
        ok, reason = self.verdict(entity.occurred_at)
        if ok:
            await self.advance(session, task)
            return self.step.status or entity.status
        await set_status(session, entity.id, EntityStatus.ineligible, reason)
        if sampled(entity.id, self.probe_rate):  # observed anyway: what did each target know before its cutoff?
            for name in sorted(self.cutoffs):
                await enqueue(session, Stage.probe, entity.id, probe_only_key(name), max_attempts=self.daemon.max_attempts)
        return EntityStatus.ineligible

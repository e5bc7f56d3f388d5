"""The gate stage worker: pass an entity on to probing only if it is fresh for EVERY target model.

For each `Stage.gate` task: when the entity occurred at least `spec.temporal_buffer_days` after every
target's knowledge cutoff, it advances along the flow (`probing`, one `Stage.probe` task, key ""); otherwise
it becomes `ineligible` with a reason naming the model. Output and task completion share one transaction.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Self

from clkt.config import DaemonSettings, SpecSettings
from clkt.context import ServiceContext
from clkt.cutoff import cutoff_for, eligible, first_eligible_day
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from storage.engine import Session
from storage.entities import get_entity, set_status
from storage.enums import EntityStatus
from storage.tasks import TaskLease

__all__ = ["GateWorker"]


class GateWorker(StageWorker):
    def __init__(self, *, step: Step, daemon: DaemonSettings, spec: SpecSettings, concurrency: int = 2) -> None:
        super().__init__(step=step, daemon=daemon, concurrency=concurrency)
        self.buffer_days = spec.temporal_buffer_days
        # resolved at construction: an unknown cutoff fails the daemon's start, loudly
        self.cutoffs: dict[str, date] = {t.name: cutoff_for(t) for t in spec.targets}

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
        return EntityStatus.ineligible

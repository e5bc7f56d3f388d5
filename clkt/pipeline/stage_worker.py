"""The lease-claim loop shared by every stage worker, and `Step`, the row type of the flow table.

A `StageWorker` runs one `Step` of the flow (`clkt.pipeline.flow.FLOW`). It claims the tasks of its stage (as
`storage.tasks.TaskLease` records) while it has free capacity, runs `process()` for each in a bounded set
of named asyncio tasks, each try within `daemon.task_timeout_s`, and maps outcomes onto the queue:

- while a try runs, its lease is renewed every third of `daemon.lease_s` (of the process's clock): a live
  worker keeps its task however long the try lasts (within `task_timeout_s`), and only a dead worker's
  lease expires and is claimed again;
- `process()` returns normally → it must have called `finish(session, task, ctx)` inside the same
  transaction that wrote its outputs (so output and status land together); an entity that passes the stage
  is moved on with `advance()` in that transaction: the next stage of its step is enqueued (with
  `daemon.max_attempts` tries) and the entity gets the step's status;
- `RetryLater` → lease released, attempts refunded, retried after `defer`;
- `CancelledError` (shutdown) → lease released (shielded), never recorded as a failure;
- a try past `daemon.task_timeout_s` → cancelled and recorded as a failed try (`TaskTimeout`); the timeout is
  real time (it bounds work, which a simulated calendar does not make faster), the leases and the retry
  backoff are the process's clock (`clkt.clock`, through the store's `utcnow` and `ctx.sleep`);
- any other exception → `fail()`: retried with backoff until `max_attempts`, then `failed` with the error.

A task keyed `LOCALITY_KEY` carries a *known* entity (the probe's verdict) through generate, verify and
translate for a snapshot's locality split (`clkt.snapshots.locality`): `advance()` passes the key on and never
moves its status, and `drop()` leaves it `known` (its questions are rejected, its status never says `ready`,
so the builder never selects it as a real entity).
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import ClassVar, Self

from clkt._tasks import cancel_and_wait
from clkt.config import AgentRole, AgentSettings, DaemonSettings, SecretLookup, SpecSettings
from clkt.context import ServiceContext
from clkt.errors import RetryLater, TaskTimeout, UserError
from clkt.logs import redact
from storage.engine import Session
from storage.entities import set_status
from storage.enums import EntityStatus, LeaseStatus, Stage
from storage.tasks import (
    LeaseLost,
    TaskLease,
    claim_tasks,
    complete_task,
    enqueue,
    fail_task,
    heartbeat_task,
    release_task,
)

__all__ = ["LOCALITY_KEY", "StageConfig", "StageWorker", "Step", "finish"]

LOCALITY_KEY = "locality"  # the key of a known entity's generate/verify/translate tasks (its locality questions)

log = logging.getLogger(__name__)


async def finish(session: Session, task: TaskLease, ctx: ServiceContext) -> None:
    """Mark `task` done, fenced on our lease, in the caller's transaction."""
    await complete_task(session, task.id, owner=ctx.owner)


@dataclass(frozen=True, kw_only=True)
class Step:
    """One stage of the flow: its worker, the agent role it uses, where an entity goes when it passes."""

    stage: Stage
    worker: type[StageWorker]
    role: AgentRole | None  # the agent role whose calls the stage makes (None: no agent)
    next: Stage | None  # the stage an entity that passes is enqueued in (None: the end of the flow)
    status: EntityStatus | None  # the entity's status once it passes (None: it keeps its status)


@dataclass(frozen=True, kw_only=True)
class StageConfig:
    """What the stage workers receive from the configuration (the wiring, `clkt.services`, builds it)."""

    daemon: DaemonSettings  # leases, polling, tries and the per-try timeout of every stage's tasks
    spec: SpecSettings
    agents: AgentSettings
    data_dir: Path  # where the probe converts and caches local targets
    device: str  # where the probe runs local targets (`clkt.targets.loader.probe_device`)
    secret: SecretLookup  # the targets' API keys (`api_key_env`), for targets probed over HTTP
    # known entities per month of occurrence sent on to get locality questions (`snapshot.locality_entities`; 0: none)
    locality_entities: int = 0


class StageWorker(ABC):
    IDLE_SLEEP_S: ClassVar[float] = 0.5
    RETRY_BASE_S: ClassVar[float] = 5.0

    def __init__(self, *, step: Step, daemon: DaemonSettings, concurrency: int = 2) -> None:
        if not issubclass(type(self), step.worker):
            raise UserError(
                f"{type(self).__name__} cannot run the {step.stage.value} step (its worker is {step.worker.__name__})"
            )
        self.step = step
        self.stage = step.stage
        self.daemon = daemon
        self.concurrency = concurrency
        self.name = f"stage:{self.stage.value}"

    @classmethod
    @abstractmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        """The worker of `step`, with the sections of `config` it needs."""

    @abstractmethod
    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        """Do the work of one task; call `finish()` in the transaction that writes the outputs."""

    async def advance(self, session: Session, task: TaskLease, *, move: bool = True) -> None:
        """The entity passed this stage: enqueue its next stage (`daemon.max_attempts` tries) and give it the
        step's status, in the caller's transaction. `move=False` keeps its status (a re-run never moves an
        entity that already finished back)."""
        locality = task.key == LOCALITY_KEY  # a known entity's locality questions: it stays `known`
        if move and not locality and self.step.status is not None:
            await set_status(session, task.entity_id, self.step.status)
        if self.step.next is not None:
            await enqueue(session, self.step.next, task.entity_id, LOCALITY_KEY if locality else "",
                          max_attempts=self.daemon.max_attempts)

    async def drop(self, session: Session, task: TaskLease, status: EntityStatus, reason: str) -> None:
        """The entity leaves the flow with `status` (`rejected`, `failed`) and `reason`; a locality task's entity
        keeps its status (`known`): it only has no locality questions."""
        if task.key != LOCALITY_KEY:
            await set_status(session, task.entity_id, status, reason[:500])

    async def claim(
        self, session: Session, ctx: ServiceContext, *, lease: timedelta, free: int, running: list[TaskLease],
    ) -> list[TaskLease]:
        """The tasks to start now, up to `free` (`running`: those in flight); oldest first by default."""
        return await claim_tasks(session, stage=self.stage, owner=ctx.owner, lease=lease, limit=free)

    async def run(self, ctx: ServiceContext) -> None:
        sem = asyncio.BoundedSemaphore(self.concurrency)
        inflight: dict[asyncio.Task[None], TaskLease] = {}
        lease = timedelta(seconds=self.daemon.lease_s)

        def done(job: asyncio.Task[None]) -> None:
            inflight.pop(job, None)
            sem.release()

        try:
            while not ctx.stopping.is_set():
                if not ctx.may_claim():
                    await ctx.sleep(self.daemon.poll_interval_s)
                    continue
                free = self.concurrency - len(inflight)
                if free <= 0:
                    await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                async with ctx.store.transaction() as s:
                    tasks = await self.claim(s, ctx, lease=lease, free=free, running=list(inflight.values()))
                if not tasks:
                    if await ctx.sleep(max(self.IDLE_SLEEP_S, self.daemon.poll_interval_s)):
                        break
                    continue
                for t in tasks:
                    await sem.acquire()
                    job = asyncio.create_task(self._one(t, ctx), name=f"{self.name}:{t.id}")
                    inflight[job] = t
                    job.add_done_callback(done)
            if inflight:
                await asyncio.wait(inflight, timeout=self.daemon.grace_period_s)
        finally:
            await cancel_and_wait(inflight)

    async def _one(self, task: TaskLease, ctx: ServiceContext) -> None:
        t0 = time.perf_counter()
        try:
            await self._process_in_time(task, ctx)
            ctx.metrics.stage_tasks.labels(self.stage.value, "done").inc()
        except RetryLater as e:
            await asyncio.shield(self._release(task, ctx, e.defer, redact(str(e))))
            ctx.metrics.stage_tasks.labels(self.stage.value, "deferred").inc()
        except asyncio.CancelledError:
            await asyncio.shield(self._release(task, ctx, timedelta(0), None))
            raise
        except LeaseLost as e:
            log.warning("%s: %s", self.name, e)
        except Exception as e:  # noqa: BLE001 - every failure is recorded on the row
            retry_in = timedelta(seconds=self.RETRY_BASE_S * 2 ** max(0, task.attempts - 1))

            err = redact(f"{type(e).__name__}: {e}")
            try:
                async with ctx.store.transaction() as s:
                    status = await fail_task(s, task.id, owner=ctx.owner, error=err, retry_in=retry_in)
                    if status is LeaseStatus.failed:
                        await self.on_failed(s, task, err)
            except LeaseLost:
                return
            ctx.metrics.stage_tasks.labels(self.stage.value, status.value).inc()
            log.log(
                logging.ERROR if status is LeaseStatus.failed else logging.WARNING,
                "%s task %s (entity %s %s) %s: %s", self.name, task.id, task.entity_id, task.key,
                "failed for good" if status is LeaseStatus.failed else "will retry", err,
            )
        finally:
            ctx.metrics.stage_seconds.labels(self.stage.value).observe(time.perf_counter() - t0)

    async def _process_in_time(self, task: TaskLease, ctx: ServiceContext) -> None:
        """`process()` within `daemon.task_timeout_s`; past it the try is cancelled and fails with `TaskTimeout`."""
        timeout_s = self.daemon.task_timeout_s
        deadline = asyncio.timeout(timeout_s)
        beat = asyncio.create_task(self._heartbeat(task, ctx), name=f"{self.name}:{task.id}:lease")
        try:
            async with deadline:
                await self.process(task, ctx)
        except TimeoutError:
            if not deadline.expired():
                raise  # a timeout of the work itself (an HTTP call...): its own error
            raise TaskTimeout(
                f"{self.stage.value} task {task.id} (try {task.attempts} of {task.max_attempts}) ran past "
                f"daemon.task_timeout_s = {timeout_s:g} s"
            ) from None
        finally:
            await cancel_and_wait([beat])

    async def _heartbeat(self, task: TaskLease, ctx: ServiceContext) -> None:
        """Renew the lease every third of `daemon.lease_s` while the try runs; stop once it is no longer ours."""
        lease = timedelta(seconds=self.daemon.lease_s)
        while not await ctx.sleep(self.daemon.lease_s / 3):
            try:
                async with ctx.store.transaction() as s:
                    await heartbeat_task(s, task.id, owner=ctx.owner, lease=lease)
            except LeaseLost:
                return  # finished meanwhile, or expired and taken: the fenced completion tells the try
            except Exception as e:  # noqa: BLE001 - a store hiccup: the next beat tries again (the lease has 2/3 left)
                log.warning("%s: could not renew the lease of task %s: %s", self.name, task.id, e)

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:  # noqa: B027 - optional hook
        """Hook: a task used up its attempts (e.g. mark the entity failed). Same transaction."""

    async def _release(self, task: TaskLease, ctx: ServiceContext, defer: timedelta, reason: str | None) -> None:
        try:
            async with ctx.store.transaction() as s:
                await release_task(s, task.id, owner=ctx.owner, defer=defer, reason=reason)
        except Exception as e:  # noqa: BLE001 - best effort; the lease expires anyway
            log.warning("could not release task %s: %s", task.id, e)

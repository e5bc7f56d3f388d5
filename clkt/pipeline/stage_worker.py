"""The lease-claim loop shared by every stage worker.

A `StageWorker` claims the tasks of its stage (as `storage.tasks.TaskLease` records) while it has free capacity, runs `process()` for each in a
bounded set of named asyncio tasks, and maps outcomes onto the queue:

- `process()` returns normally → it must have called `finish(session, task, ctx)` inside the same
  transaction that wrote its outputs (so output and status land together);
- `RetryLater` → lease released, attempts refunded, retried after `defer`;
- `CancelledError` (shutdown) → lease released (shielded), never recorded as a failure;
- any other exception → `fail()`: retried with backoff until `max_attempts`, then `failed` with the error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from datetime import timedelta
from typing import ClassVar

from clkt._tasks import cancel_and_wait
from clkt.context import ServiceContext
from clkt.errors import RetryLater
from clkt.logs import redact
from storage.engine import Session
from storage.enums import LeaseStatus, Stage
from storage.tasks import LeaseLost, TaskLease, claim_tasks, complete_task, fail_task, release_task

__all__ = ["StageWorker", "finish"]

log = logging.getLogger(__name__)


async def finish(session: Session, task: TaskLease, ctx: ServiceContext) -> None:
    """Mark `task` done, fenced on our lease, in the caller's transaction."""
    await complete_task(session, task.id, owner=ctx.owner)


class StageWorker(ABC):
    stage: ClassVar[Stage]
    IDLE_SLEEP_S: ClassVar[float] = 0.5
    RETRY_BASE_S: ClassVar[float] = 5.0

    def __init__(self, *, concurrency: int = 2) -> None:
        self.concurrency = concurrency
        self.name = f"stage:{self.stage.value}"

    @abstractmethod
    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        """Do the work of one task; call `finish()` in the transaction that writes the outputs."""

    async def run(self, ctx: ServiceContext) -> None:
        sem = asyncio.BoundedSemaphore(self.concurrency)
        inflight: set[asyncio.Task[None]] = set()
        lease = timedelta(seconds=ctx.settings.daemon.lease_s)
        try:
            while not ctx.stopping.is_set():
                if not ctx.may_claim():
                    await ctx.sleep(ctx.settings.daemon.poll_interval_s)
                    continue
                free = self.concurrency - len(inflight)
                if free <= 0:
                    await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                async with ctx.store.transaction() as s:
                    tasks = await claim_tasks(s, stage=self.stage, owner=ctx.owner, lease=lease, limit=free)
                if not tasks:
                    if await ctx.sleep(max(self.IDLE_SLEEP_S, ctx.settings.daemon.poll_interval_s)):
                        break
                    continue
                for t in tasks:
                    await sem.acquire()
                    job = asyncio.create_task(self._one(t, ctx), name=f"{self.name}:{t.id}")
                    inflight.add(job)
                    job.add_done_callback(lambda j: (inflight.discard(j), sem.release()))
            if inflight:
                await asyncio.wait(inflight, timeout=ctx.settings.daemon.grace_period_s)
        finally:
            await cancel_and_wait(inflight)

    async def _one(self, task: TaskLease, ctx: ServiceContext) -> None:
        t0 = time.perf_counter()
        try:
            await self.process(task, ctx)
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

    async def on_failed(self, session: Session, task: TaskLease, error: str) -> None:
        """Hook: a task used up its attempts (e.g. mark the entity failed). Same transaction."""

    async def _release(self, task: TaskLease, ctx: ServiceContext, defer: timedelta, reason: str | None) -> None:
        try:
            async with ctx.store.transaction() as s:
                await release_task(s, task.id, owner=ctx.owner, defer=defer, reason=reason)
        except Exception as e:  # noqa: BLE001 - best effort; the lease expires anyway
            log.warning("could not release task %s: %s", task.id, e)

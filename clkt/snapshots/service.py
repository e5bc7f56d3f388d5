"""The `snapshot-builder` daemon service.

Every `snapshot.check_interval_s` (by `ctx.clock`, UTC) it looks at two periods of the cadence:

- the last closed one: if it has no frozen snapshot, it is built (under quota: reported once per shortfall
  as an `Event`, and tried again at the next check while late items may still finish the pipeline);
- the current one: built early, once, as soon as every domain's quota is filled by the period's own entities
  (never partial).

A build is also offered the ready entities of earlier periods that no snapshot holds (`clkt.snapshots.carry`); once
per period, and after a freeze, the service counts those that waited past a whole period and logs a warning.

A build logs an `Event`, enqueues the spec's GPU jobs (model x strategy x train language) and whatever the
`on_frozen` hook adds (the publisher's tasks) in the same transaction that freezes the snapshot, then POSTs a
JSON notice to `snapshot.webhook_url` (retried with backoff; a failure is logged as an `Event` and never undoes or blocks the build).

With `cadence = "rolling"` there is no closing: the window of the last `rolling_days` complete days is built
as soon as its quotas fill, and the next one only once it no longer overlaps the last frozen window (an
entity is never in two rolling snapshots). The offline demo uses it: the replay server re-dates items into
the last ~28 days, which can straddle a month boundary and leave neither calendar month with every quota.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from clkt import clock
from clkt.config import GpuSettings, SpecSettings
from clkt.context import ServiceContext
from clkt.errors import ClktError, SnapshotError
from clkt.snapshots.builder import BuildConfig, BuildResult, BuildStatus, SnapshotExists, build_snapshot, plan_selection
from clkt.snapshots.period import Period, period_of, previous_period
from storage.engine import Session
from storage.gpu_jobs import enqueue_gpu_jobs
from storage.placements import waiting_since
from storage.snapshots import FrozenHook, SnapshotRecord, add_event, frozen_manifests, frozen_snapshot
from storage.status_pages import ready_by_domain

__all__ = ["GpuEnqueue", "SnapshotBuilder", "WebhookError", "enqueue_spec_jobs", "post_webhook"]

log = logging.getLogger(__name__)

# (session, snapshot id) -> how many GPU jobs were new; called inside the freezing transaction
GpuEnqueue = Callable[[Session, str], Awaitable[int]]


class WebhookError(SnapshotError):
    """The webhook answered with an error status."""

    def __init__(self, status: int, retryable: bool) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(f"webhook answered HTTP {status}")


class _RetryableWebhook(WebhookError):
    pass


async def enqueue_spec_jobs(
    session: Session, snapshot_id: str, *, spec: SpecSettings, gpu: GpuSettings, targets: Sequence[str] | None = None,
    catch_up: bool = False,
) -> int:
    """Enqueue the GPU jobs of the spec for a frozen snapshot (the GPU queue's repository): every target x strategy
    x train language x seed of `spec.seeds` (`targets`: only these, e.g. a target that joined after the freeze,
    with `catch_up`: claimed after the jobs queued at a freeze); how many were new.
    API targets (`backend = "api"`: no weights here) never get GPU jobs (`clkt.targets.api`)."""
    weightless = {t.name for t in spec.targets if t.backend == "api"}
    names = list(targets) if targets is not None else [t.name for t in spec.targets]
    names = [n for n in names if n not in weightless]
    if not names:
        return 0
    return await enqueue_gpu_jobs(
        session,
        snapshot_id=snapshot_id,
        targets=names,
        strategies=list(spec.strategies),
        train_langs=spec.train_langs,
        config=gpu,
        max_attempts=gpu.max_attempts,
        seeds=spec.seeds,
        catch_up=catch_up,
    )


async def post_webhook(http: aiohttp.ClientSession, url: str, payload: dict[str, Any], *, tries: int, backoff_s: float, timeout_s: float) -> None:
    """POST `payload` as JSON; 5xx, 429 and network errors are retried, other 4xx are not."""
    async for attempt in AsyncRetrying(
        stop=stop_after_attempt(tries),
        wait=wait_exponential(multiplier=backoff_s, max=backoff_s * 16),
        retry=retry_if_exception_type((aiohttp.ClientError, asyncio.TimeoutError, _RetryableWebhook)),
        reraise=True, sleep=clock.sleep,  # backoffs on the process's clock
    ):
        with attempt:
            async with http.post(url, json=payload, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                if resp.status == 429 or resp.status >= 500:
                    raise _RetryableWebhook(resp.status, True)
                if resp.status >= 400:
                    raise WebhookError(resp.status, False)


class SnapshotBuilder:
    """Builds the spec's snapshots when a period closes or when its quotas fill early."""

    name = "snapshot-builder"
    WEBHOOK_TRIES = 4
    WEBHOOK_BACKOFF_S = 1.0
    WEBHOOK_TIMEOUT_S = 10.0

    def __init__(
        self, *, config: BuildConfig, gpu: GpuSettings, enqueue_jobs: GpuEnqueue | None = None,
        on_frozen: FrozenHook | None = None,
    ) -> None:
        """`config`: what a build reads (spec, `[snapshot]`, `[agents]`, the demo flag); `gpu`: whether and which GPU
        jobs a frozen snapshot gets (`enqueue_jobs` instead of the spec's jobs: tests); `on_frozen`: what else the
        freezing transaction does (the publisher's tasks, `clkt.publish.service.freeze_hook`)."""
        self.config = config
        self.gpu = gpu
        self._enqueue: GpuEnqueue = (
            enqueue_jobs if enqueue_jobs is not None
            else lambda session, snapshot_id: enqueue_spec_jobs(session, snapshot_id, spec=config.spec, gpu=gpu)
        )
        self._reported: dict[str, str] = {}  # period -> last under-quota signature logged
        self._on_frozen = on_frozen
        self._waiting_checked = ""  # the current period the waiting entities were last counted in
        self._waiting_reported = 0

    async def run(self, ctx: ServiceContext) -> None:
        interval = self.config.snapshot.check_interval_s
        while not ctx.stopping.is_set():
            try:
                await self.check(ctx)
            except ClktError as e:
                log.warning("snapshot check failed: %s", e)
                await self._event(ctx, "snapshot.failed", str(e), {})
                ctx.metrics.snapshots.labels(outcome="failed").inc()
            if await ctx.sleep(interval):
                return

    async def check(self, ctx: ServiceContext) -> list[BuildResult]:
        """One pass: build the last closed period if missing, and the current one if its quotas are full."""
        now = ctx.clock()
        cadence = self.config.snapshot.cadence
        current = period_of(now, cadence, rolling_days=self.config.snapshot.rolling_days)
        results: list[BuildResult] = []
        if cadence == "rolling":
            last_end = await self._last_rolling_end(ctx)
            if (last_end is None or current.start >= last_end) and await self._quotas_filled(ctx, current):
                results.append(await self._build(ctx, current, now, trigger="quotas-filled", allow_partial=False))
            return results
        closed = previous_period(current)
        if not await self._is_frozen(ctx, closed):
            results.append(await self._build(ctx, closed, now, trigger="period-closed"))
        if not await self._is_frozen(ctx, current) and await self._quotas_filled(ctx, current):
            results.append(await self._build(ctx, current, now, trigger="quotas-filled", allow_partial=False))
        if current.label != self._waiting_checked or any(r.status is BuildStatus.frozen for r in results):
            self._waiting_checked = current.label
            await self._warn_waiting(ctx, closed)
        return results

    async def _warn_waiting(self, ctx: ServiceContext, closed: Period) -> int:
        """Warn (once per change) when ready entities in no snapshot occurred before the last closed period: they
        waited past a whole period (`clkt.snapshots.carry`: the next snapshot that freezes takes them)."""
        async with ctx.store.session() as s:
            n = await waiting_since(s, before=closed.start)
        if n and n != self._waiting_reported:
            log.warning("%d ready entities of periods before %s are in no snapshot yet: they wait to be carried into the "
                        "next snapshot that freezes (`clkt status`, view v_entity_accounting)", n, closed.label)
        self._waiting_reported = n
        return n

    async def _last_rolling_end(self, ctx: ServiceContext) -> datetime | None:
        """The end of the latest frozen rolling window of the spec (windows never overlap)."""
        async with ctx.store.session() as s:
            rows = await frozen_manifests(s, self.config.spec.name)
        ends = [
            datetime.fromisoformat(m["period_end"]).replace(tzinfo=UTC)
            for m in rows
            if m.get("cadence") == "rolling" and m.get("period_end")
        ]
        return max(ends, default=None)

    async def _is_frozen(self, ctx: ServiceContext, p: Period) -> bool:
        async with ctx.store.session() as s:
            return await frozen_snapshot(s, self.config.spec.name, p.label) is not None

    async def _quotas_filled(self, ctx: ServiceContext, p: Period) -> bool:
        """The period's own entities fill every quota. One count per domain first: while a domain has fewer ready
        entities than its quota (the usual case, checked every `check_interval_s`) the selection is not planned."""
        spec, snap = self.config.spec, self.config.snapshot
        async with ctx.store.session() as s:
            ready = await ready_by_domain(s, start=p.start, end=p.end)
            if any(ready.get(d.value, 0) < snap.quotas.get(d, 0) for d in spec.domains):
                return False
            sel, _ = await plan_selection(s, spec=spec, snap=snap, period=p, carry=False)
        return bool(sel.items) and sel.own_complete

    async def _build(
        self, ctx: ServiceContext, p: Period, now: datetime, *, trigger: str, allow_partial: bool | None = None
    ) -> BuildResult:
        async def on_frozen(session: Session, snap: SnapshotRecord) -> None:
            if self.gpu.enabled:
                await self._enqueue(session, snap.id)
            if self._on_frozen is not None:
                await self._on_frozen(session, snap)

        try:
            res = await build_snapshot(
                ctx.store, self.config, period=p, now=now, on_frozen=on_frozen, allow_partial=allow_partial,
                open_roles=ctx.agent_backend,
            )
        except SnapshotExists as e:  # built meanwhile (e.g. by `clkt snapshot build`)
            log.info("%s", e)
            return BuildResult(status=BuildStatus.frozen, spec=self.config.spec.name, period=p.label, report=[],
                               snapshot_id=e.snapshot_id)
        if res.status is BuildStatus.under_quota:
            sig = repr(sorted(res.missing.items()))
            if self._reported.get(p.label) != sig:
                self._reported[p.label] = sig
                log.info("%s (%s)", res.describe(), trigger)  # once per change: a closed month that waits says why
                await self._event(
                    ctx, "snapshot.under_quota", res.describe(),
                    {"spec": res.spec, "period": p.label, "trigger": trigger, "missing": res.missing,
                     "excluded": res.excluded},
                )
                ctx.metrics.snapshots.labels(outcome="under_quota").inc()
            return res
        log.info("%s (%s)", res.describe(), trigger)
        ctx.metrics.snapshots.labels(outcome="frozen").inc()
        await self._notify(ctx, res, trigger)
        return res

    async def _notify(self, ctx: ServiceContext, res: BuildResult, trigger: str) -> None:
        url = self.config.snapshot.webhook_url
        if not url:
            return
        payload = {
            "event": "snapshot.frozen", "snapshot_id": res.snapshot_id, "spec": res.spec, "period": res.period,
            "trigger": trigger, "partial": res.partial, "superseded": res.superseded,
            "path": str(res.path) if res.path else None,
            "counts": {k: v.model_dump() for k, v in res.counts.items()},
        }
        try:
            await post_webhook(
                ctx.http, url, payload, tries=self.WEBHOOK_TRIES, backoff_s=self.WEBHOOK_BACKOFF_S,
                timeout_s=self.WEBHOOK_TIMEOUT_S,
            )
        except (TimeoutError, aiohttp.ClientError, WebhookError) as e:
            log.warning("snapshot webhook failed for %s: %s", res.snapshot_id, e)
            await self._event(ctx, "snapshot.webhook_failed", f"webhook failed for {res.snapshot_id}: {e}", {"snapshot_id": res.snapshot_id})

    async def _event(self, ctx: ServiceContext, kind: str, message: str, data: dict[str, Any]) -> None:
        async with ctx.store.transaction() as s:
            await add_event(s, ts=ctx.clock(), kind=kind, message=message, data=data)

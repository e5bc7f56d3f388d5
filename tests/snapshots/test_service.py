"""The snapshot-builder service: month-boundary and quota-fill triggers with a controlled clock, the GPU
job hook, the webhook (a real local server) and its failure never blocking a build."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from sqlalchemy import select

from clkt.config import Settings
from clkt.context import ServiceContext
from clkt.services import build_services, snapshot_config
from clkt.snapshots.builder import BuildStatus
from clkt.snapshots.service import SnapshotBuilder
from clkt.sources.board import SourceBoard
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.models import Event, GpuJob, Snapshot, SnapshotStatus
from tests.conftest import wait_for
from tests.snapshots.factories import fill_period, make_settings

JUNE = datetime(2025, 6, 1, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Hook:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, session: Any, snapshot_id: str) -> None:
        assert snapshot_id.startswith("demo-")  # a snapshot of the service's spec
        self.calls.append(snapshot_id)


@pytest.fixture
async def webhook(aiohttp_server: Any) -> AsyncIterator[dict[str, Any]]:
    state: dict[str, Any] = {"received": [], "status": 200, "hits": 0}

    async def handler(request: web.Request) -> web.Response:
        state["hits"] += 1
        if state["status"] != 200:
            return web.Response(status=state["status"])
        state["received"].append(await request.json())
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/hook", handler)
    server = await aiohttp_server(app)
    state["url"] = str(server.make_url("/hook"))
    yield state


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def _ctx(store: Store, http: aiohttp.ClientSession, clock: Clock) -> ServiceContext:
    return ServiceContext(store=store, http=http, owner="test:1:x", metrics=Metrics(), clock=clock)


def _builder(settings: Settings, hook: Hook) -> SnapshotBuilder:
    return SnapshotBuilder(config=snapshot_config(settings), gpu=settings.gpu, enqueue_jobs=hook)


async def _events(store: Store, kind: str) -> list[Event]:
    async with store.session() as s:
        return list((await s.execute(select(Event).where(Event.kind == kind))).scalars().all())


async def test_month_boundary_builds_the_closed_month(
    store: Store, tmp_path: Path, http: aiohttp.ClientSession, webhook: dict[str, Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="clkt.snapshots.service")
    settings = make_settings(tmp_path, allow_partial=True, webhook_url=webhook["url"])
    await fill_period(store, month_start=JUNE, per_domain=1)  # quotas are 2: June never fills early
    clock = Clock(datetime(2025, 6, 30, 23, 59, 59, tzinfo=UTC))
    hook = Hook()
    svc = _builder(settings, hook)
    ctx = _ctx(store, http, clock)
    res = await svc.check(ctx)
    assert [r.status for r in res] == [BuildStatus.under_quota]  # May: nothing; June still open
    assert res[0].period == "2025-05"
    assert len(await _events(store, "snapshot.under_quota")) == 1
    await svc.check(ctx)
    assert len(await _events(store, "snapshot.under_quota")) == 1  # the same shortfall is logged once
    # and said in the daemon's log (once too): a closed month that does not freeze says why where the user looks
    said = [r.getMessage() for r in caplog.records if r.name == "clkt.snapshots.service" and "2025-05" in r.getMessage()]
    assert len(said) == 1 and "under quota" in said[0] and "period-closed" in said[0], said
    clock.now = datetime(2025, 7, 1, 0, 0, 1, tzinfo=UTC)
    res = await svc.check(ctx)
    built = [r for r in res if r.status is BuildStatus.frozen]
    assert [r.period for r in built] == ["2025-06"] and built[0].partial
    assert hook.calls == [built[0].snapshot_id]
    assert [w["snapshot_id"] for w in webhook["received"]] == [built[0].snapshot_id]
    assert webhook["received"][0]["counts"]["total"]["entities"] == 4
    clock.now = datetime(2025, 7, 2, tzinfo=UTC)
    assert all(r.status is not BuildStatus.frozen for r in await svc.check(ctx))
    assert hook.calls == [built[0].snapshot_id]


async def test_quota_fill_builds_the_current_month_early_once(
    store: Store, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    settings = make_settings(tmp_path)
    clock = Clock(datetime(2025, 6, 10, tzinfo=UTC))
    hook = Hook()
    svc = _builder(settings, hook)
    ctx = _ctx(store, http, clock)
    await fill_period(store, month_start=JUNE, per_domain=1)
    assert not [r for r in await svc.check(ctx) if r.period == "2025-06"]  # 1 of 2 per domain: wait
    await fill_period(store, month_start=JUNE, per_domain=1, prefix="y")
    res = await svc.check(ctx)
    june = [r for r in res if r.period == "2025-06"]
    assert len(june) == 1 and june[0].status is BuildStatus.frozen and not june[0].partial
    assert hook.calls == [june[0].snapshot_id]
    await fill_period(store, month_start=JUNE, per_domain=1, prefix="z")
    assert not [r for r in await svc.check(ctx) if r.period == "2025-06"]  # once
    clock.now = datetime(2025, 7, 1, 1, tzinfo=UTC)
    assert not [r for r in await svc.check(ctx) if r.period == "2025-06"]  # not rebuilt at the close
    async with store.session() as s:
        rows = (await s.execute(select(Snapshot))).scalars().all()
    assert [(r.period, r.status) for r in rows] == [("2025-06", SnapshotStatus.frozen)]


async def test_webhook_failure_never_blocks_the_build(
    store: Store, tmp_path: Path, http: aiohttp.ClientSession, webhook: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SnapshotBuilder, "WEBHOOK_BACKOFF_S", 0.0)
    webhook["status"] = 503
    settings = make_settings(tmp_path, webhook_url=webhook["url"])
    await fill_period(store, month_start=JUNE, per_domain=2)
    svc = _builder(settings, Hook())
    res = await svc.check(_ctx(store, http, Clock(datetime(2025, 7, 5, tzinfo=UTC))))
    assert [r.status for r in res] == [BuildStatus.frozen]
    assert webhook["hits"] == SnapshotBuilder.WEBHOOK_TRIES
    failed = await _events(store, "snapshot.webhook_failed")
    assert len(failed) == 1 and "503" in failed[0].message


async def test_run_loop_enqueues_gpu_jobs_and_stops(store: Store, tmp_path: Path, http: aiohttp.ClientSession) -> None:
    """The registered service, with the real GPU queue repository: one job per target x strategy x language."""
    settings = make_settings(tmp_path, check_interval_s=3600.0)
    svc = next(s for s in build_services(settings, board=SourceBoard()) if s.name == "snapshot-builder")
    await fill_period(store, month_start=JUNE, per_domain=2)
    ctx = _ctx(store, http, Clock(datetime(2025, 7, 5, tzinfo=UTC)))

    async def jobs() -> list[GpuJob]:
        async with store.session() as s:
            return list((await s.execute(select(GpuJob))).scalars().all())

    task = asyncio.create_task(svc.run(ctx), name="snapshot-test")
    await wait_for(jobs)
    ctx.stopping.set()
    await asyncio.wait_for(task, 5)
    rows = await jobs()
    assert sorted(j.train_lang for j in rows) == sorted(settings.spec.languages)
    assert {(j.target_model, j.strategy) for j in rows} == {("gemma-3-270m", "cpt-lora")}
    async with store.session() as s:
        snap = (await s.execute(select(Snapshot))).scalars().one()
    assert {j.snapshot_id for j in rows} == {snap.id}


async def test_rolling_cadence_builds_when_the_window_fills_and_never_overlaps(
    store: Store, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """Items straddling a month boundary fill one rolling window; the next window waits until it is fresh."""
    settings = make_settings(tmp_path, cadence="rolling", rolling_days=30)
    await fill_period(store, month_start=datetime(2025, 5, 25, tzinfo=UTC), per_domain=1)  # May 25..
    await fill_period(store, month_start=JUNE, per_domain=1, prefix="y")  # June 1..
    clock = Clock(datetime(2025, 6, 10, 8, tzinfo=UTC))
    hook = Hook()
    svc = _builder(settings, hook)
    ctx = _ctx(store, http, clock)
    (res,) = await svc.check(ctx)
    assert res.status is BuildStatus.frozen and res.period == "2025-06-09"
    assert res.path == tmp_path / "snapshots" / "demo" / "2025-06-09"
    clock.now = datetime(2025, 7, 8, tzinfo=UTC)
    await fill_period(store, month_start=datetime(2025, 6, 20, tzinfo=UTC), per_domain=2, prefix="z")
    assert await svc.check(ctx) == []  # the window [Jun 8, Jul 8) overlaps the frozen one
    clock.now = datetime(2025, 7, 10, tzinfo=UTC)
    (res2,) = await svc.check(ctx)
    assert res2.status is BuildStatus.frozen and res2.period == "2025-07-09"
    assert len(hook.calls) == 2

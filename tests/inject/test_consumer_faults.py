"""Consumer faults without a model: a job that outlives its timeout, and a daemon stopping mid-job."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from clkt import clock
from clkt.config import EMBEDDED_TARGET, DaemonSettings, GpuSettings, Settings, SpecSettings
from clkt.context import ServiceContext
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import enqueue_gpu_jobs, jobs_for_snapshot
from storage.models import LeaseStatus
from tests.conftest import wait_for
from tests.inject._fixtures import SNAPSHOT_ID, make_consumer, seed_store


def _settings(data_dir: Path, **gpu: object) -> Settings:
    return Settings(
        data_dir=data_dir, spec=SpecSettings(targets=[EMBEDDED_TARGET], languages=["en", "fr"]),
        gpu=GpuSettings.model_validate({"devices": ["cpu"], "epochs": 1, **gpu}),
        daemon=DaemonSettings(poll_interval_s=0.05, lease_s=60),
    )


async def _setup(store: Store, snapshot: Path, settings: Settings) -> None:
    await seed_store(store, snapshot)
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["gemma-3-270m"], strategies=["cpt-lora"],
                               train_langs=["en"], config=settings.gpu, max_attempts=3)


async def test_job_timeout_fails_the_attempt_and_keeps_it_retryable(tmp_path: Path, tiny_snapshot: Path) -> None:
    settings = _settings(tmp_path / "data", job_timeout_s=0.5)
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await _setup(store, tiny_snapshot, settings)
        consumer = make_consumer(settings, burst=True)
        async with aiohttp.ClientSession() as http:
            await consumer.run(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()))
        async with store.session() as s:
            (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert job.status == LeaseStatus.pending and job.attempts == 1  # retried later (backoff), not lost
    assert "timed out after" in (job.last_error or "") and "job_timeout_s" in (job.last_error or "")
    assert [r.status for r in consumer.finished] == [LeaseStatus.pending]


async def test_job_timeout_is_real_time_under_a_fast_simulated_calendar(tmp_path: Path, tiny_snapshot: Path) -> None:
    """`gpu.job_timeout_s` bounds work, so it counts real seconds: at 100,000x a 1-second timeout is not 10 us."""
    settings = _settings(tmp_path / "data", job_timeout_s=1.0)
    old = clock.install(clock.SimulatedClock(start=datetime(2026, 1, 1, tzinfo=UTC), speed=100_000.0))
    try:
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
            await _setup(store, tiny_snapshot, settings)
            consumer = make_consumer(settings, burst=True)
            spec = tmp_path / "data" / "jobs" / "1" / "spec.json"
            async with aiohttp.ClientSession() as http:
                ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
                task = asyncio.create_task(consumer.run(ctx))
                await wait_for(spec.exists, timeout=20)
                started = time.monotonic()
                await asyncio.wait_for(task, timeout=60)
                ran_s = time.monotonic() - started
            async with store.session() as s:
                (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    finally:
        clock.install(old)
    assert "timed out after 1s" in (job.last_error or "")
    # every try ran its 1 real second (the burst consumer retries at once: its backoff is simulated too)
    assert job.attempts >= 2 and ran_s >= 1.0 * (job.attempts - 1) + 0.5, f"{job.attempts} tries in {ran_s:.2f} s"


async def test_stopping_hands_the_job_back_without_spending_an_attempt(tmp_path: Path, tiny_snapshot: Path) -> None:
    settings = _settings(tmp_path / "data")
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path}/s.db") as store:
        await _setup(store, tiny_snapshot, settings)
        consumer = make_consumer(settings)
        async with aiohttp.ClientSession() as http:
            ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
            task = asyncio.create_task(consumer.run(ctx))
            spec = tmp_path / "data" / "jobs" / "1" / "spec.json"
            await wait_for(spec.exists, timeout=20)
            ctx.stopping.set()
            await asyncio.wait_for(task, timeout=60)
        async with store.session() as s:
            (job,) = await jobs_for_snapshot(s, SNAPSHOT_ID)
    assert job.status == LeaseStatus.pending and job.attempts == 0 and job.lease_owner is None
    assert "shutdown" in (job.last_error or "")

"""The demo watcher: the daemon of `clkt demo` stops once the first snapshot's report is recorded in the store.
(`clkt/progress.py` is a top-level module of clkt: its tests are `tests/test_progress.py`.)"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest

from clkt.config import Settings
from clkt.context import ServiceContext
from clkt.progress import DemoWatcher
from clkt.report.service import ReportService
from clkt.report.writer import report_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, complete_gpu_job, enqueue_gpu_jobs
from tests.conftest import wait_for
from tests.inject._fixtures import SNAPSHOT_ID, seed_store


async def test_the_demo_ends_when_the_report_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DemoWatcher, "INTERVAL_S", 0.01)
    settings = Settings(data_dir=tmp_path / "data")
    done: list[tuple[str, Path]] = []
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, aiohttp.ClientSession() as http:
        await seed_store(store, tmp_path / "export")
        async with store.transaction() as s:
            await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=["m"], strategies=["cpt-lora"], train_langs=["en"],
                                   max_attempts=1)
        async with store.transaction() as s:
            (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
            await complete_gpu_job(s, job.id, owner="o", best_epoch=1, device="cpu", artifacts_dir="/a")
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        watcher = DemoWatcher(on_done=lambda sid, path: done.append((sid, path)), gpu_enabled=True, data_dir=settings.data_dir)
        task = asyncio.create_task(watcher.run(ctx))
        rdir = report_dir(settings.data_dir, SNAPSHOT_ID)
        assert not done and not task.done()
        await ReportService(data_dir=settings.data_dir, daemon=settings.daemon, burst=True).run(ctx)
        await wait_for(lambda: task.done(), timeout=30)
    assert done == [(SNAPSHOT_ID, rdir)] and watcher.result == (SNAPSHOT_ID, rdir)

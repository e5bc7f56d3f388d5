"""The `report-writer` service: a report once every GPU job of a snapshot has finished, recorded in the store,
never rewritten for the same jobs (a restart included), written again when a job joins, and a failing report
logged and retried with backoff without ever raising."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest

from clkt.config import DaemonSettings
from clkt.context import ServiceContext
from clkt.report.service import ReportService
from clkt.report.writer import report_dir
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.gpu_jobs import ResultRecord, claim_gpu_jobs, complete_gpu_job, enqueue_gpu_jobs, write_job_results
from storage.reports import current_report, find_report
from tests.conftest import wait_for
from tests.inject._fixtures import SNAPSHOT_ID, seed_store

DAEMON = DaemonSettings(poll_interval_s=0.05)


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, aiohttp.ClientSession() as http:
        await seed_store(store, tmp_path / "export")
        yield ServiceContext(store=store, http=http, owner="o", metrics=Metrics())


async def _job(ctx: ServiceContext, target: str, *, finish: bool = True) -> None:
    """One job of `target`, trained in en, finished with its results (question rows 12 and 21)."""
    async with ctx.store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=[target], strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)
    if not finish:
        return
    async with ctx.store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60))
        await write_job_results(s, job.id, [
            ResultRecord(question_id=q, lang=lang, variant=v, scorer="generate", split="test", predicted="A",
                         correct=v == "injected" or q == 12)
            for q in (12, 21) for lang in ("en", "fr") for v in ("base", "injected")
        ])
        await complete_gpu_job(s, job.id, owner="o", best_epoch=1, device="cpu", artifacts_dir="/a")


async def _finish_pending(ctx: ServiceContext) -> None:
    async with ctx.store.transaction() as s:
        for job in await claim_gpu_jobs(s, owner="o", lease=timedelta(seconds=60), limit=10):
            await complete_gpu_job(s, job.id, owner="o", best_epoch=1, device="cpu", artifacts_dir="/a")


async def test_writes_once_records_it_and_writes_again_when_a_job_joins(ctx: ServiceContext, tmp_path: Path) -> None:
    data = tmp_path / "data"
    await _job(ctx, "m")
    await _job(ctx, "late", finish=False)  # not every job finished: nothing is due
    svc = ReportService(data_dir=data, daemon=DAEMON, burst=True)
    assert await svc.write_due(ctx) == [] and not (report_dir(data, SNAPSHOT_ID) / "report.md").exists()
    await _finish_pending(ctx)
    (first,) = await svc.write_due(ctx)
    md = report_dir(data, SNAPSHOT_ID) / "report.md"
    assert md.is_file() and "Model comparison — cpt-lora, generate" in md.read_text(encoding="utf-8")
    assert (first.snapshot_id, first.jobs, first.path) == (SNAPSHOT_ID, 2, f"reports/{SNAPSHOT_ID}")  # data-dir relative
    async with ctx.store.session() as s:
        assert await current_report(s, SNAPSHOT_ID) == first
    assert await svc.write_due(ctx) == []  # the same jobs: not rewritten ...
    await ReportService(data_dir=data, daemon=DAEMON, burst=True).run(ctx)  # ... nor after a restart
    async with ctx.store.session() as s:
        assert await find_report(s, SNAPSHOT_ID) == first
    await _job(ctx, "joined")  # a target joined the snapshot and its job finished: the report is stale
    (second,) = await svc.write_due(ctx)
    assert second.jobs == 3 and second.fingerprint != first.fingerprint and second.written_at >= first.written_at
    assert "joined" in md.read_text(encoding="utf-8")
    assert svc.written == [first, second]


async def test_a_failing_report_is_logged_and_retried_with_backoff(
    ctx: ServiceContext, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the reports folder should be", encoding="utf-8")  # the report cannot be written
    await _job(ctx, "m")
    svc = ReportService(data_dir=blocked, daemon=DAEMON)
    with caplog.at_level(logging.ERROR, logger="clkt.report.service"):
        assert await svc.write_due(ctx) == []  # logged, not raised
    assert f"report of snapshot {SNAPSHOT_ID} failed (try 1); trying again in 30 s" in caplog.text
    async with ctx.store.session() as s:
        assert await find_report(s, SNAPSHOT_ID) is None  # nothing recorded for a report that was not written
    caplog.clear()
    now = [svc.clock()]
    svc.clock = lambda: now[0]
    now[0] += 29.0
    assert await svc.write_due(ctx) == [] and not caplog.text  # within its backoff: not tried again
    now[0] += 1.5
    with caplog.at_level(logging.ERROR, logger="clkt.report.service"):
        assert await svc.write_due(ctx) == []  # tried again after 30 s ...
    assert "(try 2); trying again in 60 s" in caplog.text  # ... and the backoff doubles
    monkeypatch.setattr(ReportService, "RETRY_BACKOFF_MAX_S", 45.0)
    now[0] += 61.0
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="clkt.report.service"):
        assert await svc.write_due(ctx) == []
    assert "(try 3); trying again in 45 s" in caplog.text  # capped at RETRY_BACKOFF_MAX_S
    now[0] += 46.0
    blocked.unlink()  # the disk is fixed
    (written,) = await svc.write_due(ctx)
    assert written.snapshot_id == SNAPSHOT_ID and (report_dir(blocked, SNAPSHOT_ID) / "report.md").is_file()


async def test_the_loop_writes_what_became_due_and_once_more_when_stopping(ctx: ServiceContext, tmp_path: Path) -> None:
    await _job(ctx, "m", finish=False)
    svc = ReportService(data_dir=tmp_path / "data", daemon=DaemonSettings(poll_interval_s=3600))  # no second poll
    task = asyncio.create_task(svc.run(ctx))
    await wait_for(lambda: svc.passes == 1)  # its first pass: nothing due
    await _finish_pending(ctx)  # the last job finishes just before the daemon stops ...
    ctx.stopping.set()
    await asyncio.wait_for(task, timeout=60)
    assert [r.snapshot_id for r in svc.written] == [SNAPSHOT_ID] and svc.passes == 2  # ... its report is still written
    fast = ReportService(data_dir=tmp_path / "fast", daemon=DAEMON)
    ctx2 = ServiceContext(store=ctx.store, http=ctx.http, owner="o", metrics=ctx.metrics)
    task = asyncio.create_task(fast.run(ctx2))
    await _job(ctx, "next")
    await wait_for(lambda: len(fast.written) == 1, timeout=60)  # polled: written once every job finished
    ctx2.stopping.set()
    await asyncio.wait_for(task, timeout=60)

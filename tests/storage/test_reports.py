"""The reports' repository (`storage.reports`): a report is due once every GPU job of its snapshot finished,
recorded reports are current until a job runs again or joins, and "a report was written" can be read back.
On SQLite, and on PostgreSQL when CLKT_TEST_PG_URL is set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage.engine import Store
from storage.gpu_jobs import claim_gpu_jobs, complete_gpu_job, enqueue_gpu_jobs, fail_gpu_job
from storage.reports import current_report, due_reports, find_report, finished_snapshots, record_report, reports_written
from tests.inject._fixtures import SNAPSHOT_ID, seed_store
from tests.storage._urls import BACKENDS, empty_store_url

LEASE = timedelta(seconds=60)


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = await empty_store_url(request.param, tmp_path / 'clkt.db')
    async with Store(url=url) as store:
        await seed_store(store, tmp_path / "export")
        yield store


async def _enqueue(store: Store, *targets: str) -> None:
    async with store.transaction() as s:
        await enqueue_gpu_jobs(s, snapshot_id=SNAPSHOT_ID, targets=list(targets), strategies=["cpt-lora"], train_langs=["en"],
                               max_attempts=1)


async def _finish_all(store: Store, *, fail_first: bool = False) -> None:
    """Claim every pending job and finish it (the first one failed for good when `fail_first`)."""
    async with store.transaction() as s:
        jobs = await claim_gpu_jobs(s, owner="o", lease=LEASE, limit=10)
        for i, job in enumerate(jobs):
            if fail_first and i == 0:
                await fail_gpu_job(s, job.id, owner="o", error="boom", permanent=True)
            else:
                await complete_gpu_job(s, job.id, owner="o", best_epoch=1, device="cpu", artifacts_dir="/a")


async def test_a_report_is_due_only_once_every_job_finished(any_store: Store) -> None:
    store = any_store
    async with store.session() as s:
        assert await due_reports(s) == [] and await finished_snapshots(s) == []  # no jobs: nothing to report
    await _enqueue(store, "a", "b")
    async with store.session() as s:
        assert await due_reports(s) == []  # pending
    await _finish_all(store, fail_first=True)
    async with store.session() as s:
        (due,) = await due_reports(s)
        assert await current_report(s, SNAPSHOT_ID) is None and await find_report(s, SNAPSHOT_ID) is None
    assert (due.snapshot_id, due.jobs, len(due.fingerprint)) == (SNAPSHOT_ID, 2, 64)  # a failed job counts as finished


async def test_a_recorded_report_is_current_until_a_job_joins(any_store: Store) -> None:
    store = any_store
    await _enqueue(store, "a")
    await _finish_all(store)
    async with store.session() as s:
        (due,) = await due_reports(s)
    async with store.transaction() as s:
        rec = await record_report(s, snapshot_id=SNAPSHOT_ID, fingerprint=due.fingerprint, jobs=due.jobs, path="/r/1")
    async with store.session() as s:
        assert await due_reports(s) == []
        assert await current_report(s, SNAPSHOT_ID) == rec == await find_report(s, SNAPSHOT_ID)
    assert (rec.path, rec.jobs) == ("/r/1", 1)
    await _enqueue(store, "b")  # a target joins: pending, so the report is stale but not due yet
    async with store.session() as s:
        assert await due_reports(s) == [] and await current_report(s, SNAPSHOT_ID) is None
    await _finish_all(store)
    async with store.session() as s:
        (again,) = await due_reports(s)
    assert again.fingerprint != due.fingerprint and again.jobs == 2


async def test_recording_again_replaces_and_reports_written_reads_since(any_store: Store) -> None:
    store = any_store
    await _enqueue(store, "a")
    await _finish_all(store)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    async with store.transaction() as s:
        await record_report(s, snapshot_id=SNAPSHOT_ID, fingerprint="f1", jobs=1, path="/r/1", written_at=t0)
    async with store.transaction() as s:
        second = await record_report(s, snapshot_id=SNAPSHOT_ID, fingerprint="f2", jobs=1, path="/r/2",
                                     written_at=t0 + timedelta(hours=1))
    async with store.session() as s:
        assert await reports_written(s) == [second]  # one row per snapshot: the latest report
        assert await reports_written(s, since=t0) == [second]
        assert await reports_written(s, since=t0 + timedelta(hours=1)) == []
    assert (second.fingerprint, second.path, second.written_at) == ("f2", "/r/2", t0 + timedelta(hours=1))

"""The GPU queue's typed lease functions on a real SQLite file: records out, fencing on the owner."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from pydantic import BaseModel

from clkt.config import GpuSettings
from storage.engine import Store
from storage.enums import LeaseStatus
from storage.gpu_jobs import (
    GpuJobRecord,
    LeaseLost,
    claim_gpu_jobs,
    complete_gpu_job,
    enqueue_gpu_jobs,
    fail_gpu_job,
    get_job,
    heartbeat_gpu_job,
    jobs_for_snapshot,
    release_gpu_job,
    release_gpu_jobs_of,
)
from storage.models import Snapshot

SID = "demo-2025-06-abc"
LEASE = timedelta(minutes=5)


class _Summary(BaseModel):  # the store writes any typed summary as its JSON (the product's: clkt.evaluate.summary)
    x: int


async def _seed(store: Store, *, langs: list[str], max_attempts: int = 2) -> None:
    async with store.transaction() as s:
        s.add(Snapshot(id=SID, spec="demo", period="2025-06"))
        await s.flush()
        await enqueue_gpu_jobs(s, snapshot_id=SID, targets=["m"], strategies=["cpt-lora"], train_langs=langs,
                               config=GpuSettings(epochs=2), max_attempts=max_attempts)


async def test_claim_returns_frozen_records_and_complete_is_fenced(store: Store) -> None:
    await _seed(store, langs=["en", "fr"])
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="w1", lease=LEASE)
    assert isinstance(job, GpuJobRecord) and (job.status, job.lease_owner, job.attempts) == (LeaseStatus.leased, "w1", 1)
    assert (job.snapshot_id, job.target_model, job.train_lang, job.config) == (SID, "m", "en", GpuSettings(epochs=2))
    assert job.config is not None and job.config.epochs == 2 and job.config_error is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.status = LeaseStatus.done  # type: ignore[misc]  # the test: the record is frozen
    async with store.transaction() as s:
        await heartbeat_gpu_job(s, job.id, owner="w1", lease=LEASE)
        with pytest.raises(LeaseLost):
            await heartbeat_gpu_job(s, job.id, owner="w2", lease=LEASE)
        with pytest.raises(LeaseLost):
            await complete_gpu_job(s, job.id, owner="w2", best_epoch=1, device="cpu", artifacts_dir="/a")
        await complete_gpu_job(s, job.id, owner="w1", best_epoch=1, device="cpu", artifacts_dir="/a", summary=_Summary(x=1))
    async with store.session() as s:
        done = await get_job(s, job.id)
        assert done is not None
        assert (done.status, done.best_epoch, done.device, done.artifacts_dir, done.summary, done.last_error, done.lease_owner) == (
            LeaseStatus.done, 1, "cpu", "/a", {"x": 1}, None, None
        )
        assert [j.train_lang for j in await jobs_for_snapshot(s, SID)] == ["en", "fr"]
        assert await get_job(s, 999) is None


async def test_fail_retries_then_fails_and_release_refunds(store: Store) -> None:
    await _seed(store, langs=["en"], max_attempts=2)
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="w1", lease=LEASE)
        assert await fail_gpu_job(s, job.id, owner="w1", error="boom") is LeaseStatus.pending
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="w1", lease=LEASE)
        await release_gpu_job(s, job.id, owner="w1", reason="shutdown")
    async with store.session() as s:
        back = await get_job(s, job.id)
    assert back is not None and (back.status, back.attempts, back.last_error) == (LeaseStatus.pending, 1, "shutdown")
    async with store.transaction() as s:
        (job,) = await claim_gpu_jobs(s, owner="w1", lease=LEASE)
        with pytest.raises(LeaseLost):
            await fail_gpu_job(s, job.id, owner="w2", error="not mine")
        assert await fail_gpu_job(s, job.id, owner="w1", error="boom again") is LeaseStatus.failed
        assert await claim_gpu_jobs(s, owner="w1", lease=LEASE) == []


async def test_release_every_job_of_an_owner(store: Store) -> None:
    await _seed(store, langs=["en", "fr", "ja"])
    async with store.transaction() as s:
        claimed = await claim_gpu_jobs(s, owner="w1", lease=LEASE, limit=2)
    assert [j.train_lang for j in claimed] == ["en", "fr"]
    async with store.transaction() as s:
        assert await release_gpu_jobs_of(s, owner="w1") == 2
    async with store.session() as s:
        jobs = await jobs_for_snapshot(s, SID)
    assert all(j.status is LeaseStatus.pending and j.attempts == 0 for j in jobs)


async def test_a_freezes_jobs_are_claimed_before_a_late_targets_catch_up(store: Store) -> None:
    """The catch-up of a target that joined late (an old snapshot's job, queued first) waits behind the jobs a
    later freeze queued: a month's own results do not wait for the new target's back catalogue. Both run."""
    old, new = "demo-2025-04-aaa", "demo-2025-11-bbb"
    async with store.transaction() as s:
        s.add(Snapshot(id=old, spec="demo", period="2025-04"))
        s.add(Snapshot(id=new, spec="demo", period="2025-11"))
        await s.flush()
        assert await enqueue_gpu_jobs(s, snapshot_id=old, targets=["late"], strategies=["cpt-lora"], train_langs=["en"],
                                      max_attempts=2, catch_up=True) == 1
        await enqueue_gpu_jobs(s, snapshot_id=new, targets=["first", "late"], strategies=["cpt-lora"],
                               train_langs=["en"], max_attempts=2)
    async with store.transaction() as s:
        claimed = [await claim_gpu_jobs(s, owner="w", lease=LEASE) for _ in range(4)]
    order = [(j.snapshot_id, j.target_model, j.catch_up) for (j,) in claimed[:3]]
    assert order == [(new, "first", False), (new, "late", False), (old, "late", True)]
    assert claimed[3] == []
    assert claimed[2][0].id < claimed[0][0].id  # queued first, claimed last

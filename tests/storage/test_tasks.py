"""The task repository as the stage workers see it: leases as records, fenced completion, failure, release."""

from __future__ import annotations

from datetime import timedelta

import pytest

from storage.engine import Store
from storage.enums import LeaseStatus, Stage
from storage.models import Entity, Task
from storage.tasks import (
    LeaseLost,
    TaskLease,
    claim_tasks,
    complete_task,
    enqueue,
    fail_task,
    release_task,
)
from storage.types import utcnow


async def _seed(store: Store) -> int:
    async with store.transaction() as s:
        e = Entity(source="t", external_id="1", domain="sports", name="n", occurred_at=utcnow(), content_hash="h")
        s.add(e)
        await s.flush()
        assert e.id is not None
        await enqueue(s, Stage.probe, e.id, "", max_attempts=2)
        await enqueue(s, Stage.generate, e.id, "k", max_attempts=4)
        return e.id


async def _row(store: Store, task_id: int) -> Task:
    async with store.session() as s:
        row = await s.get(Task, task_id)
        assert row is not None
        return row


async def test_claim_returns_lease_records_of_one_stage(store: Store) -> None:
    entity_id = await _seed(store)
    async with store.transaction() as s:
        leases = await claim_tasks(s, stage=Stage.generate, owner="w", lease=timedelta(minutes=1), limit=5)
    assert len(leases) == 1
    [lease] = leases
    assert isinstance(lease, TaskLease)
    assert (lease.stage, lease.entity_id, lease.key, lease.attempts, lease.max_attempts) == (
        Stage.generate, entity_id, "k", 1, 4,
    )
    with pytest.raises(AttributeError):
        lease.attempts = 2  # type: ignore[misc]  # the test: the record is frozen
    row = await _row(store, lease.id)
    assert row.status == LeaseStatus.leased and row.lease_owner == "w"
    async with store.transaction() as s:  # nothing else of that stage is claimable now
        assert await claim_tasks(s, stage=Stage.generate, owner="x", lease=timedelta(minutes=1)) == []


async def test_complete_is_fenced_on_the_owner(store: Store) -> None:
    await _seed(store)
    async with store.transaction() as s:
        [lease] = await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1))
    with pytest.raises(LeaseLost):
        async with store.transaction() as s:
            await complete_task(s, lease.id, owner="someone-else")
    async with store.transaction() as s:
        await complete_task(s, lease.id, owner="w")
    row = await _row(store, lease.id)
    assert row.status == LeaseStatus.done and row.lease_owner is None


async def test_fail_retries_then_gives_up(store: Store) -> None:
    await _seed(store)
    async with store.transaction() as s:
        [lease] = await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1))
        status = await fail_task(s, lease.id, owner="w", error="boom")
    assert status is LeaseStatus.pending
    async with store.transaction() as s:
        [again] = await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1))
        assert again.id == lease.id and again.attempts == 2
        assert await fail_task(s, again.id, owner="w", error="boom again") is LeaseStatus.failed
    row = await _row(store, lease.id)
    assert row.status == LeaseStatus.failed and row.last_error == "boom again"
    with pytest.raises(LeaseLost):
        async with store.transaction() as s:
            await fail_task(s, lease.id, owner="w", error="late")


async def test_release_refunds_the_attempt_and_defers(store: Store) -> None:
    await _seed(store)
    async with store.transaction() as s:
        [lease] = await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1))
        await release_task(s, lease.id, owner="w", defer=timedelta(hours=1), reason="later")
    row = await _row(store, lease.id)
    assert row.status == LeaseStatus.pending and row.attempts == 0 and row.last_error == "later"
    async with store.transaction() as s:  # deferred: not claimable yet
        assert await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1)) == []
        later = await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1),
                                  now=utcnow() + timedelta(hours=2))
    assert [t.id for t in later] == [lease.id]


async def test_an_entitys_own_probe_is_claimed_before_observing_tasks(store: Store) -> None:
    """A late target's backlog of observing probes (key "target:<name>", queued first) does not hold up the probe of
    a new entity, which its period's snapshot waits for; other stages stay oldest first."""
    async with store.transaction() as s:
        ents = [Entity(source="t", external_id=str(i), domain="sports", name=f"n{i}", occurred_at=utcnow(), content_hash="h")
                for i in range(4)]
        s.add_all(ents)
        await s.flush()
        ids = [e.id for e in ents if e.id is not None]
        for e in ids[:3]:
            await enqueue(s, Stage.probe, e, "target:late", max_attempts=2)
        await enqueue(s, Stage.probe, ids[3], "", max_attempts=2)
        await enqueue(s, Stage.translate, ids[0], "fr", max_attempts=2)
        await enqueue(s, Stage.translate, ids[1], "", max_attempts=2)
    got = []
    for _ in range(2):  # one at a time: the order of a claim's returned rows is the database's
        async with store.transaction() as s:
            got += await claim_tasks(s, stage=Stage.probe, owner="w", lease=timedelta(minutes=1), limit=1)
    async with store.transaction() as s:
        other = await claim_tasks(s, stage=Stage.translate, owner="w", lease=timedelta(minutes=1), limit=1)
    assert [(t.entity_id, t.key) for t in got] == [(ids[3], ""), (ids[0], "target:late")]
    assert [(t.entity_id, t.key) for t in other] == [(ids[0], "fr")]

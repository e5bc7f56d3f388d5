"""The generic lease claim: exclusivity under concurrency, expiry, capped attempts, fencing."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from storage.claim import LeaseLost, claim, complete, fail, release_owner
from storage.engine import Store
from storage.models import Entity, LeaseStatus, Stage, Task
from storage.tasks import enqueue
from storage.types import utcnow


async def _seed(store: Store, n: int) -> None:
    async with store.transaction() as s:
        e = Entity(source="t", external_id="1", domain="sports", name="n", occurred_at=utcnow(), content_hash="h")
        s.add(e)
        await s.flush()
        for i in range(n):
            assert e.id is not None
            await enqueue(s, Stage.probe, e.id, key=str(i), max_attempts=3)


async def test_enqueue_is_idempotent(store: Store) -> None:
    await _seed(store, 3)
    async with store.transaction() as s:
        assert await enqueue(s, Stage.probe, 1, key="0", max_attempts=3) is False
        assert await enqueue(s, Stage.probe, 1, key="new", max_attempts=3) is True
        assert (await s.execute(select(func.count()).select_from(Task))).scalar() == 4


@pytest.mark.parametrize("round_", range(3))
async def test_concurrent_claimers_never_share_a_row(db_url: str, round_: int) -> None:
    """Four claimers on separate engines (separate connections) race for 200 rows."""
    async with Store(url=db_url) as main:
        await _seed(main, 200)
    stores = [Store(url=db_url) for _ in range(4)]
    for st in stores:
        await st.initialize()
    got: dict[str, list[int]] = {f"w{i}": [] for i in range(4)}

    async def worker(name: str, st: Store) -> None:
        while True:
            async with st.transaction() as s:
                rows = await claim(s, Task, owner=name, lease=timedelta(minutes=5), limit=3)
            if not rows:
                return
            got[name].extend(r.id for r in rows if r.id is not None)
            # a short pause between claims (a real worker does work here; the work, not a wait): without it, on a
            # loaded machine, the first claimer's thread can drain all 200 rows before another gets a turn
            await asyncio.sleep(0.002)

    await asyncio.gather(*(worker(f"w{i}", st) for i, st in enumerate(stores)))
    for st in stores:
        await st.close()
    everything = [i for ids in got.values() for i in ids]
    assert len(everything) == 200
    assert len(set(everything)) == 200, "a row was claimed twice"
    assert sum(1 for ids in got.values() if ids) >= 2, "only one claimer ever won"


async def test_expired_lease_is_reclaimed(store: Store) -> None:
    await _seed(store, 1)
    t0 = utcnow()
    async with store.transaction() as s:
        [row] = await claim(s, Task, owner="dead", lease=timedelta(seconds=10), now=t0)
    async with store.transaction() as s:
        assert await claim(s, Task, owner="alive", lease=timedelta(seconds=10), now=t0 + timedelta(seconds=5)) == []
    async with store.transaction() as s:
        [again] = await claim(s, Task, owner="alive", lease=timedelta(seconds=10), now=t0 + timedelta(seconds=11))
    assert again.id == row.id and again.lease_owner == "alive" and again.attempts == 2
    # the dead worker's late completion is fenced out
    async with store.transaction() as s:
        with pytest.raises(LeaseLost):
            await complete(s, Task, row.id, owner="dead")


async def test_capped_attempts_end_in_failed_with_last_error(store: Store) -> None:
    await _seed(store, 1)
    for i in range(3):
        async with store.transaction() as s:
            [row] = await claim(s, Task, owner="w", lease=timedelta(seconds=30))
            status = await fail(s, Task, row.id, owner="w", error=f"boom {i}")
    assert status is LeaseStatus.failed
    async with store.session() as s:
        t = (await s.execute(select(Task))).scalar_one()
    assert t.status is LeaseStatus.failed and t.attempts == 3 and t.last_error == "boom 2"
    async with store.transaction() as s:
        assert await claim(s, Task, owner="w", lease=timedelta(seconds=30)) == []


async def test_lease_expiring_on_last_attempt_becomes_failed(store: Store) -> None:
    await _seed(store, 1)
    t0 = utcnow()
    for i in range(3):
        async with store.transaction() as s:
            rows = await claim(s, Task, owner=f"w{i}", lease=timedelta(seconds=1), now=t0 + timedelta(seconds=2 * i))
            assert len(rows) == 1
    async with store.transaction() as s:
        assert await claim(s, Task, owner="x", lease=timedelta(seconds=1), now=t0 + timedelta(seconds=10)) == []
    async with store.session() as s:
        t = (await s.execute(select(Task))).scalar_one()
    assert t.status is LeaseStatus.failed
    assert "lease expired on the last allowed attempt" in (t.last_error or "")


async def test_release_owner_refunds_attempts(store: Store) -> None:
    await _seed(store, 2)
    async with store.transaction() as s:
        rows = await claim(s, Task, owner="me", lease=timedelta(seconds=30), limit=2)
        assert len(rows) == 2
        assert await release_owner(s, Task, owner="me") == 2
    async with store.session() as s:
        tasks = (await s.execute(select(Task))).scalars().all()
    assert all(t.status is LeaseStatus.pending and t.attempts == 0 and t.lease_owner is None for t in tasks)


async def test_pending_rows_without_attempts_left_become_failed_not_stuck(store: Store) -> None:
    await _seed(store, 1)
    async with store.transaction() as s:
        t = (await s.execute(select(Task))).scalar_one()
        t.attempts = t.max_attempts  # e.g. an old store whose restarts used up the tries
    async with store.transaction() as s:
        assert await claim(s, Task, owner="w", lease=timedelta(seconds=30)) == []
    async with store.session() as s:
        t = (await s.execute(select(Task))).scalar_one()
    assert t.status is LeaseStatus.failed and "no attempt left" in (t.last_error or "")

"""Publishing's repository: the publish queue on the generic lease claim, revisions, retractions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from clkt.errors import LeaseLost
from storage.engine import Store
from storage.enums import LeaseStatus, SnapshotStatus
from storage.models import Snapshot
from storage.publish import (
    claim_publish_tasks,
    defer_publish_task,
    enqueue_publish,
    fail_publish_task,
    finish_publish_task,
    heartbeat_publish_task,
    publish_task_counts,
    recover_publish_leases,
    release_publish_tasks_of,
    reset_failed_publish_tasks,
)
from storage.publish_revisions import latest_revisions, record_revision, revisions_of
from storage.retractions import add_retraction, retraction_count, retractions_of
from storage.types import utcnow

LEASE = timedelta(seconds=60)
T = dict(repo="lab/bench", branch="main", private=False, max_attempts=2)


async def _snap(store: Store, sid: str) -> str:
    async with store.transaction() as s:
        s.add(Snapshot(id=sid, spec="demo", period="2025-06", status=SnapshotStatus.frozen, manifest={}))
    return sid


async def test_the_queue_enqueues_once_claims_with_a_lease_and_asks_again(store: Store) -> None:
    sid = await _snap(store, "demo-2025-06-aaaaaaaaaaa1")
    async with store.transaction() as s:
        a = await enqueue_publish(s, snapshot_id=sid, reason="frozen", **T)
        b = await enqueue_publish(s, snapshot_id=sid, reason="report", **T)
    assert a.id == b.id and b.status is LeaseStatus.pending and b.reason == "report"
    async with store.transaction() as s:
        [lease] = await claim_publish_tasks(s, owner="me", lease=LEASE)
        assert await claim_publish_tasks(s, owner="other", lease=LEASE) == []
    assert lease.task.attempts == 1
    async with store.transaction() as s:
        await heartbeat_publish_task(s, lease.id, owner="me", lease=LEASE)
        with pytest.raises(LeaseLost):
            await heartbeat_publish_task(s, lease.id, owner="other", lease=LEASE)
    async with store.transaction() as s:  # asked again while it runs: it goes back to pending when it ends
        await enqueue_publish(s, snapshot_id=sid, reason="retraction", **T)
    async with store.transaction() as s:
        assert await finish_publish_task(s, lease, owner="me", outcome="published revision 1") is LeaseStatus.pending
    async with store.transaction() as s:
        [again] = await claim_publish_tasks(s, owner="me", lease=LEASE)
    async with store.transaction() as s:
        assert await finish_publish_task(s, again, owner="me", outcome="no-op") is LeaseStatus.done
        assert await publish_task_counts(s) == {"done": 1}
        task = await enqueue_publish(s, snapshot_id=sid, reason="cli", **T)  # a done one: pending again
    assert task.status is LeaseStatus.pending and task.attempts == 0 and task.outcome == "no-op"


async def test_a_hub_failure_spends_no_attempt_other_failures_do(store: Store) -> None:
    sid = await _snap(store, "demo-2025-06-aaaaaaaaaaa2")
    async with store.transaction() as s:
        await enqueue_publish(s, snapshot_id=sid, reason="frozen", **T)
    for _ in range(5):  # the Hub is down five times: no attempt spent, the backoff counts
        async with store.transaction() as s:
            [lease] = await claim_publish_tasks(s, owner="me", lease=LEASE, now=utcnow() + timedelta(hours=1))
            await defer_publish_task(s, lease.id, owner="me", reason="HTTP 503", defer=timedelta(minutes=5))
    async with store.transaction() as s:
        assert await claim_publish_tasks(s, owner="me", lease=LEASE) == []  # waiting out its backoff
        [lease] = await claim_publish_tasks(s, owner="me", lease=LEASE, now=utcnow() + timedelta(hours=1))
    assert lease.task.attempts == 1 and lease.task.hub_failures == 5 and lease.task.last_error == "HTTP 503"
    async with store.transaction() as s:
        assert await fail_publish_task(s, lease.id, owner="me", error="disk full") is LeaseStatus.pending
        [lease] = await claim_publish_tasks(s, owner="me", lease=LEASE)
        assert await fail_publish_task(s, lease.id, owner="me", error="disk full") is LeaseStatus.failed
    async with store.transaction() as s:  # the automatic path leaves a failed task alone, an explicit ask resets it
        kept = await enqueue_publish(s, snapshot_id=sid, reason="report", reset_failed=False, **T)
        assert kept.status is LeaseStatus.failed
        assert await reset_failed_publish_tasks(s) == 1
        assert (await claim_publish_tasks(s, owner="me", lease=LEASE))[0].task.attempts == 1


async def test_leases_of_dead_or_stopping_owners_come_back_refunded(store: Store) -> None:
    sid = await _snap(store, "demo-2025-06-aaaaaaaaaaa3")
    async with store.transaction() as s:
        await enqueue_publish(s, snapshot_id=sid, reason="frozen", **T)
        await claim_publish_tasks(s, owner="host:1:dead", lease=LEASE)
    async with store.transaction() as s:
        assert await recover_publish_leases(s, is_dead=lambda o: o == "host:1:alive") == 0
        assert await recover_publish_leases(s, is_dead=lambda o: o == "host:1:dead") == 1
        [lease] = await claim_publish_tasks(s, owner="me", lease=LEASE)
    assert lease.task.attempts == 1  # refunded, then claimed again
    async with store.transaction() as s:
        assert await release_publish_tasks_of(s, owner="me") == 1
        assert await publish_task_counts(s) == {"pending": 1}


async def test_revisions_and_retractions(store: Store) -> None:
    sid = await _snap(store, "demo-2025-06-aaaaaaaaaaa4")
    async with store.transaction() as s:
        kw = dict(repo="lab/bench", branch="main", snapshot_id=sid, state_key="a" * 64, commit_oid="c1", held=True,
                  retracted=0, report_fingerprint=None, files=20)
        r1 = await record_revision(s, revision=1, **kw)
        assert await record_revision(s, revision=1, **kw) == r1  # idempotent
        await record_revision(s, revision=2, **{**kw, "state_key": "b" * 64, "commit_oid": "c2", "held": False})
    async with store.session() as s:
        assert [r.revision for r in await revisions_of(s, repo="lab/bench", branch="main", snapshot_id=sid)] == [1, 2]
        assert (await latest_revisions(s, repo="lab/bench", branch="main"))[sid].commit_oid == "c2"
        assert await latest_revisions(s, repo="lab/bench", branch="other") == {}
    big = 2**52 - 1  # qids are up to 52 bits: a BigInteger column
    async with store.transaction() as s:
        _, new = await add_retraction(s, snapshot_id=sid, qid=big, question_id=None, reason="wrong")
        again, new2 = await add_retraction(s, snapshot_id=sid, qid=big, question_id=None, reason="other")
    assert new and not new2 and again.reason == "wrong" and again.qid == big
    async with store.session() as s:
        assert [r.qid for r in await retractions_of(s, [sid])] == [big] and await retraction_count(s) == 1

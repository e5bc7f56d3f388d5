"""The probe stage's claim: observing tasks (a target added to a long history catching up) keep their share of the
worker's slots beside the entities' own probes, and neither kind holds back a slot the other could use."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from clkt.pipeline.probe import ProbeWorker, probe_only_key
from storage.engine import Store
from storage.models import Entity, Stage
from storage.tasks import TaskLease, enqueue
from storage.types import utcnow
from tests.pipeline._harness import answers, pipeline_settings, stage_workers

LEASE = timedelta(minutes=1)


async def _queue(store: Store, own: int, observing: int) -> None:
    """`observing` observing tasks queued first (the backlog), then `own` entities' own probes."""
    async with store.transaction() as s:
        ents = [Entity(source="t", external_id=str(i), domain="sports", name=f"n{i}", occurred_at=utcnow(),
                       content_hash="h") for i in range(own + observing)]
        s.add_all(ents)
        await s.flush()
        ids = [e.id for e in ents if e.id is not None]
        for eid in ids[:observing]:
            await enqueue(s, Stage.probe, eid, probe_only_key("late"), max_attempts=2)
        for eid in ids[observing:]:
            await enqueue(s, Stage.probe, eid, "", max_attempts=2)


def _worker(tmp_path: Path) -> ProbeWorker:
    [worker] = [w for w in stage_workers(pipeline_settings(tmp_path), answers()) if isinstance(w, ProbeWorker)]
    return worker


async def _claim(store: Store, worker: ProbeWorker, free: int, running: list[TaskLease]) -> list[TaskLease]:
    ctx: Any = SimpleNamespace(owner="w")
    async with store.transaction() as s:
        return await worker.claim(s, ctx, lease=LEASE, free=free, running=running)


def _kinds(leases: list[TaskLease]) -> tuple[int, int]:
    return sum(t.key == "" for t in leases), sum(t.key != "" for t in leases)


async def test_observing_tasks_keep_their_share_beside_new_entities(store: Store, tmp_path: Path) -> None:
    await _queue(store, own=20, observing=20)
    worker = _worker(tmp_path)
    first = await _claim(store, worker, worker.concurrency, [])
    assert _kinds(first) == (worker.concurrency - worker.OBSERVE_SLOTS, worker.OBSERVE_SLOTS)
    # the share counts what is in flight: with both observing tasks still running, a freed slot goes to a new entity
    still = [t for t in first if t.key != ""] + [t for t in first if t.key == ""][1:]
    assert _kinds(await _claim(store, worker, 1, still)) == (1, 0)
    # once an observing task ends, its slot goes back to the catch-up
    assert _kinds(await _claim(store, worker, 1, still[1:])) == (0, 1)


async def test_either_kind_takes_every_slot_the_other_leaves(store: Store, tmp_path: Path) -> None:
    await _queue(store, own=2, observing=20)
    worker = _worker(tmp_path)
    assert _kinds(await _claim(store, worker, worker.concurrency, [])) == (2, worker.concurrency - 2)


async def test_new_entities_take_every_slot_when_nothing_is_observed(store: Store, tmp_path: Path) -> None:
    await _queue(store, own=20, observing=0)
    worker = _worker(tmp_path)
    assert _kinds(await _claim(store, worker, worker.concurrency, [])) == (worker.concurrency, 0)

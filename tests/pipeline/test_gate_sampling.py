"""The gate's rejected entities are probed too, at `spec.ineligible_probe_rate`, chosen by entity id: each current
target gets one observing probe task on a sampled entity (`probe_only_key`), which never changes its status, not
even when it gives up."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import aiohttp
from sqlalchemy import select

from clkt.config import DaemonSettings, SpecSettings, TargetSettings
from clkt.context import ServiceContext
from clkt.pipeline.flow import step_of
from clkt.pipeline.gate import GateWorker, sampled
from clkt.pipeline.probe import ProbeWorker, probe_only_key
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.models import Entity, EntityStatus, Stage, Task
from storage.tasks import TaskLease, claim_tasks, enqueue

TARGETS = [TargetSettings(name="old", model="meta-llama/Llama-3.1-8B"), TargetSettings(name="new", model="x/y", cutoff=date(2025, 1, 1))]


def test_the_sample_is_by_entity_id_and_of_the_asked_size() -> None:
    ids = range(1, 20_001)
    share = sum(sampled(i, 0.1) for i in ids) / len(ids)
    assert 0.09 < share < 0.11
    assert [sampled(i, 0.1) for i in ids] == [sampled(i, 0.1) for i in ids]  # the same entities every time
    assert not any(sampled(i, 0.0) for i in ids) and all(sampled(i, 1.0) for i in ids)
    assert {i for i in ids if sampled(i, 0.05)} <= {i for i in ids if sampled(i, 0.1)}  # a higher rate adds entities


async def test_sampled_rejections_get_an_observing_probe_per_target(store: Store) -> None:
    spec = SpecSettings(targets=TARGETS, ineligible_probe_rate=0.5)
    daemon = DaemonSettings(max_attempts=4)
    async with store.transaction() as s:
        for i in range(1, 41):  # 2023: before every cutoff + buffer
            e = Entity(id=i, source="t", external_id=str(i), domain="music", name=f"e{i}", occurred_at=datetime(2023, 3, 1, tzinfo=UTC),
                       content_hash="x")
            s.add(e)
        await s.flush()
        for i in range(1, 41):
            await enqueue(s, Stage.gate, i, "", max_attempts=3)
    worker = GateWorker(step=step_of(Stage.gate), daemon=daemon, spec=spec)
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="gate-test", metrics=Metrics())
        async with store.transaction() as s:
            tasks = await claim_tasks(s, stage=Stage.gate, owner=ctx.owner, lease=timedelta(minutes=1), limit=100)
        for t in tasks:
            await worker.process(t, ctx)
        for t in tasks[:5]:  # a re-run of the gate enqueues nothing twice
            async with store.transaction() as s:
                await worker.decide(s, t)
    async with store.session() as s:
        statuses = {e.id: e.status for e in (await s.execute(select(Entity))).scalars()}
        probes = (await s.execute(select(Task).where(Task.stage == Stage.probe))).scalars().all()
    assert set(statuses.values()) == {EntityStatus.ineligible}
    chosen = {i for i in range(1, 41) if sampled(i, 0.5)}
    assert 0 < len(chosen) < 40
    assert sorted((p.entity_id, p.key) for p in probes) == sorted(
        (i, probe_only_key(name)) for i in chosen for name in ("new", "old")
    )
    assert all(p.max_attempts == 4 for p in probes)


async def test_an_observing_task_that_gives_up_changes_no_status(store: Store, tmp_path: object) -> None:
    from pathlib import Path

    from clkt.config import AgentSettings

    async with store.transaction() as s:
        s.add(Entity(id=1, source="t", external_id="1", domain="music", name="e", occurred_at=datetime(2023, 3, 1, tzinfo=UTC),
                     content_hash="x", status=EntityStatus.ineligible))
    worker = ProbeWorker(step=step_of(Stage.probe), daemon=DaemonSettings(), spec=SpecSettings(targets=TARGETS), agents=AgentSettings(),
                         data_dir=Path(str(tmp_path)), device="cpu", secret=lambda _: None)
    async with store.transaction() as s:
        await worker.on_failed(s, TaskLease(id=1, stage=Stage.probe, entity_id=1, key=probe_only_key("old"), attempts=5, max_attempts=5),
                               "judge failed")
    async with store.session() as s:
        e = await s.get(Entity, 1)
        assert e is not None and e.status == EntityStatus.ineligible
    async with store.transaction() as s:  # the entity's own probe giving up still fails it
        await worker.on_failed(s, TaskLease(id=2, stage=Stage.probe, entity_id=1, key="", attempts=5, max_attempts=5), "boom")
    async with store.session() as s:
        e = await s.get(Entity, 1)
        assert e is not None and e.status == EntityStatus.failed

"""Targets that change over time, end to end on a real SQLite store: a snapshot frozen for one target, the daemon
restarted with a second one, its observing probe tasks (the template judge over `probe_fn` answers), its
exclusions, the ready row, its GPU jobs and the job spec that leaves the excluded entities out; the snapshot's
files never change. Also: the window, a failed observe task, a removed target, the backfill of old stores, and
the open period's entities."""

from __future__ import annotations

import aiohttp
import pytest
from sqlalchemy import delete, select
from sqlmodel import col

from clkt.config import EMBEDDED_TARGET
from clkt.context import ServiceContext
from clkt.errors import ConfigError
from clkt.inject.consumer import GpuConsumer
from clkt.inject.job import InjectionJob
from clkt.pipeline.probe import probe_only_key
from clkt.roster import LateTargetService, prepare_targets
from clkt.snapshots.ids import stable_entity_id
from clkt.snapshots.layout import load_snapshot_dir
from clkt.snapshots.stored import load_snapshot
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import EntityStatus, LeaseStatus, SnapshotTargetStatus, Stage
from storage.gpu_jobs import jobs_for_snapshot
from storage.models import Entity, SnapshotTarget, Task
from storage.targets import exclusions_of, list_targets, snapshot_targets
from tests.roster._flow import LATE, Answers, build_june, export_hashes, probe_running, with_targets
from tests.snapshots.factories import add_ready_entity


async def _tasks(store: Store, key: str) -> list[tuple[int, LeaseStatus]]:
    async with store.session() as s:
        rows = (await s.execute(select(col(Task.entity_id), col(Task.status)).where(
            col(Task.stage) == Stage.probe, col(Task.key) == key))).all()
    return sorted((int(e), LeaseStatus(st)) for e, st in rows)


async def test_a_freeze_records_every_target_ready_on_every_entity(store: Store, tmp_path) -> None:
    _, res = await build_june(store, tmp_path)
    async with store.session() as s:
        (row,) = await snapshot_targets(s, snapshot_id=res.snapshot_id)
    assert (row.target_name, row.status, row.entities, row.excluded, row.valid) == (
        "gemma-3-270m", SnapshotTargetStatus.ready, 8, 0, 8)


async def test_a_target_added_after_the_freeze_end_to_end(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    assert res.snapshot_id is not None and res.path is not None
    sid, before = res.snapshot_id, export_hashes(res.path)
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    start = await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    assert start.sync.added == ("late-chat",) and start.probing == [(sid, "late-chat")] and start.observe_tasks == 8
    async with store.session() as s:
        rows = {r.target_name: r for r in await snapshot_targets(s, snapshot_id=sid)}
        known_row = (await s.execute(select(Entity).where(col(Entity.external_id) == "xsports0"))).scalars().one()
    assert rows["late-chat"].status is SnapshotTargetStatus.probing and rows["gemma-3-270m"].status is SnapshotTargetStatus.ready
    assert len(await _tasks(store, probe_only_key("late-chat"))) == 8

    probe_fn = Answers(known=(known_row.name,))
    async with probe_running(restarted, store, probe_fn) as ctx:
        svc = LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu)
        (ready,) = await svc.finish_ready(ctx)
        assert await svc.finish_ready(ctx) == []  # once
        async with store.session() as s:
            exclusions = await exclusions_of(s, snapshot_id=sid, target="late-chat")
            jobs = await jobs_for_snapshot(s, sid)
            entity = await s.get(Entity, known_row.id)
        late_jobs = [j for j in jobs if j.target_model == "late-chat"]
        # the judge saw the facts in the answer: recognised, that target's exclusion; the entity itself untouched
        assert [(x.entity_id, x.reason.startswith("known in en")) for x in exclusions] == [(known_row.id, True)]
        assert entity is not None and entity.status == EntityStatus.ready
        assert (ready.status, ready.entities, ready.excluded, ready.valid) == (SnapshotTargetStatus.ready, 8, 1, 7)
        assert {p for _, p in probe_fn.calls} <= {1, 3} and {n for n, _ in probe_fn.calls} == {"late-chat"}
        # its GPU jobs: strategies x train languages, as a freeze enqueues them, and only its own
        assert sorted(j.train_lang for j in late_jobs) == sorted(restarted.spec.train_langs)
        assert all(j.catch_up for j in late_jobs)  # claimed after the jobs queued at a freeze
        assert len(jobs) == len(late_jobs)  # the builder here enqueued none for the embedded target

        consumer = GpuConsumer(gpu=restarted.gpu, daemon=restarted.daemon, targets=restarted.spec.targets,
                               data_dir=restarted.data_dir)
        spec = await consumer._job_spec(ctx, late_jobs[0], "cpu")
    public = stable_entity_id(known_row.source, known_row.external_id)
    assert spec.exclude_entities == [public]
    qs = InjectionJob(spec).load_snapshot()  # the job's inputs: the excluded entity's documents and questions are out
    assert public not in {d.entity_id for d in qs.docs} | {r.entity_id for r in qs.test_rows + qs.val_rows}
    data = load_snapshot_dir(res.path)
    kept = {d.entity_id for d in data.docs_for(spec.train_lang)} - {public}
    assert {d.entity_id for d in qs.docs if d.entity_id in kept} == kept and len(kept) == 7
    # the snapshot's files never changed, nor the rows it was frozen from
    assert export_hashes(res.path) == before
    async with store.session() as s:
        assert (await load_snapshot(s, sid)).row.id == sid  # re-assembled from its rows: raises if they changed


async def test_a_job_of_a_target_without_exclusions_leaves_nothing_out(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    assert res.snapshot_id is not None
    from clkt.snapshots.service import enqueue_spec_jobs

    async with store.transaction() as s:
        await enqueue_spec_jobs(s, res.snapshot_id, spec=settings.spec, gpu=settings.gpu)
    async with store.session() as s:
        job = (await jobs_for_snapshot(s, res.snapshot_id))[0]
    consumer = GpuConsumer(gpu=settings.gpu, daemon=settings.daemon, targets=settings.spec.targets, data_dir=settings.data_dir)
    async with aiohttp.ClientSession() as http:
        spec = await consumer._job_spec(ServiceContext(store=store, http=http, owner="o", metrics=Metrics()), job, "cpu")
    assert spec.exclude_entities == []
    control = len(settings.spec.domains) * settings.snapshot.control_entities  # the control split's entities
    assert len({d.entity_id for d in InjectionJob(spec).load_snapshot().docs}) == 8 + control


async def test_a_snapshot_before_the_targets_window_is_out_of_window(store: Store, tmp_path) -> None:
    # May 2025 starts before late-chat's cutoff (2024-11-01) + 183 days = 2025-05-03
    settings, res = await build_june(store, tmp_path, period="2025-05")
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    start = await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    assert start.out_of_window == [(res.snapshot_id, "late-chat")] and start.observe_tasks == 0
    async with store.session() as s:
        rows = {r.target_name: r for r in await snapshot_targets(s, snapshot_id=res.snapshot_id)}
    assert rows["late-chat"].status is SnapshotTargetStatus.out_of_window and rows["late-chat"].valid == 0
    assert await _tasks(store, probe_only_key("late-chat")) == []


async def test_a_failed_observe_task_excludes_its_entity_and_the_snapshot_becomes_ready(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE, max_attempts=1)
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    async with store.session() as s:
        broken = (await s.execute(select(Entity).where(col(Entity.external_id) == "xmusic1"))).scalars().one()
    async with probe_running(restarted, store, Answers(broken=(broken.name,))) as ctx:
        (ready,) = await LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu).finish_ready(ctx)
    async with store.session() as s:
        (excl,) = await exclusions_of(s, snapshot_id=res.snapshot_id, target="late-chat")
        entity = await s.get(Entity, broken.id)
    assert excl.entity_id == broken.id and excl.reason.startswith("probe failed: RuntimeError")
    assert (ready.excluded, ready.valid) == (1, 7)
    assert entity is not None and entity.status == EntityStatus.ready  # an observing task never fails its entity
    assert (broken.id, LeaseStatus.failed) in await _tasks(store, probe_only_key("late-chat"))


async def test_the_rows_wait_while_observe_tasks_run(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        assert await LateTargetService(spec=restarted.spec, daemon=restarted.daemon, gpu=restarted.gpu).finish_ready(ctx) == []
    async with store.session() as s:
        (row,) = await snapshot_targets(s, snapshot_id=res.snapshot_id, target="late-chat")
    assert row.status is SnapshotTargetStatus.probing and row.valid == 0


async def test_a_renamed_target_is_refused_and_nothing_is_written(store: Store, tmp_path) -> None:
    settings, _ = await build_june(store, tmp_path)
    await prepare_targets(store, spec=settings.spec, daemon=settings.daemon)
    renamed = EMBEDDED_TARGET.model_copy(update={"model": "embedded:smollm2-135m-instruct"})
    edited = with_targets(settings, renamed, LATE)
    with pytest.raises(ConfigError, match="'gemma-3-270m' is model 'embedded:gemma-3-270m' in this store"):
        await prepare_targets(store, spec=edited.spec, daemon=edited.daemon)
    async with store.session() as s:
        assert [t.name for t in await list_targets(s)] == ["gemma-3-270m"]  # late-chat not recorded either
        assert len(await snapshot_targets(s)) == 1
    assert await _tasks(store, probe_only_key("late-chat")) == []


async def test_a_removed_target_keeps_its_rows_and_jobs(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    assert res.snapshot_id is not None
    from clkt.snapshots.service import enqueue_spec_jobs

    async with store.transaction() as s:
        await enqueue_spec_jobs(s, res.snapshot_id, spec=settings.spec, gpu=settings.gpu)
    late_only = with_targets(settings, LATE)
    start = await prepare_targets(store, spec=late_only.spec, daemon=late_only.daemon)
    assert start.sync.removed == ("gemma-3-270m",)
    async with store.session() as s:
        targets = {t.name: t.active for t in await list_targets(s)}
        rows = {r.target_name: r.status for r in await snapshot_targets(s, snapshot_id=res.snapshot_id)}
        jobs = {j.target_model for j in await jobs_for_snapshot(s, res.snapshot_id)}
    assert targets == {"gemma-3-270m": False, "late-chat": True}
    assert rows == {"gemma-3-270m": SnapshotTargetStatus.ready, "late-chat": SnapshotTargetStatus.probing}
    assert jobs == {"gemma-3-270m"}


async def test_a_store_of_the_previous_version_is_backfilled_once(store: Store, tmp_path) -> None:
    settings, res = await build_june(store, tmp_path)
    async with store.transaction() as s:  # what the previous version left: a frozen snapshot, no validity rows
        await s.execute(delete(SnapshotTarget))
    first = await prepare_targets(store, spec=settings.spec, daemon=settings.daemon)
    again = await prepare_targets(store, spec=settings.spec, daemon=settings.daemon)
    assert (first.backfilled, again.backfilled) == (1, 0)
    assert first.probing == [] and first.observe_tasks == 0  # the manifest's target: ready, never re-probed
    async with store.session() as s:
        (row,) = await snapshot_targets(s, snapshot_id=res.snapshot_id)
    assert (row.target_name, row.status, row.valid) == ("gemma-3-270m", SnapshotTargetStatus.ready, 8)


async def test_open_period_entities_probed_before_a_target_joined_are_asked_by_it(store: Store, tmp_path) -> None:
    settings, _ = await build_june(store, tmp_path)
    from datetime import UTC, datetime

    july = await add_ready_entity(store, domain="music", source="deezer", external_id="july1",
                                  occurred_at=datetime(2025, 7, 3, tzinfo=UTC))
    stale = await add_ready_entity(store, domain="music", source="deezer", external_id="stale1",  # before 2025-05-03
                                   occurred_at=datetime(2025, 4, 3, tzinfo=UTC))
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE)
    start = await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    assert start.open_tasks == 1
    tasks = dict(await _tasks(store, probe_only_key("late-chat")))
    assert july in tasks and stale not in tasks and len(tasks) == 8 + 1
    assert (await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)).open_tasks == 0  # idempotent
    # the open entity waits for this verdict to join a snapshot: it is asked before the frozen snapshot's 8 (in a year
    # run, entities of May waited behind the catch-up of five frozen months until they expired)
    from datetime import timedelta

    from storage.tasks import claim_tasks

    async with store.transaction() as s:
        (first,) = await claim_tasks(s, stage=Stage.probe, owner="o", lease=timedelta(minutes=5), limit=1, keyed=True)
    assert first.entity_id == july


async def test_a_worker_checks_the_names_and_writes_nothing(store: Store, tmp_path) -> None:
    from clkt.roster import check_worker_targets

    settings, _ = await build_june(store, tmp_path)
    renamed = with_targets(settings, EMBEDDED_TARGET.model_copy(update={"model": "/elsewhere"}))
    with pytest.raises(ConfigError, match="give the new model a new name"):
        await check_worker_targets(store, renamed.spec)
    fewer_more = with_targets(settings, LATE)  # a worker's config naming other targets changes no registry row
    await check_worker_targets(store, fewer_more.spec)
    async with store.session() as s:
        assert [(t.name, t.active) for t in await list_targets(s)] == [("gemma-3-270m", True)]


async def test_the_daemon_runs_the_late_targets_service(store: Store, tmp_path) -> None:
    import asyncio

    from clkt.services import build_services
    from clkt.sources.board import SourceBoard
    from tests.conftest import wait_for

    settings, res = await build_june(store, tmp_path)
    restarted = with_targets(settings, EMBEDDED_TARGET, LATE, poll_interval_s=0.02)
    (svc,) = [s for s in build_services(restarted, board=SourceBoard()) if s.name == "late-targets"]
    assert isinstance(svc, LateTargetService)
    await prepare_targets(store, spec=restarted.spec, daemon=restarted.daemon)
    async with probe_running(restarted, store, Answers()) as ctx:
        task = asyncio.create_task(svc.run(ctx))

        async def ready() -> bool:
            async with store.session() as s:
                rows = await snapshot_targets(s, snapshot_id=res.snapshot_id, target="late-chat")
            return rows[0].status is SnapshotTargetStatus.ready

        await wait_for(ready, timeout=20)
        ctx.stopping.set()
        await asyncio.wait_for(task, timeout=10)
    assert [(r.target_name, r.valid) for r in svc.finished] == [("late-chat", 8)]

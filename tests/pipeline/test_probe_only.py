"""Probe tasks that only observe (`probe_only_key(target)`): one target is asked in every language, its verdicts
are stored, and nothing else changes (no status, no next stage). Late targets on frozen snapshots and the
gate's sampled rejections use them."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from clkt.pipeline.probe import probe_only_key, target_of_key
from clkt.services import agent_backend
from storage.engine import Store
from storage.models import Entity, EntityStatus, LeaseStatus, Probe, Stage, Task
from storage.tasks import enqueue
from tests.conftest import wait_for
from tests.documents.samples import LIVERPOOL_SWANSEA
from tests.pipeline._harness import answers, pipeline_settings, running

LANGS = ("en", "fr", "ja")
KNOWS = "Liverpool beat Swansea 4–1 at Anfield in front of 44,621 spectators."


async def _ready_entity(store: Store, status: EntityStatus) -> int:
    """An entity past the probe (or turned away by the gate) with its English document."""
    from tests.pipeline._harness import add_entity

    eid = await add_entity(store, LIVERPOOL_SWANSEA, "Liverpool vs Swansea", domain="sports", external_id="m1")
    async with store.transaction() as s:
        e = await s.get(Entity, eid)
        assert e is not None
        e.status = status
        # the entity's own full probe is done: only the observing task below is claimable
        for t in (await s.execute(select(Task).where(Task.entity_id == eid))).scalars():
            t.status = LeaseStatus.done
    return eid


async def _tasks_done(store: Store) -> bool:
    async with store.session() as s:
        return not (await s.execute(select(func.count()).select_from(Task).where(Task.status != LeaseStatus.done))).scalar()


def test_the_key_names_the_target() -> None:
    assert target_of_key(probe_only_key("smol-135m")) == "smol-135m"
    assert target_of_key("") is None and target_of_key("something-else") is None


async def test_an_observing_task_asks_one_target_and_moves_nothing(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    eid = await _ready_entity(store, EntityStatus.ready)
    async with store.transaction() as s:
        await enqueue(s, Stage.probe, eid, probe_only_key("tiny-chat"), max_attempts=3)
    probe_fn = answers()  # knows nothing
    async with running(settings, store, agent_backend(settings, store=store), probe_fn) as _:
        await wait_for(lambda: _tasks_done(store), timeout=30)
    assert [(name, len(p)) for name, p in probe_fn.calls] == [("tiny-chat", 3)]  # one target, every language
    async with store.session() as s:
        probes = (await s.execute(select(Probe).order_by(Probe.lang))).scalars().all()
        e = await s.get(Entity, eid)
        tasks = (await s.execute(select(Task.stage).where(Task.entity_id == eid))).scalars().all()
    assert [(p.target_model, p.lang, p.known) for p in probes] == [("tiny-chat", x, False) for x in sorted(LANGS)]
    assert e is not None and e.status == EntityStatus.ready  # not moved back to generating
    assert sorted(tasks) == [Stage.probe, Stage.probe]  # no generate task was enqueued


async def test_an_observing_task_records_known_without_dropping_the_entity(store: Store, tmp_path: Path) -> None:
    settings = pipeline_settings(tmp_path, langs=LANGS)
    eid = await _ready_entity(store, EntityStatus.ineligible)
    async with store.transaction() as s:
        await enqueue(s, Stage.probe, eid, probe_only_key("tiny-base"), max_attempts=3)
        await enqueue(s, Stage.probe, eid, probe_only_key("not-in-the-spec"), max_attempts=3)
    probe_fn = answers(KNOWS)
    async with running(settings, store, agent_backend(settings, store=store), probe_fn) as _:
        await wait_for(lambda: _tasks_done(store), timeout=30)
    assert [(name, len(p)) for name, p in probe_fn.calls] == [("tiny-base", 3)]  # the unknown target: nothing asked
    async with store.session() as s:
        probes = (await s.execute(select(Probe))).scalars().all()
        e = await s.get(Entity, eid)
    assert [(p.target_model, p.known) for p in probes] == [("tiny-base", True)]  # stops at the first "known"
    assert e is not None and e.status == EntityStatus.ineligible  # observed, not dropped as known

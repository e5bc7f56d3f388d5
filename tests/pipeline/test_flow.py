"""The flow table (`clkt.pipeline.flow`) drives every stage: its shape, the tries every stage's tasks get
(`daemon.max_attempts`, gate to translate), and the per-try timeout of every stage (`daemon.task_timeout_s`):
a try past it fails with a clear error and the task is tried again. Entities come from the replay server
through the real poller, then run through every stage's worker on a real SQLite store."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from sqlalchemy import select

from agents.template import TemplateBackend
from clkt.config import ReplaySettings, Settings, TargetSettings
from clkt.context import ServiceContext
from clkt.errors import UserError
from clkt.pipeline.flow import FLOW, STAGE_ORDER, step_of
from clkt.pipeline.gate import GateWorker
from clkt.pipeline.generate import GenerateWorker
from clkt.pipeline.stage_worker import StageWorker
from clkt.pipeline.stages import stage_services
from clkt.replay import ReplayServer
from clkt.services import stage_config
from clkt.sources.board import SourceBoard
from clkt.sources.poller import SourcePoller
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import EntityStatus, LeaseStatus, Stage
from storage.models import Task
from storage.tasks import TaskLease
from tests.pipeline._harness import answers, settle, stage_workers

ATTEMPTS = 7  # not the old hard-coded 5
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUAKES = 4  # the replay server's recorded USGS earthquakes
HUNG_TIMEOUT_S = 4.0  # a hung try waits this long; every other try ends well within it

Process = Callable[[StageWorker, TaskLease, ServiceContext], Awaitable[None]]


def test_the_flow_is_one_chain_through_every_stage() -> None:
    assert [s.stage for s in FLOW] == list(Stage)
    assert STAGE_ORDER == ("gate", "probe", "generate", "verify", "translate")
    for step, after in itertools.pairwise(FLOW):
        assert step.next is after.stage
    assert FLOW[-1].next is None and FLOW[-1].status is EntityStatus.ready
    assert [s.role for s in FLOW] == [None, "judge", "generate", "verify", "translate"]
    assert [s.status for s in FLOW] == [EntityStatus.probing, EntityStatus.generating, None, None, EntityStatus.ready]
    assert all(issubclass(s.worker, StageWorker) for s in FLOW)
    assert step_of(Stage.verify) is FLOW[3]


def test_the_wiring_builds_one_worker_per_step_in_flow_order(tmp_path: Path) -> None:
    settings = _settings(tmp_path, usgs_url="http://127.0.0.1:9")
    workers = stage_services(stage_config(settings))
    assert [w.name for w in workers] == [f"stage:{s}" for s in STAGE_ORDER]
    assert all(isinstance(w, StageWorker) and w.daemon.max_attempts == ATTEMPTS for w in workers)


def test_a_worker_refuses_a_step_that_is_not_its_own(tmp_path: Path) -> None:
    settings = _settings(tmp_path, usgs_url="http://127.0.0.1:9")
    with pytest.raises(UserError, match="cannot run the generate step"):
        GateWorker(step=step_of(Stage.generate), daemon=settings.daemon, spec=settings.spec)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def flow_tasks(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[list[Task]]:
    """Every task row of one run of the whole flow, shared by the tests that only read them (one run, not one per
    stage); the stage workers poll fast, as `tests/pipeline/conftest.py` makes them for a test of its own."""
    tmp_path = tmp_path_factory.mktemp("flow")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StageWorker, "IDLE_SLEEP_S", 0.02)
        mp.setattr(StageWorker, "RETRY_BASE_S", 0.01)
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, _replay() as replay:
            yield await _run_flow(_settings(tmp_path, usgs_url=replay.base_url("usgs")), store)


@pytest.mark.parametrize("stage", list(Stage), ids=[s.value for s in Stage])
def test_every_task_of_the_stage_has_the_configured_attempts(stage: Stage, flow_tasks: list[Task]) -> None:
    tasks = flow_tasks
    mine = [t for t in tasks if t.stage == stage]
    assert len(mine) == QUAKES, [(t.stage, t.entity_id) for t in tasks]
    assert {t.max_attempts for t in mine} == {ATTEMPTS}
    assert {t.status for t in mine} == {LeaseStatus.done}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hung_flow(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[list[Task], dict[Stage, int]]]:
    """One run of the flow in which the first try of the first task of every stage never ends by itself (within
    `daemon.task_timeout_s` = `HUNG_TIMEOUT_S`): every task row, and the hung task of each stage. The timeout leaves
    room for a slow try on a busy machine: at 1 s, a translate try of a CI run under load ran past it and was retried."""
    tmp_path = tmp_path_factory.mktemp("hung-flow")
    hung: dict[Stage, int] = {}

    async def hang_once(original: Process, self: StageWorker, task: TaskLease, ctx: ServiceContext) -> None:
        if self.stage not in hung:
            hung[self.stage] = task.id
            await asyncio.Event().wait()
        await original(self, task, ctx)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(StageWorker, "IDLE_SLEEP_S", 0.02)
        mp.setattr(StageWorker, "RETRY_BASE_S", 0.01)
        for worker in {step_of(stage).worker for stage in Stage}:
            _wrap_process(mp, worker, hang_once)
        async with Store(url=f"sqlite+aiosqlite:///{tmp_path / 'clkt.db'}") as store, _replay() as replay:
            settings = _settings(tmp_path, usgs_url=replay.base_url("usgs"), task_timeout_s=HUNG_TIMEOUT_S)
            yield await _run_flow(settings, store), hung


@pytest.mark.parametrize("stage", list(Stage), ids=[s.value for s in Stage])
def test_a_try_past_the_task_timeout_fails_and_is_tried_again(
    stage: Stage, hung_flow: tuple[list[Task], dict[Stage, int]]
) -> None:
    tasks, hung = hung_flow
    assert set(hung) == set(Stage)
    (task,) = [t for t in tasks if t.id == hung[stage]]
    assert task.stage == stage and task.status == LeaseStatus.done and task.attempts == 2
    assert task.last_error is not None
    assert task.last_error.startswith(f"TaskTimeout: {stage.value} task {task.id} (try 1 of {ATTEMPTS})")
    assert f"ran past daemon.task_timeout_s = {HUNG_TIMEOUT_S:g} s" in task.last_error
    assert all(t.attempts == 1 for t in tasks if t.id not in hung.values())  # the others: one try each


async def test_a_timeout_of_the_work_itself_keeps_its_own_error(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[int] = []

    async def slow_provider_once(original: Process, self: StageWorker, task: TaskLease, ctx: ServiceContext) -> None:
        if not failed:
            failed.append(task.id)
            raise TimeoutError("the provider took too long")
        await original(self, task, ctx)

    _wrap_process(monkeypatch, GenerateWorker, slow_provider_once)
    async with _replay() as replay:
        tasks = await _run_flow(_settings(tmp_path, usgs_url=replay.base_url("usgs")), store)
    (task,) = [t for t in tasks if t.id == failed[0]]
    assert task.attempts == 2 and task.status == LeaseStatus.done
    assert task.last_error == "TimeoutError: the provider took too long"


# --- helpers ----------------------------------------------------------------------------------------

def _settings(tmp_path: Path, *, usgs_url: str, **daemon: float) -> Settings:
    target = TargetSettings(name="tiny", model="local:/nowhere", cutoff=date(2024, 1, 1))
    base = Settings.model_validate({
        "data_dir": tmp_path,
        "agents": {"questions_per_entity": 2},
        "spec": {"languages": ["en", "fr"], "targets": [target.model_dump()], "domains": ["disasters"]},
        "daemon": {"poll_interval_s": 0.02, "lease_s": 30.0, "grace_period_s": 5.0, "max_attempts": ATTEMPTS, **daemon},
    })
    usgs = base.sources.usgs.model_copy(update={"base_url": usgs_url, "rate_per_s": 1000.0, "burst": 50,
                                                "lookback_days": 30})
    return base.model_copy(update={"sources": base.sources.model_copy(update={"usgs": usgs})})


def _wrap_process(
    monkeypatch: pytest.MonkeyPatch, worker: type[StageWorker],
    wrapper: Callable[[Process, StageWorker, TaskLease, ServiceContext], Awaitable[None]],
) -> None:
    original: Process = worker.process

    async def process(self: StageWorker, task: TaskLease, ctx: ServiceContext) -> None:
        await wrapper(original, self, task, ctx)

    monkeypatch.setattr(worker, "process", process)


@asynccontextmanager
async def _replay() -> AsyncIterator[ReplayServer]:
    settings = ReplaySettings(enabled=True, redate=True, redate_end=NOW.date(), redate_days=28)
    async with ReplayServer(settings=settings) as server:
        yield server


async def _run_flow(settings: Settings, store: Store) -> list[Task]:
    """Crawl the recorded earthquakes (gate tasks), run every stage until each entity is final; every task row."""
    async with aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="test-owner", metrics=Metrics(), clock=lambda: NOW,
                             agent_backend=TemplateBackend())
        poller = SourcePoller(source_name="usgs", settings=settings.sources.usgs, daemon=settings.daemon,
                              board=SourceBoard())
        assert (await poller.run_cycle(ctx)).inserted == QUAKES
        gate = GateWorker.from_config(step_of(Stage.gate), stage_config(settings))
        workers = [gate, *stage_workers(settings, answers())]
        jobs = [asyncio.create_task(w.run(ctx), name=w.name) for w in workers]
        try:
            final = await settle(store, QUAKES, timeout=120)
        finally:
            ctx.stopping.set()
            await asyncio.gather(*jobs, return_exceptions=True)
    assert set(final.values()) == {EntityStatus.ready}, final
    async with store.session() as s:
        return sorted((await s.execute(select(Task))).scalars(), key=lambda t: t.id or 0)

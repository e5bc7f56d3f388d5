"""The daemon's services under a fast simulated clock (`[daemon] clock_start` / `clock_speed`): they behave as in
real time, in seconds: a period closes and freezes once, a dead worker's lease expires and is claimed again
while a live worker keeps its own, a breaker resets, Retry-After and poll intervals are waits of the clock; the
request limiters stay in real time; the setting itself (bounds, one-line errors, exit 2)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar, Self

import aiohttp
import pytest
from sqlalchemy import select

from clkt import clock
from clkt.config import DaemonSettings, SourceSettings, load_settings
from clkt.context import ServiceContext
from clkt.pipeline.stage_worker import StageConfig, StageWorker, Step, finish
from clkt.process import install_daemon_clock
from clkt.replay import FaultKind, FaultPlan, FaultRule, ReplayServer
from clkt.services import snapshot_config
from clkt.snapshots.service import SnapshotBuilder
from clkt.sources._breaker import BreakerState, CircuitBreaker
from clkt.sources.board import SourceBoard
from clkt.sources.http import SourceClient
from clkt.sources.poller import SourcePoller
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.enums import Stage
from storage.models import Snapshot, Task
from storage.tasks import TaskLease, claim_tasks, enqueue
from storage.types import utcnow
from tests.conftest import wait_for
from tests.snapshots.factories import add_ready_entity, make_settings

JAN = datetime(2026, 1, 1, tzinfo=UTC)
FEB = datetime(2026, 2, 1, tzinfo=UTC)


def fast(start: datetime, speed: float) -> clock.SimulatedClock:
    sim = clock.SimulatedClock(start=start, speed=speed)
    clock.install(sim)  # the autouse fixture puts the real clock back
    return sim


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def ctx_of(store: Store, http: aiohttp.ClientSession, owner: str = "test:1:x") -> ServiceContext:
    return ServiceContext(store=store, http=http, owner=owner, metrics=Metrics())  # clock: the store's utcnow


async def test_a_period_closes_and_freezes_once(store: Store, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, allow_partial=True, check_interval_s=1800.0, control_entities=0)
    for domain, src in (("movies", "tmdb"), ("music", "deezer"), ("sports", "thesportsdb"), ("disasters", "usgs")):
        await add_ready_entity(store, domain=domain, source=src, external_id=f"{domain}-jan", occurred_at=JAN + timedelta(days=9))
    fast(FEB - timedelta(hours=1), speed=57_600.0)  # sixteen simulated hours a real second
    builder = SnapshotBuilder(config=snapshot_config(settings), gpu=settings.gpu)
    ctx = ctx_of(store, http)
    task = asyncio.create_task(builder.run(ctx))
    t0 = time.monotonic()

    async def frozen() -> list[Snapshot]:
        async with store.session() as s:
            return list((await s.execute(select(Snapshot))).scalars())

    try:
        await wait_for(frozen, timeout=20.0)
        await wait_for(lambda: clock.now() > FEB + timedelta(days=1), timeout=20.0)  # a simulated day of checks more
    finally:
        ctx.stopping.set()
        await task
    snaps = await frozen()
    assert [s.period for s in snaps] == ["2026-01"] and snaps[0].partial
    assert FEB <= snaps[0].built_at.replace(tzinfo=UTC) < FEB + timedelta(days=1)  # the year's goal
    assert time.monotonic() - t0 < 30.0


async def test_a_dead_workers_lease_expires_and_is_claimed_again(store: Store) -> None:
    fast(JAN, speed=3600.0)  # an hour a second
    eid = await add_ready_entity(store, domain="sports", source="thesportsdb", external_id="e1", occurred_at=JAN)
    async with store.transaction() as s:
        await enqueue(s, Stage.gate, eid, "", max_attempts=5)
    async with store.transaction() as s:
        dead = await claim_tasks(s, stage=Stage.gate, owner="dead", lease=timedelta(hours=1))
    assert len(dead) == 1

    async def claimed() -> list[TaskLease]:
        async with store.transaction() as s:
            return await claim_tasks(s, stage=Stage.gate, owner="alive", lease=timedelta(hours=1))

    assert await claimed() == []
    t0 = time.monotonic()
    got: list[TaskLease] = []

    async def reclaimed() -> bool:
        got.extend(await claimed())
        return bool(got)

    await wait_for(reclaimed, timeout=10.0)
    assert 0.5 < time.monotonic() - t0 < 5.0 and got[0].id == dead[0].id and got[0].attempts == 2


async def task_row(store: Store) -> Task:
    async with store.session() as s:
        row = await s.get(Task, 1)
    assert row is not None
    return row


class _Slow(StageWorker):
    """A stage whose one try takes `hold` (an event), far longer than its lease in simulated time."""

    hold: ClassVar[asyncio.Event]

    @classmethod
    def from_config(cls, step: Step, config: StageConfig) -> Self:
        return cls(step=step, daemon=config.daemon)

    async def process(self, task: TaskLease, ctx: ServiceContext) -> None:
        await self.hold.wait()
        async with ctx.store.transaction() as s:
            await finish(s, task, ctx)


async def test_a_live_worker_keeps_its_lease_however_long_the_try(store: Store, http: aiohttp.ClientSession) -> None:
    fast(JAN, speed=3600.0)
    _Slow.hold = asyncio.Event()
    daemon = DaemonSettings(lease_s=600.0, poll_interval_s=60.0)  # a lease of 10 simulated minutes: 1/6 s real
    eid = await add_ready_entity(store, domain="sports", source="thesportsdb", external_id="e1", occurred_at=JAN)
    async with store.transaction() as s:
        await enqueue(s, Stage.gate, eid, "", max_attempts=5)
    worker = _Slow(step=Step(stage=Stage.gate, worker=_Slow, role=None, next=None, status=None), daemon=daemon)
    ctx = ctx_of(store, http, owner="live")
    run = asyncio.create_task(worker.run(ctx))
    try:
        async def leased() -> bool:
            return (await task_row(store)).lease_owner == "live"

        await wait_for(leased, timeout=5.0)
        t_end = time.monotonic() + 1.5  # 1.5 real seconds: nine leases' worth of simulated time
        while time.monotonic() < t_end:
            async with store.transaction() as s:
                assert await claim_tasks(s, stage=Stage.gate, owner="thief", lease=timedelta(minutes=10)) == []
            await asyncio.sleep(0.05)
        _Slow.hold.set()

        async def done() -> bool:
            return (await task_row(store)).status.value == "done"

        await wait_for(done, timeout=5.0)
    finally:
        ctx.stopping.set()
        await run
    assert (await task_row(store)).attempts == 1


async def test_a_breaker_resets_after_its_pause_of_the_clock() -> None:
    fast(JAN, speed=1000.0)
    br = CircuitBreaker(name="x", failures=1, reset_s=300.0)  # five simulated minutes: 0.3 s real
    br.record_failure()
    assert br.state is BreakerState.open and br.remaining_s() > 200
    t0 = time.monotonic()
    await wait_for(lambda: br.remaining_s() == 0, timeout=5.0)
    br.before_request()
    assert br.state is BreakerState.half_open and time.monotonic() - t0 < 3.0


async def test_retry_after_and_backoffs_are_waits_of_the_clock(http: aiohttp.ClientSession) -> None:
    fast(JAN, speed=1000.0)
    plan = FaultPlan(rules=[FaultRule(kind=FaultKind.rate_limit, route="/usgs/*", limit=2, retry_after_s=60.0),
                            FaultRule(kind=FaultKind.server_error, route="/usgs/*", limit=2)], seed=1)
    async with ReplayServer(settings=None) as server:
        server.faults.set(plan)
        settings = SourceSettings(base_url=server.base_url("usgs"), rate_per_s=1000.0, burst=10, timeout_s=5.0)
        client = SourceClient(name="usgs", settings=settings, session=http)
        t0 = time.monotonic()
        got = await client.get_json("query", params={"format": "geojson", "eventid": "usp0006dzc"})
    assert got.found and client.requests == 5  # two Retry-After pauses of a simulated minute, two backoffs
    assert time.monotonic() - t0 < 5.0  # in real time the pauses alone would take two minutes


async def test_a_poller_polls_at_its_interval_of_the_clock(store: Store, http: aiohttp.ClientSession) -> None:
    fast(JAN, speed=3600.0)
    base = load_settings(None, environ={})
    async with ReplayServer(settings=None) as server:
        src = base.sources.usgs.model_copy(update={"base_url": server.base_url("usgs"), "poll_interval_s": 1800.0})
        board = SourceBoard()
        poller = SourcePoller(source_name="usgs", settings=src, daemon=base.daemon, board=board)
        ctx = ctx_of(store, http)
        task = asyncio.create_task(poller.run(ctx))
        try:
            # every half hour of the clock: half a real second
            await wait_for(lambda: any(live.cycles >= 4 for live in board.snapshot()), timeout=10.0)
        finally:
            ctx.stopping.set()
            await task
    live = board.snapshot()[0]
    assert live.last is not None and live.next_poll_at is not None
    assert live.next_poll_at - live.last.ended_at == timedelta(seconds=1800)  # in the clock's time


async def test_the_request_limiter_stays_in_real_time(http: aiohttp.ClientSession) -> None:
    fast(JAN, speed=10_000.0)
    async with ReplayServer(settings=None, limits={"usgs": (4.0, 1)}) as server:
        settings = SourceSettings(base_url=server.base_url("usgs"), rate_per_s=4.0, burst=1, concurrency=4, timeout_s=5.0)
        client = SourceClient(name="usgs", settings=settings, session=http)
        t0 = time.monotonic()
        await asyncio.gather(*(client.get_json("query", params={"format": "geojson", "eventid": "usp0006dzc"})
                               for _ in range(5)))
        elapsed = time.monotonic() - t0
        async with http.get(f"{server.url}/_control/stats") as r:
            stats = await r.json()
    assert stats["routes"]["/usgs/query"]["statuses"] == {"200": 5}  # the upstream's real limit held
    assert elapsed >= 0.9  # four waits of a quarter of a REAL second


def test_short_waits_of_a_fast_clock_last_at_least_its_floor() -> None:
    sim = clock.SimulatedClock(start=JAN, speed=14_400.0)
    assert sim.real_wait(2.0) == sim.MIN_REAL_SLEEP_S  # a 2 s poll would be 0.14 ms: the loop would spin
    assert sim.real_wait(86_400.0) == pytest.approx(6.0)  # a simulated day: six real seconds, exact
    assert sim.real_wait(0.0) == 0.0 and sim.real_seconds(2.0) == pytest.approx(2.0 / 14_400)
    with pytest.raises(ValueError, match="min_real_sleep_s"):
        clock.SimulatedClock(start=JAN, speed=10.0, min_real_sleep_s=-1.0)


def test_the_setting_installs_the_simulated_clock() -> None:
    assert install_daemon_clock(DaemonSettings()) is False and isinstance(clock.current(), clock.SystemClock)
    assert install_daemon_clock(DaemonSettings(clock_start=JAN, clock_speed=500.0)) is True
    sim = clock.current()
    assert isinstance(sim, clock.SimulatedClock) and sim.speed == 500.0
    assert JAN <= clock.now() < JAN + timedelta(hours=1) and JAN <= utcnow() < JAN + timedelta(hours=1)


@pytest.mark.parametrize(("body", "needle"), [
    ("[daemon]\nclock_start = 2026-01-01T00:00:00Z\nclock_speed = 1e7", "daemon.clock_speed"),
    ("[daemon]\nclock_start = 2026-01-01T00:00:00\nclock_speed = 100", "needs a timezone"),
    ('[daemon]\nclock_start = "soon"', "daemon.clock_start"),
    ("[daemon]\nclock_speed = 10", "clock_speed needs clock_start"),
])
def test_a_bad_clock_setting_is_one_line_and_exit_2(body: str, needle: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import run_daemon

    path = tmp_path / "clkt.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n{body}\n')
    assert run_daemon.main(["--config", str(path)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("clkt:") and needle in err[0]
    assert not (tmp_path / "data").exists() and isinstance(clock.current(), clock.SystemClock)


def test_a_simulated_calendar_refuses_provider_batches() -> None:
    from clkt.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot run provider batches"):
        load_settings(None, environ={
            "CLKT_DAEMON__CLOCK_START": "2026-01-01T00:00:00Z", "CLKT_AGENTS__BACKEND": "llm",
            "CLKT_AGENTS__MODE": "batch", "CLKT_AGENTS__JUDGE_MODEL": "openai:a",
            "CLKT_AGENTS__GENERATOR_MODEL": "openai:b", "CLKT_AGENTS__VERIFIER_MODEL": "openai:c",
            "CLKT_AGENTS__TRANSLATOR_MODEL": "openai:d",
        })

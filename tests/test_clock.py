"""The process's clock (`clkt.clock`): real by default; a simulated clock runs faster from its start, and
what reads the time through it (the store's `utcnow`, `ServiceContext.sleep`) follows."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from clkt import clock
from clkt.context import ServiceContext
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.types import utcnow

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def restore_clock() -> Iterator[None]:
    old = clock.current()
    yield
    clock.install(old)


def test_the_system_clock_is_the_default_and_real() -> None:
    assert isinstance(clock.current(), clock.SystemClock)
    assert abs((clock.now() - datetime.now(UTC)).total_seconds()) < 1.0
    assert clock.current().real_seconds(3.0) == 3.0


@pytest.mark.usefixtures("restore_clock")
async def test_a_simulated_clock_runs_speed_times_faster_from_its_start() -> None:
    sim = clock.SimulatedClock(start=START, speed=3600.0)  # an hour a second
    clock.install(sim)
    t_real, t_sim = time.monotonic(), clock.monotonic()
    await clock.sleep(1800.0)  # half an hour: half a real second
    real = time.monotonic() - t_real
    assert 0.45 <= real < 1.5
    assert clock.monotonic() - t_sim >= 1800.0
    assert START + timedelta(seconds=1800) <= utcnow() < START + timedelta(hours=2)  # the store's now follows
    assert sim.real_seconds(7200.0) == 2.0


@pytest.mark.usefixtures("restore_clock")
async def test_the_context_sleeps_by_the_installed_clock_and_still_wakes_on_stop(tmp_path: object) -> None:
    clock.install(clock.SimulatedClock(start=START, speed=1000.0))
    async with Store(url="sqlite+aiosqlite:///:memory:") as store, aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="o", metrics=Metrics())
        t0 = time.monotonic()
        assert await ctx.sleep(500.0) is False  # 500 simulated seconds: half a real second
        assert time.monotonic() - t0 < 2.0
        waiter = asyncio.create_task(ctx.sleep(10_000_000.0))
        await asyncio.sleep(0.05)
        ctx.stopping.set()
        assert await asyncio.wait_for(waiter, timeout=2.0) is True


@pytest.mark.parametrize("speed", [0.5, 0.0, -3.0, math.nan])
def test_a_simulated_clock_refuses_a_speed_below_one(speed: float) -> None:
    with pytest.raises(ValueError, match="speed must be >= 1"):
        clock.SimulatedClock(start=START, speed=speed)


def test_a_simulated_clock_refuses_a_naive_start() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.SimulatedClock(start=datetime(2026, 1, 1), speed=10.0)

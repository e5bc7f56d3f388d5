"""The request limiter: a burst, then the rate; a unit leaks only once its request is done; FIFO; cancellation."""

from __future__ import annotations

import asyncio

import pytest

from clkt.sources._limiter import RequestLimiter


async def test_burst_then_rate() -> None:
    lim = RequestLimiter(rate_per_s=50.0, burst=5)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    times: list[float] = []

    async def one() -> None:
        async with lim:
            times.append(loop.time() - t0)

    await asyncio.gather(*(one() for _ in range(10)))
    assert all(t < 0.01 for t in times[:5])
    # the next five at 50/s: the 10th about 0.1 s after the burst
    assert 0.08 <= times[-1] <= 0.3
    assert times == sorted(times)


async def test_a_unit_leaks_only_after_its_request_is_done() -> None:
    lim = RequestLimiter(rate_per_s=1000.0, burst=2)
    release = asyncio.Event()
    started: list[int] = []

    async def slow(i: int) -> None:
        async with lim:
            started.append(i)
            await release.wait()

    tasks = [asyncio.create_task(slow(i)) for i in range(3)]
    await asyncio.sleep(0.05)  # 50 units' worth of leak at 1000/s: an aiolimiter bucket would let the third go
    assert started == [0, 1] and lim.in_flight == 2
    release.set()
    await asyncio.gather(*tasks)
    assert started == [0, 1, 2] and lim.in_flight == 0


async def test_a_cancelled_waiter_takes_no_place() -> None:
    lim = RequestLimiter(rate_per_s=1.0, burst=1)
    await lim.acquire()
    waiter = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    lim.release()
    assert lim.in_flight == 0 and 0.9 < lim.level() <= 1.0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="rate_per_s"):
        RequestLimiter(rate_per_s=0.0, burst=1)
    with pytest.raises(ValueError, match="burst"):
        RequestLimiter(rate_per_s=1.0, burst=0)

"""The live source board of the status pages: cycles, measured rate (only with enough requests), breaker."""

from __future__ import annotations

import aiohttp

from clkt.config import SourceSettings
from clkt.sources.board import MIN_RATE_REQUESTS, CycleOutcome, SourceBoard
from clkt.sources.http import SourceClient
from storage.types import utcnow


async def test_board_records_cycles_and_reads_the_breaker() -> None:
    async with aiohttp.ClientSession() as http:
        client = SourceClient(name="usgs", settings=SourceSettings(base_url="http://127.0.0.1:9", rate_per_s=2.0,
                                                                   breaker_failures=2), session=http)
        board = SourceBoard()
        board.register("usgs", client)
        [live] = board.snapshot()
        assert live.last is None and live.breaker == "closed" and live.configured_rate_per_s == 2.0
        board.cycle_started("usgs")
        assert board.snapshot()[0].running_since is not None
        client.requests += 3
        board.cycle_ended("usgs", result="ok", pages=1, inserted=2, next_in_s=60)
        live = board.snapshot()[0]
        assert live.running_since is None and live.cycles == 1 and live.last is not None
        assert live.last.requests == 3 and live.last.inserted == 2 and live.last.rate_per_s is None  # too few to be a rate
        assert live.next_poll_at is not None and 59 <= (live.next_poll_at - utcnow()).total_seconds() <= 60
        client.breaker.record_failure()
        client.breaker.record_failure()
        live = board.snapshot()[0]
        assert live.breaker == "open" and live.breaker_reopens_in_s is not None and live.breaker_reopens_in_s > 0


def test_rate_needs_enough_requests_and_time() -> None:
    t0 = utcnow()
    from datetime import timedelta

    ok = CycleOutcome(started_at=t0, ended_at=t0 + timedelta(seconds=4), result="ok", requests=MIN_RATE_REQUESTS * 2)
    assert ok.rate_per_s == MIN_RATE_REQUESTS * 2 / 4
    assert CycleOutcome(started_at=t0, ended_at=t0 + timedelta(seconds=0.5), result="ok", requests=50).rate_per_s is None
    assert CycleOutcome(started_at=t0, ended_at=t0 + timedelta(seconds=5), result="ok", requests=MIN_RATE_REQUESTS - 1).rate_per_s is None

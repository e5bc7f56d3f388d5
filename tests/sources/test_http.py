"""The HTTP layer against the replay server: the limiter holds, Retry-After is honoured without spending
the retry budget, the breaker opens and closes, transient faults are retried, conditional GETs answer
304, and the API key never reaches the logs."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Any

import aiohttp
import pytest

from clkt.config import SourceSettings
from clkt.errors import PayloadError, SourceBlocked, SourceError, SourceHttpError
from clkt.replay import FaultKind, FaultPlan, FaultRule, ReplayServer
from clkt.sources.http import SourceClient
from clkt.telemetry import Metrics
from tests.conftest import wait_for

EVENT = {"format": "geojson", "eventid": "usp0006dzc"}


def client(server: ReplayServer, http: aiohttp.ClientSession, *, metrics: Metrics | None = None,
           api_key: str | None = None, **kw: Any) -> SourceClient:
    base = {"base_url": server.base_url("usgs"), "rate_per_s": 1000.0, "burst": 10, "concurrency": 8,
            "timeout_s": 2.0, "breaker_failures": 5, "breaker_reset_s": 0.3}
    return SourceClient(name="usgs", settings=SourceSettings(**{**base, **kw}), session=http, metrics=metrics,
                        api_key=api_key)


async def stats(server: ReplayServer, http: aiohttp.ClientSession) -> dict[str, Any]:
    async with http.get(f"{server.url}/_control/stats") as r:
        return await r.json()


async def set_faults(server: ReplayServer, http: aiohttp.ClientSession, *rules: FaultRule) -> None:
    async with http.post(f"{server.url}/_control/faults", json=FaultPlan(rules=list(rules), seed=1).model_dump(mode="json")) as r:
        assert r.status == 200


def max_in_window(times: list[float], width: float) -> int:
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - width + 1e-9:
            j += 1
        best = max(best, i - j + 1)
    return best


async def test_limiter_is_never_exceeded(replay: ReplayServer, http: aiohttp.ClientSession) -> None:
    rate, burst, n = 20.0, 2, 26
    c = client(replay, http, rate_per_s=rate, burst=burst)
    await asyncio.gather(*(c.get_json("query", params=EVENT) for _ in range(n)))
    times = (await stats(replay, http))["routes"]["/usgs/query"]["times"]
    assert len(times) == n
    # a leaky bucket of `burst` draining at `rate`: at most burst + rate * w requests in any window w
    for width in (0.25, 0.5, 1.0):
        assert max_in_window(times, width) <= burst + rate * width + 1



class _StalledClient(SourceClient):
    """A client whose `stall_at`-th granted request holds the event loop for `stall_s` before it is sent: what
    a slow connection handshake or a busy loop does to the first requests of a cycle."""

    def __init__(self, *args: Any, stall_at: int, stall_s: float, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.stall_at, self.stall_s, self.granted = stall_at, stall_s, 0

    async def _send(self, *args: Any, **kw: Any) -> Any:
        self.granted += 1
        if self.granted == self.stall_at:
            time.sleep(self.stall_s)  # noqa: ASYNC251 - blocks the loop on purpose: the granted requests wait, unsent
        return await super()._send(*args, **kw)


async def test_granted_requests_that_wait_do_not_bunch_at_the_provider(http: aiohttp.ClientSession) -> None:
    # the provider enforces the same limit (burst 4, 20/s; 1 request of slack). A limiter that counts at the
    # grant leaks while the first wave waits unsent and lets the next wave go at once: 8 arrive together
    rate, burst = 20.0, 4
    async with ReplayServer(limits={"usgs": (rate, burst)}) as server:
        settings = SourceSettings(base_url=server.base_url("usgs"), rate_per_s=rate, burst=burst, concurrency=8,
                                  timeout_s=5.0)
        c = _StalledClient(name="usgs", settings=settings, session=http, stall_at=burst, stall_s=0.3)
        await asyncio.gather(*(c.get_json("query", params=EVENT) for _ in range(12)))
        route = (await stats(server, http))["routes"]["/usgs/query"]
    assert route["statuses"] == {"200": 12}
    assert max_in_window(route["times"], 0.05) <= burst + 1


async def test_retry_after_is_honoured_without_spending_retries(
    replay: ReplayServer, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SourceClient, "MAX_TRIES", 2)
    await set_faults(replay, http, FaultRule(kind=FaultKind.rate_limit, route="/usgs/*", limit=4, retry_after_s=0.1))
    c = client(replay, http)
    got = await c.get_json("query", params=EVENT)
    assert got.status == 200 and got.data["id"] == "usp0006dzc"
    route = (await stats(replay, http))["routes"]["/usgs/query"]
    assert route["statuses"] == {"429": 4, "200": 1}  # 4 rate limits and only 2 tries allowed: not spent
    times = route["times"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.09  # each retry waited for Retry-After


async def test_long_retry_after_blocks_the_source(replay: ReplayServer, http: aiohttp.ClientSession) -> None:
    await set_faults(replay, http, FaultRule(kind=FaultKind.rate_limit, retry_after_s=3600))
    with pytest.raises(SourceBlocked) as e:
        await client(replay, http).get_json("query", params=EVENT)
    assert e.value.retry_after_s == 3600


async def test_breaker_opens_and_closes(
    replay: ReplayServer, http: aiohttp.ClientSession, fast_retries: None, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(SourceClient, "MAX_TRIES", 2)
    metrics = Metrics()
    c = client(replay, http, metrics=metrics, breaker_failures=3, breaker_reset_s=0.3)
    await set_faults(replay, http, FaultRule(kind=FaultKind.server_error))
    with pytest.raises(SourceError):
        await c.get_json("query", params=EVENT)  # 2 failures
    with caplog.at_level(logging.WARNING), pytest.raises((SourceError, SourceBlocked)):
        await c.get_json("query", params=EVENT)  # the 3rd failure opens the circuit
    assert "circuit OPEN" in caplog.text
    assert metrics.breaker_open.labels("usgs")._value.get() == 1
    seen = (await stats(replay, http))["total"]
    with pytest.raises(SourceBlocked):
        await c.get_json("query", params=EVENT)
    assert (await stats(replay, http))["total"] == seen  # open: nothing reached the server
    await set_faults(replay, http)  # the source recovers
    await wait_for(lambda: c.breaker.remaining_s() == 0, timeout=5)  # the open circuit's pause (breaker_reset_s)
    got = await c.get_json("query", params=EVENT)  # the half-open trial succeeds
    assert got.status == 200
    assert metrics.breaker_open.labels("usgs")._value.get() == 0
    assert c.breaker.state.value == "closed"


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule(kind=FaultKind.truncated, limit=1),
        FaultRule(kind=FaultKind.html, limit=1),
        FaultRule(kind=FaultKind.unavailable, limit=2),
        FaultRule(kind=FaultKind.server_error, limit=2),
        FaultRule(kind=FaultKind.slow, limit=1, delay_s=1.0),
    ],
    ids=lambda r: r.kind.value,
)
async def test_transient_faults_are_retried(
    replay: ReplayServer, http: aiohttp.ClientSession, fast_retries: None, rule: FaultRule
) -> None:
    await set_faults(replay, http, rule)
    c = client(replay, http, timeout_s=0.3)
    got = await c.get_json("query", params=EVENT)
    assert got.data["id"] == "usp0006dzc"
    assert c.requests == (rule.limit or 0) + 1  # the faulty answers, then the good one


async def test_persistently_truncated_body_is_a_payload_error(
    replay: ReplayServer, http: aiohttp.ClientSession, fast_retries: None
) -> None:
    await set_faults(replay, http, FaultRule(kind=FaultKind.truncated))
    with pytest.raises(PayloadError) as e:
        await client(replay, http).get_json("query", params=EVENT)
    assert e.value.reason == "undecodable_body"


async def test_conditional_get_answers_304(replay: ReplayServer, http: aiohttp.ClientSession) -> None:
    c = client(replay, http)
    params = {"format": "geojson", "starttime": "2026-02-01", "minmagnitude": 6}
    first = await c.get_json("query", params=params, cache=True)
    again = await c.get_json("query", params=params, cache=True)
    assert not first.not_modified and again.not_modified and again.data == first.data
    assert (await stats(replay, http))["routes"]["/usgs/query"]["statuses"] == {"200": 1, "304": 1}
    assert first.original_dates  # the replay server says which recorded dates it moved


async def test_api_key_is_never_logged(replay: ReplayServer, http: aiohttp.ClientSession,
                                       caplog: pytest.LogCaptureFixture) -> None:
    key = "s3cr3t-k3y-0123456789"
    c = client(replay, http, api_key=key)
    with caplog.at_level(logging.DEBUG):
        got = await c.get_json("query", params={**EVENT, "api_key": c.api_key})
        with pytest.raises(SourceHttpError) as e:
            await c.get_json("query", params={"limit": 0, "api_key": c.api_key})
    assert got.status == 200
    assert e.value.status == 400
    assert key not in caplog.text and key not in str(e.value) and key not in got.url
    assert "***" in got.url

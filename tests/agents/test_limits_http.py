"""HTTP-level faults against the fake OpenAI-compatible server: 429 + Retry-After, 500, slow replies,
non-retryable errors, the in-flight cap and AIMD; the fake's limit model; a starved client's catch-up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx2 as httpx
import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models import override_allow_model_requests

from agents.cache import MemoryCallCache
from agents.limits import AdaptiveConcurrency, ProviderLimiter, RateLimitedModel
from agents.llm import LlmBackend
from clkt.config import Settings
from clkt.errors import AgentError
from storage.engine import Store
from tests.agents._util import LIVERPOOL_SWANSEA, llm_backend, llm_settings, match_doc
from tests.conftest import wait_for
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(autouse=True)
def _allow_loopback_requests() -> Iterator[None]:
    with override_allow_model_requests(True):  # only the fake server on 127.0.0.1 is ever reached
        yield


@pytest.fixture(autouse=True)
def _short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RateLimitedModel, "BACKOFF_INITIAL_S", 0.02)
    monkeypatch.setattr(RateLimitedModel, "BACKOFF_MAX_S", 0.1)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as s:
        yield s


def settings_for(server: FakeOpenAI, **provider: object) -> Settings:
    p: dict[str, object] = {"base_url": server.base_url, "rpm": 6000, "tpm": 10_000_000, "max_in_flight": 4,
                            "timeout_s": 5.0, "max_attempts": 4}
    p.update(provider)
    return llm_settings(providers={"fake": p})


async def judge(b: LlmBackend, name: str = "Liverpool vs Swansea") -> bool:
    v = await b.judge(entity_name=name, document=match_doc(), facts=LIVERPOOL_SWANSEA, response="?", lang="en")
    return v.known


async def test_end_to_end_over_http(server: FakeOpenAI) -> None:
    b = llm_backend(settings_for(server), cache=MemoryCallCache())
    doc = match_doc()
    mcqs = await b.generate(entity_name="Liverpool vs Swansea", document=doc, facts=LIVERPOOL_SWANSEA, n=2)
    assert mcqs and all(q.evidence in doc.text for q in mcqs)
    tr = await b.translate_mcq(mcq=mcqs[0], document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr")
    assert tr.lang == "fr" and tr.options == mcqs[0].options
    assert server.stats.ok == 2
    assert b.factory.stats.input_tokens > 0  # usage came back from the server


async def test_429_with_retry_after_is_honoured(server: FakeOpenAI) -> None:
    server.script = [{"status": 429, "retry_after": 1}]
    b = llm_backend(settings_for(server), cache=MemoryCallCache())
    assert await judge(b) is False
    assert server.stats.calls == 2 and server.stats.status[429] == 1
    gap = server.stats.times[1] - server.stats.times[0]
    assert gap >= 0.9  # the retry waited for Retry-After
    limiter = b.factory.limiters["fake"]
    assert limiter.stats.throttled == 1 and limiter.concurrency.limit < 4


async def test_500s_are_retried_then_succeed(server: FakeOpenAI) -> None:
    server.script = [{"status": 500}, {"status": 502}]
    b = llm_backend(settings_for(server), cache=MemoryCallCache())
    assert await judge(b) is False
    assert server.stats.calls == 3 and b.factory.limiters["fake"].stats.retried == 2


async def test_slow_replies_time_out_and_give_up_after_max_attempts(server: FakeOpenAI) -> None:
    server.script = [{"delay_s": 1.5}] * 3
    b = llm_backend(settings_for(server, timeout_s=0.3, max_attempts=2), cache=MemoryCallCache())
    with pytest.raises((TimeoutError, AgentError)):
        await judge(b)
    assert server.stats.calls == 2


async def test_the_attempt_timeout_covers_the_request_not_the_pacing_wait(server: FakeOpenAI) -> None:
    """A call the budget holds at the wire for longer than the attempt timeout is not timed out for it."""
    b = llm_backend(settings_for(server, timeout_s=0.3, max_attempts=1), cache=MemoryCallCache())
    limiter = b.factory.limiters["fake"]
    t0 = time.monotonic()
    limiter.requests.delay_until(t0 + 1.0)  # the request slot: 1 s away, over 3x the timeout
    limiter.tokens.delay_until(t0 + 0.6)  # and the token slot before it
    assert await judge(b) is False
    assert time.monotonic() - t0 >= 0.95  # it waited for its slot ...
    assert server.stats.ok == 1 and limiter.stats.retried == 0 and limiter.stats.failed == 0  # ... and went


async def test_after_a_pacing_wait_a_slow_reply_still_times_out(server: FakeOpenAI) -> None:
    server.script = [{"delay_s": 3}]
    b = llm_backend(settings_for(server, timeout_s=0.3, max_attempts=1), cache=MemoryCallCache())
    t0 = time.monotonic()
    b.factory.limiters["fake"].requests.delay_until(t0 + 0.5)
    with pytest.raises((TimeoutError, AgentError)):
        await judge(b)
    assert 0.75 <= time.monotonic() - t0 < 2.0  # the wait, then the timeout from the wire (not the 3 s reply)
    assert server.stats.calls == 1


async def test_a_bad_request_is_not_retried(server: FakeOpenAI) -> None:
    server.script = [{"status": 400}]
    b = llm_backend(settings_for(server), cache=MemoryCallCache())
    with pytest.raises(ModelHTTPError):
        await judge(b)
    assert server.stats.calls == 1


async def test_in_flight_cap_holds_under_fan_out(server: FakeOpenAI) -> None:
    server.latency_ms = 50
    b = llm_backend(settings_for(server, max_in_flight=3), cache=MemoryCallCache())
    await asyncio.gather(*(judge(b, f"entity {i}") for i in range(12)))
    assert server.stats.ok == 12
    assert server.stats.max_in_flight <= 3


async def test_rpm_limit_is_respected_without_429s() -> None:
    async with FakeOpenAI(rpm=600) as server:  # 10 requests/s, a second of it at once
        b = llm_backend(settings_for(server, rpm=600), cache=MemoryCallCache())
        await asyncio.gather(*(judge(b, f"entity {i}") for i in range(15)))
        assert server.stats.ok == 15
        assert server.stats.status.get(429, 0) == 0


async def test_the_fake_limits_like_a_provider_a_minute_bucket_enforced_per_second() -> None:
    async with FakeOpenAI(rpm=600, rate_headers=True) as server, httpx.AsyncClient() as http:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        replies = await asyncio.gather(*(http.post(f"{server.base_url}/chat/completions", json=body)
                                         for _ in range(14)))
    codes = sorted(r.status_code for r in replies)
    assert codes == [200] * 10 + [429] * 4  # one second of the minute's 600 at once, not more
    ok = [r for r in replies if r.status_code == 200]
    # the headers report the minute's bucket (600, nearly full), as OpenAI does, not the short interval
    assert {r.headers["x-ratelimit-limit-requests"] for r in ok} == {"600"}
    assert min(int(r.headers["x-ratelimit-remaining-requests"]) for r in ok) == 590
    refused = [r for r in replies if r.status_code == 429]
    assert all(0 < float(r.headers["retry-after-ms"]) <= 400 for r in refused)  # 10/s refill: the exact wait


async def test_a_starved_client_catches_up_on_lost_slots_without_429s() -> None:
    """The event loop blocked for 0.4 s (a loaded box starving the process): the 4 slots missed are sent
    right after, within the provider's second of burst, and no request is refused."""
    async with FakeOpenAI(rpm=600, rate_headers=True, latency_ms=20) as server:
        b = llm_backend(settings_for(server, rpm=600, max_in_flight=8), cache=MemoryCallCache())

        async def starve() -> None:
            for n in (8, 20):
                await wait_for(lambda n=n: server.stats.ok >= n, timeout=30)
                time.sleep(0.4)  # noqa: ASYNC251 - the stall under test (a starved event loop), not a wait

        await asyncio.gather(*(judge(b, f"entity {i}") for i in range(36)), starve())
        assert server.stats.ok == 36
        assert server.stats.status.get(429, 0) == 0
        t = server.stats.admit_times
    stalls = [i for i in range(1, len(t)) if t[i] - t[i - 1] >= 0.35]
    assert len(stalls) >= 2
    for i in stalls:  # after each stall a volley (the schedule alone sends 1-2 in 0.1 s; the old tolerance
        assert sum(1 for x in t[i:] if x - t[i] <= 0.1) >= 4  # of half an interval lost the missed slots)


def test_aimd_grows_on_success_and_halves_on_throttle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AdaptiveConcurrency, "HALVE_COOLDOWN_S", 0.0)
    c = AdaptiveConcurrency(max_limit=16, initial=8)
    assert c.on_throttled() and c.limit == 4
    for _ in range(8):
        c.on_success()
    assert 5 <= c.limit < 7  # about +1 per round of `limit` successes
    for _ in range(10):
        c.on_throttled()
    assert c.limit == 1
    for _ in range(1000):
        c.on_success()
    assert c.limit == 16


async def test_the_in_flight_cap_admits_waiters_one_per_release_in_order() -> None:
    c = AdaptiveConcurrency(max_limit=4, initial=2)
    await c.acquire()
    await c.acquire()
    order: list[int] = []

    async def waiter(i: int) -> None:
        await c.acquire()
        order.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(4)]
    await wait_for(lambda: c.waiting == 4)
    c.release()
    await wait_for(lambda: order == [0])
    assert c.in_flight == 2 and c.waiting == 3  # one place freed, one waiter let in
    tasks[1].cancel()  # a cancelled waiter gives its turn up
    await wait_for(lambda: c.waiting == 2)
    c.release()
    await wait_for(lambda: order == [0, 2])
    c.limit = 3.0
    c.on_success()  # the cap grew past 3: the next waiter goes without a release
    await wait_for(lambda: order == [0, 2, 3])
    assert c.in_flight == 3 and c.waiting == 0
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_the_in_flight_cap_is_a_pydantic_ai_limiter_with_max_queued() -> None:
    from pydantic_ai.concurrency import AbstractConcurrencyLimiter
    from pydantic_ai.exceptions import ConcurrencyLimitExceeded

    c = AdaptiveConcurrency(max_limit=1, max_queued=1)
    assert isinstance(c, AbstractConcurrencyLimiter)
    await c.acquire("model:a")
    first = asyncio.create_task(c.acquire("model:a"))
    await wait_for(lambda: c.waiting == 1)
    with pytest.raises(ConcurrencyLimitExceeded, match=r"exceeds max_queued \(1\) for model:a"):
        await c.acquire("model:a")  # a second waiter is refused at once, nothing queued for it
    assert c.waiting == 1 and c.in_flight == 1
    c.release()
    await first
    assert c.in_flight == 1 and c.waiting == 0
    c.release()
    unbounded = AdaptiveConcurrency(max_limit=1)  # the default: no bound on the queue
    await unbounded.acquire()
    waiters = [asyncio.create_task(unbounded.acquire()) for _ in range(50)]
    await wait_for(lambda: unbounded.waiting == 50)
    for w in waiters:
        w.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    assert unbounded.waiting == 0 and unbounded.in_flight == 1


def test_a_volley_of_429s_halves_once() -> None:
    c = AdaptiveConcurrency(max_limit=16)
    assert c.on_throttled() is True
    assert c.on_throttled() is False
    assert c.limit == 8


def test_limiter_paces_the_minute_budget() -> None:
    lim = ProviderLimiter(name="p", rpm=600, tpm=1000, max_in_flight=4)
    assert lim.requests.rate_per_s == pytest.approx(10.0) and lim.tokens.rate_per_s == pytest.approx(1000 / 60)
    slow = ProviderLimiter(name="p", rpm=6, tpm=1000, max_in_flight=1)
    now = time.monotonic()
    waits = [slow.requests.reserve(now=now) for _ in range(3)]
    # 10 s apart, the first a second after the limiter was made: it was 0 (and the next 9.5 s on, a catch-up
    # tolerance of 0.5 s), but a fresh limiter cannot know when the process it replaces last sent, and a second of
    # 6 RPM holds one request, so no catch-up either (Pacer.hold_first, Pacer.tolerance_s)
    assert waits == [pytest.approx(1.0, abs=0.05), pytest.approx(11.0, abs=0.05), pytest.approx(21.0, abs=0.05)]


async def test_daemon_backend_counts_calls_in_metrics(server: FakeOpenAI, store: Store) -> None:
    from clkt.services import agent_backend
    from clkt.telemetry import Metrics

    metrics = Metrics()
    b = agent_backend(settings_for(server), store=store, metrics=metrics)
    assert isinstance(b, LlmBackend)
    await judge(b)
    await judge(b)  # answered by the store's cache
    text = metrics.render().decode()
    assert 'clkt_llm_calls_total{cached="no",model="fake:judge"} 1.0' in text
    assert 'clkt_llm_calls_total{cached="yes",model="fake:judge"} 1.0' in text
    assert server.stats.ok == 1

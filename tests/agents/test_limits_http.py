"""HTTP-level faults against the fake OpenAI-compatible server: 429 + Retry-After, 500, slow replies,
non-retryable errors, the in-flight cap and AIMD."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models import override_allow_model_requests

from agents.cache import MemoryCallCache
from agents.limits import AdaptiveConcurrency, ProviderLimiter, RateLimitedModel
from agents.llm import LlmBackend
from clkt.config import Settings
from clkt.errors import AgentError
from tests.agents._util import LIVERPOOL_SWANSEA, llm_settings, match_doc
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
    b = LlmBackend(settings=settings_for(server), cache=MemoryCallCache())
    doc = match_doc()
    mcqs = await b.generate(entity_name="Liverpool vs Swansea", document=doc, facts=LIVERPOOL_SWANSEA, n=2)
    assert mcqs and all(q.evidence in doc.text for q in mcqs)
    tr = await b.translate_mcq(mcq=mcqs[0], document=doc, facts=LIVERPOOL_SWANSEA, target_lang="fr")
    assert tr.lang == "fr" and tr.options == mcqs[0].options
    assert server.stats.ok == 2
    assert b.factory.stats.input_tokens > 0  # usage came back from the server


async def test_429_with_retry_after_is_honoured(server: FakeOpenAI) -> None:
    server.script = [{"status": 429, "retry_after": 1}]
    b = LlmBackend(settings=settings_for(server), cache=MemoryCallCache())
    assert await judge(b) is False
    assert server.stats.calls == 2 and server.stats.status[429] == 1
    gap = server.stats.times[1] - server.stats.times[0]
    assert gap >= 0.9  # the retry waited for Retry-After
    limiter = b.factory.limiters["fake"]
    assert limiter.stats.throttled == 1 and limiter.concurrency.limit < 4


async def test_500s_are_retried_then_succeed(server: FakeOpenAI) -> None:
    server.script = [{"status": 500}, {"status": 502}]
    b = LlmBackend(settings=settings_for(server), cache=MemoryCallCache())
    assert await judge(b) is False
    assert server.stats.calls == 3 and b.factory.limiters["fake"].stats.retried == 2


async def test_slow_replies_time_out_and_give_up_after_max_attempts(server: FakeOpenAI) -> None:
    server.script = [{"delay_s": 1.5}] * 3
    b = LlmBackend(settings=settings_for(server, timeout_s=0.3, max_attempts=2), cache=MemoryCallCache())
    with pytest.raises((TimeoutError, AgentError)):
        await judge(b)
    assert server.stats.calls == 2


async def test_a_bad_request_is_not_retried(server: FakeOpenAI) -> None:
    server.script = [{"status": 400}]
    b = LlmBackend(settings=settings_for(server), cache=MemoryCallCache())
    with pytest.raises(ModelHTTPError):
        await judge(b)
    assert server.stats.calls == 1


async def test_in_flight_cap_holds_under_fan_out(server: FakeOpenAI) -> None:
    server.latency_ms = 50
    b = LlmBackend(settings=settings_for(server, max_in_flight=3), cache=MemoryCallCache())
    await asyncio.gather(*(judge(b, f"entity {i}") for i in range(12)))
    assert server.stats.ok == 12
    assert server.stats.max_in_flight <= 3


async def test_rpm_limit_is_respected_without_429s() -> None:
    async with FakeOpenAI(rpm=600, burst=2) as server:  # 10 requests/s
        b = LlmBackend(settings=settings_for(server, rpm=600), cache=MemoryCallCache())
        await asyncio.gather(*(judge(b, f"entity {i}") for i in range(15)))
        assert server.stats.ok == 15
        assert server.stats.status.get(429, 0) <= 1


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


def test_a_volley_of_429s_halves_once() -> None:
    c = AdaptiveConcurrency(max_limit=16)
    assert c.on_throttled() is True
    assert c.on_throttled() is False
    assert c.limit == 8


def test_limiter_paces_the_minute_budget() -> None:
    lim = ProviderLimiter(name="p", rpm=600, tpm=1000, max_in_flight=4)
    assert lim.requests.rate_per_s == pytest.approx(10.0) and lim.tokens.rate_per_s == pytest.approx(1000 / 60)
    slow = ProviderLimiter(name="p", rpm=6, tpm=1000, max_in_flight=1)
    waits = [slow.requests.reserve(now=100.0) for _ in range(3)]
    assert waits == [0.0, pytest.approx(5.0), pytest.approx(15.0)]  # half an interval of slack, then 10 s apart


async def test_daemon_backend_counts_calls_in_metrics(server: FakeOpenAI, store: object) -> None:
    from clkt.metrics import Metrics
    from clkt.pipeline.backends import build_backend

    metrics = Metrics()
    b = build_backend(settings_for(server), store=store, metrics=metrics)  # type: ignore[arg-type]
    assert isinstance(b, LlmBackend)
    await judge(b)
    await judge(b)  # answered by the store's cache
    text = metrics.render().decode()
    assert 'clkt_llm_calls_total{cached="no",model="fake:judge"} 1.0' in text
    assert 'clkt_llm_calls_total{cached="yes",model="fake:judge"} 1.0' in text
    assert server.stats.ok == 1

"""The pacer (GCRA on an absolute schedule) and the provider's rate-limit headers, without a server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from agents.limits import Pacer, ProviderLimiter, RateHeaders, parse_rate_headers


def test_late_wake_ups_do_not_push_the_schedule_back() -> None:
    p = Pacer(rate_per_s=20.0, slack=0.5)
    assert p.reserve(now=0.0) == 0.0
    # the second caller books 25 ms on; the third books 20 ms after its slot (0.075): it goes at once, and
    # the fourth keeps the schedule (0.125), not 50 ms after the late one
    assert p.reserve(now=0.0) == pytest.approx(0.025)
    assert p.reserve(now=0.095) == 0.0
    assert p.reserve(now=0.095) == pytest.approx(0.125 - 0.095)
    # 100 calls scheduled from t=1 end 99 intervals later, whatever the lateness of each booking
    q = Pacer(rate_per_s=20.0, slack=0.5)
    starts = [t + q.reserve(now=t) for t in (1.0 + 0.05 * i + 0.02 for i in range(100))]
    assert starts[-1] - starts[0] <= 99 * 0.05 + 1e-9


def test_slack_never_lets_more_than_the_burst_through() -> None:
    p = Pacer(rate_per_s=10.0, slack=0.5)
    starts = [p.reserve(now=50.0) + 50.0 for _ in range(5)]  # 5 callers at once after a long idle
    assert starts[1] - starts[0] == pytest.approx(0.05)
    assert all(b - a == pytest.approx(0.1) for a, b in zip(starts[1:], starts[2:]))


def test_cost_scales_the_interval_and_delay_until_holds_slots() -> None:
    p = Pacer(rate_per_s=1000.0, slack=0.0)  # 1000 tokens/s
    assert p.reserve(500, now=0.0) == 0.0
    assert p.reserve(500, now=0.0) == pytest.approx(0.5)
    p.delay_until(3.0)
    assert p.reserve(1, now=1.0) == pytest.approx(2.0)


def test_openai_headers_parse() -> None:
    h = parse_rate_headers({
        "X-RateLimit-Limit-Requests": "1200", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-tokens": "149000", "x-ratelimit-reset-tokens": "20ms",
    })
    assert h == RateHeaders(limit_requests=1200, limit_tokens=150000, remaining_requests=0, remaining_tokens=149000,
                            reset_requests_s=360.0, reset_tokens_s=0.02)


def test_anthropic_headers_parse_rfc3339_resets() -> None:
    at = (datetime.now(UTC) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    h = parse_rate_headers({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-reset": at})
    assert h.limit_requests == 50 and h.reset_requests_s == pytest.approx(30, abs=2)


def test_garbage_headers_are_ignored() -> None:
    assert parse_rate_headers({"x-ratelimit-limit-requests": "lots", "x-ratelimit-reset-requests": "soon"}) == RateHeaders()
    assert parse_rate_headers({"content-type": "application/json"}) == RateHeaders()


def test_a_lower_announced_limit_lowers_the_pace_a_higher_one_does_not_raise_it() -> None:
    lim = ProviderLimiter(name="p", rpm=2400, tpm=1_000_000, max_in_flight=8)
    lim.on_headers({"x-ratelimit-limit-requests": "1200", "x-ratelimit-limit-tokens": "60000"})
    assert lim.rate_per_s == pytest.approx(20.0) and lim.tokens.rate_per_s == pytest.approx(1000.0)
    lim.on_headers({"x-ratelimit-limit-requests": "9000"})
    assert lim.rate_per_s == pytest.approx(20.0)  # the configured limit stays the ceiling


def test_an_exhausted_quota_pauses_until_its_reset() -> None:
    lim = ProviderLimiter(name="p", rpm=600, tpm=1_000_000, max_in_flight=8)
    lim.on_headers({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"})
    assert lim.requests.reserve() == pytest.approx(2.0, abs=0.1)


def test_token_estimate_is_calibrated_by_reported_usage() -> None:
    lim = ProviderLimiter(name="p", rpm=600, tpm=1_000_000, max_in_flight=8)
    for _ in range(30):
        lim.on_success(estimated_tokens=1000, input_tokens=500)
    assert lim.token_scale == pytest.approx(0.5, abs=0.01)


def test_a_429_after_the_limit_was_announced_paces_at_it_instead_of_cutting_deeper() -> None:
    lim = ProviderLimiter(name="p", rpm=2400, tpm=1_000_000, max_in_flight=8)
    lim.on_headers({"x-ratelimit-limit-requests": "1200"})
    lim.on_throttled(0.05)
    assert lim.rate_per_s == pytest.approx(20.0)
    blind = ProviderLimiter(name="p", rpm=1200, tpm=1_000_000, max_in_flight=8)
    blind.on_throttled(None)
    assert blind.rate_per_s == pytest.approx(20.0 * ProviderLimiter.RATE_DECREASE)  # no headers: AIMD


async def test_headers_over_http_bring_a_too_high_limiter_down_to_the_provider_limit() -> None:
    from pydantic_ai.models import override_allow_model_requests

    from agents.cache import MemoryCallCache
    from agents.llm import LlmBackend
    from tests.agents._util import LIVERPOOL_SWANSEA, llm_settings, match_doc
    from tests.fakes.openai_server import FakeOpenAI

    async with FakeOpenAI(rpm=600, burst=2, rate_headers=True, latency_ms=20) as server:
        s = llm_settings(providers={"fake": {"base_url": server.base_url, "rpm": 1200, "tpm": 10_000_000,
                                             "max_in_flight": 8, "timeout_s": 5.0, "max_attempts": 6}})
        b = LlmBackend(settings=s, cache=MemoryCallCache())
        with override_allow_model_requests(True):
            for batch in range(3):
                await asyncio.gather(*(
                    b.judge(entity_name=f"e{batch}-{i}", document=match_doc(), facts=LIVERPOOL_SWANSEA,
                            response="?", lang="en")
                    for i in range(8)
                ))
        lim = b.factory.limiters["fake"]
        assert lim.headers_seen is not None and lim.headers_seen.limit_requests == 600
        assert lim.max_rate_per_s == pytest.approx(10.0)
        assert server.stats.ok == 24
        # the 429s come only before the first answer announced the limit (at most one round of 8 at 2x)
        assert server.stats.status.get(429, 0) <= 4

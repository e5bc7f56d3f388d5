"""The pacer (GCRA on an absolute schedule, catch-up tolerance, quota from headers) and the provider's
rate-limit headers, without a server (the last test uses the fake provider)."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from agents.limits import Pacer, ProviderLimiter, RateHeaders, parse_rate_headers
from tests.conftest import wait_for


def test_late_wake_ups_do_not_push_the_schedule_back() -> None:
    p = Pacer(rate_per_s=20.0, tolerance_s=0.025)
    assert p.reserve(now=0.0) == 0.0
    # the second caller books 25 ms on; the third books 20 ms after its slot (0.075): it goes at once, and
    # the fourth keeps the schedule (0.125), not 50 ms after the late one
    assert p.reserve(now=0.0) == pytest.approx(0.025)
    assert p.reserve(now=0.095) == 0.0
    assert p.reserve(now=0.095) == pytest.approx(0.125 - 0.095)
    # 100 calls scheduled from t=1 end 99 intervals later, whatever the lateness of each booking
    q = Pacer(rate_per_s=20.0, tolerance_s=0.025)
    starts = [t + q.reserve(now=t) for t in (1.0 + 0.05 * i + 0.02 for i in range(100))]
    assert starts[-1] - starts[0] <= 99 * 0.05 + 1e-9


def test_tolerance_never_lets_more_than_the_burst_through() -> None:
    p = Pacer(rate_per_s=10.0, tolerance_s=0.05)
    starts = [p.reserve(now=50.0) + 50.0 for _ in range(5)]  # 5 callers at once after a long idle
    assert starts[1] - starts[0] == pytest.approx(0.05)
    assert all(b - a == pytest.approx(0.1) for a, b in itertools.pairwise(starts[1:]))


def test_cost_scales_the_interval_and_delay_until_holds_slots() -> None:
    p = Pacer(rate_per_s=1000.0, tolerance_s=0.0)  # 1000 tokens/s
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


def test_a_starved_client_catches_up_on_the_slots_it_lost_within_the_tolerance() -> None:
    p = Pacer(rate_per_s=20.0, tolerance_s=0.5)
    starts = [t + p.reserve(now=t) for t in (10.0 + 0.05 * i for i in range(20))]  # on schedule, 1 s
    assert starts == [pytest.approx(10.0 + 0.05 * i) for i in range(20)]
    # the process is starved for 0.3 s (6 slots missed): what it missed plus the tolerance's credit go at
    # once (1 + 0.5 s x 20/s), then the schedule holds
    late = [11.3 + p.reserve(now=11.3) for _ in range(14)]
    assert late[:11] == [pytest.approx(11.3)] * 11
    assert late[11:] == [pytest.approx(11.35), pytest.approx(11.4), pytest.approx(11.45)]
    # over the whole run the pacer never ran ahead of the limit by more than the tolerance: a token bucket
    # of 1 + 0.5 s of the limit (a provider's second of it holds 20) admits every request
    sent = starts + late
    assert all(i + 1 <= 1 + 20.0 * (t - sent[0] + 0.5) + 1e-9 for i, t in enumerate(sent))


def test_a_stall_longer_than_the_tolerance_loses_the_rest_instead_of_a_volley() -> None:
    p = Pacer(rate_per_s=20.0, tolerance_s=0.5)
    for i in range(10):
        p.reserve(now=1.0 + 0.05 * i)
    after = [5.0 + p.reserve(now=5.0) for _ in range(15)]  # 3.5 s of stall
    assert sum(1 for t in after if t == pytest.approx(5.0)) == 11  # 1 + 0.5 s x 20/s back to back, no more


async def test_waiters_keep_the_schedule_and_a_late_timer_wakes_the_whole_catch_up_at_once() -> None:
    """On the event loop: queued callers go one per interval in arrival order; after the loop stalls (a
    starved process), every slot due within the tolerance is woken in the same turn of the loop, no more."""
    p = Pacer(rate_per_s=20.0, tolerance_s=0.2)
    loop = asyncio.get_running_loop()
    woke: list[tuple[int, float]] = []

    async def one(i: int) -> None:
        await p.acquire()
        woke.append((i, loop.time()))

    tasks = [asyncio.create_task(one(i)) for i in range(20)]
    # the first 5 (1 + 0.2 s x 20/s) at once, then one each 50 ms: the schedule runs once 7 have woken
    await wait_for(lambda: len(woke) >= 7, interval=0.001)
    time.sleep(0.3)  # noqa: ASYNC251 - the stall under test (not a wait): 6 slots come due meanwhile
    await asyncio.gather(*tasks)
    assert [i for i, _ in woke] == list(range(20))  # FIFO
    t = [w for _, w in woke]
    after = [x for x in t if x >= t[0] + 0.4]
    burst = [x for x in after if x - after[0] < 0.002]  # woken in one turn of the loop after the stall
    assert 4 <= len(burst) <= 5  # what the stall missed, bounded by the tolerance (1 + 0.2 s x 20/s)
    assert p.waiting == 0 and p.sent == 20


async def test_a_cancelled_waiter_takes_no_slot() -> None:
    p = Pacer(rate_per_s=10.0, tolerance_s=0.0)
    assert await p.acquire() == 1.0  # due: taken at once
    a = asyncio.create_task(p.acquire())
    b = asyncio.create_task(p.acquire())
    await wait_for(lambda: p.waiting == 2, interval=0.001)  # both queued behind the first
    a.cancel()
    t0 = time.monotonic()
    assert await b == 2.0  # b took the slot a left, 100 ms after the first, not 200
    assert time.monotonic() - t0 < 0.15
    assert p.waiting == 0


def test_the_reported_quota_bounds_a_catch_up() -> None:
    p = Pacer(rate_per_s=20.0, tolerance_s=0.5)
    mark = 0.0
    for i in range(10):
        p.reserve(now=1.0 + 0.05 * i)
        if i == 4:
            mark = p.sent  # the 5th request's answer will report the quota
    # its answer (at 1.6 s) says 3 remain, refilling at 20/s: the 5 requests sent since are not in it
    p.observe(3, sent_mark=mark, rate_per_s=20.0, now=1.6)
    waits = [p.reserve(now=1.6) for _ in range(4)]
    # the tolerance alone would let all 4 go now; the quota holds the first until 3 + 20/s x t covers
    # the 5 sent since plus its own: t = 0.15 s, then one more each 50 ms
    assert waits == [pytest.approx(0.15), pytest.approx(0.2), pytest.approx(0.25), pytest.approx(0.3)]
    assert p.quota_waits == 1  # after the first, the schedule itself keeps to the quota's refill


def test_a_report_about_an_older_request_does_not_replace_a_newer_one() -> None:
    p = Pacer(rate_per_s=10.0, tolerance_s=0.0)
    p.observe(100, sent_mark=5.0, now=0.0)
    p.observe(0, sent_mark=3.0, now=0.1)  # answered later, sent earlier: staler
    assert p.quota is not None and p.quota.remaining == 100


def test_an_exhausted_quota_waits_one_refill_not_the_full_reset() -> None:
    lim = ProviderLimiter(name="p", rpm=600, tpm=1_000_000, max_in_flight=8)
    lim.requests.reserve()
    mark = lim.requests.sent
    # OpenAI's reset is the time until the quota is full again (60 s here); one slot refills in 0.1 s
    lim.on_headers({"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "0",
                    "x-ratelimit-reset-requests": "1m0s"}, marks=(mark, None))
    assert lim.requests.quota is not None
    at = lim.requests.quota.at
    assert lim.requests.quota.earliest(1.0, lim.requests.sent) == pytest.approx(at + 0.1)
    lim.on_headers({"x-ratelimit-remaining-requests": "0"})  # no marks (a 429's exception): limits only
    assert lim.requests.quota.at == at


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
    from tests.agents._util import LIVERPOOL_SWANSEA, llm_backend, llm_settings, match_doc
    from tests.fakes.openai_server import FakeOpenAI

    async with FakeOpenAI(rpm=600, rate_headers=True, latency_ms=20) as server:  # a second's burst: 10
        s = llm_settings(providers={"fake": {"base_url": server.base_url, "rpm": 1200, "tpm": 10_000_000,
                                             "max_in_flight": 8, "timeout_s": 5.0, "max_attempts": 6}})
        b = llm_backend(s, cache=MemoryCallCache())
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



def _refusals(sends: list[float], *, rpm: float) -> int:
    """Requests the fake provider's limit (`tests.fakes.openai_server`: a minute's bucket, and a second's of the limit
    holding at least one request, refilled at least one a second) refuses, both buckets full at the start."""
    rate = rpm / 60.0
    burst, refill = max(1.0, rate), max(1.0, rate)
    short, minute, last, refused = burst, float(rpm), sends[0], 0
    for t in sends:
        short = min(burst, short + (t - last) * refill)
        minute = min(float(rpm), minute + (t - last) * rate)
        last = t
        if min(short, minute) < 1.0 - 1e-9:
            refused += 1
        else:
            short, minute = short - 1.0, minute - 1.0
    return refused


@pytest.mark.parametrize("rpm", [3, 30, 60, 90, 120, 600, 1200])
def test_late_callers_never_overrun_a_second_of_the_limit(rpm: int) -> None:
    """Callers that come late to their slots (a slow server answering, a starved loop) never send more than a second
    of the limit holds, with half of its spare room left for the way to the provider: the old tolerance (0.5 s at
    every rate) booked the next slot 0.5 s after a late one, 1.75 requests in a second at 90 RPM (a second holds
    1.5), and left no room at 60-120 RPM."""
    lim = ProviderLimiter(name="p", rpm=rpm, tpm=10_000_000, max_in_flight=8)
    p, rate = lim.requests, rpm / 60.0
    assert p.tolerance_s == pytest.approx(min(0.5, max(0.0, (1.0 - 1.0 / rate) / 2)))
    rng = random.Random(rpm)
    t, sends = time.monotonic(), []
    for _ in range(200):
        t += rng.uniform(0.0, 2.0 / rate)  # the next caller arrives 0 to 2 intervals on
        t += p.reserve(now=t)
        sends.append(t)
    assert _refusals(sends, rpm=rpm) == 0
    # each request may reach the provider up to half the spare room late (or the earlier one that much later)
    jitter = [s + rng.uniform(0.0, (max(1.0, rate) - 1.0) / rate / 2) for s in sends]
    assert _refusals(sorted(jitter), rpm=rpm) == 0


def test_a_restarted_client_waits_before_its_first_request() -> None:
    """A limiter made right after another one on the same budget sent (a process killed and started again, or the
    limiter made again in the same process): its first request goes one interval later (at most a second), as one
    client would send. The old limiter sent at once: a second of 30 RPM holds one request, refused."""
    last = time.monotonic()  # the other limiter's last request
    new = ProviderLimiter(name="p", rpm=30, tpm=10_000_000, max_in_flight=1)
    now = time.monotonic()
    first = now + new.requests.reserve(now=now)
    assert first - last >= 1.0
    assert _refusals([last, first], rpm=30) == 0
    assert _refusals([last, now], rpm=30) == 1  # what the old one did
    assert new.requests.unused_s == 0.0  # the hold is not schedule time left unused
    fast = ProviderLimiter(name="p", rpm=600, tpm=10_000_000, max_in_flight=1)
    now = time.monotonic()
    assert fast.requests.reserve(now=now) == pytest.approx(0.1, abs=0.01)  # one interval when shorter


def test_the_first_slot_hold_does_not_delay_a_limiter_first_used_later() -> None:
    lim = ProviderLimiter(name="p", rpm=30, tpm=10_000_000, max_in_flight=1)
    later = time.monotonic() + 5.0
    assert lim.requests.reserve(now=later) == 0.0
    assert lim.requests.reserve(now=later) == pytest.approx(2.0)
    assert lim.requests.unused_s == 0.0


async def test_the_fake_admits_a_request_a_second_under_60_rpm_and_the_minute_limit() -> None:
    """The fake provider under 60 RPM: no more than one request in a second, and no more than the minute's limit
    (its bucket full at the start: 3 at once would be refused by the second's bucket, not by the minute's)."""
    import httpx2 as httpx

    from tests.fakes.openai_server import FakeOpenAI

    body = {"model": "m", "messages": [{"role": "user", "content": "Q"}], "max_tokens": 1}
    async with FakeOpenAI(rpm=3) as server, httpx.AsyncClient() as http:
        codes = []
        for _ in range(2):
            codes.append((await http.post(server.base_url + "/chat/completions", json=body)).status_code)
        assert codes == [200, 429]
        await asyncio.sleep(1.05)
        more = [(await http.post(server.base_url + "/chat/completions", json=body)).status_code for _ in range(1)]
        await asyncio.sleep(1.05)
        more.append((await http.post(server.base_url + "/chat/completions", json=body)).status_code)
        await asyncio.sleep(1.05)
        more.append((await http.post(server.base_url + "/chat/completions", json=body)).status_code)
        assert more == [200, 200, 429]  # 3 in the minute: the minute's bucket is empty (20 s a request)

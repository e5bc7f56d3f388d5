"""Per-provider limits as a model wrapper: RPM and TPM budgets, an adaptive cap on calls in flight,
`Retry-After` honoured, the provider's rate-limit headers read, tenacity retries and a timeout per attempt.

One `ProviderLimiter` is shared by every model of a provider (all roles), so the provider's budgets hold
whatever the mix of agents. Rates are paced by `Pacer`, a GCRA (virtual scheduling) on an absolute
schedule: each request reserves the next slot `1/rate` after the previous one, so a late wake-up on a busy
event loop does not push every later slot back (aiolimiter's leaky bucket with a burst of 1 lost that time on
every call: 0.70 of the limit on a loaded 2-core box), and a small tolerance (`RATE_SLACK`, half an interval)
lets a late request catch up without sending more than a provider's bucket of 2 holds.
For HTTP providers the request slot is taken in the HTTP client's request hook, right before the bytes go
on the wire, so the CPU work between the slot and the socket (building the request) cannot bunch requests
up at the provider. The same client's response hook reads `x-ratelimit-*` (OpenAI) and
`anthropic-ratelimit-*` headers: a lower limit than configured lowers the pace, an exhausted remaining
quota pauses until its reset.

The in-flight cap is AIMD, like TCP: it grows by 1/limit per successful call (about +1 per round of calls)
up to `max_in_flight` and halves on a 429 (at most once per `HALVE_COOLDOWN_S`, so a volley of 429s from one
burst halves it once). A 429's `retry-after-ms` / `Retry-After` pauses the whole provider until then.

Retries live in this one layer (the provider SDK's own retries are turned off by the model factory):
rate limits, 5xx, connection errors and timeouts are retried with `Retry-After` or capped exponential
backoff with jitter; anything else (bad request, auth) is raised at once.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import KnownModelName, Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_json
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from clkt.config import ProviderSettings

__all__ = [
    "AdaptiveConcurrency", "Pacer", "ProviderLimiter", "RateHeaders", "RateLimitedModel", "LimiterStats",
    "estimate_tokens", "parse_rate_headers",
]


class AdaptiveConcurrency:
    """An AIMD cap on calls in flight: additive increase on success, halve on throttling."""

    HALVE_COOLDOWN_S: ClassVar[float] = 1.0

    def __init__(self, *, max_limit: int, initial: int | None = None, min_limit: int = 1) -> None:
        self.max_limit = max_limit
        self.min_limit = min_limit
        self.limit = float(initial if initial is not None else max_limit)
        self.in_flight = 0
        self._cond: asyncio.Condition | None = None
        self._last_halve = -math.inf

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self) -> None:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.in_flight < int(self.limit))
            self.in_flight += 1

    async def release(self) -> None:
        cond = self._condition()
        async with cond:
            self.in_flight -= 1
            cond.notify_all()

    def on_success(self) -> None:
        self.limit = min(float(self.max_limit), self.limit + 1.0 / max(self.limit, 1.0))

    def on_throttled(self) -> bool:
        now = time.monotonic()
        if now - self._last_halve < self.HALVE_COOLDOWN_S:
            return False
        self._last_halve = now
        self.limit = max(float(self.min_limit), self.limit / 2)
        return True


@dataclass
class LimiterStats:
    calls: int = 0  # attempts sent
    ok: int = 0
    throttled: int = 0  # 429s received
    retried: int = 0
    failed: int = 0
    max_in_flight_seen: int = 0


def estimate_tokens(messages: list[ModelMessage]) -> int:
    """A cheap upper-ish estimate for the TPM budget: ~4 bytes per token of the JSON messages."""
    return max(1, len(to_json(messages)) // 4)


class Pacer:
    """GCRA pacing: acquisitions of `cost` are spaced `cost / rate_per_s` apart on an absolute schedule.

    Callers take their slot one at a time (a FIFO lock held through the sleep), each booked when the one
    before it has actually gone: a wake-up up to `1 + slack` intervals late does not move the later slots,
    and after a longer stall of the event loop at most `1 + slack` acquisitions go back to back (booking all
    slots ahead of time would send every overdue one at once after a stall: a volley of 429s).
    """

    def __init__(self, *, rate_per_s: float, slack: float) -> None:
        self.rate_per_s = rate_per_s
        self.slack = slack
        self._tat = -math.inf  # theoretical arrival time of the next slot
        self._lock: asyncio.Lock | None = None

    def reserve(self, cost: float = 1.0, *, now: float | None = None) -> float:
        """Book the next slot for `cost`; return the seconds to wait for it."""
        now = time.monotonic() if now is None else now
        interval = cost / self.rate_per_s
        start = max(self._tat, now - self.slack * interval)
        self._tat = start + interval
        return max(0.0, start - now)

    def delay_until(self, t: float) -> None:
        """No slot starts before `t` (a Retry-After pause or an exhausted quota)."""
        self._tat = max(self._tat, t)

    async def acquire(self, cost: float = 1.0) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            wait = self.reserve(cost)
            if wait > 0:
                await asyncio.sleep(wait)


@dataclass(frozen=True, slots=True)
class RateHeaders:
    """What a provider's rate-limit response headers say (None: not sent)."""

    limit_requests: int | None = None  # per minute
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")


def _seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """OpenAI's `6m0s` / `20ms` / `1s`, a bare number of seconds, or Anthropic's RFC 3339 reset time."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    m = _DURATION.fullmatch(value)
    if m and any(m.groups()):
        h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
        return h * 3600 + mi * 60 + s + ms / 1000
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        return None
    return max(0.0, (at - (now or datetime.now(UTC))).total_seconds())


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


# header-name pattern per provider, by its prefix: {field} is limit|remaining|reset, {unit} requests|tokens
_RATE_HEADER_NAMES = {
    "x-ratelimit-": "x-ratelimit-{field}-{unit}",  # OpenAI
    "anthropic-ratelimit-": "anthropic-ratelimit-{unit}-{field}",  # Anthropic
}


def parse_rate_headers(headers: Mapping[str, str]) -> RateHeaders:
    """OpenAI `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, Anthropic `anthropic-ratelimit-*`."""
    h = {k.lower(): v for k, v in headers.items()}
    for prefix, name in _RATE_HEADER_NAMES.items():
        if any(k.startswith(prefix) for k in h):
            def get(field: str, unit: str, name: str = name) -> str | None:
                return h.get(name.format(field=field, unit=unit))

            return RateHeaders(
                limit_requests=_int(get("limit", "requests")),
                limit_tokens=_int(get("limit", "tokens")),
                remaining_requests=_int(get("remaining", "requests")),
                remaining_tokens=_int(get("remaining", "tokens")),
                reset_requests_s=_seconds(get("reset", "requests")),
                reset_tokens_s=_seconds(get("reset", "tokens")),
            )
    return RateHeaders()


class ProviderLimiter:
    """RPM + TPM budgets, adaptive in-flight cap, rate-limit headers and Retry-After pauses for one provider.

    The request rate starts at the configured RPM (or the lower limit the provider's headers announce); on a
    429 (the configured RPM was too high, or the provider is shared) it drops by `RATE_DECREASE`, but not
    below `RATE_BACKOFF` x the rate of successes measured over the last `RATE_WINDOW_S`, then climbs back by
    `RATE_GROWTH` per success, never above the limit. The token estimate of a request is calibrated by the
    input tokens the provider reports (`token_scale`), so the TPM pace follows the provider's own count.
    """

    RATE_SLACK: ClassVar[float] = 0.5  # intervals a late slot may start behind the schedule (< the provider's burst)
    RATE_DECREASE: ClassVar[float] = 0.7  # multiplicative decrease of the request rate on a 429
    RATE_BACKOFF: ClassVar[float] = 0.9  # ... but not below this share of the success rate just measured
    RATE_MIN_SAMPLES: ClassVar[int] = 20
    RATE_GROWTH: ClassVar[float] = 0.002  # relative increase of the request rate per success
    RATE_WINDOW_S: ClassVar[float] = 5.0
    MAX_RETRY_AFTER_S: ClassVar[float] = 300.0
    TOKEN_SCALE_ALPHA: ClassVar[float] = 0.2  # EWMA weight of each (reported / estimated) input tokens sample

    def __init__(self, *, name: str, rpm: int, tpm: int, max_in_flight: int) -> None:
        self.name = name
        self.configured_rpm = rpm
        self.configured_tpm = tpm
        self.max_rate_per_s = rpm / 60.0
        self.rate_per_s = self.max_rate_per_s
        self.requests = Pacer(rate_per_s=self.rate_per_s, slack=self.RATE_SLACK)
        self.tokens = Pacer(rate_per_s=tpm / 60.0, slack=self.RATE_SLACK)
        self.concurrency = AdaptiveConcurrency(max_limit=max_in_flight)
        self.stats = LimiterStats()
        self.token_scale = 1.0
        self.headers_seen: RateHeaders | None = None
        self._paused_until = 0.0
        self._ok_times: deque[float] = deque()

    def _set_rate(self, per_s: float) -> None:
        self.rate_per_s = max(self.max_rate_per_s * 0.01, min(self.max_rate_per_s, per_s))
        self.requests.rate_per_s = self.rate_per_s

    @classmethod
    def from_settings(cls, name: str, p: ProviderSettings) -> ProviderLimiter:
        return cls(name=name, rpm=p.rpm, tpm=p.tpm, max_in_flight=p.max_in_flight)

    def pause(self, seconds: float) -> None:
        until = time.monotonic() + min(seconds, self.MAX_RETRY_AFTER_S)
        self._paused_until = max(self._paused_until, until)
        self.requests.delay_until(self._paused_until)
        self.tokens.delay_until(self._paused_until)

    async def _wait_pause(self) -> None:
        while (left := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    async def pace_request(self) -> None:
        """The request slot (called right before the request goes on the wire)."""
        await self.requests.acquire()

    @asynccontextmanager
    async def slot(self, tokens: int, *, pace_requests: bool = True) -> AsyncIterator[None]:
        await self._wait_pause()
        await self.concurrency.acquire()
        try:
            await self.tokens.acquire(max(1.0, tokens * self.token_scale))
            if pace_requests:
                await self.pace_request()
            self.stats.calls += 1
            self.stats.max_in_flight_seen = max(self.stats.max_in_flight_seen, self.concurrency.in_flight)
            yield
        finally:
            await self.concurrency.release()

    def on_success(self, *, estimated_tokens: int | None = None, input_tokens: int | None = None) -> None:
        self.stats.ok += 1
        self.concurrency.on_success()
        now = time.monotonic()
        self._ok_times.append(now)
        while self._ok_times and self._ok_times[0] < now - self.RATE_WINDOW_S:
            self._ok_times.popleft()
        if self.rate_per_s < self.max_rate_per_s:
            self._set_rate(self.rate_per_s * (1 + self.RATE_GROWTH))
        if estimated_tokens and input_tokens:
            a = self.TOKEN_SCALE_ALPHA
            self.token_scale = (1 - a) * self.token_scale + a * (input_tokens / estimated_tokens)

    def on_throttled(self, retry_after: float | None) -> None:
        self.stats.throttled += 1
        announced = self.headers_seen.limit_requests if self.headers_seen else None
        if announced:  # the provider told its limit: pace at it (the 429 came before we knew, or from jitter)
            self.concurrency.on_throttled()
            self._set_rate(min(self.rate_per_s, announced / 60.0))
        elif self.concurrency.on_throttled():  # once per volley
            new = self.rate_per_s * self.RATE_DECREASE
            if len(self._ok_times) >= self.RATE_MIN_SAMPLES:  # the provider's real limit, measured
                measured = len(self._ok_times) / max(1.0, time.monotonic() - self._ok_times[0])
                new = max(new, min(self.rate_per_s, measured * self.RATE_BACKOFF))
            self._set_rate(new)
        if retry_after is not None and retry_after > 0:
            self.pause(retry_after)

    def on_headers(self, headers: Mapping[str, str]) -> None:
        """Apply a response's rate-limit headers: announced limits cap the pace, an empty quota pauses."""
        h = parse_rate_headers(headers)
        if h == RateHeaders():
            return
        self.headers_seen = h
        if h.limit_requests and h.limit_requests / 60.0 < self.max_rate_per_s:
            self.max_rate_per_s = h.limit_requests / 60.0
            self._set_rate(min(self.rate_per_s, self.max_rate_per_s))
        if h.limit_tokens and h.limit_tokens / 60.0 < self.tokens.rate_per_s:
            self.tokens.rate_per_s = h.limit_tokens / 60.0
        if h.remaining_requests is not None and h.remaining_requests <= 0 and h.reset_requests_s:
            self.pause(h.reset_requests_s)
        if h.remaining_tokens is not None and h.remaining_tokens <= 0 and h.reset_tokens_s:
            self.pause(h.reset_tokens_s)

    def http_hooks(self) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
        """httpx event hooks for the provider's client: pace at the wire, read the rate-limit headers."""

        async def on_request(request: Any) -> None:
            await self.pace_request()

        async def on_response(response: Any) -> None:
            self.on_headers(response.headers)

        return {"request": [on_request], "response": [on_response]}


def _is_throttle(e: BaseException) -> bool:
    return isinstance(e, ModelRateLimitError) or (isinstance(e, ModelHTTPError) and e.status_code == 429)


def _retryable(e: BaseException) -> bool:
    if _is_throttle(e):
        return True
    if isinstance(e, ModelHTTPError):
        return e.status_code >= 500 or e.status_code in (408, 409)
    return isinstance(
        e, ModelServerError | ModelUnavailableError | ModelConnectionError | ModelRequestTimeout | TimeoutError
    )


class RateLimitedModel(WrapperModel):
    """Sends each request through the provider's limiter, with retries and a per-attempt timeout."""

    BACKOFF_INITIAL_S: ClassVar[float] = 0.5
    BACKOFF_MAX_S: ClassVar[float] = 30.0

    def __init__(
        self,
        wrapped: Model | KnownModelName | str,
        *,
        limiter: ProviderLimiter,
        timeout_s: float,
        max_attempts: int = 5,
        paced_at_wire: bool = False,
    ) -> None:
        super().__init__(wrapped)
        self.limiter = limiter
        self.paced_at_wire = paced_at_wire  # the HTTP client's request hook takes the request slot
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self._backoff = wait_exponential_jitter(initial=self.BACKOFF_INITIAL_S, max=self.BACKOFF_MAX_S)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ModelAPIError) and exc.retry_after is not None:
            return 0.0  # the limiter's pause already holds every caller until Retry-After
        return float(self._backoff(state))

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        estimated = tokens = estimate_tokens(messages)
        if model_settings and isinstance(model_settings.get("max_tokens"), int):
            tokens += int(model_settings["max_tokens"])
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            before_sleep=lambda _s: self._count_retry(),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                async with self.limiter.slot(tokens, pace_requests=not self.paced_at_wire):
                    try:
                        async with asyncio.timeout(self.timeout_s):
                            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
                    except Exception as e:
                        if isinstance(e, ModelHTTPError) and e.headers:
                            self.limiter.on_headers(e.headers)
                        if _is_throttle(e):
                            self.limiter.on_throttled(getattr(e, "retry_after", None))
                        elif not _retryable(e):
                            self.limiter.stats.failed += 1
                        raise
                self.limiter.on_success(estimated_tokens=estimated, input_tokens=response.usage.input_tokens)
                return response
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _count_retry(self) -> None:
        self.limiter.stats.retried += 1



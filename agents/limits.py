"""Per-provider limits as a model wrapper: RPM and TPM budgets, an adaptive cap on calls in flight,
`Retry-After` honoured, tenacity retries and a timeout per attempt.

One `ProviderLimiter` is shared by every model of a provider (all roles), so the provider's budgets hold
whatever the mix of agents. Rates use aiolimiter's leaky bucket with a small burst (`RATE_BURST`), so a
per-minute budget is paced evenly instead of spent in one burst that the provider's own (unknown) bucket
would refuse. The in-flight cap is AIMD, like TCP: it
grows by 1/limit per successful call (about +1 per round of calls) up to `max_in_flight` and halves on a
429 (at most once per `HALVE_COOLDOWN_S`, so a volley of 429s from one burst halves it once). A 429's
`Retry-After` pauses the whole provider until then.

Retries live in this one layer (the provider SDK's own retries are turned off by the model factory):
rate limits, 5xx, connection errors and timeouts are retried with `Retry-After` or capped exponential
backoff with jitter; anything else (bad request, auth) is raised at once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import ClassVar

from aiolimiter import AsyncLimiter
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

__all__ = ["AdaptiveConcurrency", "ProviderLimiter", "RateLimitedModel", "LimiterStats", "estimate_tokens"]


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


class _PacedLimiter(AsyncLimiter):
    """aiolimiter's leaky bucket whose rate can be changed while in use."""

    def set_rate(self, per_s: float) -> None:
        self.time_period = self.max_rate / per_s
        self._rate_per_sec = per_s


class ProviderLimiter:
    """RPM + TPM budgets, adaptive in-flight cap and Retry-After pauses for one provider.

    The request rate starts at the configured RPM; on a 429 (the configured RPM was too high, or the
    provider is shared) it drops by `RATE_DECREASE`, but not below `RATE_BACKOFF` x the rate of successes
    measured over the last `RATE_WINDOW_S`, then climbs back by `RATE_GROWTH` per success, never above
    the configured RPM.
    """

    RATE_BURST: ClassVar[float] = 1.0  # requests sent back to back; the rest are paced at rpm/60 per second
    RATE_DECREASE: ClassVar[float] = 0.7  # multiplicative decrease of the request rate on a 429
    RATE_BACKOFF: ClassVar[float] = 0.9  # ... but not below this share of the success rate just measured
    RATE_MIN_SAMPLES: ClassVar[int] = 20
    RATE_GROWTH: ClassVar[float] = 0.0005  # relative increase of the request rate per success
    RATE_WINDOW_S: ClassVar[float] = 5.0
    MAX_RETRY_AFTER_S: ClassVar[float] = 300.0

    def __init__(self, *, name: str, rpm: int, tpm: int, max_in_flight: int) -> None:
        self.name = name
        burst = max(1.0, self.RATE_BURST)
        self.max_rate_per_s = rpm / 60.0
        self.rate_per_s = self.max_rate_per_s
        self.requests = _PacedLimiter(burst, burst * 60 / rpm)
        self.tokens = AsyncLimiter(float(tpm), 60)
        self.concurrency = AdaptiveConcurrency(max_limit=max_in_flight)
        self.stats = LimiterStats()
        self._paused_until = 0.0
        self._ok_times: deque[float] = deque()

    def _set_rate(self, per_s: float) -> None:
        self.rate_per_s = max(self.max_rate_per_s * 0.01, min(self.max_rate_per_s, per_s))
        self.requests.set_rate(self.rate_per_s)

    @classmethod
    def from_settings(cls, name: str, p: ProviderSettings) -> ProviderLimiter:
        return cls(name=name, rpm=p.rpm, tpm=p.tpm, max_in_flight=p.max_in_flight)

    async def _wait_pause(self) -> None:
        while (left := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(left)

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        await self._wait_pause()
        await self.concurrency.acquire()
        try:
            await self.tokens.acquire(min(float(tokens), self.tokens.max_rate))
            while True:  # a rate slot taken before a Retry-After pause is spent: pace again after it
                await self._wait_pause()
                await self.requests.acquire()
                if time.monotonic() >= self._paused_until:
                    break
            self.stats.calls += 1
            self.stats.max_in_flight_seen = max(self.stats.max_in_flight_seen, self.concurrency.in_flight)
            yield
        finally:
            await self.concurrency.release()

    def on_success(self) -> None:
        self.stats.ok += 1
        self.concurrency.on_success()
        now = time.monotonic()
        self._ok_times.append(now)
        while self._ok_times and self._ok_times[0] < now - self.RATE_WINDOW_S:
            self._ok_times.popleft()
        if self.rate_per_s < self.max_rate_per_s:
            self._set_rate(self.rate_per_s * (1 + self.RATE_GROWTH))

    def on_throttled(self, retry_after: float | None) -> None:
        self.stats.throttled += 1
        if self.concurrency.on_throttled():  # once per volley
            new = self.rate_per_s * self.RATE_DECREASE
            if len(self._ok_times) >= self.RATE_MIN_SAMPLES:  # the provider's real limit, measured
                measured = len(self._ok_times) / max(1.0, time.monotonic() - self._ok_times[0])
                new = max(new, min(self.rate_per_s, measured * self.RATE_BACKOFF))
            self._set_rate(new)
        if retry_after is not None and retry_after > 0:
            until = time.monotonic() + min(retry_after, self.MAX_RETRY_AFTER_S)
            self._paused_until = max(self._paused_until, until)


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
    ) -> None:
        super().__init__(wrapped)
        self.limiter = limiter
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
        tokens = estimate_tokens(messages)
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
                async with self.limiter.slot(tokens):
                    try:
                        async with asyncio.timeout(self.timeout_s):
                            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
                    except Exception as e:
                        if _is_throttle(e):
                            self.limiter.on_throttled(getattr(e, "retry_after", None))
                        elif not _retryable(e):
                            self.limiter.stats.failed += 1
                        raise
                self.limiter.on_success()
                return response
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _count_retry(self) -> None:
        self.limiter.stats.retried += 1



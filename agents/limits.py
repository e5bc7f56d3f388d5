"""Per-provider limits as a model wrapper: RPM and TPM budgets, an adaptive cap on calls in flight,
`Retry-After` honoured, the provider's rate-limit headers read, tenacity retries and a timeout per attempt.

One `ProviderLimiter` is shared by every model of a provider (all roles), so the provider's budgets hold
whatever the mix of agents. Requests and tokens are each paced by an `agents.pacing.Pacer` (GCRA with a
catch-up tolerance, bounded by the remaining quota the provider's headers report).
For HTTP providers both slots are taken in the HTTP client's request hook, right before the bytes go on
the wire, so the CPU work between the slot and the socket (building the request) cannot bunch requests up
at the provider; the call's token cost reaches the hook through a context variable. The same client's
response hook reads `x-ratelimit-*` (OpenAI) and `anthropic-ratelimit-*` headers: a lower limit than
configured lowers the pace, the remaining quotas bound the pacers.

The in-flight cap is AIMD, like TCP: it grows by 1/limit per successful call (about +1 per round of calls)
up to `max_in_flight` and halves on a 429 (at most once per `HALVE_COOLDOWN_S`, so a volley of 429s from one
burst halves it once). It is a pydantic-ai concurrency limiter (`AbstractConcurrencyLimiter`, with the same
`max_queued` backpressure as pydantic-ai's `ConcurrencyLimiter`), and each attempt holds its place through
pydantic-ai's `ConcurrencyLimitedModel`. A 429's `retry-after-ms` / `Retry-After` pauses the whole provider
until then.

The per-attempt timeout covers the request, not the pacing wait: at the wire the hook restarts it once the
slot is taken (a call the budget holds back for longer than the timeout is not timed out for it).

Retries live in this one layer (the provider SDK's own retries are turned off by the model factory):
rate limits, 5xx, connection errors and timeouts are retried with `Retry-After` or capped exponential
backoff with jitter; anything else (bad request, auth) is raised at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic_ai.concurrency import AbstractConcurrencyLimiter
from pydantic_ai.exceptions import (
    ConcurrencyLimitExceeded,
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
from pydantic_ai.models.concurrency import ConcurrencyLimitedModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_json
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from agents.pacing import Pacer, RateHeaders, parse_rate_headers
from clkt.config import ProviderSettings
from clkt.errors import UserError

__all__ = [
    "AdaptiveConcurrency",
    "LimiterStats",
    "Pacer",
    "ProviderLimiter",
    "RateHeaders",
    "RateLimitedModel",
    "estimate_tokens",
    "parse_rate_headers",
]

# the token estimate of the call an attempt belongs to (set by RateLimitedModel, read by its _Attempt)
_CALL_TOKENS: contextvars.ContextVar[int | None] = contextvars.ContextVar("clkt_call_tokens", default=None)
# the token cost of the call whose HTTP request is about to go (set by _Attempt, read by the hook)
_WIRE_TOKENS: contextvars.ContextVar[float | None] = contextvars.ContextVar("clkt_wire_tokens", default=None)
_MARKS = "clkt_pacing_marks"  # httpx request extension: (request mark, token mark) of the pacers
# the attempt's timeout and its length (set by RateLimitedModel, restarted by the hook once the slot is taken)
_ATTEMPT_TIMEOUT: contextvars.ContextVar[tuple[asyncio.Timeout, float] | None] = contextvars.ContextVar(
    "clkt_attempt_timeout", default=None
)


class AdaptiveConcurrency(AbstractConcurrencyLimiter):
    """An AIMD cap on calls in flight: additive increase on success, halve on throttling; a pydantic-ai
    concurrency limiter (`ConcurrencyLimitedModel` takes it), one per provider.

    Waiters queue FIFO and a release wakes only the next one (a condition's notify_all woke every waiter
    to re-check the cap: O(waiters) wake-ups per call on the event loop). With `max_queued`, a caller that
    would wait behind that many others is refused at once with pydantic-ai's `ConcurrencyLimitExceeded`.
    """

    HALVE_COOLDOWN_S: ClassVar[float] = 1.0

    def __init__(
        self, *, max_limit: int, initial: int | None = None, min_limit: int = 1, max_queued: int | None = None,
    ) -> None:
        if max_queued is not None and max_queued < 0:
            raise UserError(f"max_queued must be >= 0, got {max_queued} (None: no bound)")
        self.max_limit = max_limit
        self.min_limit = min_limit
        self.max_queued = max_queued
        self.limit = float(initial if initial is not None else max_limit)
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._last_halve = -math.inf

    async def acquire(self, source: str = "") -> None:
        """A place in flight, waiting in turn for one (`source` names the caller in a refusal)."""
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
            return
        if self.max_queued is not None and len(self._waiters) >= self.max_queued:
            raise ConcurrencyLimitExceeded(
                f"Concurrency queue depth ({len(self._waiters) + 1}) exceeds max_queued ({self.max_queued})"
                + (f" for {source}" if source else "")
            )
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # the waker counted this caller in flight
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # woken and cancelled at once: hand the place on
                self.in_flight -= 1
                self._wake()
            elif fut in self._waiters:
                self._waiters.remove(fut)
            raise

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)

    def on_success(self) -> None:
        self.limit = min(float(self.max_limit), self.limit + 1.0 / max(self.limit, 1.0))
        self._wake()

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


class ProviderLimiter:
    """RPM + TPM budgets, adaptive in-flight cap, rate-limit headers and Retry-After pauses for one provider.

    The request rate starts at the configured RPM (or the lower limit the provider's headers announce); on a
    429 (the configured RPM was too high, or the provider is shared) it drops by `RATE_DECREASE`, but not
    below `RATE_BACKOFF` x the rate of successes measured over the last `RATE_WINDOW_S`, then climbs back by
    `RATE_GROWTH` per success, never above the limit. The token estimate of a request is calibrated by the
    input tokens the provider reports (`token_scale`), so the TPM pace follows the provider's own count.
    Both pacers let a starved client catch up by `CATCH_UP_S` of the limit (within what the headers say
    remains): OpenAI and Anthropic admit bursts of a second of the limit (their short-interval enforcement,
    `SHORT_INTERVAL_S`), and the catch-up takes at most half of what a second of the limit holds beyond one
    request (none at 60 RPM or less: `Pacer.tolerance_s`). The request pacer's first slot is one interval (at
    most a second) after the limiter is made (`Pacer.hold_first`): a restarted process cannot know when the
    one it replaces last sent.
    """

    CATCH_UP_S: ClassVar[float] = 0.5  # how far behind its schedule a slot may start (half the providers' 1 s)
    SHORT_INTERVAL_S: ClassVar[float] = 1.0  # the providers' documented short-interval enforcement of a limit
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
        self.requests = Pacer(
            rate_per_s=self.rate_per_s, tolerance_s=self.CATCH_UP_S, window_s=self.SHORT_INTERVAL_S,
        )
        self.requests.hold_first()
        self.tokens = Pacer(rate_per_s=tpm / 60.0, tolerance_s=self.CATCH_UP_S, window_s=self.SHORT_INTERVAL_S)
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

    async def wait_pause(self) -> None:
        """Until a `Retry-After` pause of the provider is over (before taking a place in flight)."""
        # a timed sleep to the deadline, re-read after it: a later 429 can push the deadline while we sleep
        while (left := self._paused_until - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)

    def token_cost(self, tokens: int) -> float:
        """The TPM cost of a call estimated at `tokens`, in the provider's count (`token_scale`)."""
        return max(1.0, tokens * self.token_scale)

    async def pace(self, token_cost: float | None) -> tuple[float, float | None]:
        """The token slot (if a cost is given), then the request slot; returns the pacers' marks."""
        token_mark = await self.tokens.acquire(token_cost) if token_cost is not None else None
        return await self.requests.acquire(), token_mark

    async def start_attempt(self, tokens: int, *, paced_at_wire: bool = False) -> None:
        """In a place in flight: unless the HTTP hook paces at the wire, the token and request slots; then the
        attempt is counted."""
        if not paced_at_wire:
            await self.pace(self.token_cost(tokens))
        self.stats.calls += 1
        self.stats.max_in_flight_seen = max(self.stats.max_in_flight_seen, self.concurrency.in_flight)

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

    def on_headers(
        self, headers: Mapping[str, str], *, marks: tuple[float, float | None] | None = None
    ) -> None:
        """Apply a response's rate-limit headers: announced limits cap the pace; the remaining quotas bound
        the pacers, given `marks` (the pacers' marks of the request this answers: see `Pacer.observe`)."""
        h = parse_rate_headers(headers)
        if h == RateHeaders():
            return
        self.headers_seen = h
        if h.limit_requests and h.limit_requests / 60.0 < self.max_rate_per_s:
            self.max_rate_per_s = h.limit_requests / 60.0
            self._set_rate(min(self.rate_per_s, self.max_rate_per_s))
        if h.limit_tokens and h.limit_tokens / 60.0 < self.tokens.rate_per_s:
            self.tokens.rate_per_s = h.limit_tokens / 60.0
        if marks is None:
            return
        request_mark, token_mark = marks
        if h.remaining_requests is not None:
            refill = _refill_per_s(h.limit_requests)
            self.requests.observe(h.remaining_requests, sent_mark=request_mark, rate_per_s=refill)
        if h.remaining_tokens is not None and token_mark is not None:
            refill = _refill_per_s(h.limit_tokens)
            # the provider counts in its tokens, the pacer in estimated ones scaled to them
            self.tokens.observe(h.remaining_tokens, sent_mark=token_mark, rate_per_s=refill)

    def http_hooks(self) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
        """httpx event hooks for the provider's client: pace at the wire, read the rate-limit headers."""

        async def on_request(request: Any) -> None:
            attempt = _ATTEMPT_TIMEOUT.get()
            if attempt is not None and attempt[0].expired():
                attempt = None  # already timed out: the cancellation is on its way
            if attempt is not None:  # the pacing wait, however long the budget holds the call, is not timed
                attempt[0].reschedule(None)
            request.extensions[_MARKS] = await self.pace(_WIRE_TOKENS.get())
            if attempt is not None:  # the attempt's time starts at the wire
                attempt[0].reschedule(asyncio.get_running_loop().time() + attempt[1])

        async def on_response(response: Any) -> None:
            self.on_headers(response.headers, marks=response.request.extensions.get(_MARKS))

        return {"request": [on_request], "response": [on_response]}


def _refill_per_s(limit: int | None) -> float | None:
    """How fast a reported quota refills: its per-minute limit's rate (None: the pacer's own rate)."""
    return limit / 60.0 if limit else None


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


class _Attempt(WrapperModel):
    """One attempt of a call, run in its place in flight (`ConcurrencyLimitedModel` holds it around this):
    the pacing, the per-attempt timeout, and what the outcome tells the limiter. The call's token estimate
    comes from `RateLimitedModel` through `_CALL_TOKENS`."""

    def __init__(self, wrapped: Model, *, limiter: ProviderLimiter, timeout_s: float, paced_at_wire: bool) -> None:
        super().__init__(wrapped)
        self.limiter = limiter
        self.timeout_s = timeout_s
        self.paced_at_wire = paced_at_wire

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        tokens = _CALL_TOKENS.get()
        if tokens is None:
            raise UserError("an attempt runs only inside RateLimitedModel.request")
        await self.limiter.start_attempt(tokens, paced_at_wire=self.paced_at_wire)
        wire = _WIRE_TOKENS.set(self.limiter.token_cost(tokens)) if self.paced_at_wire else None
        attempt_timeout = None
        try:
            async with asyncio.timeout(self.timeout_s) as timeout:
                if self.paced_at_wire:  # the hook restarts it once the slot is taken
                    attempt_timeout = _ATTEMPT_TIMEOUT.set((timeout, self.timeout_s))
                return await self.wrapped.request(messages, model_settings, model_request_parameters)
        except Exception as e:
            if isinstance(e, ModelHTTPError) and e.headers:
                self.limiter.on_headers(e.headers)
            if _is_throttle(e):
                self.limiter.on_throttled(getattr(e, "retry_after", None))
            elif not _retryable(e):
                self.limiter.stats.failed += 1
            raise
        finally:
            if attempt_timeout is not None:
                _ATTEMPT_TIMEOUT.reset(attempt_timeout)
            if wire is not None:
                _WIRE_TOKENS.reset(wire)


class RateLimitedModel(WrapperModel):
    """Sends each request through the provider's limiter, with retries and a per-attempt timeout.

    Each attempt waits out a `Retry-After` pause of the provider, then takes its place in flight through
    pydantic-ai's `ConcurrencyLimitedModel` (the limiter: the provider's `AdaptiveConcurrency`), is paced and
    timed inside it, and gives the place back before a retry's backoff."""

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
        self.paced_at_wire = paced_at_wire  # the HTTP client's request hook takes the token and request slots
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self._backoff = wait_exponential_jitter(initial=self.BACKOFF_INITIAL_S, max=self.BACKOFF_MAX_S)
        self._in_flight = ConcurrencyLimitedModel(
            _Attempt(self.wrapped, limiter=limiter, timeout_s=timeout_s, paced_at_wire=paced_at_wire),
            limiter=limiter.concurrency,
        )

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
                await self.limiter.wait_pause()
                call = _CALL_TOKENS.set(tokens)
                try:
                    response = await self._in_flight.request(messages, model_settings, model_request_parameters)
                finally:
                    _CALL_TOKENS.reset(call)
                self.limiter.on_success(estimated_tokens=estimated, input_tokens=response.usage.input_tokens)
                return response
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _count_retry(self) -> None:
        self.limiter.stats.retried += 1

"""Pacing of one provider budget (its requests or its tokens per minute) and the rate-limit headers it sends.

`Pacer` is a GCRA (virtual scheduling) on an absolute schedule: each acquisition books the next slot
`cost / rate` after the previous one, so a late wake-up on a busy event loop does not push the later slots
back. A slot may start up to `tolerance_s` behind the schedule: a client whose process was starved for a
moment (a loaded 2-core box) catches up on the time it lost, by at most `1 + tolerance_s x rate` back to
back, instead of losing that time for good (the previous tolerance, half an interval, kept at most one
late slot). That is what a provider's limit allows: Anthropic documents a per-minute token bucket that
refills continuously (OpenAI's `x-ratelimit-reset-*`, the time until the quota is full again, describes
the same), and both document that a minute's limit may also be enforced over a shorter interval (OpenAI's
example: 60,000 RPM as 1,000 requests per second; Anthropic's: 60 RPM as 1 per second), so a burst of up
to one second of the limit conforms; the default tolerance takes half of that. Under two requests a second
half a second is more than such a bucket holds beyond the request itself: at 90 RPM a second holds 1.5
requests, and a slot 0.5 s behind its schedule books the next one 0.5 s after it (1.75 in a second,
refused). So with `window_s` (the provider's short interval) the tolerance is half of what a bucket of
`window_s` of the limit holds beyond one unit (`Pacer.tolerance_s`): none at 60 RPM or less.

A fresh pacer does not know when another one on the same budget last sent (the process it replaces, killed
a moment ago, or a limiter made again in the same process): it would send its first request at once, maybe
right after the last one of the other, which a bucket of one request refuses. `hold_first()` books the first
slot one interval (at most `window_s`) after the start, as if the pacer had just sent.

The provider's headers are the source of truth for what remains: `observe()` takes the remaining quota a
response reports (OpenAI `x-ratelimit-remaining-*`, Anthropic `anthropic-ratelimit-*-remaining`) with the
pacer's count of what was sent up to that request. Every later slot also waits until that remaining
quota, refilled at the limit's rate since the answer came, covers what was sent since the request
(counted as not yet seen by the provider) plus its own cost. So a catch-up never sends more than the
provider said remains, and a quota shared with another client (whose use the headers show) slows this
one down.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["Pacer", "Quota", "RateHeaders", "parse_rate_headers"]


@dataclass(frozen=True, slots=True)
class Quota:
    """What a provider said remained: `remaining` units right after the request sent when the pacer had
    admitted `sent_mark` units in all, refilling at `rate_per_s` from `at` (when its answer arrived)."""

    remaining: float
    sent_mark: float
    at: float
    rate_per_s: float

    def earliest(self, cost: float, sent: float) -> float:
        """The first time the quota holds `cost` more, after `sent - sent_mark` units sent since."""
        need = cost + (sent - self.sent_mark) - self.remaining
        return -math.inf if need <= 0 else self.at + need / self.rate_per_s


class Pacer:
    """GCRA pacing of one budget, bounded by the provider's reported quota (see the module docstring).

    Callers wait in one FIFO queue; a single timer, armed for the head's slot, books and wakes every caller
    whose slot is due when it fires, in one go. So a slot is booked when it is due (not ahead: after a stall
    of the event loop longer than `tolerance_s`, the slots missed beyond it are lost rather than sent at
    once, which would be a volley of 429s), and a late timer on a starved loop releases the whole catch-up
    in one wake-up instead of one lock hand-off (one more turn of the busy loop) per slot.
    """

    EARLY_S = 0.0005  # a timer may fire this much before the slot (the loop's clock and rounding)

    def __init__(self, *, rate_per_s: float, tolerance_s: float, window_s: float | None = None) -> None:
        self.rate_per_s = rate_per_s
        self._tolerance_s = tolerance_s
        self.window_s = window_s  # the provider's short interval: the catch-up stays within what it holds
        self.sent = 0.0  # units booked in all: the mark `observe()` measures a quota report against
        self.quota: Quota | None = None
        self.quota_waits = 0  # slots the reported quota held back beyond the schedule
        self.unused_s = 0.0  # schedule time no slot took: behind beyond the tolerance (no caller, or a starved loop)
        self._tat = -math.inf  # theoretical arrival time of the next slot
        self._fresh = False  # the schedule is `hold_first`'s (no slot taken yet): its idle time is not unused
        self._waiters: deque[tuple[asyncio.Future[float], float]] = deque()  # (woken with its mark, cost)
        self._timer: asyncio.TimerHandle | None = None
        self._held: asyncio.Future[float] | None = None  # the head the quota holds back (counted once)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def tolerance_s(self) -> float:
        """How far behind the schedule a slot may start. With `window_s`, at most half of what a bucket of
        `window_s` of the limit holds beyond the slot itself (the other half is left for the time between the slot
        and the provider's clock: connection set-up, a busy loop): `1 + tolerance x rate` back to back stays within
        `max(1, window_s x rate)`. So at one unit per `window_s` or less (60 RPM or less for a second) there is no
        catch-up: two requests never go closer than the interval."""
        if self.window_s is None:
            return self._tolerance_s
        return min(self._tolerance_s, max(0.0, (self.window_s - 1.0 / self.rate_per_s) / 2))

    def hold_first(self, now: float | None = None) -> None:
        """No slot before one interval (of a unit; at most `window_s`) from `now`: a fresh client cannot know when
        another one on the same budget (the process it replaces, killed a moment ago, or a limiter of the same
        process made again) last sent, so it starts as if it had just sent: a bucket of one interval (or of
        `window_s`) of the limit holds its first request."""
        now = time.monotonic() if now is None else now
        hold = 1.0 / self.rate_per_s
        if self.window_s is not None:
            hold = min(hold, self.window_s)
        self._tat = max(self._tat, now + hold)
        self._fresh = True

    def _start(self, cost: float, now: float) -> tuple[float, bool]:
        """When a slot for `cost` booked at `now` starts, and whether the reported quota holds it back."""
        start = max(self._tat, now - self.tolerance_s)
        if self.quota is not None:
            held = self.quota.earliest(cost, self.sent)
            if held > max(start, now):
                return held, True
        return start, False

    def _book(self, start: float, cost: float, now: float) -> float:
        if not self._fresh and -math.inf < self._tat < now - self.tolerance_s:
            self.unused_s += now - self.tolerance_s - self._tat
        self._fresh = False
        self._tat = start + cost / self.rate_per_s
        self.sent += cost
        return self.sent

    def reserve(self, cost: float = 1.0, *, now: float | None = None) -> float:
        """Book the next slot for `cost` now, however far ahead it is; return the seconds to wait for it."""
        now = time.monotonic() if now is None else now
        start, held = self._start(cost, now)
        self.quota_waits += held
        self._book(start, cost, now)
        return max(0.0, start - now)

    def delay_until(self, t: float) -> None:
        """No slot starts before `t` (a Retry-After pause)."""
        self._tat = max(self._tat, t)
        self._rearm()

    def observe(self, remaining: float, *, sent_mark: float, rate_per_s: float | None = None,
                now: float | None = None) -> None:
        """The provider reports `remaining` after the request booked at `sent_mark` (`reserve`'s total then).

        The report about the latest-sent request wins: answers come back out of order."""
        if self.quota is not None and sent_mark < self.quota.sent_mark:
            return
        at = time.monotonic() if now is None else now
        self.quota = Quota(remaining=float(remaining), sent_mark=sent_mark, at=at,
                           rate_per_s=rate_per_s or self.rate_per_s)
        self._rearm()

    async def acquire(self, cost: float = 1.0) -> float:
        """Wait for the next slot; return the mark (`sent` including this cost) to pass to `observe`."""
        if not self._waiters:  # nobody queued: a due slot is taken without yielding to the loop
            now = time.monotonic()
            start, _ = self._start(cost, now)
            if start <= now + self.EARLY_S:
                return self._book(start, cost, now)
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((fut, cost))
        if len(self._waiters) == 1:
            self._dispatch()
        return await fut

    def _rearm(self) -> None:
        """The schedule or the quota changed: re-time the head's wake-up."""
        if self._waiters:
            self._dispatch()

    def _dispatch(self) -> None:
        """Book and wake every queued caller whose slot is due; arm the timer for the next one."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = time.monotonic()
        while self._waiters:
            fut, cost = self._waiters[0]
            if fut.done():  # cancelled while it waited
                self._waiters.popleft()
                continue
            start, held = self._start(cost, now)
            if start > now + self.EARLY_S:
                if held and self._held is not fut:
                    self._held = fut
                    self.quota_waits += 1
                self._timer = fut.get_loop().call_later(start - now, self._dispatch)
                return
            self._waiters.popleft()
            fut.set_result(self._book(start, cost, now))


@dataclass(frozen=True, slots=True)
class RateHeaders:
    """What a provider's rate-limit response headers say (None: not sent)."""

    limit_requests: int | None = None  # per minute
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None  # until the quota is full again
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

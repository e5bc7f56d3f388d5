"""The request limiter of a source: a leaky bucket whose units start to leak only once their request is done.

A provider counts a request when it ARRIVES; a client only knows when it let the request go and when the
answer came back. A limiter that counts at the grant (aiolimiter's leaky bucket, what the crawlers used
before) is wrong whenever a granted request waits before it reaches the wire: the first requests of a
cycle open their connections (a TCP, on the internet a TLS, handshake), or the event loop is busy with
other work. Its bucket keeps leaking meanwhile, so the requests granted next go out at once and arrive
together with the late ones: more than `burst` at the same moment, and the provider answers 429 (bench/crawl.py
saw 22 of a burst of 20 arrive within 25 ms, the first 8 delayed by their connections).

Here a granted request is *in flight* until its context exits (the answer read, or the attempt failed) and
only then joins the bucket, which leaks at `rate_per_s`. A new request is let go while
`level + in_flight + 1 <= burst`. Whatever the delays on the way, the requests that arrive at the provider
within any window of `w` seconds are then at most `burst + rate_per_s * w` (each of them was granted before
the window ended and finished after it began), which is what a provider's token bucket of that size
allows. The price: a unit leaks a round trip later, so a source with a burst of 1 sends one request per
`1/rate + round trip` (MusicBrainz at 1/s with a 300 ms round trip: 0.77/s, not 0.97/s); a burst above 1 hides
the round trip (bench/crawl.py: every source within 4 % of its limit over loopback).

The limiter paces a REAL upstream, so it runs in real time (the event loop's clock), whatever clock the
daemon runs on: a simulated calendar does not make a provider's limit faster. Waiters are served in order.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

__all__ = ["RequestLimiter"]


class RequestLimiter:
    """`async with limiter:` around one request attempt. Not shared across event loops."""

    def __init__(self, *, rate_per_s: float, burst: int) -> None:
        if not rate_per_s > 0:
            raise ValueError(f"rate_per_s must be > 0, got {rate_per_s}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.rate_per_s = float(rate_per_s)
        self.burst = int(burst)
        self._level = 0.0  # units of finished requests, leaking
        self._in_flight = 0
        self._last = 0.0
        self._order = asyncio.Lock()  # FIFO: the waiter at the head holds it
        self._finished = asyncio.Event()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def level(self) -> float:
        """Units in the bucket now (finished requests not yet leaked, plus those in flight)."""
        self._leak()
        return self._level + self._in_flight

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _leak(self) -> None:
        now = self._now()
        if self._level > 0.0:
            self._level = max(0.0, self._level - (now - self._last) * self.rate_per_s)
        self._last = now

    async def acquire(self) -> None:
        async with self._order:
            while True:
                self._leak()
                excess = self._level + self._in_flight + 1 - self.burst
                if excess <= 1e-9:
                    self._in_flight += 1
                    return
                if self._in_flight + 1 > self.burst:
                    # only a request that finishes can make room
                    self._finished.clear()
                    await self._finished.wait()
                else:
                    await asyncio.sleep(excess / self.rate_per_s)

    def release(self) -> None:
        self._leak()
        self._in_flight -= 1
        self._level += 1.0
        self._finished.set()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"RequestLimiter(rate_per_s={self.rate_per_s:g}, burst={self.burst}, in_flight={self._in_flight})"

"""The process's clock: what "now" is, how time passes, and how long a sleep lasts.

Every time read of the daemon goes through `now()` (wall time, aware UTC) or `monotonic()` (elapsed time),
and every wait through `sleep()`. By default that is the system clock. A `SimulatedClock` (installed once, at
start-up, with `install()`) runs faster than real time from a chosen start: a simulated second lasts
`1 / speed` real seconds, so a year of polling, period checks, leases, breakers and backoffs passes in
minutes without any of them knowing. Part of the kernel: it imports nothing of the product.

A wait of a simulated clock never lasts less than `min_real_sleep_s` of real time (default 0.05 s) when it
is positive: at 14,400x a 2-second poll would be 0.14 ms, and the services' loops would spin. Such a short
wait then lasts longer in simulated time than it asked for (0.05 s real is 12 simulated minutes at 14,400x);
waits longer than the floor are exact. `real_wait(s)` is the real length of a wait (what `ServiceContext.sleep`
waits on); `real_seconds(s)` the exact conversion (for timeouts handed to libraries).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "SimulatedClock", "SystemClock", "current", "install", "monotonic", "now", "sleep"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds of this clock's time since an arbitrary origin; never goes back."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Let `seconds` of this clock's time pass."""
        ...

    def real_seconds(self, seconds: float) -> float:
        """How many real seconds `seconds` of this clock's time last (for timeouts handed to libraries)."""
        ...

    def real_wait(self, seconds: float) -> float:
        """How many real seconds a wait of `seconds` of this clock's time lasts (`sleep`'s own length)."""
        ...


class SystemClock:
    """Real time."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def real_seconds(self, seconds: float) -> float:
        return seconds

    def real_wait(self, seconds: float) -> float:
        return max(0.0, seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class SimulatedClock:
    """Time that starts at `start` and runs `speed` times faster than real time (speed >= 1); no positive wait
    lasts less than `min_real_sleep_s` real seconds."""

    MIN_REAL_SLEEP_S = 0.05

    def __init__(self, *, start: datetime, speed: float, min_real_sleep_s: float | None = None) -> None:
        if start.tzinfo is None:
            raise ValueError("the simulated clock's start must be timezone-aware")
        if not speed >= 1.0:  # also refuses nan
            raise ValueError(f"the simulated clock's speed must be >= 1, got {speed}")
        floor = self.MIN_REAL_SLEEP_S if min_real_sleep_s is None else min_real_sleep_s
        if not 0.0 <= floor <= 60.0:
            raise ValueError(f"the simulated clock's min_real_sleep_s must be in [0, 60], got {floor}")
        self.start = start.astimezone(UTC)
        self.speed = float(speed)
        self.min_real_sleep_s = float(floor)
        self._t0 = time.monotonic()

    def elapsed(self) -> float:
        """Simulated seconds since the clock was made."""
        return (time.monotonic() - self._t0) * self.speed

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed())

    def monotonic(self) -> float:
        return self.elapsed()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(self.real_wait(seconds))

    def real_seconds(self, seconds: float) -> float:
        return seconds / self.speed

    def real_wait(self, seconds: float) -> float:
        if seconds <= 0.0:
            return 0.0
        return max(seconds / self.speed, self.min_real_sleep_s)

    def __repr__(self) -> str:
        return f"SimulatedClock(start={self.start.isoformat()}, speed={self.speed:g})"


_CLOCK: list[Clock] = [SystemClock()]


def install(clock: Clock) -> Clock:
    """Make `clock` the process's clock; returns the one it replaces (tests put it back)."""
    old = _CLOCK[0]
    _CLOCK[0] = clock
    return old


def current() -> Clock:
    return _CLOCK[0]


def now() -> datetime:
    return _CLOCK[0].now()


def monotonic() -> float:
    return _CLOCK[0].monotonic()


async def sleep(seconds: float) -> None:
    await _CLOCK[0].sleep(seconds)

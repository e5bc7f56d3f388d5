"""A per-source circuit breaker: closed → open after N consecutive failures → half-open after a pause →
closed on the first success (or open again on a failure). Its pause is in the process's clock (`clkt.clock`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum

from clkt import clock as _clock
from clkt.errors import SourceBlocked

__all__ = ["BreakerState", "CircuitBreaker"]

log = logging.getLogger(__name__)


class BreakerState(str, Enum):
    closed = "closed"
    open = "open"
    half_open = "half_open"


class CircuitBreaker:
    def __init__(
        self, *, name: str, failures: int, reset_s: float, clock: Callable[[], float] = _clock.monotonic,
        on_change: Callable[[BreakerState], None] | None = None,
    ) -> None:
        self.name = name
        self.threshold = failures
        self.reset_s = reset_s
        self.clock = clock
        self.on_change = on_change
        self.state = BreakerState.closed
        self.consecutive = 0
        self.opened_at = 0.0
        self._trial_in_flight = False

    def _set(self, state: BreakerState) -> None:
        if state is self.state:
            return
        self.state = state
        if state is BreakerState.open:
            log.warning("source %s: circuit OPEN after %d consecutive failures; pausing %.0fs",
                        self.name, self.consecutive, self.reset_s)
        elif state is BreakerState.half_open:
            log.info("source %s: circuit half-open, sending one trial request", self.name)
        else:
            log.warning("source %s: circuit closed again, the source answers", self.name)
        if self.on_change is not None:
            self.on_change(state)

    def remaining_s(self) -> float:
        return max(0.0, self.opened_at + self.reset_s - self.clock())

    def before_request(self) -> None:
        """Raise `SourceBlocked` while open (or while the half-open trial is in flight)."""
        if self.state is BreakerState.open:
            if self.remaining_s() > 0:
                raise SourceBlocked(f"{self.name}: circuit open", retry_after_s=self.remaining_s())
            self._set(BreakerState.half_open)
        if self.state is BreakerState.half_open:
            if self._trial_in_flight:
                raise SourceBlocked(f"{self.name}: circuit half-open, trial in flight", retry_after_s=1.0)
            self._trial_in_flight = True

    def record_success(self) -> None:
        self._trial_in_flight = False
        self.consecutive = 0
        self._set(BreakerState.closed)

    def record_failure(self) -> None:
        self._trial_in_flight = False
        self.consecutive += 1
        if self.state is BreakerState.half_open or self.consecutive >= self.threshold:
            self.opened_at = self.clock()
            if self.state is BreakerState.open:
                return
            self._set(BreakerState.open)

    def release_trial(self) -> None:
        """The trial request ended without a verdict (cancelled, rate limited)."""
        self._trial_in_flight = False

"""What each source poller is doing right now, for the status pages: its last cycle, its measured request
rate, its circuit breaker, when it polls next. In-process only (one board per daemon, in `ServiceContext`):
the persistent side (cursor, skips) is in the store; `clkt serve` without a daemon shows only that.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from clkt import clock
from storage.types import utcnow

if TYPE_CHECKING:
    from clkt.sources.http import SourceClient

__all__ = ["MIN_RATE_REQUESTS", "MIN_RATE_S", "CycleOutcome", "SourceBoard", "SourceLive"]

MIN_RATE_REQUESTS = 10  # a cycle with fewer requests shows its count, not a rate
MIN_RATE_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleOutcome:
    started_at: datetime
    ended_at: datetime
    result: str  # "ok" | "blocked" | "failed" | "partial" (stopped mid-window)
    detail: str = ""
    pages: int = 0
    inserted: int = 0
    updated: int = 0
    skipped: int = 0
    requests: int = 0

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.ended_at - self.started_at).total_seconds())

    @property
    def rate_per_s(self) -> float | None:
        """Requests per second over the cycle; None when the cycle is too small to measure a rate (fewer than
        `MIN_RATE_REQUESTS` requests or under `MIN_RATE_S` seconds): a rate of 1 request in 0.2 s means nothing."""
        d = self.duration_s
        return self.requests / d if d >= MIN_RATE_S and self.requests >= MIN_RATE_REQUESTS else None


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceLive:
    source: str
    configured_rate_per_s: float
    breaker: str = "closed"
    breaker_reopens_in_s: float | None = None
    running_since: datetime | None = None  # a cycle in progress
    last: CycleOutcome | None = None
    cycles: int = 0
    next_poll_at: datetime | None = None


@dataclass
class SourceBoard:
    """Written by the pollers (one event loop: no locking needed), read by the pages."""

    _live: dict[str, SourceLive] = field(default_factory=dict)
    _clients: dict[str, SourceClient] = field(default_factory=dict)
    _started_mono: dict[str, tuple[float, int]] = field(default_factory=dict)

    def register(self, source: str, client: SourceClient) -> None:
        self._clients[source] = client
        if source not in self._live:
            self._live[source] = SourceLive(source=source, configured_rate_per_s=client.settings.rate_per_s)

    def cycle_started(self, source: str) -> None:
        client = self._clients.get(source)
        self._started_mono[source] = (clock.monotonic(), client.requests if client is not None else 0)
        if (cur := self._live.get(source)) is not None:
            self._live[source] = replace(cur, running_since=utcnow(), next_poll_at=None)

    def cycle_ended(self, source: str, *, result: str, detail: str = "", pages: int = 0, inserted: int = 0, updated: int = 0,
                    skipped: int = 0, next_in_s: float | None = None) -> None:
        cur = self._live.get(source)
        if cur is None:
            return
        client = self._clients.get(source)
        t0, req0 = self._started_mono.pop(source, (clock.monotonic(), client.requests if client else 0))
        now = utcnow()
        started = cur.running_since or (now - timedelta(seconds=clock.monotonic() - t0))
        outcome = CycleOutcome(
            started_at=started, ended_at=now, result=result, detail=detail[:300], pages=pages, inserted=inserted, updated=updated,
            skipped=skipped, requests=(client.requests - req0) if client is not None else 0,
        )
        self._live[source] = replace(
            cur, running_since=None, last=outcome, cycles=cur.cycles + 1,
            next_poll_at=None if next_in_s is None else now + timedelta(seconds=next_in_s),
        )

    def snapshot(self) -> list[SourceLive]:
        """Every registered source, with its breaker read now."""
        out: list[SourceLive] = []
        for name in sorted(self._live):
            live = self._live[name]
            client = self._clients.get(name)
            if client is not None:
                br = client.breaker
                remaining = br.remaining_s() if br.state.value == "open" else None
                live = replace(live, breaker=br.state.value, breaker_reopens_in_s=remaining)
            out.append(live)
        return out

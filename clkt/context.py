"""What every daemon service receives (`ServiceContext`), and what a service is (`Service`).

The context holds only what services truly share, each under its own name: the store, the one HTTP
session, this process's lease owner id, the metrics, the stop signal, the clock (every time read and sleep
of a service goes through `ctx.clock` / `ctx.sleep`), the agent backend, the replay server's URL and the
claiming pause. A service is any object with a `name` and `async def run(ctx)` that loops until
`ctx.stopping` is set and then returns. Its configuration is passed, not pulled: it receives its own
section(s) of the settings in its constructor (the wiring, `clkt.services`, hands them out).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from clkt import clock
from storage.types import utcnow

if TYPE_CHECKING:
    import aiohttp

    from agents.backend import AgentBackend
    from clkt.telemetry import Metrics
    from storage.engine import Store

__all__ = ["Service", "ServiceContext"]


@dataclass(frozen=True, kw_only=True)
class ServiceContext:
    store: Store
    http: aiohttp.ClientSession
    owner: str  # lease owner id of this daemon process: "<host>:<pid>:<random>"
    metrics: Metrics
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    clock: Callable[[], datetime] = utcnow
    agent_backend: AgentBackend | None = None  # the stages' agents (the daemon builds it at start)
    replay_url: str | None = None  # the bundled replay server, when the offline demonstration runs it
    _pause_reason: list[str] = field(default_factory=list)

    def pause_reason(self) -> str | None:
        """Why claiming is paused right now (stopping, disk full), or None."""
        if self.stopping.is_set():
            return "stopping"
        if self._pause_reason:
            return self._pause_reason[-1]
        return None

    def may_claim(self) -> bool:
        return self.pause_reason() is None

    def set_paused(self, reason: str | None) -> None:
        self._pause_reason.clear()
        if reason:
            self._pause_reason.append(reason)

    async def sleep(self, seconds: float, *, min_real_s: float = 0.0) -> bool:
        """Sleep `seconds` of the process's clock (`clkt.clock`) unless stopping; True when the daemon is stopping.
        `min_real_s`: at least this long in real time (a housekeeping loop under a fast simulated clock)."""
        wait = clock.current().real_wait(seconds)
        if seconds > 0:
            wait = max(wait, min_real_s)
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=wait)
        except TimeoutError:
            return False
        return True


class Service(Protocol):
    name: str

    async def run(self, ctx: ServiceContext) -> None: ...

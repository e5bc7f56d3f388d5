"""The `llm-batches` service: in batch mode, it submits, reconciles, polls and collects the provider batches
of the LLM stages (`agents.batch.BatchDispatcher`) while the stage workers release their tasks until the
answers are in (`BatchPending`). Whether a role is batched: `AgentSettings.batched(role)`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from typing import Any, ClassVar

from clkt.context import ServiceContext
from clkt.errors import RetryLater
from clkt.pipeline.backends import backend_for

__all__ = ["BatchService", "prefetch"]

log = logging.getLogger(__name__)


class BatchService:
    name = "llm-batches"
    TICK_S: ClassVar[float] = 2.0  # how often the queue and the open batches are looked at
    ERROR_BACKOFF_S: ClassVar[float] = 30.0

    async def run(self, ctx: ServiceContext) -> None:
        backend = backend_for(ctx)
        dispatcher = getattr(getattr(backend, "factory", None), "dispatcher", None)
        if dispatcher is None:
            log.warning("llm-batches: the agent backend has no batch dispatcher; nothing to do")
            return
        while not ctx.stopping.is_set():
            delay = self.TICK_S
            try:
                await dispatcher.tick()
            except Exception as e:  # noqa: BLE001 - a provider outage must not end the service: try again later
                log.warning("llm-batches: %s: %s (retrying in %.0f s)", type(e).__name__, e, self.ERROR_BACKOFF_S)
                delay = self.ERROR_BACKOFF_S
            if await ctx.sleep(delay):
                break


async def prefetch(calls: Iterable[Awaitable[Any]]) -> None:
    """Batch mode: queue every independent call of a task at once, so that they share one batch instead of
    taking one batch round each in the stage's sequential loop. Raises the first `RetryLater` (the calls
    are pending) once all are queued; other errors are left to the stage's own call, which raises them
    where it handles them. When every call is answered, the stage's loop reads them from the call cache."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    pending = [r for r in results if isinstance(r, RetryLater)]
    if pending:
        raise pending[0]

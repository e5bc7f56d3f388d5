"""The `llm-batches` service: in batch mode, it submits, reconciles, polls and collects the provider batches
of the LLM stages (`agents.batch.BatchDispatcher`) while the stage workers release their tasks until the
answers are in (`BatchPending`)."""

from __future__ import annotations

import logging
from typing import ClassVar

from clkt.context import ServiceContext
from clkt.pipeline.backends import backend_for

__all__ = ["BatchService"]

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

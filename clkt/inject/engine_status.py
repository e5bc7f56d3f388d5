"""What the GPU engine says, kept in the store: `clkt status` and the status page read it (they run apart from
the daemon) to show why GPU jobs wait. The consumer watches its engine and records each change."""

from __future__ import annotations

import logging

from clkt import clock
from clkt.context import ServiceContext
from clkt.inject.engine import EngineStatus, JobEngine
from clkt.logs import redact
from storage.gpu_engines import record_engine_status

__all__ = ["record_status", "watch_engine"]

log = logging.getLogger("clkt.inject.consumer")


async def watch_engine(ctx: ServiceContext, engine: JobEngine, *, poll_s: float, record_every_s: float) -> None:
    """Record the engine's status on every change (and every `record_every_s`), until the context stops."""
    if engine.name == "local":
        return  # always ready: nothing to tell
    last: EngineStatus | None = None
    last_at = 0.0
    while True:
        status = engine.status()
        now = clock.monotonic()
        if status != last or now - last_at >= record_every_s:
            if last is None or status.state != last.state:
                level = logging.INFO if status.claimable else logging.WARNING
                log.log(level, "GPU engine %s: %s%s", status.engine, status.state.value, f" ({status.detail})" if status.detail else "")
            await record_status(ctx, status)
            last, last_at = status, now
        if await ctx.sleep(poll_s):
            return


async def record_status(ctx: ServiceContext, status: EngineStatus) -> None:
    """Write the status (the local engine's: nothing, it is always ready); never raises."""
    if status.engine == "local":
        return
    try:
        async with ctx.store.transaction() as s:
            await record_engine_status(s, owner=ctx.owner, engine=status.engine, state=status.state.value,
                                       detail=redact(status.detail), address=status.address)
    except Exception:  # bookkeeping: the next change writes it again
        log.exception("could not record the GPU engine's status")

"""`clkt worker`: consume GPU jobs only (for a GPU machine next to the daemon's store)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import uuid
from typing import Annotated

import typer

from clkt.cli import ConfigOption, console, load_cli_settings, open_store, run_async

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("worker", help="Consume GPU jobs (injection + evaluation) from the store, and nothing else.")(worker)


def worker(
    config: ConfigOption = None,
    device: Annotated[list[str] | None, typer.Option("--device", "-d", help="device(s) to use: cpu, cuda:0, auto (repeatable)")] = None,
    burst: Annotated[bool, typer.Option("--burst", help="exit when no job is left to claim")] = False,
) -> None:
    import aiohttp

    from clkt.context import ServiceContext
    from clkt.inject.consumer import GpuConsumer
    from clkt.logs import setup_logging
    from clkt.metrics import Metrics
    from storage.claim import release_owner
    from storage.models import GpuJob

    settings = load_cli_settings(config)
    setup_logging(settings.log_level, secrets=settings.secrets.values())
    consumer = GpuConsumer(settings=settings, devices=device or None, burst=burst)

    async def go() -> None:
        owner = f"{socket.gethostname()}:{os.getpid()}:worker-{uuid.uuid4().hex[:8]}"
        async with open_store(settings) as store, aiohttp.ClientSession() as http:
            ctx = ServiceContext(settings=settings, store=store, http=http, owner=owner, metrics=Metrics())
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, ctx.stopping.set)
            from clkt.cli import plain

            console.print(plain(f"clkt worker {owner}: devices {consumer.devices}; store {settings.resolved_store_url}"))
            try:
                await consumer.run(ctx)
            finally:
                async with store.transaction() as s:
                    await release_owner(s, GpuJob, owner=owner)

    run_async(go)
    done = sum(r.status is not None and r.status.value == "done" for r in consumer.finished)
    console.print(f"clkt worker: {len(consumer.finished)} job(s) run, {done} done")

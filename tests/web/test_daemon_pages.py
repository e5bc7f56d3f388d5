"""The daemon's endpoint serves the pages beside /healthz, guarded; `http.pages = false` leaves only the
JSON/metrics routes (still guarded)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from clkt.context import ServiceContext
from clkt.daemon import Daemon
from tests.conftest import wait_for
from tests.web.seed import settings_for, write_config


class Idle:
    name = "idle"

    async def run(self, ctx: ServiceContext) -> None:
        await ctx.stopping.wait()


@pytest.mark.parametrize("pages", [True, False])
async def test_daemon_endpoint_pages_switch(tmp_path: Path, pages: bool) -> None:
    settings = settings_for(write_config(tmp_path, extra=""))
    settings = settings.model_copy(update={"http": settings.http.model_copy(update={"pages": pages})})
    daemon = Daemon(settings=settings, services=[Idle()], install_signals=False)
    task = asyncio.create_task(daemon.run(), name="daemon-under-test")
    try:
        await wait_for(lambda: daemon.started.is_set() or task.done(), timeout=60)
        assert not task.done(), task
        base = f"http://127.0.0.1:{daemon.http_port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/") as r:
                assert r.status == (200 if pages else 404)
                if pages:
                    assert "live from the daemon" in await r.text()
            async with http.get(base + "/healthz") as r:
                assert r.status == 200 and r.headers["X-Content-Type-Options"] == "nosniff"
            async with http.get(base + "/status", headers={"Host": "evil.example"}) as r:
                assert r.status == 421
            async with http.put(base + "/metrics") as r:
                assert r.status == 405
    finally:
        daemon.request_stop("test")
        assert await asyncio.wait_for(task, 60) == 0

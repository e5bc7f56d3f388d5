"""The daemon's loopback HTTP endpoint: `/healthz`, `/status` (JSON), `/metrics` (Prometheus) and, when
`http.pages` is on, the read-only status pages (`clkt.web`), behind the Host check and security headers.

`start_endpoint()` binds it and returns the bound port (`http.port = 0` asks for any free port); a port in
use is a `ClktError` naming the setting to change. The caller's exit stack shuts it down. It receives the
`[http]` section and the pages' context (with the daemon's source board) from the daemon, and, when an intake
token is configured, the result packs' upload (`POST /packs`, `clkt.web.intake`).
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

from aiohttp import web

from clkt.config import HttpSettings
from clkt.context import ServiceContext
from clkt.errors import ClktError
from clkt.status import DaemonInfo, collect_status
from clkt.web import HostGuard, PageContext, add_pages, security_middlewares
from clkt.web.intake import INTAKE_PATH, IntakeConfig, add_intake

__all__ = ["listen", "start_endpoint"]

log = logging.getLogger("clkt.daemon")


def _app(
    ctx: ServiceContext, *, http_cfg: HttpSettings, pages: PageContext | None, owner: str, restarts: dict[str, int],
    intake: IntakeConfig | None = None,
) -> web.Application:
    guard = HostGuard(host=http_cfg.host, allowed=http_cfg.allowed_hosts)
    app = web.Application(middlewares=security_middlewares(guard, writable=[INTAKE_PATH] if intake else []))
    if http_cfg.pages and pages is not None:
        add_pages(app, pages)
    if intake is not None:
        add_intake(app, intake)

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True, "owner": owner, "stopping": ctx.stopping.is_set()})

    async def status(_: web.Request) -> web.Response:
        rep = await collect_status(ctx.store, paused=ctx.pause_reason(), daemon=DaemonInfo(owner=owner, restarts=dict(restarts)),
                                   spec=pages.spec if pages is not None else None)
        return web.json_response(rep.model_dump(mode="json"))

    async def metrics(_: web.Request) -> web.Response:
        rep = await collect_status(ctx.store, paused=ctx.pause_reason())
        for stage, by in rep.stages.items():
            for st, n in by.items():
                ctx.metrics.queue.labels(stage, st).set(n)
        for st, n in rep.gpu_jobs.items():
            ctx.metrics.queue.labels("gpu", st).set(n)
        for st, n in rep.entities.items():
            ctx.metrics.entities.labels(st).set(n)
        return web.Response(body=ctx.metrics.render(), content_type="text/plain", charset="utf-8")

    app.add_routes([web.get("/healthz", healthz), web.get("/status", status), web.get("/metrics", metrics)])
    return app


async def listen(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `app` on `host:port` (0: any free port); the runner (to clean up) and the bound port. A port that
    cannot be bound raises the `OSError`, with nothing left open."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    addresses = runner.addresses
    return runner, int(addresses[0][1]) if addresses else port


async def start_endpoint(
    ctx: ServiceContext, stack: AsyncExitStack, *, http_cfg: HttpSettings, pages: PageContext | None, owner: str,
    restarts: dict[str, int], intake: IntakeConfig | None = None,
) -> int:
    """Serve the endpoint on `http.host:http.port` until `stack` closes; returns the bound port. `pages`: the status
    pages' context (served when `http.pages` is on)."""
    app = _app(ctx, http_cfg=http_cfg, pages=pages, owner=owner, restarts=restarts, intake=intake)
    try:
        runner, port = await listen(app, http_cfg.host, http_cfg.port)
    except OSError as e:
        raise ClktError(
            f"cannot listen on {http_cfg.host}:{http_cfg.port} ({e.strerror or e}); "
            "is another program using the port? set http.port (or CLKT_HTTP__PORT) to a free port, 0 for any"
        ) from e
    stack.push_async_callback(runner.cleanup)
    log.info("HTTP endpoint on http://%s:%s (%s/healthz /status /metrics)", http_cfg.host, port,
             "status pages at /, " if http_cfg.pages else "")
    return port

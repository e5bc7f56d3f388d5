"""The replay server: recorded real API responses on 127.0.0.1, for tests and the offline demonstration.

    async with ReplayServer(settings=ReplaySettings(redate=True)) as server:
        server.base_url("musicbrainz")   # "http://127.0.0.1:<port>/musicbrainz"

With `mode = "generator"` it serves, under the same routes, a living stream of fictional entities instead
(`clkt.replay.generator`: `seed`, `entities_per_week`, `generator_start`), dated by the process's clock.

Control endpoints (JSON): `GET /_control/stats` (requests per route: count, statuses, timestamps),
`POST /_control/reset` (clear the stats), `GET|POST|DELETE /_control/faults` (see `clkt.replay.faults`),
`GET /_control/info` (re-dating window, items per source).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict, deque
from datetime import date
from enum import Enum
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import ValidationError

from clkt import clock
from clkt.config import ReplaySettings
from clkt.errors import UserError
from clkt.replay.catalog import load_catalog
from clkt.replay.faults import HTML_ERROR_PAGE, FaultInjector, FaultKind, FaultPlan, FaultRule, drift_json
from clkt.replay.generator import GeneratorRoutes
from clkt.replay.redate import RedatePlan, plan_redate
from clkt.replay.routes import ReplayRoutes
from clkt.replay.stream import EntityStream

__all__ = ["ReplayServer", "RequestStats", "start_replay"]

log = logging.getLogger(__name__)

_CONTROL = "/_control/"


class _State(str, Enum):
    new = "new"
    running = "running"
    closed = "closed"


class RequestStats:
    """Requests seen per route (canonical pattern): count, statuses and monotonic timestamps."""

    MAX_TIMES = 100_000

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.t0 = time.monotonic()
        self.counts: dict[str, int] = defaultdict(int)
        self.statuses: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.times: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=self.MAX_TIMES))

    def record(self, route: str, status: int, at: float) -> None:
        self.counts[route] += 1
        self.statuses[route][status] += 1
        self.times[route].append(at - self.t0)

    def snapshot(self) -> dict[str, Any]:
        routes = {
            r: {"count": self.counts[r], "statuses": {str(k): v for k, v in self.statuses[r].items()},
                "times": list(self.times[r])}
            for r in sorted(self.counts)
        }
        return {"total": sum(self.counts.values()), "routes": routes}


class ReplayServer:
    """An aiohttp app on 127.0.0.1 serving the bundled recordings. Refuses to restart once closed."""

    SHUTDOWN_TIMEOUT_S = 1.0

    def __init__(
        self, *, settings: ReplaySettings | None = None, host: str = "127.0.0.1", port: int = 0,
        today: date | None = None, limits: dict[str, tuple[float, int]] | None = None,
    ) -> None:
        self.settings = settings or ReplaySettings(enabled=True, redate=False)
        self.host = host
        self._want_port = port
        self._today = today
        self.stats = RequestStats()
        try:
            plan = FaultPlan.model_validate(self.settings.faults) if self.settings.faults else FaultPlan()
        except ValidationError as e:
            raise UserError(f"replay.faults is invalid: {e.errors()[0].get('msg')}") from None
        self.faults = FaultInjector(plan)
        # enforce a real API's limit per source (rate_per_s, burst): beyond it, answer 429 like the API would
        self.limits = dict(limits or {})
        self._buckets: dict[str, tuple[float, float]] = {}  # source -> (tokens, last refill)
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._state = _State.new
        self.routes: ReplayRoutes | None = None
        self.generator: GeneratorRoutes | None = None
        self.window: tuple[date, date] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def base_url(self, source: str) -> str:
        return f"{self.url}/{source}"

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _plans(self) -> dict[str, RedatePlan] | None:
        if not self.settings.redate or self.settings.mode == "generator":
            return None
        end = self.settings.redate_end or self._today or clock.now().date()
        self.window = (date.fromordinal(end.toordinal() - self.settings.redate_days), end)
        catalog = load_catalog()
        return {
            src: plan_redate({it.id: it.occurred for it in items}, end=end, days=self.settings.redate_days)
            for src, items in catalog.items.items()
        }

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._stats_mw, self._limit_mw, self._fault_mw])
        if self.settings.mode == "generator":
            st = self.settings
            self.generator = GeneratorRoutes(
                stream=EntityStream(seed=st.seed, entities_per_week=st.entities_per_week, start=st.generator_start)
            )
            self.generator.add_to(app)
        else:
            self.routes = ReplayRoutes(catalog=load_catalog(), plans=self._plans(), started=clock.now())
            self.routes.add_to(app)
        app.router.add_get("/_control/stats", self._get_stats)
        app.router.add_post("/_control/reset", self._reset)
        app.router.add_get("/_control/faults", self._get_faults)
        app.router.add_post("/_control/faults", self._set_faults)
        app.router.add_delete("/_control/faults", self._clear_faults)
        app.router.add_get("/_control/info", self._info)
        return app

    async def start(self) -> None:
        if self._state is _State.closed:
            raise UserError("this ReplayServer is closed and cannot be restarted")
        if self._state is _State.running:
            return
        runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=self.SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._want_port)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]
        self._state = _State.running
        n = sum(len(v) for v in load_catalog().items.values())
        if self.generator is not None:
            st = self.settings
            log.warning(
                "replay server on %s: GENERATED fictional entities (seed %d, %g per source per week%s), dated by "
                "the process's clock", self.url, st.seed, st.entities_per_week,
                f", from {st.generator_start.isoformat()}" if st.generator_start else "",
            )
        elif self.window:
            log.warning(
                "replay server on %s: %d RECORDED items RE-DATED into %s..%s (original dates in the "
                "X-Clkt-Replay-Original-Dates header)", self.url, n, self.window[0], self.window[1],
            )
        else:
            log.info("replay server on %s: %d recorded items with their original dates", self.url, n)

    async def close(self) -> None:
        if self._state is _State.closed:
            return
        self._state = _State.closed
        if self._runner is not None:
            await self._runner.cleanup()

    # --- middlewares ---------------------------------------------------------------------------------

    @web.middleware
    async def _stats_mw(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith(_CONTROL):
            return await handler(request)
        at = time.monotonic()
        route = request.match_info.route.resource.canonical if request.match_info.route.resource else request.path
        try:
            resp = await handler(request)
        except web.HTTPException as e:
            self.stats.record(route, e.status, at)
            raise
        self.stats.record(route, resp.status, at)
        return resp

    # tolerance for arrival jitter between a client's limiter and ours: 10% of the burst, at least 1 request
    LIMIT_SLACK_FRACTION = 0.1

    @web.middleware
    async def _limit_mw(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        source = request.path.split("/", 2)[1] if request.path.count("/") >= 1 else ""
        if source not in self.limits:
            return await handler(request)
        rate, burst = self.limits[source]
        cap = burst + max(1.0, self.LIMIT_SLACK_FRACTION * burst)
        now = time.monotonic()
        tokens, last = self._buckets.get(source, (cap, now))
        tokens = min(cap, tokens + (now - last) * rate)
        if tokens < 1.0:
            self._buckets[source] = (tokens, now)
            wait = (1.0 - tokens) / rate
            return web.json_response({"error": "rate limit exceeded (replay enforces the real API limit)"},
                                     status=429, headers={"Retry-After": f"{max(1, round(wait))}"})
        self._buckets[source] = (tokens - 1.0, now)
        return await handler(request)

    @web.middleware
    async def _fault_mw(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith(_CONTROL):
            return await handler(request)
        rule = self.faults.choose(request.path, dict(request.query))
        if rule is None:
            return await handler(request)
        return await self._inject(rule, request, handler)

    async def _inject(self, rule: FaultRule, request: web.Request, handler: Handler) -> web.StreamResponse:
        kind = rule.kind
        if kind is FaultKind.rate_limit:
            return web.json_response(
                {"error": "rate limited (replay fault)"}, status=429,
                headers={"Retry-After": f"{rule.retry_after_s:g}"},
            )
        if kind in (FaultKind.server_error, FaultKind.unavailable):
            return web.json_response({"error": f"replay fault {kind.value}"}, status=int(kind.value))
        if kind is FaultKind.html:
            return web.Response(status=502, text=HTML_ERROR_PAGE, content_type="text/html")
        if kind is FaultKind.slow:
            await asyncio.sleep(rule.delay_s)
            return await handler(request)
        resp = await handler(request)
        if not isinstance(resp, web.Response) or resp.status != 200 or not isinstance(resp.body, bytes):
            return resp
        body = resp.body
        new = body[: max(1, len(body) // 2)] if kind is FaultKind.truncated else drift_json(body, self.faults.rng)
        out = web.Response(status=200, body=new, headers={k: v for k, v in resp.headers.items() if k.lower() not in ("content-length", "etag")})
        return out

    # --- control -------------------------------------------------------------------------------------

    async def _get_stats(self, _: web.Request) -> web.Response:
        return web.json_response(self.stats.snapshot())

    async def _reset(self, _: web.Request) -> web.Response:
        self.stats.reset()
        return web.json_response({"ok": True})

    async def _get_faults(self, _: web.Request) -> web.Response:
        return web.json_response(self.faults.status())

    async def _set_faults(self, request: web.Request) -> web.Response:
        try:
            plan = FaultPlan.model_validate(await request.json())
        except (ValueError, ValidationError) as e:
            return web.json_response({"error": f"invalid fault plan: {e}"}, status=400)
        self.faults.set(plan)
        log.info("replay faults set: %s", plan.model_dump(mode="json"))
        return web.json_response(self.faults.status())

    async def _clear_faults(self, _: web.Request) -> web.Response:
        self.faults.set(FaultPlan())
        return web.json_response(self.faults.status())

    async def _info(self, _: web.Request) -> web.Response:
        if self.generator is not None:
            return web.json_response({"mode": "generator", "redated": False, "window": None,
                                      "items": self.generator.published_so_far()})
        assert self.routes is not None
        return web.json_response({
            "mode": "recorded",
            "redated": self.window is not None,
            "window": [d.isoformat() for d in self.window] if self.window else None,
            "items": {src: len(v) for src, v in self.routes.served.items()},
        })


async def start_replay(settings: ReplaySettings, *, host: str = "127.0.0.1", port: int = 0) -> ReplayServer:
    """Start a replay server for the daemon; the caller closes it (`await server.close()`)."""
    server = ReplayServer(settings=settings, host=host, port=port)
    await server.start()
    return server

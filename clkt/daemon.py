"""The daemon: named services under one supervisor, on one store it holds alone, with a clean shutdown.

Lifecycle of `Daemon.run()`:
1. take the store lock (a second daemon on the same store is refused: `storage.lock`), open the store
   (migrations), check the bundled target models, record the configuration's targets (`clkt.roster.startup`: a
   name that now names another model is refused);
2. put back the leases a previous (killed) daemon left (`storage.leases`);
3. in the offline demonstration, start the bundled replay server and point every source at it;
4. start the loopback endpoint (`clkt.endpoint`), write the info file (`clkt.daemon_info`);
5. run every service under the `Supervisor` (a crashing service is logged and restarted with backoff), the
   disk watch and the progress line among them;
6. on SIGINT/SIGTERM: stop claiming, let in-flight work finish within the grace period, cancel the rest,
   release every lease we hold (shielded), close everything, exit 0.

`clkt worker` is built from the same parts: an owner id, the supervisor, the shielded lease release.

The daemon and the wiring (`clkt.services`) are where the whole `Settings` is read: each service gets its
own section(s), and the pollers and the status pages share the daemon's one `SourceBoard`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import ClassVar

import aiohttp

from clkt._tasks import cancel_and_wait
from clkt.config import DaemonSettings, Settings
from clkt.context import Service, ServiceContext
from clkt.daemon_info import describe_holder, remove_daemon_info, write_daemon_info
from clkt.diskwatch import DiskWatch
from clkt.endpoint import start_endpoint
from clkt.layout import MODELS_DIR
from clkt.owner import is_dead_local_owner, new_owner_id
from clkt.progress import ProgressLogger
from clkt.replay import start_replay
from clkt.roster.startup import prepare_targets
from clkt.services import agent_backend, build_services, intake_config, page_context
from clkt.sources.board import SourceBoard
from clkt.targets.embedded import check_embedded
from clkt.telemetry import Metrics
from storage.engine import Store
from storage.leases import recover_gpu_leases, recover_stage_leases, release_owned
from storage.lock import StoreLock, record_holder

__all__ = ["Daemon", "Supervisor", "install_stop_signals", "release_leases"]

log = logging.getLogger("clkt.daemon")


class Supervisor:
    """Runs services as named tasks; a service that raises is restarted with capped exponential backoff.

    `run(services, ctx)` returns when every service has returned (a burst worker) or, once `ctx.stopping` is
    set, after the grace period: services still running then are cancelled and awaited."""

    RESTART_BACKOFF_START_S: ClassVar[float] = 1.0

    def __init__(self, *, daemon: DaemonSettings) -> None:
        """`daemon`: the grace period at a stop and the longest restart backoff."""
        self.daemon = daemon
        self.restarts: dict[str, int] = {}

    async def run(self, services: Sequence[Service], ctx: ServiceContext) -> None:
        tasks = [asyncio.create_task(self._supervise(svc, ctx), name=f"service:{svc.name}") for svc in services]
        stop = asyncio.create_task(ctx.stopping.wait(), name="supervisor:stopping")
        try:
            running = set(tasks)
            while running and not stop.done():
                await asyncio.wait({*running, stop}, return_when=asyncio.FIRST_COMPLETED)
                running = {t for t in tasks if not t.done()}
            if running:
                _, late = await asyncio.wait(running, timeout=self.daemon.grace_period_s + 1.0)
                for t in late:
                    log.warning("service %s did not stop within the grace period; cancelling", t.get_name())
        finally:
            await cancel_and_wait([*tasks, stop])

    async def _supervise(self, svc: Service, ctx: ServiceContext) -> None:
        backoff = self.RESTART_BACKOFF_START_S
        while not ctx.stopping.is_set():
            try:
                await svc.run(ctx)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                n = self.restarts[svc.name] = self.restarts.get(svc.name, 0) + 1
                ctx.metrics.service_restarts.labels(svc.name).inc()
                log.exception("service %s crashed (restart #%d in %.1f s)", svc.name, n, backoff)
                if await ctx.sleep(backoff):
                    return
                backoff = min(backoff * 2, self.daemon.restart_backoff_max_s)


def install_stop_signals(on_stop: Callable[[str], object]) -> None:
    """SIGTERM and SIGINT call `on_stop(signal name)` on the running loop."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_stop, signal.Signals(sig).name)


async def release_leases(store: Store, owner: str) -> int:
    """Every lease `owner` holds back to pending (refunded), shielded from the cancellation of a stop."""

    async def release() -> int:
        async with store.transaction() as s:
            return await release_owned(s, owner=owner)

    return await asyncio.shield(release())


class Daemon:
    def __init__(
        self, *, settings: Settings, services: Sequence[Service] | None = None, extra_services: Sequence[Service] = (),
        install_signals: bool = True,
    ) -> None:
        self.settings = settings
        self._services = list(services) if services is not None else None
        self._extra = list(extra_services)
        self._install_signals = install_signals
        self.owner = new_owner_id()
        self.metrics = Metrics()
        self.stopping = asyncio.Event()
        self.started = asyncio.Event()
        self.http_port: int | None = None
        self.ctx: ServiceContext | None = None
        self.board = SourceBoard()  # what each poller is doing: written by the pollers, read by the status pages
        self.supervisor = Supervisor(daemon=settings.daemon)

    def request_stop(self, why: str = "requested") -> None:
        if not self.stopping.is_set():
            log.info("stopping (%s): no new claims; in-flight work has %.0f s to finish", why, self.settings.daemon.grace_period_s)
            self.stopping.set()

    async def run(self) -> int:
        settings = self.settings
        if settings.offline_demo:
            log.warning(
                "OFFLINE DEMONSTRATION: recorded API responses from the bundled replay server (re-dated into a recent "
                "window), the template engine for questions and translations, and the small embedded target model on "
                "the CPU. Its numbers say nothing about real models."
            )
        if self._install_signals:  # first: a SIGTERM during start-up must also end in a clean stop
            install_stop_signals(self.request_stop)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(url=settings.resolved_store_url)
        lock = StoreLock(holder=lambda: describe_holder(settings.data_dir))
        async with AsyncExitStack() as stack:
            await lock.acquire(store)
            stack.push_async_callback(lock.release)
            stack.push_async_callback(store.close)
            await store.initialize()
            self._check_targets(settings)
            # the targets into the registry (a name now naming another model: ConfigError, nothing started), and a
            # target that joined after a freeze probed on the snapshots in its window
            await prepare_targets(store, spec=settings.spec, daemon=settings.daemon)
            await self._recover_leases(store)
            settings, replay_url = await self._start_replay(settings, stack)
            http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
            stack.push_async_callback(http.close)

            ctx = ServiceContext(
                store=store, http=http, owner=self.owner, metrics=self.metrics, stopping=self.stopping,
                replay_url=replay_url, agent_backend=agent_backend(settings, store=store, metrics=self.metrics),
            )
            self.ctx = ctx
            if settings.http.enabled:
                pages = page_context(settings, store=store, board=self.board, paused=ctx.pause_reason, owner=self.owner,
                                     restarts=self.supervisor.restarts)
                self.http_port = await start_endpoint(ctx, stack, http_cfg=settings.http, pages=pages, owner=self.owner,
                                                      restarts=self.supervisor.restarts, intake=intake_config(settings, store))
            write_daemon_info(settings.data_dir, owner=self.owner, http_host=settings.http.host,
                              http_port=self.http_port, offline_demo=settings.offline_demo)
            stack.callback(remove_daemon_info, settings.data_dir)
            await record_holder(store, owner=self.owner)

            services: list[Service] = [
                DiskWatch(daemon=settings.daemon, data_dir=settings.data_dir), ProgressLogger(),
                *(self._services if self._services is not None else build_services(settings, board=self.board)),
                *self._extra,
            ]
            log.info("daemon %s up: %d services: %s", self.owner, len(services), ", ".join(s.name for s in services))
            self.started.set()
            await self.supervisor.run(services, ctx)
            await self.stopping.wait()  # every service returned on its own: still a daemon until told to stop
            released = await release_leases(store, self.owner)
            log.info("stopped cleanly; released %d leases", released)
        return 0

    def _check_targets(self, settings: Settings) -> None:
        """Fail loudly at start-up when a bundled target model is missing (how to reinstall it is in the error)."""
        for t in settings.spec.targets:
            if t.backend == "local" and t.model.startswith("embedded:"):
                check_embedded(t.model, settings.data_dir / MODELS_DIR)

    async def _recover_leases(self, store: Store) -> None:
        """We hold the store lock, so stage leases still marked leased belong to a dead daemon; GPU jobs may be
        leased by standalone workers elsewhere, so only those of dead processes of this host are put back."""
        async with store.transaction() as s:
            n = await recover_stage_leases(s)
        if n:
            log.warning("recovered %d stage leases left by a previous daemon", n)
        async with store.transaction() as s:
            n = await recover_gpu_leases(s, is_dead=is_dead_local_owner)
        if n:
            log.warning("recovered %d GPU job leases left by a dead process on this host", n)

    async def _start_replay(self, settings: Settings, stack: AsyncExitStack) -> tuple[Settings, str | None]:
        if not settings.replay.enabled:
            return settings, None

        server = await start_replay(settings.replay)
        stack.push_async_callback(server.close)
        sources = settings.sources.model_copy(update={
            name: src.model_copy(update={"base_url": server.base_url(name)}) for name, src in settings.sources.items()
        })
        if settings.replay.mode == "generator":
            log.warning("replay server on %s: every source points at a generated stream of fictional entities",
                        server.url)
        else:
            log.warning("replay server on %s: every source points at recorded responses%s", server.url,
                        " re-dated into a recent window" if settings.replay.redate else "")
        return settings.model_copy(update={"sources": sources}), server.url

"""The daemon: named services under one supervisor, a loopback HTTP endpoint, clean shutdown.

Lifecycle of `Daemon.run()`:
1. take the store lock (a second daemon on the same store is refused), open the store (migrations);
2. in the offline demonstration, start the bundled replay server and point every source at it;
3. start `/healthz`, `/status`, `/metrics` on loopback; reset leases a previous (killed) daemon left;
4. run every service as a named task; a crashing service is logged and restarted with backoff;
5. on SIGINT/SIGTERM: stop claiming, let in-flight work finish within the grace period, cancel the rest,
   release every lease we hold (shielded), close everything, exit 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import Any, ClassVar

import aiohttp
from aiohttp import web
from sqlalchemy import case, select, update

from clkt.config import Settings
from clkt.context import ServiceContext
from clkt.errors import ClktError, StoreLockedError
from clkt.metrics import Metrics
from clkt.services import Service, build_services
from clkt.status import collect_status
from storage.claim import release_owner
from storage.engine import Store
from storage.models import DaemonLock, GpuJob, LeaseStatus, Task
from storage.types import utcnow

__all__ = ["Daemon", "StoreLock", "DiskWatch", "daemon_info_path"]

log = logging.getLogger("clkt.daemon")


def daemon_info_path(settings: Settings) -> Path:
    return settings.data_dir / "daemon.json"


class StoreLock:
    """One daemon per store: an OS file lock next to an SQLite store (released by the kernel if the
    process dies, kill -9 included), a session-level advisory lock on PostgreSQL."""

    PG_KEY: ClassVar[int] = 0x636C6B74  # "clkt"

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings
        self._file_lock: Any = None
        self._pg_conn: Any = None

    async def acquire(self, store: Store) -> None:
        path = store.sqlite_file
        if store.is_sqlite and path is not None:
            from filelock import FileLock, Timeout

            path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(path) + ".lock")
            try:
                lock.acquire(timeout=0)
            except Timeout:
                raise StoreLockedError(f"another clkt daemon is already running on {path} ({self._holder()}); refusing to start") from None
            self._file_lock = lock
        elif store.dialect == "postgresql":
            from sqlalchemy import text

            conn = await store.engine.connect()
            got = (await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.PG_KEY})).scalar()
            if not got:
                await conn.close()
                raise StoreLockedError(f"another clkt daemon is already running on {store.url}; refusing to start")
            self._pg_conn = conn

    def _holder(self) -> str:
        info = daemon_info_path(self.settings)
        try:
            data = json.loads(info.read_text())
            return f"pid {data.get('pid')} on {data.get('host')}, started {data.get('started_at')}"
        except (OSError, ValueError):
            return "holder unknown"

    async def release(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None
        if self._pg_conn is not None:
            with suppress(Exception):
                await self._pg_conn.close()
            self._pg_conn = None


class DiskWatch:
    """Pauses claiming while the data directory's disk has less than `min_free_disk_mb` free."""

    name = "disk-watch"
    INTERVAL_S: ClassVar[float] = 2.0

    async def run(self, ctx: ServiceContext) -> None:
        limit = ctx.settings.daemon.min_free_disk_mb
        was_paused = False
        while not ctx.stopping.is_set():
            try:
                free = ctx.free_disk_mb()
            except OSError as e:
                free, reason = 0.0, f"data directory unusable: {e}"
            else:
                reason = f"disk nearly full: {free:.0f} MiB free < {limit} MiB on {ctx.settings.data_dir}"
            low = free < limit
            if low and not was_paused:
                log.error("%s; claiming paused until space returns", reason)
                ctx.set_paused(reason)
            elif not low and was_paused:
                log.warning("disk space back (%.0f MiB free); claiming resumed", free)
                ctx.set_paused(None)
            was_paused = low
            ctx.metrics.paused.set(1 if ctx.pause_reason() else 0)
            if await ctx.sleep(self.INTERVAL_S):
                return


class Daemon:
    RESTART_BACKOFF_START_S: ClassVar[float] = 1.0

    def __init__(
        self, *, settings: Settings, services: Sequence[Service] | None = None, extra_services: Sequence[Service] = (),
        install_signals: bool = True,
    ) -> None:
        self.settings = settings
        self._services = list(services) if services is not None else None
        self._extra = list(extra_services)
        self._install_signals = install_signals
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.metrics = Metrics()
        self.stopping = asyncio.Event()
        self.started = asyncio.Event()
        self.http_port: int | None = None
        self.ctx: ServiceContext | None = None
        self._restarts: dict[str, int] = {}

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
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_stop, signal.Signals(sig).name)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(url=settings.resolved_store_url)
        lock = StoreLock(settings=settings)
        async with AsyncExitStack() as stack:
            await lock.acquire(store)
            stack.push_async_callback(lock.release)
            stack.push_async_callback(store.close)
            await store.initialize()
            self._check_targets(settings)
            await self._reset_stale_leases(store)
            settings, extras = await self._start_replay(settings, stack)
            http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
            stack.push_async_callback(http.close)
            ctx = ServiceContext(
                settings=settings, store=store, http=http, owner=self.owner, metrics=self.metrics,
                stopping=self.stopping, extras=extras,
            )
            self.ctx = ctx
            if settings.http.enabled:
                await self._start_http(ctx, stack)
            self._write_info(settings)
            stack.callback(self._remove_info, settings)
            await self._record_lock(store)
            from clkt.progress import ProgressLogger

            services: list[Service] = [
                DiskWatch(), ProgressLogger(),
                *(self._services if self._services is not None else build_services(settings)), *self._extra,
            ]
            log.info("daemon %s up: %d services: %s", self.owner, len(services), ", ".join(s.name for s in services))
            tasks = [asyncio.create_task(self._supervise(svc, ctx), name=f"service:{svc.name}") for svc in services]
            self.started.set()
            await self.stopping.wait()
            grace = settings.daemon.grace_period_s
            done, pending = await asyncio.wait(tasks, timeout=grace + 1.0)
            for t in pending:
                log.warning("service %s did not stop within the grace period; cancelling", t.get_name())
                t.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            released = await asyncio.shield(self._release_leases(store))
            log.info("stopped cleanly; released %d leases", released)
        return 0

    async def _supervise(self, svc: Service, ctx: ServiceContext) -> None:
        backoff = self.RESTART_BACKOFF_START_S
        while not ctx.stopping.is_set():
            try:
                await svc.run(ctx)
                return
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a crashing service never takes the daemon down
                n = self._restarts[svc.name] = self._restarts.get(svc.name, 0) + 1
                ctx.metrics.service_restarts.labels(svc.name).inc()
                log.exception("service %s crashed (restart #%d in %.1f s)", svc.name, n, backoff)
                if await ctx.sleep(backoff):
                    return
                backoff = min(backoff * 2, ctx.settings.daemon.restart_backoff_max_s)

    def _check_targets(self, settings: Settings) -> None:
        """Fail loudly at start-up when a bundled target model is missing (how to reinstall it is in the error)."""
        from clkt.targets.embedded import check_embedded

        for t in settings.spec.targets:
            if t.backend == "local" and t.model.startswith("embedded:"):
                check_embedded(t.model, settings.data_dir / "models")

    async def _reset_stale_leases(self, store: Store) -> None:
        """We hold the store lock, so stage leases still marked leased belong to a dead daemon."""
        async with store.transaction() as s:
            # interrupted, not failed: the attempt is refunded (a kill must not use up a task's tries)
            res = await s.execute(
                update(Task).where(Task.status == LeaseStatus.leased)
                .values(status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, updated_at=utcnow(),
                        attempts=case((Task.attempts > 0, Task.attempts - 1), else_=0))
                .execution_options(synchronize_session=False)
            )
        if res.rowcount:
            log.warning("recovered %d stage leases left by a previous daemon", res.rowcount)
        # GPU jobs may be leased by standalone workers elsewhere; only release those whose owner was a process
        # of this host that no longer exists (a killed daemon); others expire with their lease.
        host = socket.gethostname()
        async with store.transaction() as s:
            rows = (await s.execute(select(GpuJob.id, GpuJob.lease_owner).where(GpuJob.status == LeaseStatus.leased))).all()
            dead = [jid for jid, owner in rows if _dead_local_owner(owner, host)]
            if dead:
                await s.execute(
                    update(GpuJob).where(GpuJob.id.in_(dead), GpuJob.status == LeaseStatus.leased)
                    .values(status=LeaseStatus.pending, lease_owner=None, lease_expires_at=None, updated_at=utcnow(),
                            attempts=case((GpuJob.attempts > 0, GpuJob.attempts - 1), else_=0))
                    .execution_options(synchronize_session=False)
                )
                log.warning("recovered %d GPU job leases left by a dead process on this host", len(dead))

    async def _release_leases(self, store: Store) -> int:
        n = 0
        async with store.transaction() as s:
            n += await release_owner(s, Task, owner=self.owner)
            n += await release_owner(s, GpuJob, owner=self.owner)
        return n

    async def _start_replay(self, settings: Settings, stack: AsyncExitStack) -> tuple[Settings, dict[str, Any]]:
        if not settings.replay.enabled:
            return settings, {}
        from clkt.replay import start_replay

        server = await start_replay(settings.replay)
        stack.push_async_callback(server.close)
        sources = {
            name: src.model_copy(update={"base_url": server.base_url(name)}) for name, src in settings.sources.items()
        }
        log.warning("replay server on %s: every source points at recorded responses%s", server.url,
                    " re-dated into a recent window" if settings.replay.redate else "")
        return settings.model_copy(update={"sources": sources}), {"replay_url": server.url}

    async def _start_http(self, ctx: ServiceContext, stack: AsyncExitStack) -> None:
        from clkt.web import HostGuard, PageContext, add_pages, security_middlewares

        http_cfg = ctx.settings.http
        app = web.Application(middlewares=security_middlewares(HostGuard(host=http_cfg.host, allowed=http_cfg.allowed_hosts)))
        if http_cfg.pages:
            add_pages(app, PageContext(settings=ctx.settings, store=ctx.store, board=ctx.sources, paused=ctx.pause_reason,
                                       owner=self.owner, restarts=self._restarts))

        async def healthz(_: web.Request) -> web.Response:
            return web.json_response({"ok": True, "owner": self.owner, "stopping": ctx.stopping.is_set()})

        async def status(_: web.Request) -> web.Response:
            rep = await collect_status(ctx.store, paused=ctx.pause_reason(), daemon={"owner": self.owner, "restarts": self._restarts})
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
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, ctx.settings.http.host, ctx.settings.http.port)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise ClktError(
                f"cannot listen on {ctx.settings.http.host}:{ctx.settings.http.port} ({e.strerror or e}); "
                "is another program using the port? set http.port (or CLKT_HTTP__PORT) to a free port, 0 for any"
            ) from e
        stack.push_async_callback(runner.cleanup)
        server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
        sockets = getattr(server, "sockets", None) or []
        self.http_port = sockets[0].getsockname()[1] if sockets else ctx.settings.http.port
        log.info("HTTP endpoint on http://%s:%s (%s/healthz /status /metrics)", ctx.settings.http.host, self.http_port,
                 "status pages at /, " if http_cfg.pages else "")

    def _write_info(self, settings: Settings) -> None:
        info = {
            "pid": os.getpid(), "host": socket.gethostname(), "owner": self.owner, "http_port": self.http_port,
            "http_host": settings.http.host, "started_at": utcnow().isoformat(), "offline_demo": settings.offline_demo,
        }
        path = daemon_info_path(settings)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        tmp.replace(path)

    def _remove_info(self, settings: Settings) -> None:
        with suppress(OSError):
            daemon_info_path(settings).unlink()

    async def _record_lock(self, store: Store) -> None:
        from sqlalchemy import delete

        async with store.transaction() as s:
            await s.execute(delete(DaemonLock).where(DaemonLock.name == "daemon"))
            s.add(DaemonLock(name="daemon", owner=self.owner, pid=os.getpid(), host=socket.gethostname()))


def _dead_local_owner(owner: str | None, host: str) -> bool:
    """`<host>:<pid>:<nonce>` owned by a process of this host that is gone."""
    if not owner:
        return False
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


"""One daemon per store: the store lock, and the `daemon_lock` row that names its holder.

SQLite: an OS file lock next to the database file (`<db>.lock`), released by the kernel when the process
dies, kill -9 included. PostgreSQL: a session-level advisory lock held on a dedicated connection for as
long as the daemon runs. A second daemon is refused with `StoreLockedError`, naming the holder when the
caller can say who it is (`holder()`, e.g. from the daemon's info file).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from contextlib import suppress
from typing import ClassVar

from filelock import FileLock, Timeout
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel import col

from clkt.errors import StoreLockedError
from storage.engine import Store
from storage.models import DaemonLock

__all__ = ["StoreLock", "record_holder"]


class StoreLock:
    PG_KEY: ClassVar[int] = 0x636C6B74  # "clkt"

    def __init__(self, *, holder: Callable[[], str] = lambda: "holder unknown") -> None:
        self._holder = holder
        self._file_lock: FileLock | None = None
        self._pg_conn: AsyncConnection | None = None

    async def acquire(self, store: Store) -> None:
        path = store.sqlite_file
        if store.is_sqlite and path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(path) + ".lock")
            try:
                lock.acquire(timeout=0)
            except Timeout:
                raise StoreLockedError(
                    f"another clkt daemon is already running on {path} ({self._holder()}); refusing to start"
                ) from None
            self._file_lock = lock
        elif store.dialect == "postgresql":
            conn = await store.engine.connect()
            got = (await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.PG_KEY})).scalar()
            if not got:
                await conn.close()
                raise StoreLockedError(f"another clkt daemon is already running on {store.url}; refusing to start")
            self._pg_conn = conn

    async def release(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None
        if self._pg_conn is not None:
            with suppress(Exception):
                await self._pg_conn.close()
            self._pg_conn = None


async def record_holder(store: Store, *, owner: str) -> None:
    """Write who holds the store (`daemon_lock`, one row): owner id, pid and host of this process."""
    async with store.transaction() as s:
        await s.execute(delete(DaemonLock).where(col(DaemonLock.name) == "daemon"))
        s.add(DaemonLock(name="daemon", owner=owner, pid=os.getpid(), host=socket.gethostname()))



"""The storage owner: one async engine + session factory, WAL and pragmas, migrations at start.

`Store` takes a URL or an engine (not both), refuses to reopen once closed, and is an async context
manager. SQLite gets WAL, a busy timeout and foreign keys on every connection; PostgreSQL runs the same
code through asyncpg.

A store already at `HEAD_REVISION` (the usual start) is opened without loading the migration scripts or taking
the write lock: one read of `alembic_version` decides it (tests/storage/test_engine.py keeps the constant equal
to the scripts' head; a new migration updates it).

A store that is refused is left untouched: an existing SQLite file is first inspected through a separate
READ-ONLY connection (header, tables, migration history) before the engine's first connection sets WAL
or anything else; its bytes and mtime stay as they were.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from enum import Enum
from pathlib import Path
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DatabaseError, DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from clkt.errors import ForeignDatabaseError, StoreError, UserError

__all__ = ["BUSY_TIMEOUT_MS", "HEAD_REVISION", "SQLITE_HEADER", "Session", "Store", "describe_store_error", "sqlite_path"]

log = logging.getLogger(__name__)

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000
SQLITE_HEADER = b"SQLite format 3\x00"
_MIGRATIONS = Path(__file__).parent / "migrations"
HEAD_REVISION = "b7d3f5a9c2e4"  # the newest migration (storage/migrations/versions): update with every new one

# What a repository function takes: one open session (in a transaction when it writes). Code above storage
# names it by this alias, opens it with `Store.session()` / `Store.transaction()` and never imports SQLAlchemy.
Session: TypeAlias = AsyncSession


class _State(str, Enum):
    new = "new"
    open = "open"
    closed = "closed"


def describe_store_error(e: BaseException) -> str | None:
    """One line naming a database driver or SQLAlchemy error (the driver's own cause first); None otherwise."""
    if isinstance(e, DBAPIError):
        return f"store error: {type(e.orig).__name__}: {e.orig}"
    if isinstance(e, SQLAlchemyError):
        return f"store error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


def sqlite_path(url: str) -> Path | None:
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return Path(u.database)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    cur.execute("PRAGMA journal_mode = WAL")
    cur.execute("PRAGMA synchronous = NORMAL")
    cur.close()


class Store:
    """Owns the engine. `async with Store(url=...) as store:` migrates on entry, disposes on exit."""

    def __init__(self, *, url: str | None = None, engine: AsyncEngine | None = None, migrate: bool = True) -> None:
        if (url is None) == (engine is None):
            raise UserError("Store takes a URL or an engine, not both and not neither")
        if engine is None:
            assert url is not None
            path = sqlite_path(url)
            kwargs: dict[str, Any] = {}
            if path is not None:
                kwargs["connect_args"] = {"timeout": BUSY_TIMEOUT_MS / 1000}
            else:
                kwargs["pool_pre_ping"] = True
            engine = create_async_engine(url, **kwargs)
        self.engine = engine
        self.url = engine.url.render_as_string(hide_password=True)
        self.dialect = engine.dialect.name
        self._migrate = migrate
        self._state = _State.new
        if self.dialect == "sqlite":
            event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessionmaker = async_sessionmaker(engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def sqlite_file(self) -> Path | None:
        return sqlite_path(self.engine.url.render_as_string(hide_password=False))

    async def __aenter__(self) -> Store:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def initialize(self) -> None:
        """Idempotent: check the file is ours, set pragmas, apply migrations."""
        if self._state is _State.closed:
            raise UserError("this Store is closed and cannot be reopened")
        if self._state is _State.open:
            return
        path = self.sqlite_file
        if path is not None:
            self._check_sqlite_file(path)
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
                if self._migrate and not await _at_head(conn):
                    if self.is_sqlite:
                        # Python's sqlite3 runs DDL outside any transaction unless one is open: without this, a
                        # process killed mid-migration leaves half a schema ("table ... already exists" at the
                        # next start). IMMEDIATE also makes a second process wait (busy timeout) while one migrates.
                        await conn.exec_driver_sql("BEGIN IMMEDIATE")
                    await self._check_foreign(conn)
                    await conn.run_sync(_upgrade)
                    await conn.commit()
        except DatabaseError as e:
            where = path or self.url
            raise ForeignDatabaseError(f"cannot open the store {where}: {e.orig}") from e
        except (OSError, DBAPIError) as e:  # unreachable server, refused login...: the URL without its password
            cause = e.orig if isinstance(e, DBAPIError) else e
            raise StoreError(f"cannot reach the store {self.url}: {type(cause).__name__}: {cause}") from None
        self._state = _State.open

    def _check_sqlite_file(self, path: Path) -> None:
        if not path.exists() or path.stat().st_size == 0:
            return
        with path.open("rb") as fh:
            head = fh.read(16)
        if head != SQLITE_HEADER:
            raise ForeignDatabaseError(f"{path} is not an SQLite database (corrupt or foreign file); nothing was changed")
        if self._migrate:
            self._check_sqlite_readonly(path)

    def _check_sqlite_readonly(self, path: Path) -> None:
        """The foreign / unknown-migration checks on a read-only connection: nothing can change the file."""
        # with no -wal/-shm beside it the file is complete: `immutable` reads it without creating them
        # (a WAL-mode file would otherwise get both); with them present, a plain read-only connection
        live = any(path.with_name(path.name + s).exists() for s in ("-wal", "-shm"))
        mode = "mode=ro" if live else "mode=ro&immutable=1"
        try:
            conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{mode}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as e:
            raise ForeignDatabaseError(f"cannot open the store {path} to check it: {e}; nothing was changed") from None
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            revs = [r[0] for r in conn.execute("SELECT version_num FROM alembic_version")] if "alembic_version" in names else []
        except sqlite3.DatabaseError as e:
            raise ForeignDatabaseError(f"{path} cannot be read as a store ({e}): corrupt or foreign; nothing was changed") from None
        finally:
            conn.close()
        _refuse_foreign(str(path), names, revs)

    async def _check_foreign(self, conn: Any) -> None:
        def tables(sync_conn: Connection) -> list[str]:
            return inspect(sync_conn).get_table_names()

        names = await conn.run_sync(tables)
        revs: list[str] = []
        if "alembic_version" in names:
            revs = [r for (r,) in (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()]
        _refuse_foreign(str(self.sqlite_file or self.url), names, revs)

    async def close(self) -> None:
        if self._state is _State.closed:
            return
        self._state = _State.closed
        await self.engine.dispose()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Session]:
        if self._state is not _State.open:
            raise UserError(f"Store is {self._state.value}; use `async with Store(...)` or initialize()")
        async with self.sessionmaker() as s:
            yield s

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Session]:
        """A session inside one transaction: committed on success, rolled back on any error."""
        async with self.session() as s, s.begin():
            yield s

    async def run_with_retry(self, fn: Callable[[Session], Awaitable[T]], *, tries: int = 5) -> T:
        """Run `await fn(session)` in a transaction, retrying 'database is locked' (SQLite) a few times."""
        delay = 0.05
        for i in range(tries):
            try:
                async with self.transaction() as s:
                    return await fn(s)
            except OperationalError as e:
                if "locked" not in str(e).lower() or i == tries - 1:
                    raise StoreError(f"store busy: {e.orig}") from e
                await asyncio.sleep(delay)
                delay *= 2
        raise StoreError(f"store busy after {tries} tries")  # not reached: the last try raises above


def _refuse_foreign(where: str, names: list[str], revs: list[str]) -> None:
    if names and "alembic_version" not in names:
        raise ForeignDatabaseError(
            f"the store {where} holds tables {sorted(names)[:5]} but no clkt migration history: it belongs to "
            "something else; nothing was changed"
        )
    known = {HEAD_REVISION} if revs == [HEAD_REVISION] else _known_revisions() if revs else set()
    for rev in revs:
        if rev not in known:
            raise ForeignDatabaseError(
                f"the store {where} is at migration {rev!r}, unknown to this clkt (a newer version or another "
                "program); nothing was changed"
            )


async def _at_head(conn: Any) -> bool:
    """Whether the store's migration history is exactly the head (nothing to check or apply); a store without
    the table (new, or foreign) is not, and the caller's checks then run."""
    try:
        revs = [r for (r,) in (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()]
    except DBAPIError:
        await conn.rollback()  # PostgreSQL: the failed statement aborted the transaction
        return False
    await conn.rollback()
    return revs == [HEAD_REVISION]


def _alembic_config(connection: Any = None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config())
    return {rev.revision for rev in script.walk_revisions()}


def _upgrade(sync_conn: Any) -> None:
    from alembic import command

    command.upgrade(_alembic_config(sync_conn), "head")

"""The store URLs of the tests that run on both backends: a SQLite file, or the PostgreSQL server CI starts
(`CLKT_TEST_PG_URL`, its public schema emptied first); without that server the PostgreSQL case is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

__all__ = ["BACKENDS", "PG_URL", "empty_store_url", "worker_database"]

PG_URL = os.environ.get("CLKT_TEST_PG_URL")
BACKENDS = ["sqlite", "postgresql"]  # a fixture's params


async def empty_store_url(backend: str, sqlite_file: Path) -> str:
    """An empty store's URL: the SQLite file `sqlite_file`, or the PostgreSQL test server with its schema reset."""
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{sqlite_file}"
    if not PG_URL:
        pytest.skip("CLKT_TEST_PG_URL not set (no PostgreSQL server for this run)")
    engine = create_async_engine(PG_URL)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    return PG_URL


async def worker_database(url: str, worker: str) -> str:
    """`url` with its database named for the pytest-xdist `worker` (`clkt_test` -> `clkt_test_gw0`), created when
    missing, through the server's own database."""
    base = make_url(url)
    name = f"{base.database or 'postgres'}_{worker}"
    engine = create_async_engine(base, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            found = (await conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})).first()
            if found is None:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        await engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)

"""The store URLs of the tests that run on both backends: a SQLite file, or the PostgreSQL server CI starts
(`CLKT_TEST_PG_URL`, its public schema emptied first); without that server the PostgreSQL case is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

__all__ = ["BACKENDS", "PG_URL", "empty_store_url"]

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

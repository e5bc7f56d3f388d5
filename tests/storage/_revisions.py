"""A store migrated up to a given revision (not the head): what a store written by an earlier version holds."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import create_async_engine


async def store_at_revision(url: str, revision: str) -> None:
    """Create the store at `url` with the migrations up to `revision` (the later ones not applied)."""
    await migrate_store(url, revision)


async def migrate_store(url: str, revision: str, *, down: bool = False) -> None:
    """Upgrade (or with `down`, downgrade) the existing store at `url` to `revision` with the migrations' own code."""
    from alembic import command

    from storage.engine import _alembic_config

    def run(sync_conn: Any) -> None:
        (command.downgrade if down else command.upgrade)(_alembic_config(sync_conn), revision)

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(run)
    finally:
        await engine.dispose()

"""A store migrated up to a given revision (not the head): what a store written by an earlier version holds."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import create_async_engine


async def store_at_revision(url: str, revision: str) -> None:
    """Create the store at `url` with the migrations up to `revision` (the later ones not applied)."""
    from alembic import command

    from storage.engine import _alembic_config

    def upgrade(sync_conn: Any) -> None:
        command.upgrade(_alembic_config(sync_conn), revision)

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(upgrade)
    finally:
        await engine.dispose()

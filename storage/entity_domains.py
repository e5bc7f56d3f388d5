"""The domain of each entity a window's result packs name (the leaderboard's per-domain view, issue 35)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import Entity

__all__ = ["entity_domains"]

_CHUNK = 500


async def entity_domains(session: AsyncSession, entity_ids: Collection[int]) -> dict[int, str]:
    """entity id -> its domain, for the ids given (an id without a row is left out)."""
    ids = sorted(set(entity_ids))
    out: dict[int, str] = {}
    for i in range(0, len(ids), _CHUNK):
        rows = await session.execute(
            select(col(Entity.id), col(Entity.domain)).where(col(Entity.id).in_(ids[i : i + _CHUNK]))
        )
        out.update({int(e): str(d) for e, d in rows.all() if e is not None})
    return out

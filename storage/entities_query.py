"""Read queries over entities for the CLI and the HTTP endpoint (`clkt entities`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Entity, EntityStatus

__all__ = ["EntityQuery", "EntityRow", "query_entities"]


class EntityQuery(BaseModel):
    domain: str | None = None
    occurred_after: datetime | None = None
    status: str | None = None
    limit: int = 50


class EntityRow(BaseModel):
    id: int
    source: str
    external_id: str
    domain: str
    name: str
    occurred_at: datetime
    status: str


async def query_entities(session: AsyncSession, q: EntityQuery) -> list[EntityRow]:
    stmt = select(
        Entity.id, Entity.source, Entity.external_id, Entity.domain, Entity.name, Entity.occurred_at, Entity.status
    )
    if q.domain:
        stmt = stmt.where(Entity.domain == q.domain)
    if q.occurred_after:
        stmt = stmt.where(Entity.occurred_at >= q.occurred_after)
    if q.status:
        stmt = stmt.where(Entity.status == EntityStatus(q.status))
    stmt = stmt.order_by(Entity.occurred_at.desc(), Entity.id.desc()).limit(q.limit)
    rows = (await session.execute(stmt)).all()
    return [
        EntityRow(id=r[0], source=r[1], external_id=r[2], domain=r[3], name=r[4], occurred_at=r[5], status=EntityStatus(r[6]).value)
        for r in rows
    ]

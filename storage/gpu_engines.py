"""The GPU engines' status: one row per consumer process (`GpuEngineStatus`), what it last said about its engine.

`record_engine_status` upserts a consumer's row (in the caller's transaction); `latest_engine_status` reads the
most recent one, which `clkt status` and the status page show: whether GPU jobs can start, and why they wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import GpuEngineStatus
from storage.types import utcnow

__all__ = ["EngineStatusRecord", "latest_engine_status", "record_engine_status"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineStatusRecord:
    owner: str
    engine: str  # "ray" (the local engine is always ready and records nothing)
    state: str  # clkt.inject.engine.EngineState: ready, connecting, unreachable, unschedulable, stopped
    detail: str
    address: str | None
    updated_at: datetime


async def record_engine_status(
    session: AsyncSession, *, owner: str, engine: str, state: str, detail: str, address: str | None,
    now: datetime | None = None,
) -> None:
    values = {"owner": owner, "engine": engine, "state": state, "detail": detail[:4000], "address": address,
              "updated_at": now or utcnow()}
    bind = session.get_bind()
    ins = pg_insert(GpuEngineStatus) if bind.dialect.name == "postgresql" else sqlite_insert(GpuEngineStatus)
    update = {k: v for k, v in values.items() if k != "owner"}
    await session.execute(ins.values(values).on_conflict_do_update(index_elements=["owner"], set_=update))


async def latest_engine_status(session: AsyncSession) -> EngineStatusRecord | None:
    row = (await session.execute(
        select(GpuEngineStatus).order_by(col(GpuEngineStatus.updated_at).desc()).limit(1)
    )).scalars().first()
    if row is None:
        return None
    return EngineStatusRecord(owner=row.owner, engine=row.engine, state=row.state, detail=row.detail,
                              address=row.address, updated_at=row.updated_at)

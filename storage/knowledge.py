"""What the stored probe verdicts say a target knew, by the month its entities occurred: per (target, month), how
many entities it was asked about and how many it knew (`clkt.report.cutoff_curve` turns them into the known-rate
curve, the effective cutoff and the contamination alarm).

An entity counts for a target in its month (UTC, `YYYY-MM` of `occurred_at`) once the target has at least one
verdict on it, and as known when any of its verdicts (any language) says so. The full probe stops at the first
target that knows an entity, so a later target of the spec may never be asked about it: such an entity is not
in that target's count (neither asked nor known). Observing probe tasks (`probe_only_key`) add verdicts without
changing anything else, e.g. on the gate's sampled rejections, which is how months before a declared cutoff
get counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, cast, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col

from storage.models import Entity, Probe

__all__ = ["KnownMonth", "known_by_month", "probe_fingerprint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownMonth:
    target: str
    month: str  # YYYY-MM (UTC) of the entities' occurrence
    asked: int  # entities with at least one verdict of the target
    known: int  # of them, known in some language


def _month(session: AsyncSession) -> ColumnElement[Any]:
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    if dialect == "postgresql":
        return func.to_char(func.timezone("UTC", col(Entity.occurred_at)), "YYYY-MM")
    return func.strftime("%Y-%m", col(Entity.occurred_at))  # SQLite keeps naive UTC


async def known_by_month(session: AsyncSession, *, targets: list[str] | None = None) -> list[KnownMonth]:
    """Per target and month, entities asked and known (by target, then month)."""
    only = [col(Probe.target_model).in_(targets)] if targets is not None else []
    sub = (
        select(col(Probe.target_model).label("target"), col(Probe.entity_id).label("entity_id"),
               func.max(cast(col(Probe.known), Integer)).label("known"))
        .where(*only)
        .group_by(col(Probe.target_model), col(Probe.entity_id))
        .subquery()
    )
    month = _month(session).label("month")
    stmt = (
        select(sub.c.target, month, func.count(), func.sum(sub.c.known))
        .join(Entity, col(Entity.id) == sub.c.entity_id)
        .group_by(sub.c.target, month)
        .order_by(sub.c.target, month)
    )
    return [KnownMonth(target=t, month=str(m), asked=int(n), known=int(k or 0)) for t, m, n, k in (await session.execute(stmt)).all()]


async def probe_fingerprint(session: AsyncSession) -> tuple[int, int]:
    """(how many verdicts, the newest verdict's id): it changes whenever a verdict is added or removed."""
    n, last = (await session.execute(select(func.count(), func.max(col(Probe.id))))).one()
    return int(n or 0), int(last or 0)

"""Retractions (errata): a question of a frozen snapshot withdrawn as wrong, by its public qid. Every later publish
revision of the snapshot leaves it out; the frozen folder never changes. Records leave as frozen dataclasses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import Retraction
from storage.tasks import insert_ignore
from storage.types import utcnow

__all__ = ["RetractionRecord", "add_retraction", "retraction_count", "retractions_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetractionRecord:
    snapshot_id: str
    qid: int
    question_id: int | None
    reason: str
    retracted_at: datetime


def _retraction(row: Retraction) -> RetractionRecord:
    return RetractionRecord(snapshot_id=row.snapshot_id, qid=row.qid, question_id=row.question_id, reason=row.reason,
                            retracted_at=row.retracted_at)


async def add_retraction(
    session: AsyncSession, *, snapshot_id: str, qid: int, question_id: int | None, reason: str,
    at: datetime | None = None,
) -> tuple[RetractionRecord, bool]:
    """Record the retraction of question `qid` of the snapshot (in the caller's transaction); (the record, whether it
    is new). A question already retracted keeps its first reason and date."""
    n = await insert_ignore(session, Retraction, [dict(
        snapshot_id=snapshot_id, qid=qid, question_id=question_id, reason=reason, retracted_at=at or utcnow(),
    )])
    row = await session.get(Retraction, (snapshot_id, qid), populate_existing=True)
    assert row is not None
    return _retraction(row), n > 0


async def retractions_of(session: AsyncSession, snapshot_ids: Sequence[str]) -> list[RetractionRecord]:
    """The retractions of these snapshots, by snapshot, date, then qid."""
    if not snapshot_ids:
        return []
    rows = (await session.execute(
        select(Retraction).where(col(Retraction.snapshot_id).in_(list(snapshot_ids)))
        .order_by(col(Retraction.snapshot_id), col(Retraction.retracted_at), col(Retraction.qid))
    )).scalars().all()
    return [_retraction(r) for r in rows]


async def retraction_count(session: AsyncSession) -> int:
    return int((await session.execute(select(func.count()).select_from(Retraction))).scalar_one())

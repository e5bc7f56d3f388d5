"""Submitted result packs (`clkt submit`): one `submitted_pack` row per verified pack, keyed by its sha256.

The pack was verified above storage (`clkt.packs.intake`) before it comes here; storing the same pack again
changes nothing (`add_submission` answers False). A different thing from `storage.result_packs`, which packs this
store's own jobs' answers for the leaderboard.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import SubmittedPack

__all__ = ["NewSubmission", "SubmissionRecord", "add_submission", "find_submission", "list_submissions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSubmission:
    pack_sha256: str
    snapshot_id: str
    target_name: str
    model: str
    model_revision: str | None
    weights_sha256: str | None
    kind: str
    cutoff: date
    strategy: str
    train_langs: list[str]
    scorers: list[str]
    format_version: int
    clkt_version: str
    predictions: int
    claims_match: bool
    claims_note: str
    metrics: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    answers: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionRecord:
    pack_sha256: str
    snapshot_id: str
    target_name: str
    model: str
    model_revision: str | None
    kind: str
    cutoff: date
    strategy: str
    train_langs: list[str]
    scorers: list[str]
    predictions: int
    claims_match: bool
    claims_note: str
    metrics: dict[str, Any]
    submitted_at: datetime


def _record(row: SubmittedPack) -> SubmissionRecord:
    return SubmissionRecord(
        pack_sha256=row.pack_sha256, snapshot_id=row.snapshot_id, target_name=row.target_name, model=row.model,
        model_revision=row.model_revision, kind=row.kind, cutoff=row.cutoff, strategy=row.strategy,
        train_langs=list(row.train_langs), scorers=list(row.scorers), predictions=row.predictions,
        claims_match=row.claims_match, claims_note=row.claims_note, metrics=dict(row.metrics),
        submitted_at=row.submitted_at,
    )


async def add_submission(session: AsyncSession, new: NewSubmission) -> bool:
    """Store `new`; False (and nothing changed) when a pack of the same sha256 is stored already."""
    if await session.get(SubmittedPack, new.pack_sha256) is not None:
        return False
    session.add(SubmittedPack(**{f: getattr(new, f) for f in NewSubmission.__dataclass_fields__}))
    await session.flush()
    return True


async def find_submission(session: AsyncSession, pack_sha256: str) -> SubmissionRecord | None:
    row = await session.get(SubmittedPack, pack_sha256)
    return _record(row) if row is not None else None


async def list_submissions(session: AsyncSession, *, snapshot_id: str | None = None) -> list[SubmissionRecord]:
    """Every submitted pack (of one snapshot), oldest first."""
    query = select(SubmittedPack).order_by(col(SubmittedPack.submitted_at), col(SubmittedPack.pack_sha256))
    if snapshot_id is not None:
        query = query.where(col(SubmittedPack.snapshot_id) == snapshot_id)
    return [_record(r) for r in (await session.execute(query)).scalars()]

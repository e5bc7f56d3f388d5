"""Submitted result packs (`clkt submit`): one `submitted_pack` row per verified pack, keyed by its sha256.

The pack was verified above storage (`clkt.packs.intake`) before it comes here; storing the same pack again
changes nothing (`add_submission` answers False). A different thing from `storage.result_packs`, which packs this
store's own jobs' answers for the leaderboard.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import SubmittedPack
from storage.types import utcnow

__all__ = [
    "NewSubmission",
    "SubmissionRecord",
    "add_submission",
    "find_submission",
    "find_submissions_by_prefix",
    "list_submissions",
    "set_reproduction",
    "submission_answers",
    "submissions_answers",
    "submissions_open_answers",
    "submitted_names",
]


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
    open_answers: bytes | None = None  # the open answers as scored at intake, gzip'd (None: no open track)


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
    weights_sha256: str | None = None
    format_version: int = 1
    clkt_version: str = ""
    manifest: dict[str, Any] = field(default_factory=dict)  # the pack's manifest.json (its provenance)
    reproduction: dict[str, Any] | None = None  # `clkt submit --reproduce`'s result, when it ran


def _record(row: SubmittedPack) -> SubmissionRecord:
    return SubmissionRecord(
        pack_sha256=row.pack_sha256, snapshot_id=row.snapshot_id, target_name=row.target_name, model=row.model,
        model_revision=row.model_revision, kind=row.kind, cutoff=row.cutoff, strategy=row.strategy,
        train_langs=list(row.train_langs), scorers=list(row.scorers), predictions=row.predictions,
        claims_match=row.claims_match, claims_note=row.claims_note, metrics=dict(row.metrics),
        submitted_at=row.submitted_at, weights_sha256=row.weights_sha256, format_version=row.format_version,
        clkt_version=row.clkt_version, manifest=dict(row.manifest),
        reproduction=dict(row.reproduction) if row.reproduction else None,
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


async def list_submissions(
    session: AsyncSession, *, snapshot_id: str | None = None, snapshot_ids: Collection[str] | None = None,
) -> list[SubmissionRecord]:
    """Every submitted pack (of one snapshot, or of the snapshots named), oldest first."""
    query = select(SubmittedPack).order_by(col(SubmittedPack.submitted_at), col(SubmittedPack.pack_sha256))
    if snapshot_id is not None:
        query = query.where(col(SubmittedPack.snapshot_id) == snapshot_id)
    if snapshot_ids is not None:
        query = query.where(col(SubmittedPack.snapshot_id).in_(sorted(snapshot_ids)))
    return [_record(r) for r in (await session.execute(query)).scalars()]


async def find_submissions_by_prefix(session: AsyncSession, prefix: str) -> list[SubmissionRecord]:
    """The submitted packs whose sha256 starts with `prefix` (lower case hex), at most two (enough to tell one from
    several)."""
    query = (select(SubmittedPack).where(col(SubmittedPack.pack_sha256).startswith(prefix.lower(), autoescape=True))
             .order_by(col(SubmittedPack.pack_sha256)).limit(2))
    return [_record(r) for r in (await session.execute(query)).scalars()]


async def set_reproduction(session: AsyncSession, pack_sha256: str, reproduction: dict[str, Any]) -> bool:
    """Store `clkt submit --reproduce`'s result on the pack's row, replacing an earlier one; False when no such
    pack is stored."""
    row = await session.get(SubmittedPack, pack_sha256)
    if row is None:
        return False
    row.reproduction = reproduction
    row.reproduced_at = utcnow()
    session.add(row)
    await session.flush()
    return True


async def submission_answers(session: AsyncSession, pack_sha256: str) -> bytes:
    """The pack's predictions.jsonl as submitted (gzip'd); b"" when no such pack is stored."""
    got = (await session.execute(select(col(SubmittedPack.answers)).where(col(SubmittedPack.pack_sha256) == pack_sha256))).scalar()
    return bytes(got) if got is not None else b""


async def submissions_answers(session: AsyncSession, pack_sha256s: Collection[str]) -> dict[str, bytes]:
    """The predictions.jsonl (gzip'd) of each of these packs that is stored, by pack sha256, in few queries."""
    wanted = sorted(set(pack_sha256s))
    out: dict[str, bytes] = {}
    for i in range(0, len(wanted), 400):
        q = select(col(SubmittedPack.pack_sha256), col(SubmittedPack.answers)).where(
            col(SubmittedPack.pack_sha256).in_(wanted[i:i + 400]))
        out.update((str(k), bytes(a)) for k, a in (await session.execute(q)).all())
    return out


async def submissions_open_answers(session: AsyncSession, pack_sha256s: Collection[str]) -> dict[str, bytes]:
    """The open answers as scored at intake (gzip'd) of each of these packs that has them, by pack sha256."""
    wanted = sorted(set(pack_sha256s))
    out: dict[str, bytes] = {}
    for i in range(0, len(wanted), 400):
        q = select(col(SubmittedPack.pack_sha256), col(SubmittedPack.open_answers)).where(
            col(SubmittedPack.pack_sha256).in_(wanted[i:i + 400]), col(SubmittedPack.open_answers).is_not(None))
        out.update((str(k), bytes(a)) for k, a in (await session.execute(q)).all() if a is not None)
    return out


async def submitted_names(session: AsyncSession) -> set[str]:
    """The target names of the submitted packs (names a leaderboard query may use)."""
    return {str(x) for x in (await session.execute(select(col(SubmittedPack.target_name)).distinct())).scalars()}

"""Read queries of the status pages (`clkt.web`): source cursors, GPU jobs, the entity table, one entity with
its documents and questions, snapshots, this period's fill. Every function returns frozen records; nothing
here writes.

The entity table is the only query over the whole entity table at page time: it filters on indexed columns
(domain, status, occurred_at), searches names with a LIKE whose wildcards in the user's text are literal,
and pages with LIMIT/OFFSET (OFFSET bounded by `MAX_OFFSET`, so a page number cannot ask SQLite to walk the
whole table for nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.entities import SUMMARY_COLUMNS, EntitySummary, summary_of
from storage.models import (
    Document,
    Entity,
    EntityStatus,
    GpuJob,
    LeaseStatus,
    Probe,
    Question,
    Snapshot,
    SnapshotStatus,
    SourceCursor,
    Translation,
)
from storage.types import stored_id

__all__ = [
    "MAX_OFFSET",
    "DocumentInfo",
    "EntityDetail",
    "EntityFilter",
    "EntityPage",
    "GpuJobInfo",
    "ProbeInfo",
    "QuestionInfo",
    "SnapshotInfo",
    "SourceCursorInfo",
    "TranslationInfo",
    "entity_detail",
    "entity_page",
    "entity_sources",
    "gpu_jobs",
    "ready_by_domain",
    "snapshot_info",
    "snapshots",
    "source_cursors",
]

MAX_OFFSET = 100_000  # deepest row a page may start at


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceCursorInfo:
    source: str
    watermark: datetime | None
    page: int  # 0: between windows; n: the next page of the current window
    updated_at: datetime
    entities: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuJobInfo:
    id: int
    snapshot_id: str
    target_model: str
    strategy: str
    train_lang: str
    status: str
    attempts: int
    max_attempts: int
    device: str | None
    best_epoch: int | None
    last_error: str | None
    updated_at: datetime
    seed: int = 0  # the job's training seed (`spec.seeds`)


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityFilter:
    search: str | None = None  # a substring of the name, or an exact external id
    domain: str | None = None
    source: str | None = None
    status: str | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityPage:
    rows: list[EntitySummary]
    total: int  # rows matching the filter
    offset: int
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInfo:
    lang: str
    origin: str
    producer: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TranslationInfo:
    lang: str
    question: str
    options: list[str]
    answer_index: int
    translator: str


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionInfo:
    id: int
    slot: str
    lang: str
    question: str
    options: list[str]
    answer_index: int
    evidence: str
    status: str
    status_reason: str | None
    generator: str
    translations: list[TranslationInfo] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeInfo:
    target_model: str
    lang: str
    known: bool
    reason: str
    judge: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityDetail:
    row: EntitySummary
    redated_from: datetime | None
    discovered_at: datetime
    documents: list[DocumentInfo]
    questions: list[QuestionInfo]
    probes: list[ProbeInfo]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotInfo:
    id: str
    spec: str
    period: str
    status: str
    partial: bool
    built_at: datetime
    export_path: str | None
    superseded_by: str | None
    manifest: Mapping[str, Any] | None  # the stored manifest JSON; None: not frozen yet (validated by the pages)


async def source_cursors(session: AsyncSession) -> list[SourceCursorInfo]:
    counts = dict((await session.execute(select(col(Entity.source), func.count()).group_by(col(Entity.source)))).all())
    rows = (await session.execute(
        select(col(SourceCursor.source), col(SourceCursor.watermark), col(SourceCursor.page), col(SourceCursor.updated_at)).order_by(col(SourceCursor.source))
    )).all()
    out = [SourceCursorInfo(source=s, watermark=w, page=int(p), updated_at=u, entities=int(counts.pop(s, 0))) for s, w, p, u in rows]
    return out


async def entity_sources(session: AsyncSession) -> list[str]:
    """The sources that have entities or a cursor (the table's source filter)."""
    a = (await session.execute(select(col(SourceCursor.source)))).scalars().all()
    b = (await session.execute(select(col(Entity.source)).distinct())).scalars().all()
    return sorted(set(a) | set(b))


async def gpu_jobs(session: AsyncSession, *, limit: int = 200) -> list[GpuJobInfo]:
    """Running and waiting jobs first, then the most recently finished."""
    order = case((col(GpuJob.status) == LeaseStatus.leased, 0), (col(GpuJob.status) == LeaseStatus.pending, 1), else_=2)
    rows = (await session.execute(
        select(col(GpuJob.id), col(GpuJob.snapshot_id), col(GpuJob.target_model), col(GpuJob.strategy), col(GpuJob.train_lang), col(GpuJob.status),
               col(GpuJob.attempts), col(GpuJob.max_attempts), col(GpuJob.device), col(GpuJob.best_epoch), col(GpuJob.last_error), col(GpuJob.updated_at),
               col(GpuJob.seed))
        .order_by(order, col(GpuJob.updated_at).desc(), col(GpuJob.id).desc()).limit(limit)
    )).all()
    return [
        GpuJobInfo(id=stored_id(r[0]), snapshot_id=r[1], target_model=r[2], strategy=r[3], train_lang=r[4], status=LeaseStatus(r[5]).value,
                   attempts=int(r[6]), max_attempts=int(r[7]), device=r[8], best_epoch=r[9], last_error=r[10], updated_at=r[11],
                   seed=int(r[12]))
        for r in rows
    ]


def _entity_where(f: EntityFilter) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if f.domain:
        conds.append(col(Entity.domain) == f.domain)
    if f.source:
        conds.append(col(Entity.source) == f.source)
    if f.status:
        conds.append(col(Entity.status) == EntityStatus(f.status))
    if f.occurred_after is not None:
        conds.append(col(Entity.occurred_at) >= f.occurred_after)
    if f.occurred_before is not None:
        conds.append(col(Entity.occurred_at) < f.occurred_before)
    if f.search:
        # autoescape: `%` and `_` typed by the user are literal characters, not wildcards
        conds.append(col(Entity.name).contains(f.search, autoescape=True) | (col(Entity.external_id) == f.search))
    return conds


async def entity_page(session: AsyncSession, f: EntityFilter) -> EntityPage:
    conds = _entity_where(f)
    offset = max(0, min(f.offset, MAX_OFFSET))
    limit = max(1, min(f.limit, 500))
    stmt = select(*SUMMARY_COLUMNS).where(*conds).order_by(col(Entity.occurred_at).desc(), col(Entity.id).desc()).offset(offset).limit(limit)
    rows = [summary_of(tuple(r)) for r in (await session.execute(stmt)).all()]
    total = int((await session.execute(select(func.count()).select_from(Entity).where(*conds))).scalar_one())
    return EntityPage(rows=rows, total=total, offset=offset, limit=limit)


async def entity_detail(session: AsyncSession, entity_id: int) -> EntityDetail | None:
    r = (await session.execute(select(*SUMMARY_COLUMNS, col(Entity.redated_from), col(Entity.discovered_at)).where(col(Entity.id) == entity_id))).first()
    if r is None:
        return None
    docs = [
        DocumentInfo(lang=lang, origin=origin, producer=producer, text=text)
        for lang, origin, producer, text in (await session.execute(
            select(col(Document.lang), col(Document.origin), col(Document.producer), col(Document.text)).where(col(Document.entity_id) == entity_id)
            .order_by((col(Document.origin) != "source"), col(Document.lang))
        )).all()
    ]
    qrows = (await session.execute(
        select(col(Question.id), col(Question.slot), col(Question.lang), col(Question.question), col(Question.options), col(Question.answer_index),
               col(Question.evidence), col(Question.status), col(Question.status_reason), col(Question.generator))
        .where(col(Question.entity_id) == entity_id).order_by(col(Question.id))
    )).all()
    trans: dict[int, list[TranslationInfo]] = {}
    if qrows:
        for qid, lang, text, opts, ans, who in (await session.execute(
            select(col(Translation.question_id), col(Translation.lang), col(Translation.question), col(Translation.options), col(Translation.answer_index),
                   col(Translation.translator))
            .where(col(Translation.question_id).in_([q[0] for q in qrows])).order_by(col(Translation.question_id), col(Translation.lang))
        )).all():
            trans.setdefault(int(qid), []).append(
                TranslationInfo(lang=lang, question=text, options=list(opts or []), answer_index=int(ans), translator=who)
            )
    questions = [
        QuestionInfo(id=stored_id(q[0]), slot=q[1], lang=q[2], question=q[3], options=list(q[4] or []), answer_index=int(q[5]), evidence=q[6],
                     status=str(getattr(q[7], "value", q[7])), status_reason=q[8], generator=q[9], translations=trans.get(stored_id(q[0]), []))
        for q in qrows
    ]
    probes = [
        ProbeInfo(target_model=m, lang=lang, known=bool(k), reason=reason, judge=judge)
        for m, lang, k, reason, judge in (await session.execute(
            select(col(Probe.target_model), col(Probe.lang), col(Probe.known), col(Probe.reason), col(Probe.judge)).where(col(Probe.entity_id) == entity_id)
            .order_by(col(Probe.target_model), col(Probe.lang))
        )).all()
    ]
    return EntityDetail(row=summary_of(tuple(r[:8])), redated_from=r[8], discovered_at=r[9], documents=docs, questions=questions,
                        probes=probes)


def _snapshot_info(row: Snapshot) -> SnapshotInfo:
    return SnapshotInfo(
        id=row.id, spec=row.spec, period=row.period, status=SnapshotStatus(row.status).value, partial=bool(row.partial),
        built_at=row.built_at, export_path=row.export_path, superseded_by=row.superseded_by, manifest=row.manifest or None,
    )


async def snapshots(session: AsyncSession, *, limit: int = 200) -> list[SnapshotInfo]:
    rows = (await session.execute(
        select(Snapshot).order_by(col(Snapshot.period).desc(), col(Snapshot.built_at).desc()).limit(limit)
    )).scalars().all()
    return [_snapshot_info(r) for r in rows]


async def snapshot_info(session: AsyncSession, snapshot_id: str) -> SnapshotInfo | None:
    row = await session.get(Snapshot, snapshot_id)
    return None if row is None else _snapshot_info(row)


async def ready_by_domain(session: AsyncSession, *, start: datetime, end: datetime) -> dict[str, int]:
    """Ready entities per domain that occurred in [start, end): what this period's snapshot can take."""
    rows = (await session.execute(
        select(col(Entity.domain), func.count())
        .where(col(Entity.status) == EntityStatus.ready, col(Entity.occurred_at) >= start, col(Entity.occurred_at) < end)
        .group_by(col(Entity.domain))
    )).all()
    return {str(d): int(n) for d, n in rows}

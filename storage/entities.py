"""Entity repository: upsert crawled entities with their canonical document, read them back as
`StoredEntity` records, the documents of an entity (the source document and its translations), count
skipped records, read and write source cursors (`CursorRecord`).

`upsert_entity` is keyed by (source, external_id) and a content hash of the payload: a new entity is
inserted; a changed payload updates the row and its source document (never a second row); an unchanged
payload writes nothing. The caller runs it inside the transaction that also enqueues the gate task.

Documents belong to this aggregate: one row per (entity, language); `origin` "source" is written by
`upsert_entity`, "translation" by `add_translated_documents` (the translate stage, insert-or-ignore).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.facts import EntityRecord, RenderedDocument
from storage.models import Document, Entity, EntityStatus, LeaseStatus, SkipCount, SourceCursor, Stage, Task
from storage.tasks import insert_ignore
from storage.types import utcnow

if TYPE_CHECKING:
    from clkt.outputs import TranslatedDocument

__all__ = [
    "SUMMARY_COLUMNS",
    "CursorRecord",
    "EntityQuery",
    "EntitySummary",
    "StoredEntity",
    "UpsertOutcome",
    "UpsertResult",
    "add_translated_documents",
    "count_entities",
    "count_matching",
    "document_langs",
    "document_text",
    "entity_by_key",
    "existing_ids",
    "get_entity",
    "load_cursor",
    "payload_hash",
    "query_entities",
    "record_skip",
    "save_cursor",
    "set_status",
    "skip_counts",
    "store_unavailable",
    "summary_of",
    "text_hash",
    "upsert_entity",
]

SOURCE_LANG = "en"


class UpsertOutcome(str, Enum):
    inserted = "inserted"
    updated = "updated"
    unchanged = "unchanged"


@dataclass(frozen=True, slots=True)
class UpsertResult:
    entity_id: int
    outcome: UpsertOutcome


@dataclass(frozen=True, slots=True)
class StoredEntity:
    """An entity as stored. `facts` is the stored JSON of its `clkt.facts.EntityFacts` (parse it with
    `clkt.pipeline._entities.facts_of`); the raw API payload is not carried."""

    id: int
    source: str
    external_id: str
    domain: str
    name: str
    occurred_at: datetime
    facts: Mapping[str, Any]
    content_hash: str
    status: EntityStatus
    status_reason: str | None
    redated_from: datetime | None


@dataclass(frozen=True, slots=True)
class CursorRecord:
    """Where a source's poller is: the watermark (end of the last complete window), the next page of the
    window in progress (0 = none) and that window's bounds in `state` (JSON: `window_start`, `window_end`)."""

    source: str
    watermark: datetime | None
    page: int
    state: Mapping[str, Any]


def _entity_of(row: Entity) -> StoredEntity:
    assert row.id is not None
    return StoredEntity(
        id=row.id, source=row.source, external_id=row.external_id, domain=row.domain, name=row.name,
        occurred_at=row.occurred_at, facts=row.facts, content_hash=row.content_hash, status=EntityStatus(row.status),
        status_reason=row.status_reason, redated_from=row.redated_from,
    )


def store_unavailable(error: BaseException) -> bool:
    """True when `error` says the store itself failed (locked, gone), not the data written to it."""
    return isinstance(error, OperationalError)


def payload_hash(payload: Any) -> str:
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


async def _row_by_key(session: AsyncSession, source: str, external_id: str) -> Entity | None:
    return (
        await session.execute(select(Entity).where(col(Entity.source) == source, col(Entity.external_id) == external_id))
    ).scalar_one_or_none()


async def entity_by_key(session: AsyncSession, source: str, external_id: str) -> StoredEntity | None:
    row = await _row_by_key(session, source, external_id)
    return None if row is None else _entity_of(row)


async def get_entity(session: AsyncSession, entity_id: int) -> StoredEntity | None:
    row = await session.get(Entity, entity_id)
    return None if row is None else _entity_of(row)


async def document_text(session: AsyncSession, entity_id: int, lang: str) -> str | None:
    """The text of the entity's document in `lang` (None when there is none)."""
    row = (
        await session.execute(select(Document).where(col(Document.entity_id) == entity_id, col(Document.lang) == lang))
    ).scalar_one_or_none()
    return None if row is None else row.text


async def document_langs(session: AsyncSession, entity_id: int) -> set[str]:
    """The languages the entity has a document in (source and translations)."""
    rows = (await session.execute(select(Document).where(col(Document.entity_id) == entity_id))).scalars()
    return {d.lang for d in rows}


async def add_translated_documents(
    session: AsyncSession, *, entity_id: int, content_hash: str, documents: Sequence[TranslatedDocument],
    producer: str, prompt_version: str, created_at: datetime,
) -> int:
    """Store translations of the entity's document (origin "translation"); an existing language is kept.
    Returns how many rows were new."""
    rows = [
        dict(
            entity_id=entity_id, lang=d.lang, origin="translation", text=d.text, text_hash=text_hash(d.text),
            producer=producer, prompt_version=prompt_version, content_hash=content_hash, created_at=created_at,
        )
        for d in documents
    ]
    return await insert_ignore(session, Document, rows)


async def existing_ids(session: AsyncSession, source: str, external_ids: list[str]) -> set[str]:
    if not external_ids:
        return set()
    rows = await session.execute(
        select(col(Entity.external_id)).where(col(Entity.source) == source, col(Entity.external_id).in_(external_ids))
    )
    return {r[0] for r in rows}


async def count_entities(session: AsyncSession, source: str | None = None) -> int:
    stmt = select(func.count()).select_from(Entity)
    if source is not None:
        stmt = stmt.where(col(Entity.source) == source)
    return int((await session.execute(stmt)).scalar_one())


async def _put_document(session: AsyncSession, entity_id: int, doc: RenderedDocument, content_hash: str, producer: str) -> None:
    existing = (
        await session.execute(select(Document).where(col(Document.entity_id) == entity_id, col(Document.lang) == doc.lang))
    ).scalar_one_or_none()
    th = text_hash(doc.text)
    if existing is None:
        session.add(Document(entity_id=entity_id, lang=doc.lang, origin="source", text=doc.text, text_hash=th,
                             producer=producer, content_hash=content_hash))
    elif existing.text_hash != th or existing.content_hash != content_hash:
        existing.text = doc.text
        existing.text_hash = th
        existing.content_hash = content_hash
        existing.producer = producer
        existing.created_at = utcnow()
    await session.flush()


async def upsert_entity(
    session: AsyncSession, record: EntityRecord, document: RenderedDocument, *, producer: str = "renderer"
) -> UpsertResult:
    """Insert, update or leave the entity of `record` (and its source document) by content hash."""
    h = payload_hash(record.payload)
    facts = record.facts.model_dump(mode="json")
    now = utcnow()
    row = await _row_by_key(session, record.source, record.external_id)
    if row is None:
        values = dict(
            source=record.source, external_id=record.external_id, domain=record.domain.value, name=record.name,
            occurred_at=record.occurred_at, payload=record.payload, facts=facts, content_hash=h,
            status=EntityStatus.discovered, redated_from=record.redated_from, discovered_at=now, updated_at=now,
        )
        ins = pg_insert(Entity) if _dialect(session) == "postgresql" else sqlite_insert(Entity)
        res = await session.execute(
            ins.values(**values).on_conflict_do_nothing(index_elements=["source", "external_id"]).returning(col(Entity.id))
        )
        new_id = res.scalar_one_or_none()
        if new_id is None:  # a concurrent writer inserted it first: fall through to the update path
            row = await _row_by_key(session, record.source, record.external_id)
            assert row is not None
        else:
            await _put_document(session, int(new_id), document, h, producer)
            return UpsertResult(int(new_id), UpsertOutcome.inserted)
    assert row.id is not None
    if row.content_hash == h:
        return UpsertResult(row.id, UpsertOutcome.unchanged)
    moved = row.occurred_at != record.occurred_at
    row.name = record.name
    row.domain = record.domain.value
    row.occurred_at = record.occurred_at
    row.payload = record.payload
    row.facts = facts
    row.content_hash = h
    row.redated_from = record.redated_from
    row.updated_at = now
    if moved and row.status in (EntityStatus.discovered, EntityStatus.ineligible):
        # the date changed before the entity went further: it must pass the gate again
        row.status = EntityStatus.discovered
        row.status_reason = None
        await session.execute(
            update(Task)
            .where(col(Task.stage) == Stage.gate, col(Task.entity_id) == row.id, col(Task.status) == LeaseStatus.done)
            .values(status=LeaseStatus.pending, attempts=0, not_before=now, updated_at=now)
            .execution_options(synchronize_session=False)
        )
    await session.flush()
    await _put_document(session, row.id, document, h, producer)
    return UpsertResult(row.id, UpsertOutcome.updated)


async def set_status(session: AsyncSession, entity_id: int, status: EntityStatus, reason: str | None = None) -> None:
    await session.execute(
        update(Entity).where(col(Entity.id) == entity_id)
        .values(status=status, status_reason=reason, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


async def record_skip(session: AsyncSession, source: str, reason: str, detail: str | None = None) -> None:
    """Count one skipped record under (source, reason)."""
    now = utcnow()
    values = dict(source=source, reason=reason[:128], count=1, last_detail=(detail or "")[:1000] or None, updated_at=now)
    ins = pg_insert(SkipCount) if _dialect(session) == "postgresql" else sqlite_insert(SkipCount)
    stmt = ins.values(**values).on_conflict_do_update(
        index_elements=["source", "reason"],
        set_={"count": col(SkipCount.count) + 1, "last_detail": values["last_detail"], "updated_at": now},
    )
    await session.execute(stmt)


async def skip_counts(session: AsyncSession, source: str | None = None) -> dict[tuple[str, str], int]:
    stmt = select(col(SkipCount.source), col(SkipCount.reason), col(SkipCount.count))
    if source is not None:
        stmt = stmt.where(col(SkipCount.source) == source)
    return {(s, r): int(n) for s, r, n in (await session.execute(stmt)).all()}


async def load_cursor(session: AsyncSession, source: str) -> CursorRecord | None:
    row = await session.get(SourceCursor, source)
    if row is None:
        return None
    return CursorRecord(source=row.source, watermark=row.watermark, page=row.page, state=dict(row.state))


async def save_cursor(
    session: AsyncSession, source: str, *, watermark: datetime | None, page: int, state: Mapping[str, Any],
) -> None:
    row = await session.get(SourceCursor, source)
    if row is None:
        session.add(SourceCursor(source=source, watermark=watermark, page=page, state=dict(state), updated_at=utcnow()))
    else:
        row.watermark = watermark
        row.page = page
        row.state = dict(state)
        row.updated_at = utcnow()
    await session.flush()


@dataclass(frozen=True, slots=True, kw_only=True)
class EntitySummary:
    """One line of an entity listing (`clkt entities`, the status pages): who, when, where it stands."""

    id: int
    source: str
    external_id: str
    domain: str
    name: str
    occurred_at: datetime
    status: str
    status_reason: str | None


SUMMARY_COLUMNS = (col(Entity.id), col(Entity.source), col(Entity.external_id), col(Entity.domain), col(Entity.name), col(Entity.occurred_at),
                   col(Entity.status), col(Entity.status_reason))


def summary_of(r: Sequence[Any]) -> EntitySummary:
    """An `EntitySummary` from a row of `SUMMARY_COLUMNS`."""
    return EntitySummary(
        id=int(r[0]), source=str(r[1]), external_id=str(r[2]), domain=str(r[3]), name=str(r[4]),
        occurred_at=r[5], status=EntityStatus(r[6]).value, status_reason=r[7],
    )


class EntityQuery(BaseModel):
    """`clkt entities`: filters (all optional) and how many rows, newest first."""

    domain: str | None = None
    occurred_after: datetime | None = None
    status: str | None = None
    limit: int = 50


def _filtered(stmt: Any, q: EntityQuery) -> Any:
    if q.domain:
        stmt = stmt.where(col(Entity.domain) == q.domain)
    if q.occurred_after:
        stmt = stmt.where(col(Entity.occurred_at) >= q.occurred_after)
    if q.status:
        stmt = stmt.where(col(Entity.status) == EntityStatus(q.status))
    return stmt


async def query_entities(session: AsyncSession, q: EntityQuery) -> list[EntitySummary]:
    stmt = _filtered(select(*SUMMARY_COLUMNS), q)
    stmt = stmt.order_by(col(Entity.occurred_at).desc(), col(Entity.id).desc()).limit(q.limit)
    return [summary_of(tuple(r)) for r in (await session.execute(stmt)).all()]


async def count_matching(session: AsyncSession, q: EntityQuery) -> int:
    """How many entities match `q`'s filters (its limit aside)."""
    return int((await session.execute(_filtered(select(func.count()).select_from(Entity), q))).scalar_one())

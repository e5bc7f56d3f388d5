"""The snapshots' repository: every query a snapshot's selection, content, freeze and read-back makes.

Contracts:

- Reads return frozen records defined here (`SnapshotRecord`, `StoredItem`, `CandidateEntity`,
  `ContentRows`, ...), never a table row. A record carries the store's row ids (`col(Entity.id)`,
  `col(Question.id)`) and each question's stable identity (entity source, external id, slot); the public ids
  that a snapshot's files and content hash use are derived from that identity above storage
  (`clkt.snapshots.ids`), so nothing here decides an order or a key of the snapshot's content.
- Large id lists are read in chunks of `_CHUNK` ids per `IN (...)`.
- `freeze_snapshot` writes, in the caller's transaction and in this order: the superseding of the previous
  revision (first, so one frozen row per period holds at every flush), the frozen `Snapshot` row (flushed), its
  `SnapshotItem` rows, where its entities landed and the expiry of those that waited too long
  (`storage.placements`: a placement another builder made meanwhile fails the flush), the `snapshot.frozen` event, a `ready`
  validity row (`storage.targets`) for every target it was built for (the selection kept only entities every
  one of them was probed clean on, so each is valid on all of them), then the caller's hook (which enqueues
  the GPU jobs in the same transaction), then a flush, so a failing write raises before the caller publishes
  the export folder.
- `manifest`, `audit` and an event's `data` are JSON payloads (`dict[str, Any]` as the JSON columns keep
  them), not rows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.errors import FreezeConflict, UserError
from storage.models import (
    Document,
    Entity,
    EntityStatus,
    Event,
    Probe,
    Question,
    QuestionStatus,
    Snapshot,
    SnapshotItem,
    SnapshotStatus,
    SnapshotTargetStatus,
    Translation,
)
from storage.placements import NewPlacement, expire_entities, place_entities
from storage.questions import QuestionRecord, question_record
from storage.targets import record_snapshot_target

__all__ = [
    "CandidateEntity",
    "CandidateQuestion",
    "ContentDocument",
    "ContentEntity",
    "ContentRows",
    "ContentTranslation",
    "FrozenHook",
    "NewSnapshot",
    "NewSnapshotItem",
    "ProbeMark",
    "SnapshotRecord",
    "StoredItem",
    "add_event",
    "candidate_entities",
    "content_rows",
    "count_revisions",
    "entity_identities",
    "find_snapshot",
    "freeze_snapshot",
    "frozen_manifests",
    "frozen_periods",
    "frozen_snapshot",
    "get_snapshot",
    "list_snapshots",
    "question_identities",
    "set_snapshot_audit",
    "stored_items",
]

_CHUNK = 500  # ids per IN (...) list


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRecord:
    """One `Snapshot` row."""

    id: str
    spec: str
    period: str
    status: SnapshotStatus
    content_sha256: str
    seed: int
    partial: bool
    manifest: dict[str, Any]  # the JSON manifest (`clkt.snapshots.layout.SnapshotManifest` dumped)
    audit: dict[str, Any]  # the JSON audit score, {} until `clkt audit score`
    export_path: str | None
    superseded_by: str | None
    built_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSnapshot:
    """What `freeze_snapshot` writes as a frozen `Snapshot` row."""

    id: str
    spec: str
    period: str
    content_sha256: str
    seed: int
    partial: bool
    manifest: dict[str, Any]
    export_path: str
    built_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSnapshotItem:
    """One `SnapshotItem` to write: the store rows a snapshot question references and how it is shown."""

    question_id: int
    entity_id: int
    split: str
    option_order: tuple[int, ...]
    answer_letter: str
    qid: int | None = None  # the public ids (clkt.snapshots.ids), shown by the SQL views
    public_entity_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredItem:
    """A `SnapshotItem` with its question's identity; `source`/`external_id`/`slot` are None when the question
    (or its entity) it references is gone from the store."""

    question_id: int
    entity_id: int
    split: str
    option_order: tuple[int, ...]
    answer_letter: str
    source: str | None
    external_id: str | None
    slot: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeMark:
    target_model: str
    known: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateQuestion:
    """A translated question of a candidate entity, with the shape of each of its translations."""

    id: int
    slot: str
    lang: str
    n_options: int
    answer_index: int
    translations: dict[str, tuple[int, int]]  # lang -> (number of options, answer index)


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateEntity:
    """A ready entity of a period with what the selection checks: probes, document languages, questions."""

    id: int
    source: str
    external_id: str
    domain: str
    occurred_at: datetime
    probes: tuple[ProbeMark, ...]
    doc_langs: frozenset[str]
    questions: tuple[CandidateQuestion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentEntity:
    id: int
    source: str
    external_id: str
    domain: str
    name: str
    redated_from: datetime | None
    facts: dict[str, Any] = field(default_factory=dict)  # the entity's typed facts (`clkt.facts`) as JSON


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentDocument:
    entity_id: int
    lang: str
    text: str
    producer: str
    prompt_version: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentTranslation:
    question_id: int
    lang: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    translator: str
    prompt_version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentRows:
    """The rows a snapshot's content is laid out from, keyed by row id (and language)."""

    entities: dict[int, ContentEntity]
    documents: dict[tuple[int, str], ContentDocument]
    questions: dict[int, QuestionRecord]
    translations: dict[tuple[int, str], ContentTranslation]


FrozenHook = Callable[[AsyncSession, SnapshotRecord], Awaitable[None]]


def _chunks(ids: Sequence[int]) -> list[list[int]]:
    return [list(ids[i : i + _CHUNK]) for i in range(0, len(ids), _CHUNK)]


def _record(row: Snapshot) -> SnapshotRecord:
    return SnapshotRecord(
        id=row.id, spec=row.spec, period=row.period, status=SnapshotStatus(row.status),
        content_sha256=row.content_sha256, seed=row.seed, partial=row.partial, manifest=dict(row.manifest or {}),
        audit=dict(row.audit or {}), export_path=row.export_path, superseded_by=row.superseded_by,
        built_at=row.built_at,
    )


# -- snapshots ----------------------------------------------------------------------------------------------------


async def list_snapshots(session: AsyncSession, *, spec: str | None = None) -> list[SnapshotRecord]:
    """Newest period first, then newest build first."""
    q = select(Snapshot).order_by(col(Snapshot.period).desc(), col(Snapshot.built_at).desc())
    if spec is not None:
        q = q.where(col(Snapshot.spec) == spec)
    return [_record(r) for r in (await session.execute(q)).scalars().all()]


async def _get_row(session: AsyncSession, ident: str) -> Snapshot:
    row = await session.get(Snapshot, ident)
    if row is not None:
        return row
    if not ident:
        raise UserError("a snapshot id (or a unique prefix of one) is required")
    # autoescape: `%` and `_` in what the user typed are literal characters, not LIKE wildcards
    rows = (await session.execute(select(Snapshot).where(col(Snapshot.id).startswith(ident, autoescape=True)))).scalars().all()
    if len(rows) == 1:
        return rows[0]
    if not rows:
        raise UserError(f"unknown snapshot {ident!r} (see `clkt snapshot list`)")
    raise UserError(f"snapshot {ident!r} is ambiguous: {', '.join(sorted(r.id for r in rows))}")


async def get_snapshot(session: AsyncSession, ident: str) -> SnapshotRecord:
    """By id, or by a unique id prefix; `UserError` naming the choices otherwise."""
    return _record(await _get_row(session, ident))


async def find_snapshot(session: AsyncSession, snapshot_id: str) -> SnapshotRecord | None:
    """By exact id; None when there is none."""
    row = await session.get(Snapshot, snapshot_id)
    return _record(row) if row is not None else None


async def frozen_snapshot(session: AsyncSession, spec: str, period: str) -> SnapshotRecord | None:
    """The spec's frozen snapshot of `period`, if any."""
    row = (
        await session.execute(
            select(Snapshot).where(col(Snapshot.spec) == spec, col(Snapshot.period) == period, col(Snapshot.status) == SnapshotStatus.frozen)
        )
    ).scalars().first()
    return _record(row) if row is not None else None


async def count_revisions(session: AsyncSession, spec: str, period: str) -> int:
    """How many snapshots (any status) the spec has for `period`: the next build's revision."""
    return int(
        (
            await session.execute(
                select(func.count()).select_from(Snapshot).where(col(Snapshot.spec) == spec, col(Snapshot.period) == period)
            )
        ).scalar_one()
    )


async def frozen_manifests(session: AsyncSession, spec: str) -> list[dict[str, Any]]:
    """The JSON manifests of the spec's frozen snapshots."""
    rows = (
        await session.execute(
            select(col(Snapshot.manifest)).where(col(Snapshot.spec) == spec, col(Snapshot.status) == SnapshotStatus.frozen)
        )
    ).scalars().all()
    return list(rows)


async def frozen_periods(session: AsyncSession, spec: str) -> set[str]:
    """The period labels that have a frozen snapshot of `spec`."""
    rows = await session.execute(
        select(col(Snapshot.period)).where(col(Snapshot.spec) == spec, col(Snapshot.status) == SnapshotStatus.frozen)
    )
    return {str(r) for (r,) in rows}


async def set_snapshot_audit(session: AsyncSession, ident: str, audit: Mapping[str, Any]) -> SnapshotRecord:
    """Store `audit` (a JSON payload) on the snapshot named by `ident` (id or unique prefix, as `get_snapshot`)."""
    row = await _get_row(session, ident)
    row.audit = dict(audit)
    session.add(row)
    await session.flush()
    return _record(row)


async def stored_items(session: AsyncSession, snapshot_id: str) -> list[StoredItem]:
    """The snapshot's `SnapshotItem` rows with their question's identity (unordered)."""
    rows = (
        await session.execute(
            select(SnapshotItem, col(Entity.source), col(Entity.external_id), col(Question.slot))
            .outerjoin(Question, col(Question.id) == col(SnapshotItem.question_id))
            .outerjoin(Entity, col(Entity.id) == col(Question.entity_id))
            .where(col(SnapshotItem.snapshot_id) == snapshot_id)
        )
    ).all()
    return [
        StoredItem(
            question_id=r.question_id, entity_id=r.entity_id, split=r.split, option_order=tuple(r.option_order),
            answer_letter=r.answer_letter, source=source, external_id=external_id, slot=slot,
        )
        for r, source, external_id, slot in rows
    ]


async def question_identities(session: AsyncSession, question_ids: Sequence[int]) -> dict[int, tuple[str, str, str]]:
    """Store question row -> its identity (entity source, entity external id, slot): what its public ids derive from
    (`clkt.snapshots.ids`). Rows that are gone are left out."""
    out: dict[int, tuple[str, str, str]] = {}
    ids = sorted(set(question_ids))
    for i in range(0, len(ids), 500):
        rows = await session.execute(
            select(col(Question.id), col(Entity.source), col(Entity.external_id), col(Question.slot))
            .join(Entity, col(Entity.id) == col(Question.entity_id))
            .where(col(Question.id).in_(ids[i : i + 500]))
        )
        out.update({qid: (source, external_id, slot) for qid, source, external_id, slot in rows if qid is not None})
    return out


async def entity_identities(session: AsyncSession, entity_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """Store entity row -> its identity (source, external id): what its public id derives from
    (`clkt.snapshots.ids.stable_entity_id`). Rows that are gone are left out."""
    out: dict[int, tuple[str, str]] = {}
    ids = sorted(set(entity_ids))
    for i in range(0, len(ids), _CHUNK):
        rows = await session.execute(
            select(col(Entity.id), col(Entity.source), col(Entity.external_id)).where(col(Entity.id).in_(ids[i : i + _CHUNK]))
        )
        out.update({eid: (source, external_id) for eid, source, external_id in rows if eid is not None})
    return out


# -- the selection's candidates -----------------------------------------------------------------------------------


async def candidate_entities(
    session: AsyncSession, *, domains: Sequence[str], start: datetime, end: datetime,
    status: EntityStatus = EntityStatus.ready,
) -> list[CandidateEntity]:
    """Entities in `status` (ready; `known` for the locality split) of `domains` that occurred in [start, end),
    with their probes, document languages and translated questions (each with its translations' shapes), in the
    order the store returns them."""
    ents = (
        await session.execute(
            select(Entity).where(
                col(Entity.status) == status,
                col(Entity.occurred_at) >= start,
                col(Entity.occurred_at) < end,
                col(Entity.domain).in_(list(domains)),
            )
        )
    ).scalars().all()
    ids = sorted(e.id for e in ents if e.id is not None)
    probes: dict[int, list[ProbeMark]] = {}
    doc_langs: dict[int, set[str]] = {}
    questions: dict[int, list[Question]] = {}
    for chunk in _chunks(ids):
        for eid, model, known in (
            await session.execute(select(col(Probe.entity_id), col(Probe.target_model), col(Probe.known)).where(col(Probe.entity_id).in_(chunk)))
        ).all():
            probes.setdefault(eid, []).append(ProbeMark(target_model=model, known=bool(known)))
        for eid, lang in (
            await session.execute(select(col(Document.entity_id), col(Document.lang)).where(col(Document.entity_id).in_(chunk)))
        ).all():
            doc_langs.setdefault(eid, set()).add(lang)
        for q in (
            await session.execute(
                select(Question).where(col(Question.entity_id).in_(chunk), col(Question.status) == QuestionStatus.translated)
            )
        ).scalars().all():
            questions.setdefault(q.entity_id, []).append(q)
    qids = sorted(q.id for qs in questions.values() for q in qs if q.id is not None)
    tr: dict[int, dict[str, tuple[int, int]]] = {}
    for chunk in _chunks(qids):
        for qid, lang, opts, ans in (
            await session.execute(
                select(col(Translation.question_id), col(Translation.lang), col(Translation.options), col(Translation.answer_index)).where(
                    col(Translation.question_id).in_(chunk)
                )
            )
        ).all():
            tr.setdefault(qid, {})[lang] = (len(opts), int(ans))
    out: list[CandidateEntity] = []
    for e in ents:
        assert e.id is not None
        qs: list[CandidateQuestion] = []
        for q in questions.get(e.id, []):
            assert q.id is not None
            qs.append(
                CandidateQuestion(
                    id=q.id, slot=q.slot, lang=q.lang, n_options=len(q.options), answer_index=q.answer_index,
                    translations=tr.get(q.id, {}),
                )
            )
        out.append(
            CandidateEntity(
                id=e.id, source=e.source, external_id=e.external_id, domain=e.domain, occurred_at=e.occurred_at,
                probes=tuple(probes.get(e.id, [])), doc_langs=frozenset(doc_langs.get(e.id, set())), questions=tuple(qs),
            )
        )
    return out


# -- the content ---------------------------------------------------------------------------------------------------


async def content_rows(
    session: AsyncSession, *, entity_ids: Sequence[int], question_ids: Sequence[int], languages: Sequence[str]
) -> ContentRows:
    """The entities, their documents in `languages`, the questions and their translations in `languages`."""
    langs = list(languages)
    ents: dict[int, ContentEntity] = {}
    docs: dict[tuple[int, str], ContentDocument] = {}
    qs: dict[int, QuestionRecord] = {}
    trs: dict[tuple[int, str], ContentTranslation] = {}
    for chunk in _chunks(entity_ids):
        for e in (await session.execute(select(Entity).where(col(Entity.id).in_(chunk)))).scalars():
            assert e.id is not None
            ents[e.id] = ContentEntity(
                id=e.id, source=e.source, external_id=e.external_id, domain=e.domain, name=e.name,
                redated_from=e.redated_from, facts=dict(e.facts or {}),
            )
        for d in (
            await session.execute(select(Document).where(col(Document.entity_id).in_(chunk), col(Document.lang).in_(langs)))
        ).scalars():
            docs[(d.entity_id, d.lang)] = ContentDocument(
                entity_id=d.entity_id, lang=d.lang, text=d.text, producer=d.producer, prompt_version=d.prompt_version
            )
    for chunk in _chunks(question_ids):
        for q in (await session.execute(select(Question).where(col(Question.id).in_(chunk)))).scalars():
            assert q.id is not None
            qs[q.id] = question_record(q)
        for t in (
            await session.execute(select(Translation).where(col(Translation.question_id).in_(chunk), col(Translation.lang).in_(langs)))
        ).scalars():
            trs[(t.question_id, t.lang)] = ContentTranslation(
                question_id=t.question_id, lang=t.lang, question=t.question, options=tuple(t.options),
                answer_index=t.answer_index, translator=t.translator, prompt_version=t.prompt_version,
            )
    return ContentRows(entities=ents, documents=docs, questions=qs, translations=trs)


# -- freezing ------------------------------------------------------------------------------------------------------


async def freeze_snapshot(
    session: AsyncSession,
    *,
    snapshot: NewSnapshot,
    items: Sequence[NewSnapshotItem],
    supersedes: str | None,
    superseded_export_path: str | None,
    event_message: str,
    event_data: Mapping[str, Any],
    on_frozen: FrozenHook | None = None,
    targets: Sequence[str] = (),
    placements: Sequence[NewPlacement] = (),
    expire: Sequence[int] = (),
) -> SnapshotRecord:
    """Write a frozen snapshot, its items, the superseding of `supersedes` (whose export moved to
    `superseded_export_path`), where its entities landed (`placements`, `storage.placements`), the expiry of the
    ready entities in `expire` that waited too long, its `snapshot.frozen` event and a `ready` row for each of
    `targets` (the targets it was built for); then run `on_frozen` and flush (see the module docstring). In the
    caller's transaction.

    A period another builder froze meanwhile, or an entity it placed, is a `FreezeConflict` (the store's unique keys
    refuse the second write, on SQLite and PostgreSQL; SQLite may refuse it as a stale write); the caller's
    transaction then rolls back whole."""
    with _as_conflict(snapshot):
        row = await _frozen_row(session, snapshot, supersedes=supersedes, superseded_export_path=superseded_export_path)
        session.add_all(
            SnapshotItem(
                snapshot_id=row.id, question_id=it.question_id, entity_id=it.entity_id, split=it.split,
                option_order=list(it.option_order), answer_letter=it.answer_letter, qid=it.qid,
                public_entity_id=it.public_entity_id,
            )
            for it in items
        )
        await place_entities(session, spec=row.spec, snapshot_id=row.id, placements=placements, supersedes=supersedes,
                             now=snapshot.built_at)
        if expire:
            await expire_entities(session, spec=row.spec, entity_ids=expire,
                                  reason=f"expired: in no snapshot by {row.period}", now=snapshot.built_at)
    session.add(Event(ts=snapshot.built_at, kind="snapshot.frozen", message=event_message, data=dict(event_data)))
    entities = len({it.entity_id for it in items})
    for name in dict.fromkeys(targets):
        await record_snapshot_target(session, snapshot_id=row.id, target=name, status=SnapshotTargetStatus.ready,
                                     entities=entities, now=snapshot.built_at)
    record = _record(row)
    if on_frozen is not None:
        await on_frozen(session, record)
    await session.flush()
    return record


@contextmanager
def _as_conflict(snapshot: NewSnapshot) -> Iterator[None]:
    """A unique key another builder's write holds (or, on SQLite, a stale write) as a `FreezeConflict`."""
    try:
        yield
    except IntegrityError as e:
        raise FreezeConflict(f"{snapshot.spec} {snapshot.period}: another builder froze the period or placed one of its "
                             f"entities meanwhile; nothing written ({e.orig})") from e
    except OperationalError as e:
        if "locked" not in str(e).lower():
            raise
        raise FreezeConflict(f"{snapshot.spec} {snapshot.period}: the store changed under this build (another writer); "
                             f"nothing written ({e.orig})") from e


async def _frozen_row(
    session: AsyncSession, snapshot: NewSnapshot, *, supersedes: str | None, superseded_export_path: str | None
) -> Snapshot:
    """The superseding of `supersedes` first (one frozen snapshot per period, `uq_snapshot_frozen_period`, holds at
    every flush), then the new frozen row (flushed)."""
    if supersedes is not None:
        await session.execute(
            update(Snapshot).where(col(Snapshot.id) == supersedes).values(
                status=SnapshotStatus.superseded, export_path=superseded_export_path,
            )
        )
    row = Snapshot(
        id=snapshot.id, spec=snapshot.spec, period=snapshot.period, status=SnapshotStatus.frozen,
        content_sha256=snapshot.content_sha256, seed=snapshot.seed, partial=snapshot.partial,
        manifest=dict(snapshot.manifest), export_path=snapshot.export_path, built_at=snapshot.built_at,
    )
    session.add(row)
    await session.flush()
    if supersedes is not None:
        await session.execute(update(Snapshot).where(col(Snapshot.id) == supersedes).values(superseded_by=row.id))
    return row


async def add_event(session: AsyncSession, *, ts: datetime, kind: str, message: str, data: Mapping[str, Any]) -> None:
    """Log an `Event` (the snapshot service's notices: under quota, webhook failed, check failed)."""
    session.add(Event(ts=ts, kind=kind, message=message, data=dict(data)))

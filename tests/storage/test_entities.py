"""The entity repository's reads as records: entities, their documents, source cursors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError

from clkt.outputs import TranslatedDocument
from storage.engine import Store
from storage.entities import (
    CursorRecord,
    StoredEntity,
    add_translated_documents,
    document_langs,
    document_text,
    entity_by_key,
    get_entity,
    load_cursor,
    save_cursor,
    set_status,
    store_unavailable,
    text_hash,
)
from storage.enums import EntityStatus
from storage.models import Document, Entity

WHEN = datetime(2025, 9, 1, tzinfo=UTC)


async def _seed(store: Store) -> int:
    async with store.transaction() as s:
        e = Entity(source="src", external_id="x1", domain="sports", name="A match", occurred_at=WHEN,
                   payload={"raw": 1}, facts={"kind": "sports", "home": "A"}, content_hash="h1",
                   status=EntityStatus.probing)
        s.add(e)
        await s.flush()
        assert e.id is not None
        s.add(Document(entity_id=e.id, lang="en", origin="source", text="The source text.",
                       text_hash=text_hash("The source text."), content_hash="h1"))
        return e.id


async def test_entities_come_back_as_records(store: Store) -> None:
    entity_id = await _seed(store)
    async with store.session() as s:
        by_id = await get_entity(s, entity_id)
        by_key = await entity_by_key(s, "src", "x1")
        assert await get_entity(s, entity_id + 1) is None
        assert await entity_by_key(s, "src", "nope") is None
    assert isinstance(by_id, StoredEntity) and by_id == by_key
    assert (by_id.id, by_id.source, by_id.external_id, by_id.domain, by_id.name) == (
        entity_id, "src", "x1", "sports", "A match",
    )
    assert by_id.occurred_at == WHEN and by_id.content_hash == "h1" and by_id.redated_from is None
    assert by_id.status is EntityStatus.probing and by_id.status_reason is None
    assert by_id.facts["home"] == "A"
    async with store.transaction() as s:
        await set_status(s, entity_id, EntityStatus.known, "known by m")
    async with store.session() as s:
        after = await get_entity(s, entity_id)
    assert after is not None and after.status is EntityStatus.known and after.status_reason == "known by m"


async def test_documents_of_an_entity(store: Store) -> None:
    entity_id = await _seed(store)
    async with store.session() as s:
        assert await document_text(s, entity_id, "en") == "The source text."
        assert await document_text(s, entity_id, "fr") is None
        assert await document_langs(s, entity_id) == {"en"}
    now = datetime(2026, 1, 2, tzinfo=UTC)
    docs = [TranslatedDocument(lang="fr", text="Le texte source."), TranslatedDocument(lang="ja", text="ソーステキストです。")]
    async with store.transaction() as s:
        n = await add_translated_documents(s, entity_id=entity_id, content_hash="h1", documents=docs,
                                           producer="m", prompt_version="v1", created_at=now)
        assert n == 2
        again = await add_translated_documents(  # an existing language is kept
            s, entity_id=entity_id, content_hash="h1", documents=[TranslatedDocument(lang="fr", text="Autre texte ici.")],
            producer="m2", prompt_version="v2", created_at=now)
        assert again == 0
    async with store.session() as s:
        assert await document_langs(s, entity_id) == {"en", "fr", "ja"}
        fr = (await s.execute(select(Document).where(Document.lang == "fr"))).scalar_one()
    assert (fr.origin, fr.text, fr.text_hash, fr.producer, fr.prompt_version, fr.content_hash) == (
        "translation", "Le texte source.", text_hash("Le texte source."), "m", "v1", "h1",
    )
    assert fr.created_at == now


async def test_cursor_round_trip_as_a_record(store: Store) -> None:
    async with store.session() as s:
        assert await load_cursor(s, "src") is None
    async with store.transaction() as s:
        await save_cursor(s, "src", watermark=None, page=3, state={"window_start": "a", "window_end": "b"})
    async with store.session() as s:
        cur = await load_cursor(s, "src")
    assert cur == CursorRecord(source="src", watermark=None, page=3, state={"window_start": "a", "window_end": "b"})
    async with store.transaction() as s:
        await save_cursor(s, "src", watermark=WHEN, page=0, state={})
    async with store.session() as s:
        cur = await load_cursor(s, "src")
    assert cur is not None and cur.watermark == WHEN and cur.page == 0 and dict(cur.state) == {}


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (OperationalError("INSERT", {}, Exception("database is locked")), True),
        (IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed")), False),
        (ValueError("bad record"), False),
    ],
)
def test_store_unavailable_tells_an_outage_from_bad_data(error: BaseException, outage: bool) -> None:
    assert store_unavailable(error) is outage

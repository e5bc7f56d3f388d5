"""What every generator stage reads about an entity: the entity record, its facts, its source document.

Pure functions over `storage.entities.StoredEntity` records, plus `load_entity` / `source_document`, which
read through the entity repository (the status is written with `storage.entities.set_status`).

Also `paid()`: a stage's LLM work under the monthly budget. `BudgetExhausted` becomes `RetryLater` with a
defer to the first day of next month (UTC), so the paid stages pause while the daemon keeps running.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from pydantic import TypeAdapter

from clkt.documents import render_document
from clkt.errors import BudgetExhausted, RetryLater, UserError
from clkt.facts import EntityFacts, RenderedDocument
from storage.engine import Session
from storage.entities import StoredEntity, document_text, get_entity
from storage.types import utcnow

__all__ = [
    "FACTS",
    "SOURCE_LANG",
    "facts_of",
    "gather_all",
    "load_entity",
    "next_month",
    "paid",
    "sha256_text",
    "source_document",
]

SOURCE_LANG = "en"
FACTS: TypeAdapter[EntityFacts] = TypeAdapter(EntityFacts)
T = TypeVar("T")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def load_entity(session: Session, entity_id: int) -> StoredEntity:
    entity = await get_entity(session, entity_id)
    if entity is None:
        raise UserError(f"entity {entity_id} does not exist")
    return entity


def facts_of(entity: StoredEntity) -> EntityFacts:
    return FACTS.validate_python(entity.facts)


async def source_document(session: Session, entity: StoredEntity, facts: EntityFacts) -> RenderedDocument:
    """The entity's English source document, with the renderer's slot sentences when they still match."""
    text = await document_text(session, entity.id, SOURCE_LANG)

    rendered = render_document(facts, SOURCE_LANG)
    if text is None:
        raise UserError(f"entity {entity.id} has no {SOURCE_LANG} source document")
    if text == rendered.text:
        return rendered
    sentences = {k: v for k, v in rendered.sentences.items() if v in text}
    return RenderedDocument(lang=SOURCE_LANG, text=text, sentences=sentences)


def next_month(now: datetime) -> datetime:
    now = now.astimezone(UTC)
    first = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first + timedelta(days=32)).replace(day=1)


async def paid(call: Awaitable[T], *, now: datetime | None = None) -> T:
    """Await an agent call; a spent monthly budget defers the task to next month instead of failing it."""
    try:
        return await call
    except BudgetExhausted as e:
        now = now or utcnow()
        raise RetryLater(str(e), defer=next_month(now) - now) from e


async def gather_all(calls: Iterable[Awaitable[T]]) -> list[T]:
    """`asyncio.gather` that lets every call finish before raising the first error: a call already sent to a
    paid provider gets its answer stored in the call cache instead of running on, orphaned, while the task's
    retry sends it a second time."""
    out: list[T] = []
    for r in await asyncio.gather(*calls, return_exceptions=True):
        if isinstance(r, BaseException):
            raise r
        out.append(r)
    return out

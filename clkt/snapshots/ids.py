"""The public ids a snapshot publishes, derived from content so they do not depend on the store.

A store's autoincrement row ids depend on the order in which entities were crawled (concurrent pollers,
restarts), so nothing a snapshot exports or hashes uses them. An entity is identified by its
(source, external id) and a question by its entity and slot (`uq_question_entity_slot`); the public id is the
first 13 hex digits of a sha256 of that identity: an int below 2**52, exact in JSON and JavaScript.
The store's rows (`SnapshotItem.question_id`, `entity_id`) keep referencing the real rows.
"""

from __future__ import annotations

import hashlib

__all__ = ["PUBLIC_ID_BITS", "stable_entity_id", "stable_open_qid", "stable_qid"]

PUBLIC_ID_BITS = 52
_HEX_DIGITS = PUBLIC_ID_BITS // 4


def _public_id(kind: str, *parts: str) -> int:
    if any("\x1f" in p for p in parts):
        raise ValueError(f"a {kind} identity part contains the separator U+001F: {parts!r}")
    digest = hashlib.sha256("\x1f".join((kind, *parts)).encode("utf-8")).hexdigest()
    return int(digest[:_HEX_DIGITS], 16)


def stable_entity_id(source: str, external_id: str) -> int:
    """The public id of the entity `external_id` of `source` (the same in every store)."""
    return _public_id("entity", source, external_id)


def stable_qid(source: str, external_id: str, slot: str) -> int:
    """The public id (`qid`) of the question in `slot` of the entity `external_id` of `source`."""
    return _public_id("question", source, external_id, slot)


def stable_open_qid(entity_id: int, fact: str) -> int:
    """The public id of the open track's short-answer question on `fact` (`clkt.openqa.from_facts` slot) of the
    entity whose public id is `entity_id` (never equal to an MCQ's qid: another kind of identity)."""
    return _public_id("open", str(entity_id), fact)

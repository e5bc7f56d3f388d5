"""Errata: retracting a question of a frozen snapshot (`clkt snapshot retract ID QUESTION_ID --reason TEXT`).

A retraction is recorded in the store (`storage.publish.add_retraction`, by the question's public qid: the `qid`
of the snapshot's files); the frozen folder never changes. Every later publish revision of the snapshot leaves
the question out (all its languages, its predictions, and the report, recomputed from the stored results without
it), and its card and `ERRATA.md` list the retraction with its reason and date; the revisions already on the Hub
stay readable in the repo's history. When the daemon publishes by itself and the snapshot was published to its
repo, the retraction asks for the next revision in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from clkt.config import PublishSettings
from clkt.errors import UserError
from clkt.logs import sanitize_text
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.ids import PUBLIC_ID_BITS
from storage.engine import Session, Store
from storage.enums import SnapshotStatus
from storage.publish import enqueue_publish
from storage.publish_revisions import revisions_of
from storage.retractions import RetractionRecord, add_retraction
from storage.snapshots import get_snapshot

__all__ = ["MAX_REASON_CHARS", "Retracted", "clean_reason", "retract", "retract_in"]

MAX_REASON_CHARS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class Retracted:
    record: RetractionRecord
    new: bool  # False: it was retracted before (the first reason and date stand)
    asked_publish: bool  # the next revision was asked for (automatic publishing)


def clean_reason(reason: str) -> str:
    text = " ".join(sanitize_text(reason).split())
    if not text:
        raise UserError("--reason: say why the question is retracted (a non-empty text)")
    if len(text) > MAX_REASON_CHARS:
        raise UserError(f"--reason: at most {MAX_REASON_CHARS} characters ({len(text)} given)")
    return text


async def retract(store: Store, ident: str, qid: int, *, reason: str, publish: PublishSettings) -> Retracted:
    """Record the retraction of question `qid` of the frozen snapshot `ident` (an id or a unique prefix)."""
    async with store.transaction() as s:
        return await retract_in(s, ident, qid, reason=reason, publish=publish)


async def retract_in(s: Session, ident: str, qid: int, *, reason: str, publish: PublishSettings) -> Retracted:
    """`retract` inside the caller's transaction (`clkt audit score --retract-rejected` stores the audit and its
    retractions in one: a retraction refused rolls the audit back too)."""
    text = clean_reason(reason)
    if not 0 <= qid < 2**PUBLIC_ID_BITS:
        raise UserError(f"question id {qid} is not a qid (a question's public id, 0 to 2**{PUBLIC_ID_BITS})")
    snap = await get_snapshot(s, ident)
    if snap.status is not SnapshotStatus.frozen:
        raise UserError(f"snapshot {snap.id} is {snap.status.value}, not frozen: only a frozen snapshot's questions "
                        "are retracted")
    rows = {it.qid: it.question_row for it in await load_item_refs(s, snap.id)}
    if qid not in rows:
        raise UserError(f"snapshot {snap.id} has no question {qid} (the `qid` of its questions/<lang>.jsonl; "
                        "the control split's fictional questions are never published and cannot be retracted)")
    record, new = await add_retraction(s, snapshot_id=snap.id, qid=qid, question_id=rows[qid], reason=text)
    asked = False
    if (new and publish.automatic and publish.repo is not None
            and await revisions_of(s, repo=publish.repo, branch=publish.revision, snapshot_id=snap.id)):
        await enqueue_publish(s, repo=publish.repo, branch=publish.revision, snapshot_id=snap.id,
                              private=publish.private, reason="retraction", max_attempts=publish.max_attempts)
        asked = True
    return Retracted(record=record, new=new, asked_publish=asked)

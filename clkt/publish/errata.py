"""Errata: retracting a question of a frozen snapshot (`clkt snapshot retract ID QUESTION_ID --reason TEXT`).

A retraction is recorded in the store (`storage.publish.add_retraction`, by the question's public qid: the `qid`
of the snapshot's files); the frozen folder never changes. Every later publish revision of the snapshot leaves
the question out (all its languages, its predictions, and the report, recomputed from the stored results without
it), and its card and `ERRATA.md` list the retraction with its reason and date; the revisions already on the Hub
stay readable in the repo's history. When the daemon publishes by itself and the snapshot was published to its
repo, the retraction asks for the next revision in the same transaction.

A wrong fact is wrong in either format: retracting an MCQ also retracts the open question(s) on the same fact
of the same entity (`clkt.openqa.same_fact`), and retracting an open question (its `qid` in `open/<lang>.jsonl`)
the MCQ(s) on its fact, in the same transaction, each with the reason and the qid it was retracted with. A snapshot
with an open track whose frozen folder cannot be read refuses the retraction (nothing is written): the other
format's questions on the fact could not be found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clkt.config import PublishSettings
from clkt.errors import SnapshotError, UserError
from clkt.logs import sanitize_text
from clkt.openqa.frozen import load_open_questions
from clkt.openqa.same_fact import AskedFact, mcq_slot, same_fact_qids
from clkt.snapshots.content import load_item_refs
from clkt.snapshots.ids import PUBLIC_ID_BITS, stable_entity_id, stable_qid
from storage.engine import Session, Store
from storage.enums import SnapshotStatus
from storage.publish import enqueue_publish
from storage.publish_revisions import revisions_of
from storage.retractions import RetractionRecord, add_retraction
from storage.snapshots import SnapshotRecord, get_snapshot, stored_items

__all__ = ["MAX_REASON_CHARS", "Retracted", "clean_reason", "retract", "retract_in"]

MAX_REASON_CHARS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class Retracted:
    record: RetractionRecord
    new: bool  # False: it was retracted before (the first reason and date stand)
    asked_publish: bool  # the next revision was asked for (automatic publishing)
    same_fact: tuple[RetractionRecord, ...] = ()  # the other format's questions on the fact, retracted with it


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
    asked = await _asked_facts(s, snap)
    if qid not in rows and not any(a.open and a.qid == qid for a in asked):
        raise UserError(f"snapshot {snap.id} has no question {qid} (the `qid` of its questions/<lang>.jsonl or "
                        "open/<lang>.jsonl; the control split's fictional questions are never published and cannot be "
                        "retracted)")
    record, new = await add_retraction(s, snapshot_id=snap.id, qid=qid, question_id=rows.get(qid), reason=text)
    twins = [(await add_retraction(s, snapshot_id=snap.id, qid=other, question_id=rows.get(other),
                                   reason=f"the same fact as question {qid}: {text}"[:MAX_REASON_CHARS]))
             for other in same_fact_qids(qid, asked)]
    asked_publish = False
    if (any([new, *(n for _, n in twins)]) and publish.automatic and publish.repo is not None
            and await revisions_of(s, repo=publish.repo, branch=publish.revision, snapshot_id=snap.id)):
        await enqueue_publish(s, repo=publish.repo, branch=publish.revision, snapshot_id=snap.id,
                              private=publish.private, reason="retraction", max_attempts=publish.max_attempts)
        asked_publish = True
    return Retracted(record=record, new=new, asked_publish=asked_publish, same_fact=tuple(r for r, _ in twins))


async def _asked_facts(s: Session, snap: SnapshotRecord) -> list[AskedFact]:
    """The snapshot's MCQs and open questions (of its published splits) with the fact each asks."""
    out = [AskedFact(qid=stable_qid(r.source, r.external_id, r.slot), entity_id=stable_entity_id(r.source, r.external_id),
                     slot=r.slot, open=False)
           for r in await stored_items(s, snap.id) if r.source is not None and r.external_id is not None and r.slot is not None]
    if not snap.manifest.get("open"):
        return out  # frozen before the open track, or without one
    try:
        if snap.export_path is None:
            raise SnapshotError("no frozen folder is recorded")
        opens = load_open_questions(Path(snap.export_path))
    except (SnapshotError, OSError) as e:
        raise UserError(f"snapshot {snap.id} has an open track but its frozen folder cannot be read ({e}): the "
                        "questions on the retracted fact in the other format cannot be found, so nothing is "
                        "retracted") from e
    return out + [AskedFact(qid=q.qid, entity_id=q.entity_id, slot=mcq_slot(q.question.fact), open=True) for q in opens]

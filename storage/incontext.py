"""The in-context track's answers (`clkt.incontext`): one row per (snapshot, target, question, context language,
test language), written as they are made (insert-or-ignore), so a rerun asks only what is missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import InContextAnswer
from storage.tasks import insert_ignore

__all__ = ["NO_CONTEXT", "InContextRecord", "add_incontext_answers", "incontext_answers", "incontext_keys"]

NO_CONTEXT = ""  # context_lang of the floor: the question asked without the document


@dataclass(frozen=True, slots=True, kw_only=True)
class InContextRecord:
    snapshot_id: str
    target: str
    qid: int  # the snapshot's public question id
    entity_id: int  # the snapshot's public entity id
    context_lang: str  # the document's language, NO_CONTEXT for the floor
    lang: str  # the question's language
    status: str  # answered | unparsed | skipped
    letter: str | None
    correct: bool
    truncated: bool
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    scorer: str = "generate"  # generate (the letter parse) or option-loglik-norm (`clkt.incontext.askers`)


def _record(row: InContextAnswer) -> InContextRecord:
    return InContextRecord(
        snapshot_id=row.snapshot_id, target=row.target, qid=row.qid, entity_id=row.entity_id,
        context_lang=row.context_lang, lang=row.lang, status=row.status, letter=row.letter, correct=row.correct,
        truncated=row.truncated, input_tokens=row.input_tokens, output_tokens=row.output_tokens,
        cost_usd=row.cost_usd, scorer=row.scorer,
    )


async def add_incontext_answers(session: AsyncSession, records: Sequence[InContextRecord]) -> int:
    """Store `records` (a stored key is left as it is); how many were new."""
    return await insert_ignore(session, InContextAnswer, [asdict(r) for r in records])


async def incontext_keys(session: AsyncSession, snapshot_id: str, target: str) -> set[tuple[int, str, str]]:
    """(qid, context_lang, lang) of every stored answer of `target` on `snapshot_id`."""
    rows = await session.execute(
        select(col(InContextAnswer.qid), col(InContextAnswer.context_lang), col(InContextAnswer.lang)).where(
            col(InContextAnswer.snapshot_id) == snapshot_id, col(InContextAnswer.target) == target
        )
    )
    return {(int(q), str(c), str(lang)) for q, c, lang in rows.all()}


async def incontext_answers(
    session: AsyncSession, snapshot_id: str, *, target: str | None = None
) -> list[InContextRecord]:
    """The stored answers of `snapshot_id` (of one target when given), in a stable order."""
    q = select(InContextAnswer).where(col(InContextAnswer.snapshot_id) == snapshot_id)
    if target is not None:
        q = q.where(col(InContextAnswer.target) == target)
    q = q.order_by(
        col(InContextAnswer.target), col(InContextAnswer.qid), col(InContextAnswer.context_lang),
        col(InContextAnswer.lang),
    )
    return [_record(r) for r in (await session.execute(q)).scalars().all()]

"""The in-context track's short answers (`clkt.incontext.open_track`): one row per (snapshot, target, open question,
context language, test language), written chunk by chunk as they are scored (insert-or-ignore: each row whole, a
rerun asks only what is missing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.incontext_open_table import ANSWER_CHARS, REASON_CHARS, InContextOpenAnswer
from storage.tasks import insert_ignore

__all__ = ["InContextOpenRecord", "add_incontext_open", "incontext_open_answers", "incontext_open_keys"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InContextOpenRecord:
    snapshot_id: str
    target: str
    open_qid: int  # public (`clkt.snapshots.ids.stable_open_qid`)
    entity_id: int  # public
    context_lang: str  # the document's language, "" for the floor
    lang: str  # the question's language
    status: str  # answered | skipped
    verdict: str  # CORRECT | INCORRECT | NOT_ATTEMPTED | UNSCORABLE | "" (skipped)
    other_language: bool = False
    answer_lang: str | None = None
    answer: str = ""
    reason: str = ""
    prompt_version: str = ""
    truncated: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def correct(self) -> bool:
        return self.verdict == "CORRECT"


def _row(r: InContextOpenRecord) -> dict[str, object]:
    d = asdict(r)
    d["answer"], d["reason"] = r.answer[:ANSWER_CHARS], r.reason[:REASON_CHARS]
    return d


async def add_incontext_open(session: AsyncSession, records: Sequence[InContextOpenRecord]) -> int:
    """Store `records` (a stored key is left as it is); how many were new."""
    return await insert_ignore(session, InContextOpenAnswer, [_row(r) for r in records])


async def incontext_open_keys(session: AsyncSession, snapshot_id: str, target: str) -> set[tuple[int, str, str]]:
    """(open_qid, context_lang, lang) of every stored answer of `target` on `snapshot_id`."""
    t = InContextOpenAnswer
    rows = await session.execute(select(col(t.open_qid), col(t.context_lang), col(t.lang)).where(
        col(t.snapshot_id) == snapshot_id, col(t.target) == target))
    return {(int(q), str(c), str(lang)) for q, c, lang in rows.all()}


async def incontext_open_answers(session: AsyncSession, snapshot_id: str) -> list[InContextOpenRecord]:
    """The stored short answers of `snapshot_id`, in a stable order."""
    t = InContextOpenAnswer
    q = select(t).where(col(t.snapshot_id) == snapshot_id).order_by(
        col(t.target), col(t.open_qid), col(t.context_lang), col(t.lang))
    return [
        InContextOpenRecord(
            snapshot_id=r.snapshot_id, target=r.target, open_qid=r.open_qid, entity_id=r.entity_id,
            context_lang=r.context_lang, lang=r.lang, status=r.status, verdict=r.verdict,
            other_language=r.other_language, answer_lang=r.answer_lang, answer=r.answer, reason=r.reason,
            prompt_version=r.prompt_version, truncated=r.truncated, input_tokens=r.input_tokens,
            output_tokens=r.output_tokens, cost_usd=r.cost_usd,
        )
        for r in (await session.execute(q)).scalars().all()
    ]

"""Question repository: what the generator stages write about an entity after its gate.

- probes (`ProbeRecord`): one judged answer per (entity, target model, language), insert-or-ignore, so a
  re-run only asks what is missing;
- questions (`QuestionRecord`): grounded MCQs in the source language, unique per (entity, slot), written
  `generated` from the generator's `clkt.outputs.MCQ`s, then moved along `verified` / `rejected` /
  `translated` / `dropped` by `move_question` (a move only applies to a question still in the expected
  status, so a stale worker cannot move a question back);
- verifications (`VerificationRecord`): one per (question, verifier), insert-or-ignore;
- translations (`TranslationRecord`): one per (question, language), from the translator's
  `clkt.outputs.TranslatedMCQ`, insert-or-ignore.

The documents of an entity (source and translated) live with the entity: `storage.entities`.
Every function takes the caller's session; the stages call them in the transaction that finishes the task.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from clkt.outputs import MCQ, TranslatedMCQ
from storage.models import Probe, Question, QuestionStatus, Translation, Verification
from storage.tasks import insert_ignore

__all__ = [
    "ProbeRecord",
    "QuestionRecord",
    "TranslationRecord",
    "VerificationRecord",
    "add_probes",
    "add_questions",
    "add_translations",
    "add_verifications",
    "count_questions",
    "move_question",
    "probes_of",
    "question_record",
    "questions_of",
    "translated_langs",
]


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """A target model's answer about an entity in one language, and the judge's verdict on it."""

    entity_id: int
    target_model: str
    lang: str
    prompt: str
    response: str
    known: bool
    matched_facts: tuple[str, ...]
    reason: str
    judge: str
    prompt_version: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class QuestionRecord:
    """A stored MCQ in the entity's source language (options in generation order)."""

    id: int
    entity_id: int
    slot: str
    lang: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    evidence: str
    status: QuestionStatus
    status_reason: str | None
    generator: str = ""  # who wrote it (the agent backend's producer name)
    prompt_version: str = ""


@dataclass(frozen=True, slots=True)
class VerificationRecord:
    """One verifier's verdict on a question: every criterion, the reasons given, and whether it passed."""

    question_id: int
    verifier: str
    prompt_version: str
    criteria: Mapping[str, bool]
    reasons: Mapping[str, str]
    passed: bool


@dataclass(frozen=True, slots=True)
class TranslationRecord:
    """A question in one language (`translation.lang`), with who made it and the checks it passed."""

    question_id: int
    translation: TranslatedMCQ
    translator: str
    prompt_version: str
    checks: Mapping[str, bool]


def _probe_of(row: Probe) -> ProbeRecord:
    return ProbeRecord(
        entity_id=row.entity_id, target_model=row.target_model, lang=row.lang, prompt=row.prompt,
        response=row.response, known=row.known, matched_facts=tuple(row.matched_facts), reason=row.reason,
        judge=row.judge, prompt_version=row.prompt_version, created_at=row.created_at,
    )


def question_record(row: Question) -> QuestionRecord:
    """The record of a `Question` row (for storage's repositories: rows never leave storage)."""
    assert row.id is not None
    return QuestionRecord(
        id=row.id, entity_id=row.entity_id, slot=row.slot, lang=row.lang, question=row.question,
        options=tuple(row.options), answer_index=row.answer_index, evidence=row.evidence,
        status=QuestionStatus(row.status), status_reason=row.status_reason, generator=row.generator,
        prompt_version=row.prompt_version,
    )


async def probes_of(session: AsyncSession, entity_id: int) -> list[ProbeRecord]:
    """Every stored probe of the entity."""
    rows = (await session.execute(select(Probe).where(col(Probe.entity_id) == entity_id))).scalars().all()
    return [_probe_of(r) for r in rows]


async def add_probes(session: AsyncSession, probes: Sequence[ProbeRecord]) -> int:
    """Store judged probes; one already stored for (entity, target, language) is kept. Returns how many were new."""
    rows = [
        dict(
            entity_id=p.entity_id, target_model=p.target_model, lang=p.lang, prompt=p.prompt, response=p.response,
            known=p.known, matched_facts=list(p.matched_facts), reason=p.reason, judge=p.judge,
            prompt_version=p.prompt_version, created_at=p.created_at,
        )
        for p in probes
    ]
    return await insert_ignore(session, Probe, rows)


async def add_questions(
    session: AsyncSession, *, entity_id: int, questions: Sequence[MCQ], lang: str, generator: str,
    prompt_version: str, created_at: datetime,
) -> int:
    """Store generated MCQs as `generated`; a slot the entity already has a question for is kept.
    Returns how many were new."""
    rows = [
        dict(
            entity_id=entity_id, slot=q.slot, lang=lang, question=q.question, options=list(q.options),
            answer_index=q.answer_index, evidence=q.evidence, generator=generator, prompt_version=prompt_version,
            status=QuestionStatus.generated, created_at=created_at,
        )
        for q in questions
    ]
    return await insert_ignore(session, Question, rows)


async def questions_of(session: AsyncSession, entity_id: int, *, status: QuestionStatus) -> list[QuestionRecord]:
    """The entity's questions in `status`, oldest first."""
    rows = (
        await session.execute(
            select(Question).where(col(Question.entity_id) == entity_id, col(Question.status) == status).order_by(col(Question.id))
        )
    ).scalars().all()
    return [question_record(r) for r in rows]


async def count_questions(session: AsyncSession, entity_id: int, *, statuses: Collection[QuestionStatus]) -> int:
    """How many of the entity's questions are in one of `statuses`."""
    n = (
        await session.execute(
            select(func.count()).where(col(Question.entity_id) == entity_id, col(Question.status).in_(list(statuses)))
        )
    ).scalar()
    return int(n or 0)


async def move_question(
    session: AsyncSession, question_id: int, *, from_status: QuestionStatus, to_status: QuestionStatus,
    reason: str | None,
) -> None:
    """Set the question's status (and reason) if it is still in `from_status`; otherwise nothing."""
    await session.execute(
        update(Question).where(col(Question.id) == question_id, col(Question.status) == from_status)
        .values(status=to_status, status_reason=reason).execution_options(synchronize_session=False)
    )


async def add_verifications(
    session: AsyncSession, verifications: Sequence[VerificationRecord], *, created_at: datetime
) -> int:
    """Store verdicts; one already stored for (question, verifier) is kept. Returns how many were new."""
    rows = [
        dict(
            question_id=v.question_id, verifier=v.verifier, prompt_version=v.prompt_version,
            criteria=dict(v.criteria), reasons=dict(v.reasons), passed=v.passed, created_at=created_at,
        )
        for v in verifications
    ]
    return await insert_ignore(session, Verification, rows)


async def translated_langs(session: AsyncSession, question_ids: Collection[int]) -> set[tuple[int, str]]:
    """(question id, language) of every stored translation of these questions."""
    if not question_ids:
        return set()
    rows = (
        await session.execute(select(Translation).where(col(Translation.question_id).in_(list(question_ids))))
    ).scalars()
    return {(t.question_id, t.lang) for t in rows}


async def add_translations(
    session: AsyncSession, translations: Sequence[TranslationRecord], *, created_at: datetime
) -> int:
    """Store translated questions; one already stored for (question, language) is kept. Returns how many were new."""
    rows = [
        dict(
            question_id=t.question_id, lang=t.translation.lang, question=t.translation.question,
            options=list(t.translation.options), answer_index=t.translation.answer_index, translator=t.translator,
            prompt_version=t.prompt_version, checks=dict(t.checks), created_at=created_at,
        )
        for t in translations
    ]
    return await insert_ignore(session, Translation, rows)

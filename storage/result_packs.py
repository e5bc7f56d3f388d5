"""Result packs: a finished job's test-split answers of one scorer, in a form that many snapshots can be read in
at once (the leaderboard reads every job of a window; stored results reach millions of rows).

One `result_pack` row per (job, scorer) holds, for every test question the job answered (ascending question
id), the question's entity and one 64-bit word of flags over the positions of the row's languages:

    bit i        the injected model answered it in langs[i]      bit 32 + i   the base model answered it
    bit 16 + i   ... and was right                              bit 48 + i   ... and was right

It is the same information as the job's `question_result` rows of the test split (which stay the record of
truth, with the predicted letters): a lossless re-encoding of their `correct` column, written by
`write_job_results` in the transaction that writes the results (`write_result_packs`), so a pack never
disagrees with its results. A job whose results were stored before packs existed has none: `result_packs`
then builds its packs from its results on the fly (read-only, never written), so every finished job reads
the same whichever way it was stored.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import Question, QuestionResult, ResultPack
from storage.types import stored_id, utcnow

__all__ = [
    "BASE_ANSWERED",
    "BASE_CORRECT",
    "FIELD_BITS",
    "INJECTED_ANSWERED",
    "INJECTED_CORRECT",
    "MAX_LANGS",
    "PACKED_SPLIT",
    "PackedAnswer",
    "ResultPackRecord",
    "add_result_packs",
    "build_packs",
    "packs_from_results",
    "result_packs",
    "without_questions",
    "write_result_packs",
]

FIELD_BITS = 16  # one field of 16 bits per flag: at most 16 languages in a pack
MAX_LANGS = FIELD_BITS
INJECTED_ANSWERED, INJECTED_CORRECT, BASE_ANSWERED, BASE_CORRECT = 0, 16, 32, 48  # each field's first bit
PACKED_SPLIT = "test"  # only the test split is packed (the leaderboard's questions)
_CHUNK = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class PackedAnswer:
    """One scored answer, as a pack reads it (a `QuestionResult`'s identity and its correctness)."""

    question_id: int
    entity_id: int
    lang: str
    variant: str  # "base" | "injected"
    scorer: str
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultPackRecord:
    job_id: int
    scorer: str
    langs: tuple[str, ...]
    question_ids: bytes  # little-endian int64 per question, ascending
    entity_ids: bytes  # little-endian int64 per question
    flags: bytes  # little-endian uint64 per question (see the module docstring)
    stored: bool = True  # False: built from the job's results on read (stored before packs existed)

    @property
    def questions(self) -> int:
        return len(self.question_ids) // 8


def build_packs(job_id: int, answers: Iterable[PackedAnswer]) -> list[ResultPackRecord]:
    """The packs (one per scorer) of a job's answers; answers of another variant are ignored. More languages
    than `MAX_LANGS` raise ValueError."""
    by_scorer: dict[str, dict[int, list[tuple[str, str, bool]]]] = defaultdict(lambda: defaultdict(list))
    entity: dict[int, int] = {}
    for a in answers:
        if a.variant not in ("base", "injected"):
            continue
        by_scorer[a.scorer][a.question_id].append((a.lang, a.variant, a.correct))
        entity[a.question_id] = a.entity_id
    out: list[ResultPackRecord] = []
    for scorer, questions in sorted(by_scorer.items()):
        langs = tuple(sorted({lang for rows in questions.values() for lang, _, _ in rows}))
        if len(langs) > MAX_LANGS:
            raise ValueError(f"job {job_id}: {len(langs)} languages, a result pack holds at most {MAX_LANGS}")
        pos = {lang: i for i, lang in enumerate(langs)}
        qids = sorted(questions)
        words: list[int] = []
        for q in qids:
            w = 0
            for lang, variant, correct in questions[q]:
                i = pos[lang]
                answered, right = (INJECTED_ANSWERED, INJECTED_CORRECT) if variant == "injected" else (BASE_ANSWERED, BASE_CORRECT)
                w |= 1 << (answered + i)
                if correct:
                    w |= 1 << (right + i)
            words.append(w)
        n = len(qids)
        out.append(ResultPackRecord(
            job_id=job_id, scorer=scorer, langs=langs, question_ids=struct.pack(f"<{n}q", *qids),
            entity_ids=struct.pack(f"<{n}q", *(entity[q] for q in qids)), flags=struct.pack(f"<{n}Q", *words),
        ))
    return out


def without_questions(pack: ResultPackRecord, drop: Collection[int]) -> ResultPackRecord:
    """`pack` without the questions of `drop` (retracted ones: `storage.leaderboard.retracted_questions`); the same
    record when it holds none of them."""
    if not drop:  # the usual case: no retraction on the pack's snapshot
        return pack
    n = pack.questions
    qids = struct.unpack(f"<{n}q", pack.question_ids)
    keep = [i for i, q in enumerate(qids) if q not in drop]
    if len(keep) == n:
        return pack
    ents, flags = struct.unpack(f"<{n}q", pack.entity_ids), struct.unpack(f"<{n}Q", pack.flags)
    k = len(keep)
    return ResultPackRecord(
        job_id=pack.job_id, scorer=pack.scorer, langs=pack.langs, stored=pack.stored,
        question_ids=struct.pack(f"<{k}q", *(qids[i] for i in keep)), entity_ids=struct.pack(f"<{k}q", *(ents[i] for i in keep)),
        flags=struct.pack(f"<{k}Q", *(flags[i] for i in keep)),
    )


async def _entities_of(session: AsyncSession, question_ids: Collection[int]) -> dict[int, int]:
    ids = sorted(set(question_ids))
    out: dict[int, int] = {}
    for i in range(0, len(ids), _CHUNK):
        stmt = select(col(Question.id), col(Question.entity_id)).where(col(Question.id).in_(ids[i : i + _CHUNK]))
        out.update({stored_id(q): int(e) for q, e in (await session.execute(stmt)).all()})
    return out


async def write_result_packs(
    session: AsyncSession, job_id: int, results: Sequence[tuple[int, str, str, str, str, bool]]
) -> int:
    """Replace the job's packs with those of `results` ((question id, lang, variant, scorer, split, correct) per
    answer; only the test split is packed), in the caller's transaction; how many packs were written."""
    await session.execute(delete(ResultPack).where(col(ResultPack.job_id) == job_id))
    test = [r for r in results if r[4] == PACKED_SPLIT]
    if not test:
        return 0
    entity = await _entities_of(session, {r[0] for r in test})
    return await add_result_packs(session, build_packs(job_id, (
        PackedAnswer(question_id=q, entity_id=entity[q], lang=lang, variant=variant, scorer=scorer, correct=correct)
        for q, lang, variant, scorer, _, correct in test if q in entity
    )))


async def add_result_packs(session: AsyncSession, packs: Sequence[ResultPackRecord]) -> int:
    """Insert `packs` (built by `build_packs`) in the caller's transaction; how many."""
    now = utcnow()
    for p in packs:
        session.add(ResultPack(job_id=p.job_id, scorer=p.scorer, langs=",".join(p.langs), questions=p.questions,
                               question_ids=p.question_ids, entity_ids=p.entity_ids, flags=p.flags, created_at=now))
    await session.flush()
    return len(packs)


async def result_packs(session: AsyncSession, job_ids: Collection[int], *, scorer: str | None = None) -> list[ResultPackRecord]:
    """The packs of the given jobs (of one scorer, or all), by job id then scorer. A job with results but no
    stored pack gets packs built from its results (not written)."""
    ids = sorted(set(job_ids))
    out: list[ResultPackRecord] = []
    have: set[int] = set()
    for i in range(0, len(ids), _CHUNK):
        stmt = select(
            col(ResultPack.job_id), col(ResultPack.scorer), col(ResultPack.langs), col(ResultPack.question_ids),
            col(ResultPack.entity_ids), col(ResultPack.flags),
        ).where(col(ResultPack.job_id).in_(ids[i : i + _CHUNK]))
        if scorer is not None:
            stmt = stmt.where(col(ResultPack.scorer) == scorer)
        for job, sc, langs, qids, ents, flags in (await session.execute(stmt)).all():
            out.append(ResultPackRecord(job_id=int(job), scorer=sc, langs=tuple(langs.split(",")) if langs else (),
                                        question_ids=bytes(qids), entity_ids=bytes(ents), flags=bytes(flags)))
            have.add(int(job))
        # a job without any stored pack (of any scorer): written before packs existed
        stmt_any = select(col(ResultPack.job_id)).where(col(ResultPack.job_id).in_(ids[i : i + _CHUNK])).distinct()
        have.update(int(j) for j in (await session.execute(stmt_any)).scalars().all())
    for job in (j for j in ids if j not in have):
        out.extend(await packs_from_results(session, job, scorer=scorer))
    return sorted(out, key=lambda p: (p.job_id, p.scorer))


async def packs_from_results(session: AsyncSession, job_id: int, *, scorer: str | None = None) -> list[ResultPackRecord]:
    """A job's packs built from its stored results (never written)."""
    stmt = (
        select(col(QuestionResult.question_id), col(Question.entity_id), col(QuestionResult.lang), col(QuestionResult.variant),
               col(QuestionResult.scorer), col(QuestionResult.correct))
        .join(Question, col(Question.id) == col(QuestionResult.question_id))
        .where(col(QuestionResult.job_id) == job_id, col(QuestionResult.split) == PACKED_SPLIT)
    )
    if scorer is not None:
        stmt = stmt.where(col(QuestionResult.scorer) == scorer)
    rows = (await session.execute(stmt)).all()
    packs = build_packs(job_id, (
        PackedAnswer(question_id=int(q), entity_id=int(e), lang=lang, variant=v, scorer=sc, correct=bool(c))
        for q, e, lang, v, sc, c in rows
    ))
    return [ResultPackRecord(job_id=p.job_id, scorer=p.scorer, langs=p.langs, question_ids=p.question_ids,
                             entity_ids=p.entity_ids, flags=p.flags, stored=False) for p in packs]

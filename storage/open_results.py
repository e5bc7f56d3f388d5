"""The open track's stored answers (issue 47): written with the job's commit, read by the report and the leaderboard.

`write_open_results` replaces a job's rows in the caller's transaction (the consumer's commit, with the MCQ
results and the job's completion: all or nothing), and its result packs of the open scorer(s)
(`storage.result_packs`: the test split, keyed by the public open qid and this store's entity row): the
leaderboard reads them as it reads the MCQ packs, as rows of their own scorer (`open-normaliser`), ranked apart
(rows rank within a strategy x scorer). `open_results_for_snapshot` reads the finished jobs' rows with
their job's identity (target, strategy, train language, seed), as `storage.gpu_jobs.results_for_snapshot` does for
the MCQs; the report computes the same metrics on them, apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import GpuJob, LeaseStatus, ResultPack
from storage.open_result_table import ANSWER_CHARS, REASON_CHARS, OpenResult
from storage.result_packs import PACKED_SPLIT, PackedAnswer, add_result_packs, build_packs
from storage.tasks import insert_ignore

__all__ = ["GRADES", "OpenResultRecord", "OpenResultRow", "open_results_for_jobs", "open_results_for_snapshot", "write_open_results"]


# the verdicts a scoring layer gives (SimpleQA's); an answer stored with another (UNSCORABLE: its scoring raised) is
# in no pack, so in no figure: never right, never guessed
GRADES = frozenset({"CORRECT", "INCORRECT", "NOT_ATTEMPTED"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenResultRecord:
    """One scored open answer of a job, as written."""

    open_qid: int
    entity_id: int
    domain: str
    fact: str
    lang: str
    variant: str
    scorer: str
    split: str
    verdict: str
    other_language: bool
    answer: str
    answer_lang: str | None = None  # the language identified in the answer (None: none, or stored before it was kept)
    reason: str = ""  # the scorer's reason for its verdict (empty: stored before it was kept)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenResultRow(OpenResultRecord):
    """A stored open answer with its job's identity."""

    job_id: int
    target_model: str
    strategy: str
    train_lang: str
    seed: int

    @property
    def correct(self) -> bool:
        return self.verdict == "CORRECT"


async def write_open_results(
    session: AsyncSession, job_id: int, records: Iterable[OpenResultRecord], *, entity_rows: Mapping[int, int],
) -> int:
    """Replace the job's open answers with `records`, and its packs of their scorers, in the caller's transaction;
    `entity_rows`: public entity id -> this store's `Entity.id` (an answer about an entity it lacks is not packed).
    How many rows were written."""
    records = list(records)
    await session.execute(delete(OpenResult).where(col(OpenResult.job_id) == job_id))
    scorers = sorted({r.scorer for r in records})
    if scorers:
        await session.execute(delete(ResultPack).where(col(ResultPack.job_id) == job_id, col(ResultPack.scorer).in_(scorers)))
    rows = [
        dict(job_id=job_id, open_qid=r.open_qid, entity_id=r.entity_id, domain=r.domain[:32], fact=r.fact[:100],
             lang=r.lang, variant=r.variant, scorer=r.scorer, split=r.split, verdict=r.verdict,
             other_language=r.other_language, answer=r.answer[:ANSWER_CHARS],
             answer_lang=(r.answer_lang or "")[:8] or None, reason=r.reason[:REASON_CHARS])
        for r in records
    ]
    total = 0
    for i in range(0, len(rows), 500):
        total += await insert_ignore(session, OpenResult, rows[i : i + 500])
    await add_result_packs(session, build_packs(job_id, (
        PackedAnswer(question_id=r.open_qid, entity_id=entity_rows[r.entity_id], lang=r.lang, variant=r.variant,
                     scorer=r.scorer, correct=r.verdict == "CORRECT")
        for r in records if r.split == PACKED_SPLIT and r.entity_id in entity_rows and r.verdict in GRADES
    )))
    return total


async def open_results_for_snapshot(session: AsyncSession, snapshot_id: str) -> list[OpenResultRow]:
    """The open answers of the snapshot's finished jobs, in job order."""
    return await _rows(session, col(GpuJob.snapshot_id) == snapshot_id, col(GpuJob.status) == LeaseStatus.done)


async def open_results_for_jobs(
    session: AsyncSession, job_ids: Sequence[int], *, split: str | None = None, scorer: str | None = None,
) -> list[OpenResultRow]:
    """The open answers of these jobs (of one split, of one scorer when named), in job order."""
    out: list[OpenResultRow] = []
    ids = sorted(set(job_ids))
    where = [col(OpenResult.split) == split] if split is not None else []
    where += [col(OpenResult.scorer) == scorer] if scorer is not None else []
    for i in range(0, len(ids), 500):
        out += await _rows(session, col(OpenResult.job_id).in_(ids[i : i + 500]), *where)
    return out


async def _rows(session: AsyncSession, *where: ColumnElement[bool]) -> list[OpenResultRow]:
    stmt = (
        select(OpenResult, col(GpuJob.target_model), col(GpuJob.strategy), col(GpuJob.train_lang), col(GpuJob.seed))
        .join(GpuJob, col(GpuJob.id) == col(OpenResult.job_id))
        .where(*where)
        .order_by(col(OpenResult.job_id), col(OpenResult.id))
    )
    return [
        OpenResultRow(
            job_id=r.job_id, target_model=model, strategy=strategy, train_lang=lang, seed=int(seed),
            open_qid=int(r.open_qid), entity_id=int(r.entity_id), domain=r.domain, fact=r.fact, lang=r.lang,
            variant=r.variant, scorer=r.scorer, split=r.split, verdict=r.verdict, other_language=bool(r.other_language),
            answer=r.answer, answer_lang=r.answer_lang, reason=r.reason,
        )
        for r, model, strategy, lang, seed in (await session.execute(stmt)).all()
    ]

"""The open track's jury verdicts kept in the store (issue 47; the table: `storage.open_judgement_table`).

- `pending_answers`: the stored open answers of finished jobs that the current jury (`panel`) has not graded, or
  graded with a failed vote fewer than `max_attempts` times; the daemon's `open-jury` stage grades them;
- `write_judgements`: an answer's votes and the jury's row, all or none, written over what the same answer held
  (a re-grade replaces; another panel's rows of the answer go), in the caller's transaction;
- `judgements_for`: the judges' verdicts and the jury's of given answers (the audit reads each judge's agreement
  with human labels from them);
- `jury_rows_for_snapshot`: the jury's verdicts of a snapshot's finished jobs (with `votes=True` each judge's too),
  keyed like the answers they grade (the report's jury figure; the audit's per-judge agreement), and
  `pending_by_snapshot` (what is left to grade, per snapshot).

The in-context short answers' verdicts (`storage.incontext_open_judgements`) are the same rows in a table of their
own; they share this module's rules (`retry_clause`, `upsert_judgements`, `JuryVerdictRow`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVarTuple

from sqlalchemy import ColumnElement, Select, and_, delete, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from storage.models import GpuJob, LeaseStatus
from storage.open_judgement_table import ERROR_CHARS, JUDGE_CHARS, JURY, REASON_CHARS, JudgementColumns, OpenJudgement
from storage.open_result_table import OpenResult
from storage.types import utcnow

__all__ = [
    "JURY", "AnswerJudgements", "GradedAnswer", "Judgement", "JuryRow", "JuryVerdictRow", "PendingAnswer", "judgements_for",
    "jury_rows_for_snapshot", "pending_answers", "pending_by_snapshot", "retry_clause", "upsert_judgements",
    "write_judgements",
]

_CHUNK = 400  # ids per IN (...) query
_Ts = TypeVarTuple("_Ts")


@dataclass(frozen=True, slots=True, kw_only=True)
class Judgement:
    """One row: a judge's vote (`judge` its model string) or the jury's (`judge == JURY`)."""

    judge: str
    verdict: str | None  # None: no verdict (a vote: `error` says why; the jury: undecided)
    prompt_version: str
    reason: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    attempts: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAnswer:
    """A stored open answer the jury has to grade, with what finds its question (snapshot, public qid, split)."""

    open_result_id: int
    snapshot_id: str
    open_qid: int
    lang: str
    split: str
    answer: str
    attempts: int = 0  # passes of this panel so far

    def graded(self, votes: tuple[Judgement, ...], jury: Judgement) -> GradedAnswer:
        """This answer's rows once graded (the grading code builds them: `clkt.openqa.jury_grading`)."""
        return GradedAnswer(open_result_id=self.open_result_id, votes=votes, jury=jury)


@dataclass(frozen=True, slots=True, kw_only=True)
class GradedAnswer:
    open_result_id: int
    votes: tuple[Judgement, ...]
    jury: Judgement


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerJudgements:
    """What the store holds for one answer: each judge's vote by model string, and the jury's row."""

    votes: dict[str, Judgement] = field(default_factory=dict)
    jury: Judgement | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JuryVerdictRow:
    """The jury's stored verdict of one answer, whichever track's (`JuryRow`; the in-context short answers':
    `storage.incontext_open_judgements.InContextJuryRow`)."""

    verdict: str | None
    failed: bool  # the jury's: a vote failed (the verdict is the others'); a vote's: it gave no verdict
    cost_usd: float
    prompt_version: str

    @property
    def decided(self) -> bool:
        """The jury's row counts in a figure: it has a verdict, or every vote was given and none won (undecided:
        never right). False where a failed vote left it without one: not graded yet (the stage tries again), never
        counted as wrong."""
        return not (self.verdict is None and self.failed)


@dataclass(frozen=True, slots=True, kw_only=True)
class JuryRow(JuryVerdictRow):
    """The jury's verdict of one stored answer (or, `judge` a model string, one judge's vote), keyed like the answer
    (job, public qid, language, variant, scorer) as `storage.open_results.OpenResultRow` is."""

    judge: str  # JURY, or the judge's model string
    job_id: int
    open_qid: int
    lang: str
    variant: str
    scorer: str


def retry_clause(
    jury: type[JudgementColumns], *, max_attempts: int, retry_before: datetime | None = None,
) -> ColumnElement[bool]:
    """The answers a panel has to grade, its jury rows (of the table `jury`) outer-joined: none, or one with a failed
    vote and tries left (with `retry_before`: last tried no later than that)."""
    again = and_(col(jury.error).is_not(None), col(jury.attempts) < max_attempts)
    if retry_before is not None:
        again = and_(again, col(jury.graded_at) <= retry_before)
    return or_(col(jury.id).is_(None), again)


def _todo(max_attempts: int, retry_before: datetime | None = None) -> tuple[ColumnElement[bool], ...]:
    """An answer of a finished job with no jury row of `panel`, or one with a failed vote and tries left."""
    todo = retry_clause(OpenJudgement, max_attempts=max_attempts, retry_before=retry_before)
    return (col(GpuJob.status) == LeaseStatus.done, todo)


def _joined(stmt: Select[*_Ts], panel: str) -> Select[*_Ts]:
    on = and_(col(OpenJudgement.open_result_id) == col(OpenResult.id), col(OpenJudgement.judge) == JURY,
              col(OpenJudgement.panel) == panel)
    return stmt.select_from(OpenResult).join(GpuJob, col(GpuJob.id) == col(OpenResult.job_id)).outerjoin(OpenJudgement, on)


async def pending_answers(
    session: AsyncSession, *, panel: str, max_attempts: int, limit: int, after: int = 0,
    retry_before: datetime | None = None,
) -> list[PendingAnswer]:
    """Up to `limit` answers the jury `panel` has to grade (see the module), stored after the answer `after` (a
    pass's cursor: an answer it graded with a failed vote waits for the next pass; with `retry_before`, until its
    last try is that old), in the order they were stored."""
    stmt = select(col(OpenResult.id), col(GpuJob.snapshot_id), col(OpenResult.open_qid), col(OpenResult.lang),
                  col(OpenResult.split), col(OpenResult.answer), func.coalesce(col(OpenJudgement.attempts), 0))
    stmt = _joined(stmt, panel).where(*_todo(max_attempts, retry_before), col(OpenResult.id) > after).order_by(col(OpenResult.id)).limit(limit)
    return [PendingAnswer(open_result_id=int(i or 0), snapshot_id=sid, open_qid=int(q), lang=lang, split=split, answer=a,
                          attempts=int(n))
            for i, sid, q, lang, split, a, n in (await session.execute(stmt)).all()]


async def pending_by_snapshot(session: AsyncSession, *, panel: str, max_attempts: int) -> dict[str, int]:
    """How many answers the jury `panel` has left to grade, per snapshot (those it has none for are absent)."""
    stmt = _joined(select(col(GpuJob.snapshot_id), func.count()), panel).where(*_todo(max_attempts))
    return {sid: int(n) for sid, n in (await session.execute(stmt.group_by(col(GpuJob.snapshot_id)))).all()}


def _row(key: dict[str, object], panel: str, j: Judgement, now: object) -> dict[str, object]:
    return dict(key, judge=j.judge[:JUDGE_CHARS], panel=panel, verdict=j.verdict,
                reason=j.reason[:REASON_CHARS], error=j.error[:ERROR_CHARS] if j.error is not None else None,
                prompt_version=j.prompt_version[:32], cost_usd=float(j.cost_usd), attempts=j.attempts, graded_at=now)


async def upsert_judgements(
    session: AsyncSession, table: type[JudgementColumns], rows: Sequence[tuple[dict[str, object], Judgement]], *,
    panel: str, key: Sequence[str],
) -> int:
    """Write each (answer key, judgement) as a row of `table` over the row of the same answer key and judge (`key`:
    the answer key's columns, which with `judge` are the table's unique key); how many rows."""
    now = utcnow()
    values = [_row(k, panel, j, now) for k, j in rows]
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    keep = ("panel", "verdict", "reason", "error", "prompt_version", "cost_usd", "attempts", "graded_at")
    for i in range(0, len(values), _CHUNK):
        ins = (pg_insert if dialect == "postgresql" else sqlite_insert)(table).values(values[i:i + _CHUNK])
        await session.execute(ins.on_conflict_do_update(
            index_elements=[*key, "judge"], set_={k: getattr(ins.excluded, k) for k in keep}))
    return len(values)


async def write_judgements(session: AsyncSession, graded: Sequence[GradedAnswer], *, panel: str) -> int:
    """Write each answer's votes and jury row (over what the answer held; another panel's rows of it removed), in the
    caller's transaction; how many rows."""
    if not graded:
        return 0
    ids = sorted({g.open_result_id for g in graded})
    for i in range(0, len(ids), _CHUNK):
        await session.execute(delete(OpenJudgement).where(
            col(OpenJudgement.open_result_id).in_(ids[i:i + _CHUNK]), col(OpenJudgement.panel) != panel))
    rows: list[tuple[dict[str, object], Judgement]] = [({"open_result_id": g.open_result_id}, j) for g in graded for j in (*g.votes, g.jury)]
    return await upsert_judgements(session, OpenJudgement, rows, panel=panel, key=("open_result_id",))


def _judgement(r: OpenJudgement) -> Judgement:
    return Judgement(judge=r.judge, verdict=r.verdict, prompt_version=r.prompt_version, reason=r.reason, error=r.error,
                     cost_usd=float(r.cost_usd), attempts=int(r.attempts))


async def judgements_for(session: AsyncSession, open_result_ids: Sequence[int]) -> dict[int, AnswerJudgements]:
    """The stored votes and jury row of each of these answers (an answer the jury never graded is absent)."""
    out: dict[int, AnswerJudgements] = {}
    ids = sorted(set(open_result_ids))
    for i in range(0, len(ids), _CHUNK):
        stmt = select(OpenJudgement).where(col(OpenJudgement.open_result_id).in_(ids[i:i + _CHUNK]))
        for r in (await session.execute(stmt.order_by(col(OpenJudgement.id)))).scalars():
            got = out.setdefault(r.open_result_id, AnswerJudgements())
            if r.judge == JURY:
                out[r.open_result_id] = AnswerJudgements(votes=got.votes, jury=_judgement(r))
            else:
                got.votes[r.judge] = _judgement(r)
    return out


async def jury_rows_for_snapshot(session: AsyncSession, snapshot_id: str, *, votes: bool = False) -> list[JuryRow]:
    """The jury's verdicts of the snapshot's finished jobs' answers (with `votes`, each judge's too: the audit's
    agreement of each judge with the human labels), in the order they were stored."""
    on = col(OpenJudgement.open_result_id) == col(OpenResult.id)
    stmt = (
        select(OpenResult, OpenJudgement)
        .join(GpuJob, col(GpuJob.id) == col(OpenResult.job_id))
        .join(OpenJudgement, on if votes else and_(on, col(OpenJudgement.judge) == JURY))
        .where(col(GpuJob.snapshot_id) == snapshot_id, col(GpuJob.status) == LeaseStatus.done)
        .order_by(col(OpenResult.id), col(OpenJudgement.id))
    )
    return [JuryRow(judge=j.judge, job_id=a.job_id, open_qid=int(a.open_qid), lang=a.lang, variant=a.variant, scorer=a.scorer,
                    verdict=j.verdict, failed=j.error is not None, cost_usd=float(j.cost_usd),
                    prompt_version=j.prompt_version)
            for a, j in (await session.execute(stmt)).all()]

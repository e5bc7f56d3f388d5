"""The jury's verdicts on the in-context track's short answers (table: `storage.incontext_open_judgement_table`),
the in-context twin of `storage.open_judgements` and under its rules (`retry_clause`, `upsert_judgements`,
`JuryVerdictRow.decided`):

- `pending_incontext`: the stored in-context short answers (status `answered`; a skipped prompt has no answer) the
  current jury (`panel`) has not graded, or graded with a failed vote fewer than `max_attempts` times, in key order
  after a pass's cursor; `pending_incontext_by_snapshot`: how many are left per snapshot;
- `write_incontext_judgements`: an answer's votes and the jury's row, written over what the answer held (another
  panel's rows of it removed), in the caller's transaction;
- `incontext_jury_rows`: the jury's verdicts of a snapshot's answers, keyed like them (the report's jury figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVarTuple

from sqlalchemy import ColumnElement, Select, and_, delete, func, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped
from sqlmodel import col

from storage.incontext_open_judgement_table import ANSWER_KEY, InContextOpenJudgement
from storage.incontext_open_table import InContextOpenAnswer
from storage.open_judgements import JURY, Judgement, JuryVerdictRow, retry_clause, upsert_judgements

__all__ = [
    "InContextGraded", "InContextJuryRow", "InContextPending", "incontext_jury_rows", "pending_incontext",
    "pending_incontext_by_snapshot", "write_incontext_judgements",
]

ANSWERED = "answered"  # `clkt.incontext.open_track`'s status of a row with an answer
_CHUNK = 100  # answers per DELETE ... WHERE (key) OR (key) ...
_Ts = TypeVarTuple("_Ts")
Key = tuple[str, str, int, str, str]  # snapshot, target, open qid, context language, test language


@dataclass(frozen=True, slots=True, kw_only=True)
class InContextPending:
    """A stored in-context short answer the jury has to grade (its key: the answer table's)."""

    snapshot_id: str
    target: str
    open_qid: int
    context_lang: str  # "" = no document (the floor)
    lang: str
    answer: str
    attempts: int = 0  # passes of this panel so far

    @property
    def key(self) -> Key:
        return (self.snapshot_id, self.target, self.open_qid, self.context_lang, self.lang)

    def graded(self, votes: tuple[Judgement, ...], jury: Judgement) -> InContextGraded:
        """This answer's rows once graded (the grading code builds them: `clkt.openqa.jury_grading`)."""
        return InContextGraded(answer=self, votes=votes, jury=jury)


@dataclass(frozen=True, slots=True, kw_only=True)
class InContextGraded:
    answer: InContextPending
    votes: tuple[Judgement, ...]
    jury: Judgement


@dataclass(frozen=True, slots=True, kw_only=True)
class InContextJuryRow(JuryVerdictRow):
    """The jury's verdict of one stored in-context short answer, keyed like it (`decided`: the parametric rule)."""

    target: str
    open_qid: int
    context_lang: str
    lang: str


def _key_columns() -> tuple[Mapped[str], Mapped[str], Mapped[int], Mapped[str], Mapped[str]]:
    a = InContextOpenAnswer
    return col(a.snapshot_id), col(a.target), col(a.open_qid), col(a.context_lang), col(a.lang)


def _joined(stmt: Select[*_Ts], panel: str) -> Select[*_Ts]:
    a, j = InContextOpenAnswer, InContextOpenJudgement
    on = and_(*(col(getattr(j, c)) == col(getattr(a, c)) for c in ANSWER_KEY), col(j.judge) == JURY, col(j.panel) == panel)
    return stmt.select_from(a).outerjoin(j, on)


def _todo(max_attempts: int, retry_before: datetime | None = None) -> tuple[ColumnElement[bool], ...]:
    todo = retry_clause(InContextOpenJudgement, max_attempts=max_attempts, retry_before=retry_before)
    return (col(InContextOpenAnswer.status) == ANSWERED, todo)


async def pending_incontext(
    session: AsyncSession, *, panel: str, max_attempts: int, limit: int, after: Key | None = None,
    retry_before: datetime | None = None,
) -> list[InContextPending]:
    """Up to `limit` answers the jury `panel` has to grade (see the module), after the answer key `after` (a pass's
    cursor), in key order."""
    a = InContextOpenAnswer
    stmt = _joined(select(*_key_columns(), col(a.answer), func.coalesce(col(InContextOpenJudgement.attempts), 0)), panel)
    stmt = stmt.where(*_todo(max_attempts, retry_before))
    if after is not None:
        stmt = stmt.where(tuple_(*_key_columns()) > tuple_(*after))
    rows = (await session.execute(stmt.order_by(*_key_columns()).limit(limit))).all()
    return [InContextPending(snapshot_id=str(r[0]), target=str(r[1]), open_qid=int(r[2]), context_lang=str(r[3]),
                             lang=str(r[4]), answer=str(r[5]), attempts=int(r[6])) for r in rows]


async def pending_incontext_by_snapshot(session: AsyncSession, *, panel: str, max_attempts: int) -> dict[str, int]:
    """How many in-context answers the jury `panel` has left to grade, per snapshot (none left: absent)."""
    sid = col(InContextOpenAnswer.snapshot_id)
    stmt = _joined(select(sid, func.count()), panel).where(*_todo(max_attempts)).group_by(sid)
    return {str(s): int(n) for s, n in (await session.execute(stmt)).all()}


async def write_incontext_judgements(session: AsyncSession, graded: Sequence[InContextGraded], *, panel: str) -> int:
    """Write each answer's votes and jury row (over what the answer held; another panel's rows of it removed), in the
    caller's transaction; how many rows."""
    if not graded:
        return 0
    j = InContextOpenJudgement
    keys = sorted({g.answer.key for g in graded})
    for i in range(0, len(keys), _CHUNK):
        same = or_(*(and_(*(col(getattr(j, c)) == v for c, v in zip(ANSWER_KEY, k, strict=True))) for k in keys[i:i + _CHUNK]))
        await session.execute(delete(j).where(same, col(j.panel) != panel))
    rows = [(dict(zip(ANSWER_KEY, g.answer.key, strict=True)), v) for g in graded for v in (*g.votes, g.jury)]
    return await upsert_judgements(session, j, rows, panel=panel, key=ANSWER_KEY)


async def incontext_jury_rows(session: AsyncSession, snapshot_id: str) -> list[InContextJuryRow]:
    """The jury's verdicts of the snapshot's in-context short answers (every panel's: one per answer), in key order."""
    j = InContextOpenJudgement
    stmt = select(j).where(col(j.snapshot_id) == snapshot_id, col(j.judge) == JURY).order_by(
        *(col(getattr(j, c)) for c in ANSWER_KEY))
    return [InContextJuryRow(target=r.target, open_qid=int(r.open_qid), context_lang=r.context_lang, lang=r.lang,
                             verdict=r.verdict, failed=r.error is not None, cost_usd=float(r.cost_usd),
                             prompt_version=r.prompt_version)
            for r in (await session.execute(stmt)).scalars()]

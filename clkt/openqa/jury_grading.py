"""One batch of the `open-jury` stage (`clkt.openqa.jury_stage`): stored open answers graded by the jury, as rows.

`grade_batch` asks the jury (`agents.jury.Jury`: cached, paced, budgeted) about each answer, `concurrency` answers at
a time, and returns the answers it graded as `storage.open_judgements.GradedAnswer`s (each judge's vote, or its
failure and why, and the jury's majority or undecided: never guessed) with `BatchOutcome.budget_spent` when the
monthly budget stopped it: the answer being graded then writes nothing (its paid votes are in the call cache, so the
next pass replays them at no cost). An answer whose question cannot be found (its snapshot folder gone or
unreadable) is never graded against nothing: its jury row says so (undecided, with why), and it is counted.

`panel_of` is the digest that names a jury in the store: its judges (in any order) and its prompt's version.

The answers are any `Gradable`: the parametric track's (`storage.open_judgements.PendingAnswer`) or the in-context
track's (`storage.incontext_open_judgements.InContextPending`); each builds its own rows (`Gradable.graded`), so one
grading code serves both and the stage writes each kind to its own table.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from agents.jury import Jury, JuryVerdict
from clkt.errors import BudgetExhausted, SnapshotError
from clkt.openqa.frozen import load_open_questions
from clkt.openqa.question import ShortAnswerQuestion
from storage.open_judgements import JURY, Judgement

__all__ = ["BatchOutcome", "Gradable", "GradedRows", "QuestionBook", "grade_batch", "graded_rows", "panel_of", "unfound_rows"]

log = logging.getLogger(__name__)


class GradedRows(Protocol):
    """A graded answer's rows, as its store writes them: each vote, and the jury's."""

    @property
    def votes(self) -> tuple[Judgement, ...]: ...

    @property
    def jury(self) -> Judgement: ...


G = TypeVar("G", bound=GradedRows)
G_co = TypeVar("G_co", bound=GradedRows, covariant=True)


class Gradable(Protocol[G_co]):
    """A stored answer the jury grades: what finds its question, the answer, the passes so far, and its rows."""

    @property
    def snapshot_id(self) -> str: ...

    @property
    def open_qid(self) -> int: ...

    @property
    def lang(self) -> str: ...

    @property
    def answer(self) -> str: ...

    @property
    def attempts(self) -> int: ...

    def graded(self, votes: tuple[Judgement, ...], jury: Judgement) -> G_co: ...


def panel_of(judges: Iterable[str], prompt_version: str) -> str:
    """The jury's name in the store: a digest of its judges (sorted) and its prompt's version."""
    text = json.dumps([sorted(judges), prompt_version])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class QuestionBook:
    """The open questions of each snapshot (every split: test, control, locality), read once from its frozen folder; a folder that cannot be
    read is remembered as missing (its answers are skipped until the process restarts)."""

    def __init__(self) -> None:
        self._by_snapshot: dict[str, Mapping[int, ShortAnswerQuestion] | None] = {}

    def known(self, snapshot_id: str) -> bool:
        return snapshot_id in self._by_snapshot

    def load(self, snapshot_id: str, folder: str | None) -> None:
        try:
            if not folder:
                raise SnapshotError(f"snapshot {snapshot_id} has no folder")
            qs = [*load_open_questions(folder), *load_open_questions(folder, control=True),
                  *load_open_questions(folder, locality=True)]
            self._by_snapshot[snapshot_id] = {q.qid: q.question for q in qs}
        except (SnapshotError, OSError) as e:
            log.warning("open-jury: the questions of snapshot %s cannot be read (%s); its answers are not graded",
                        snapshot_id, e)
            self._by_snapshot[snapshot_id] = None

    def question(self, snapshot_id: str, qid: int) -> ShortAnswerQuestion | None:
        return (self._by_snapshot.get(snapshot_id) or {}).get(qid)


@dataclass
class BatchOutcome(Generic[G]):
    graded: list[G] = field(default_factory=list)
    skipped: int = 0  # answers whose question was not found (stored undecided, with why: `unfound_rows`)
    budget_spent: str | None = None  # the BudgetExhausted message when the budget stopped the batch
    verdicts: Counter[str] = field(default_factory=Counter)  # the jury's, "undecided" for None


def graded_rows(answer: Gradable[G], verdict: JuryVerdict, *, judges: int) -> G:
    """The rows of one graded answer: each vote, and the jury's (its error counts the failed votes)."""
    attempts = answer.attempts + 1
    votes = tuple(Judgement(judge=v.judge, verdict=v.verdict, prompt_version=verdict.prompt_version, reason=v.reason,
                            error=v.error, cost_usd=v.cost_usd, attempts=attempts) for v in verdict.votes)
    failed = f"{verdict.failed} of {judges} votes failed" if verdict.failed else None
    jury = Judgement(judge=JURY, verdict=verdict.verdict, prompt_version=verdict.prompt_version, reason=verdict.reason,
                     error=failed, cost_usd=verdict.cost_usd, attempts=attempts)
    return answer.graded(votes, jury)


def unfound_rows(answer: Gradable[G], *, prompt_version: str) -> G:
    """The jury's row of an answer whose question cannot be found: undecided, no judge asked, the reason stored (it is
    looked for again on a later pass, up to the bound on passes, as a failed vote is)."""
    jury = Judgement(judge=JURY, verdict=None, prompt_version=prompt_version, reason="not graded: no judge asked",
                     error=f"question {answer.open_qid} not found in snapshot {answer.snapshot_id}",
                     attempts=answer.attempts + 1)
    return answer.graded((), jury)


async def _grade_one(jury: Jury, answer: Gradable[G], question: ShortAnswerQuestion) -> G:
    gold = question.gold(answer.lang)
    verdict = await jury.grade(question=question.questions[answer.lang], gold=gold.answer, aliases=gold.aliases,
                               answer=answer.answer, lang=answer.lang)
    return graded_rows(answer, verdict, judges=len(jury.settings.judges))


def _take(out: BatchOutcome[G], results: Sequence[G | BaseException]) -> None:
    for r in results:
        if isinstance(r, asyncio.CancelledError):
            raise r
        if isinstance(r, BudgetExhausted):
            out.budget_spent = str(r)
        elif isinstance(r, BaseException):  # not a judge's failure (those are votes): a bug or a bad row, logged
            log.error("open-jury: an answer could not be graded: %s: %s", type(r).__name__, r)
            out.skipped += 1
        else:
            out.graded.append(r)
            out.verdicts[r.jury.verdict or "undecided"] += 1


async def grade_batch(
    jury: Jury, answers: Sequence[Gradable[G]], book: QuestionBook, *, concurrency: int,
) -> BatchOutcome[G]:
    """Grade `answers` (see the module), `concurrency` at a time; stops at the first spent budget."""
    out: BatchOutcome[G] = BatchOutcome()
    todo: list[tuple[Gradable[G], ShortAnswerQuestion]] = []
    for a in answers:
        q = book.question(a.snapshot_id, a.open_qid)
        if q is None or a.lang not in q.questions:
            out.skipped += 1
            out.graded.append(unfound_rows(a, prompt_version=jury.prompt_version))
            out.verdicts["undecided"] += 1
        else:
            todo.append((a, q))
    for i in range(0, len(todo), concurrency):
        chunk = todo[i:i + concurrency]
        # every answer of the chunk runs to its end: a judge's call already sent is answered into the cache
        _take(out, await asyncio.gather(*(_grade_one(jury, a, q) for a, q in chunk), return_exceptions=True))
        if out.budget_spent is not None:
            break
    return out

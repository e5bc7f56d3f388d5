"""What the `open-jury` stage (`clkt.openqa.jury_stage`) grades: the stored short answers of each track, each kind
read from and written to its own tables by the same rules (the grading itself is one: `clkt.openqa.jury_grading`).

- `ParametricAnswers`: the parametric track's answers of finished GPU jobs (`open_result`; verdicts in
  `open_judgement`, `storage.open_judgements`), in id order;
- `InContextAnswers`: the in-context track's answered short answers (`incontext_open_answer`; verdicts in
  `incontext_open_judgement`, `storage.incontext_open_judgements`), in key order.

A source reads a batch after a pass's cursor (the last answer of the previous batch), writes a batch's rows in the
caller's transaction, and says how many answers are left per snapshot (`left`: the report rewrite's trigger).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Generic, TypeVar

from clkt.openqa.jury_grading import Gradable, GradedRows
from storage.incontext_open_judgements import (
    InContextGraded,
    InContextPending,
    pending_incontext,
    pending_incontext_by_snapshot,
    write_incontext_judgements,
)
from storage.open_judgements import GradedAnswer, PendingAnswer, pending_answers, pending_by_snapshot, write_judgements

if TYPE_CHECKING:
    from storage.engine import Session

__all__ = ["SOURCES", "InContextAnswers", "JurySource", "ParametricAnswers"]

A = TypeVar("A", bound=Gradable[GradedRows])
G = TypeVar("G", bound=GradedRows)


class JurySource(ABC, Generic[A, G]):
    """One track's stored short answers, as the stage reads and writes them."""

    name: str

    @abstractmethod
    async def pending(self, s: Session, *, panel: str, max_attempts: int, limit: int, after: A | None,
                      retry_before: datetime | None) -> list[A]:
        """Up to `limit` answers `panel` has to grade, after the answer `after` (None: from the first)."""

    @abstractmethod
    async def write(self, s: Session, graded: Sequence[G], *, panel: str) -> int: ...

    @abstractmethod
    async def left(self, s: Session, *, panel: str, max_attempts: int) -> dict[str, int]: ...

    @abstractmethod
    def key(self, answer: A) -> Hashable: ...

    @abstractmethod
    def graded_key(self, graded: G) -> Hashable: ...


class ParametricAnswers(JurySource[PendingAnswer, GradedAnswer]):
    name = "parametric"

    async def pending(self, s: Session, *, panel: str, max_attempts: int, limit: int, after: PendingAnswer | None,
                      retry_before: datetime | None) -> list[PendingAnswer]:
        return await pending_answers(s, panel=panel, max_attempts=max_attempts, limit=limit, retry_before=retry_before,
                                     after=after.open_result_id if after is not None else 0)

    async def write(self, s: Session, graded: Sequence[GradedAnswer], *, panel: str) -> int:
        return await write_judgements(s, graded, panel=panel)

    async def left(self, s: Session, *, panel: str, max_attempts: int) -> dict[str, int]:
        return await pending_by_snapshot(s, panel=panel, max_attempts=max_attempts)

    def key(self, answer: PendingAnswer) -> Hashable:
        return answer.open_result_id

    def graded_key(self, graded: GradedAnswer) -> Hashable:
        return graded.open_result_id


class InContextAnswers(JurySource[InContextPending, InContextGraded]):
    name = "in-context"

    async def pending(self, s: Session, *, panel: str, max_attempts: int, limit: int, after: InContextPending | None,
                      retry_before: datetime | None) -> list[InContextPending]:
        return await pending_incontext(s, panel=panel, max_attempts=max_attempts, limit=limit, retry_before=retry_before,
                                       after=after.key if after is not None else None)

    async def write(self, s: Session, graded: Sequence[InContextGraded], *, panel: str) -> int:
        return await write_incontext_judgements(s, graded, panel=panel)

    async def left(self, s: Session, *, panel: str, max_attempts: int) -> dict[str, int]:
        return await pending_incontext_by_snapshot(s, panel=panel, max_attempts=max_attempts)

    def key(self, answer: InContextPending) -> Hashable:
        return answer.key

    def graded_key(self, graded: InContextGraded) -> Hashable:
        return graded.answer.key


SOURCES: tuple[ParametricAnswers, InContextAnswers] = (ParametricAnswers(), InContextAnswers())  # in a pass's order

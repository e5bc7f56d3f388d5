"""The table of the jury's verdicts on the in-context track's short answers (issue 47): one row per stored answer
(`incontext_open_answer`, keyed by snapshot, target, open qid, context language and test language) and judge, and
one more, `judge = JURY`, for the jury's majority. The same columns as the parametric track's `open_judgement`
(`storage.open_judgement_table.JudgementColumns`: verdict, reason, error, panel, prompt version, cost, attempts),
another table because the answers are another table with another key (a composite one, no integer id); the
repository is `storage.incontext_open_judgements`. A row goes with its answer (ON DELETE CASCADE).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKeyConstraint, UniqueConstraint
from sqlmodel import Field

from storage.open_judgement_table import JudgementColumns

__all__ = ["ANSWER_KEY", "InContextOpenJudgement"]

ANSWER_KEY = ("snapshot_id", "target", "open_qid", "context_lang", "lang")  # incontext_open_answer's primary key


class InContextOpenJudgement(JudgementColumns, table=True):
    __tablename__ = "incontext_open_judgement"
    __table_args__ = (
        ForeignKeyConstraint(list(ANSWER_KEY), [f"incontext_open_answer.{c}" for c in ANSWER_KEY], ondelete="CASCADE",
                             name="fk_incontext_open_judgement_answer"),
        UniqueConstraint(*ANSWER_KEY, "judge", name="uq_incontext_open_judgement_judge"),
    )

    snapshot_id: str = Field(max_length=160)
    target: str = Field(max_length=128)
    open_qid: int = Field(sa_column=Column(BigInteger, nullable=False))
    context_lang: str = Field(max_length=8)  # "" = no document (the floor)
    lang: str = Field(max_length=8)

"""The table of the open track's scored answers (issue 47): one row per job x open question x language x variant
x scorer. Its own module (storage/models.py imports it, so the migrations and `SQLModel.metadata` see it); the
repository is `storage.open_results`.

Open questions have no store rows (`question_result` points at `question.id`): a row names the snapshot's public
open qid and entity id (`clkt.snapshots.ids`). Every column is a plain string or number (no PostgreSQL enum).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["ANSWER_CHARS", "REASON_CHARS", "OpenResult"]

ANSWER_CHARS = 500  # the answer text kept (`clkt.openqa.results.MAX_ANSWER_CHARS`)
REASON_CHARS = 200  # the verdict's reason kept (`clkt.openqa.results.MAX_REASON_CHARS`)


class OpenResult(SQLModel, table=True):
    __tablename__ = "open_result"
    __table_args__ = (
        UniqueConstraint("job_id", "open_qid", "lang", "variant", "scorer", name="uq_open_result_identity"),
    )

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="gpu_job.id", index=True, ondelete="CASCADE")
    open_qid: int = Field(sa_column=Column(BigInteger, nullable=False))  # public (`stable_open_qid`)
    entity_id: int = Field(sa_column=Column(BigInteger, nullable=False))  # public (`stable_entity_id`)
    domain: str = Field(default="", max_length=32)
    fact: str = Field(default="", max_length=100)  # the fact slot asked ("film.director")
    lang: str = Field(max_length=8)
    variant: str = Field(max_length=16)  # "base" | "injected"
    scorer: str = Field(max_length=32)  # "open-normaliser"
    split: str = Field(max_length=8)  # "test" | "control"
    verdict: str = Field(max_length=16)  # CORRECT | INCORRECT | NOT_ATTEMPTED
    other_language: bool = False  # answered in another language (INCORRECT, counted apart)
    answer: str = Field(default="", max_length=ANSWER_CHARS)
    answer_lang: str | None = Field(default=None, max_length=8)  # the language identified in the answer (None: none)
    reason: str = Field(default="", max_length=REASON_CHARS)  # why the scorer gave its verdict ("alias", "other_language"...)

"""The table of the in-context track's short answers (issue 47): one row per (snapshot, target, open question,
context language, test language), as `incontext_answer` is for its multiple-choice answers. Its own module
(storage/models.py imports it, so the migrations and `SQLModel.metadata` see it); the repository is
`storage.incontext_open`.

Neither existing table holds these answers: `open_result` is keyed by a GPU job (`job_id` NOT NULL, its packs and
exports read it per job), and `incontext_answer` holds a letter, its readers (the report's contingency, the cross
view) count every row as a multiple-choice answer. A row names the snapshot's public open qid and entity id; every
column is a plain string or number.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column
from sqlmodel import Field, SQLModel

from storage._columns import ts_field as _ts

__all__ = ["ANSWER_CHARS", "REASON_CHARS", "InContextOpenAnswer"]

ANSWER_CHARS = 500  # the answer text kept (as `open_result`)
REASON_CHARS = 200


class InContextOpenAnswer(SQLModel, table=True):
    __tablename__ = "incontext_open_answer"

    snapshot_id: str = Field(primary_key=True, max_length=160)
    target: str = Field(primary_key=True, max_length=128)
    open_qid: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    context_lang: str = Field(primary_key=True, max_length=8)  # "" = no document (the floor)
    lang: str = Field(primary_key=True, max_length=8)
    entity_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    status: str = Field(max_length=16)  # answered | skipped (the prompt cannot fit the context)
    verdict: str = Field(default="", max_length=16)  # CORRECT | INCORRECT | NOT_ATTEMPTED | UNSCORABLE | "" (skipped)
    other_language: bool = False  # answered in another language (INCORRECT, counted apart)
    answer_lang: str | None = Field(default=None, max_length=8)
    answer: str = Field(default="", max_length=ANSWER_CHARS)
    reason: str = Field(default="", max_length=REASON_CHARS)
    prompt_version: str = Field(default="", max_length=32)
    truncated: bool = False  # the document was cut to fit the model's context
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    created_at: datetime = _ts()

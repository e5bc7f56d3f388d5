"""The table of the open track's jury verdicts (issue 47): one row per stored open answer (`open_result`) and judge,
and one more, `judge = JURY`, for the jury's majority. Its own module (`storage/__init__.py` imports it, so the
migrations and `SQLModel.metadata` see it); the repository is `storage.open_judgements`.

A judge's row holds its verdict, or NULL with `error` (why it gave none: timeout, malformed, http), the judge
prompt's version and the price of its calls. The jury's row holds the majority (NULL: undecided), `error` when a
vote failed (the answer is graded again on a later pass while `attempts` is under the configured bound), and the
sum of its votes' prices (so the jury's cost is the sum over the jury rows, never over both kinds). `panel` names
the jury that graded (a digest of its judges and prompt version): another jury grades the answer again. Every
column is a plain string or number (no PostgreSQL enum); a row goes with its answer (ON DELETE CASCADE).

`JudgementColumns` are a verdict's columns, shared with the in-context short answers' jury table
(`storage.incontext_open_judgement_table`): the same rows, keyed to another answer table.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.types import UTCDateTime, utcnow

__all__ = ["ERROR_CHARS", "JUDGE_CHARS", "JURY", "REASON_CHARS", "JudgementColumns", "OpenJudgement"]

JURY = "*jury*"  # the `judge` of the jury's own row (no model string has this form)
JUDGE_CHARS = 128
REASON_CHARS = 300
ERROR_CHARS = 300


class JudgementColumns(SQLModel):
    """A verdict's columns (no table of its own): a judge's vote, or the jury's row (`judge == JURY`)."""

    id: int | None = Field(default=None, primary_key=True)
    judge: str = Field(max_length=JUDGE_CHARS)  # the judge's model string, or JURY
    panel: str = Field(max_length=16, index=True)  # the jury that graded: digest of its judges and prompt version
    verdict: str | None = Field(default=None, max_length=16)  # CORRECT | INCORRECT | NOT_ATTEMPTED; NULL: none
    reason: str = Field(default="", max_length=REASON_CHARS)
    error: str | None = Field(default=None, max_length=ERROR_CHARS)  # why no verdict (a vote), or failed votes (jury)
    prompt_version: str = Field(max_length=32)  # the judge prompt's ("open_judge.v1")
    cost_usd: float = 0.0  # a vote: its calls' price; the jury: the sum of its votes'
    attempts: int = 1  # passes that graded this answer with this panel
    graded_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class OpenJudgement(JudgementColumns, table=True):
    __tablename__ = "open_judgement"
    __table_args__ = (UniqueConstraint("open_result_id", "judge", name="uq_open_judgement_judge"),)

    open_result_id: int = Field(foreign_key="open_result.id", index=True, ondelete="CASCADE")

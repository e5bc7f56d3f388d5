"""The jury's verdict of each open answer as the predictions exports carry it (issue 47): the leaderboard's
`--open-predictions` CSV and a publish revision's `open_predictions/<job>.jsonl` (`clkt.report.open_predictions`).

Where the daemon's `open-jury` stage has graded an answer (`storage.open_judgements`), its row gains
(`JuryColumns`):

- `jury_status`: `graded` (the jury's row holds its verdict), `failed` (no verdict because a vote failed or the
  question was not found: the stage tries again under its bound on passes) or `not graded` (no row yet);
- `jury_verdict`: the majority grade (CORRECT, INCORRECT, NOT_ATTEMPTED) or `UNDECIDED` (every vote given, no strict
  majority: never right), only where `graded`; blank otherwise, never filled in from another layer or guessed;
- `jury_votes`: each judge's vote (its model string `<provider>:<model>` and its grade, None where it gave none),
  only where `graded`;
- `jury_prompt_version`, `jury_cost_usd`: the judge prompt's version and what the jury's calls cost (US dollars,
  the sum of its judges' stored costs), wherever the jury tried (graded or failed).

Nothing else of a judgement is exported: not a judge's reason or error text (an error can quote what a provider
answered), never a credential (the store holds none).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from storage.open_judgements import JURY, JuryRow

__all__ = ["FAILED", "GRADED", "NOT_GRADED", "UNDECIDED", "AnswerKey", "JuryColumns", "JuryVote", "answer_key",
           "jury_columns"]

GRADED, FAILED, NOT_GRADED = "graded", "failed", "not graded"
UNDECIDED = "UNDECIDED"  # graded, no strict majority (SimpleQA's rule: not right)

AnswerKey = tuple[int, int, str, str, str]  # job id, public open qid, language, variant, scorer


class JuryVote(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: str  # the judge's model string
    verdict: str | None  # None: the judge gave no verdict


class JuryColumns(BaseModel):
    """The jury's columns of one exported open answer (see the module); the defaults: not graded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    jury_status: str = NOT_GRADED
    jury_verdict: str | None = None
    jury_votes: tuple[JuryVote, ...] = ()
    jury_prompt_version: str | None = None
    jury_cost_usd: float | None = None


def answer_key(job_id: int, open_qid: int, lang: str, variant: str, scorer: str) -> AnswerKey:
    return (job_id, open_qid, lang, variant, scorer)


def _columns(jury: JuryRow, votes: Iterable[JuryRow]) -> JuryColumns:
    if jury.verdict is None and jury.failed:  # no verdict for want of votes: not graded, never guessed
        return JuryColumns(jury_status=FAILED, jury_prompt_version=jury.prompt_version, jury_cost_usd=jury.cost_usd)
    return JuryColumns(
        jury_status=GRADED, jury_verdict=jury.verdict or UNDECIDED,
        jury_votes=tuple(JuryVote(judge=v.judge, verdict=v.verdict) for v in votes),
        jury_prompt_version=jury.prompt_version, jury_cost_usd=jury.cost_usd,
    )


def jury_columns(rows: Iterable[JuryRow]) -> dict[AnswerKey, JuryColumns]:
    """The jury's columns of every answer the jury has a row of, from the rows of
    `storage.open_judgements.jury_rows_for_snapshot(..., votes=True)` (an answer without one: `JuryColumns()`)."""
    jury: dict[AnswerKey, JuryRow] = {}
    votes: dict[AnswerKey, list[JuryRow]] = {}
    for r in rows:
        key = answer_key(r.job_id, r.open_qid, r.lang, r.variant, r.scorer)
        if r.judge == JURY:
            jury[key] = r
        else:
            votes.setdefault(key, []).append(r)
    return {key: _columns(j, votes.get(key, ())) for key, j in jury.items()}

"""One open answer as a job records it: the question, the language, base or injected, the normaliser's verdict.

`OpenResultItem` is the open track's `clkt.evaluate.results.ResultItem`: what the job process writes to its
outcome (`JobOutcome.open_results`) and `open_predictions.jsonl`, and what the consumer commits to the store's
`open_result` table (`storage.open_results`). Its ids are the snapshot's public ones (`stable_open_qid`,
`stable_entity_id`): open questions have no store question rows. `scored_item` scores an answer with the
normaliser layer (`clkt.openqa.score.score`): an answer in another language is INCORRECT with `other_language`
set (counted apart, never right), the answer text kept to `MAX_ANSWER_CHARS` (a 10 KB ramble is stored cut,
after it was scored on what the stop rule kept).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from clkt.evaluate.results import Variant
from clkt.openqa.question import ShortAnswerQuestion
from clkt.openqa.score import Verdict, score

__all__ = ["MAX_ANSWER_CHARS", "OPEN_SCORER", "UNSCORABLE", "OpenResultItem", "OpenSplit", "safely_scored_item", "scored_item"]

log = logging.getLogger(__name__)

OPEN_SCORER = "open-normaliser"  # the scorer name of the normaliser layer's verdicts (the jury's would be another)
MAX_ANSWER_CHARS = 500  # the answer text kept with a verdict (the stop rule keeps one line; this bounds a long one)
MAX_REASON_CHARS = 200

OpenSplit = Literal["test", "control", "locality"]  # locality: entities the target knew (never trained on)
# the verdict of an answer the normaliser could not score (its reason says why): no layer's grade, so never right
# and never guessed; left out of every figure (the store packs only SimpleQA's grades) and counted apart
UNSCORABLE: Final = "UNSCORABLE"


class OpenResultItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    qid: int  # public (`clkt.snapshots.ids.stable_open_qid`)
    entity_id: int  # public (`stable_entity_id`)
    domain: str = Field(default="", max_length=32)
    fact: str = Field(default="", max_length=100)  # the fact slot asked, e.g. "film.director"
    lang: str = Field(min_length=1, max_length=8)
    variant: Variant
    split: OpenSplit
    scorer: str = OPEN_SCORER
    verdict: Verdict | Literal["UNSCORABLE"]
    other_language: bool = False  # answered in another language: INCORRECT, counted apart
    answer_lang: str | None = Field(default=None, max_length=8)
    answer: str = Field(default="", max_length=MAX_ANSWER_CHARS)
    reason: str = Field(default="", max_length=MAX_REASON_CHARS)

    @property
    def correct(self) -> bool:
        return self.verdict is Verdict.CORRECT


def scored_item(
    question: ShortAnswerQuestion, *, qid: int, entity_id: int, lang: str, answer: str, variant: Variant,
    split: OpenSplit, domain: str = "",
) -> OpenResultItem:
    """`answer` to `question` asked in `lang`, scored by the normaliser layer."""
    s = score(question, lang, answer)
    return OpenResultItem(
        qid=qid, entity_id=entity_id, domain=domain, fact=question.fact, lang=lang, variant=variant, split=split, verdict=s.verdict,
        other_language=s.other_language, answer_lang=(s.answer_lang or "")[:8] or None,
        answer=answer[:MAX_ANSWER_CHARS], reason=s.reason[:MAX_REASON_CHARS],
    )


def safely_scored_item(
    question: ShortAnswerQuestion, *, qid: int, entity_id: int, lang: str, answer: str, variant: Variant,
    split: OpenSplit, domain: str = "", scorer: Callable[..., OpenResultItem] = scored_item,
) -> OpenResultItem:
    """`scorer`'s item (`scored_item`), or, where scoring this one answer raised, the answer recorded `UNSCORABLE`
    with the error as its reason (the text kept with what cannot be stored escaped, e.g. a lone surrogate): one
    answer never fails the job's pass."""
    try:
        return scorer(question, qid=qid, entity_id=entity_id, lang=lang, answer=answer, variant=variant, split=split,
                      domain=domain)
    except Exception as e:  # noqa: BLE001 - any failure of one answer's scoring is that answer's, recorded with it
        log.warning("open answer to %s (%s, %s) could not be scored: %s: %s", qid, lang, variant.value, type(e).__name__, e)
        return OpenResultItem(
            qid=qid, entity_id=entity_id, domain=domain, fact=question.fact, lang=lang, variant=variant, split=split,
            verdict=UNSCORABLE, answer=answer.encode("utf-8", "backslashreplace").decode("utf-8")[:MAX_ANSWER_CHARS],
            reason=f"unscorable: {type(e).__name__}: {e}".encode("utf-8", "backslashreplace").decode("utf-8")[:MAX_REASON_CHARS],
        )

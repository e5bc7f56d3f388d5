"""The same fact asked both ways (issue 47): which MCQ and which open question of a snapshot ask one fact.

An open question asks a fact slot of `clkt.openqa.from_facts` ("film.director"); the MCQ about the same entity
whose slot is the fact's last part ("director"), or the slot `MCQ_SLOT` names where the two are spelled apart,
asks the same fact. The report's paired view (`clkt.report.open_track`) pairs their verdicts by it, and a
retraction (`clkt.publish.errata`) withdraws both: a wrong fact is wrong in either format.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["MCQ_SLOT", "AskedFact", "mcq_slot", "same_fact_qids"]

# open fact -> the MCQ slot asking the same fact, where it is not the fact's last part (`clkt.openqa.from_facts`)
MCQ_SLOT = {"film.lead": "lead_actor", "release.date": "release_date", "release.tracks": "track_count", "quake.date": "time",
            "paper.date": "submitted", "paper.authors": "author_count", "paper.category": "primary_category",
            "launch.date": "net"}


def mcq_slot(fact: str) -> str:
    """The MCQ slot that asks the open question's `fact`."""
    return MCQ_SLOT.get(fact, fact.rsplit(".", 1)[-1])


@dataclass(frozen=True, kw_only=True, slots=True)
class AskedFact:
    """A question of a snapshot by its public ids, and the fact it asks in the MCQ's terms (`mcq_slot`)."""

    qid: int
    entity_id: int
    slot: str
    open: bool  # an open question (else an MCQ)


def same_fact_qids(qid: int, questions: Iterable[AskedFact]) -> list[int]:
    """The qids of the other format's questions that ask the fact question `qid` asks (none: [], as for a qid that
    is not among `questions`), sorted."""
    questions = list(questions)
    asked = next((q for q in questions if q.qid == qid), None)
    if asked is None:
        return []
    return sorted(q.qid for q in questions
                  if q.open != asked.open and q.entity_id == asked.entity_id and q.slot == asked.slot)

"""The question repository: probes, questions and their moves, verifications, translations (real SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from clkt.outputs import MCQ, TranslatedMCQ
from storage.engine import Store
from storage.enums import QuestionStatus
from storage.models import Entity, Probe, Question, Translation, Verification
from storage.questions import (
    ProbeRecord,
    QuestionRecord,
    TranslationRecord,
    VerificationRecord,
    add_probes,
    add_questions,
    add_translations,
    add_verifications,
    count_questions,
    move_question,
    probes_of,
    questions_of,
    translated_langs,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
OPTIONS = ["Paris", "Lyon", "Nice", "Lille"]


async def _entity(store: Store) -> int:
    async with store.transaction() as s:
        e = Entity(source="t", external_id="1", domain="sports", name="n", occurred_at=NOW, content_hash="h")
        s.add(e)
        await s.flush()
        assert e.id is not None
        return e.id


def _mcq(slot: str) -> MCQ:
    return MCQ(question=f"Where was the {slot} held?", options=OPTIONS, answer_index=1, evidence="in Lyon", slot=slot)


def _probe(entity_id: int, target: str, lang: str, *, known: bool) -> ProbeRecord:
    return ProbeRecord(entity_id=entity_id, target_model=target, lang=lang, prompt="p", response="r", known=known,
                       matched_facts=("venue",) if known else (), reason="why", judge="j", prompt_version="v",
                       created_at=NOW)


async def test_probes_round_trip_and_are_unique(store: Store) -> None:
    entity_id = await _entity(store)
    async with store.transaction() as s:
        assert await add_probes(s, [_probe(entity_id, "m1", "en", known=False), _probe(entity_id, "m1", "fr", known=True)]) == 2
        assert await add_probes(s, [_probe(entity_id, "m1", "fr", known=False)]) == 0  # (entity, target, lang) kept
        assert await add_probes(s, []) == 0
    async with store.session() as s:
        got = await probes_of(s, entity_id)
        assert await probes_of(s, entity_id + 1) == []
    assert sorted(got, key=lambda p: p.lang) == [_probe(entity_id, "m1", "en", known=False),
                                                  _probe(entity_id, "m1", "fr", known=True)]


async def test_questions_are_written_generated_and_moved_only_from_the_expected_status(store: Store) -> None:
    entity_id = await _entity(store)
    async with store.transaction() as s:
        n = await add_questions(s, entity_id=entity_id, questions=[_mcq("venue"), _mcq("date")], lang="en",
                                generator="g", prompt_version="v1", created_at=NOW)
        assert n == 2
        assert await add_questions(s, entity_id=entity_id, questions=[_mcq("venue")], lang="en", generator="g2",
                                   prompt_version="v2", created_at=NOW) == 0  # one question per slot
    async with store.session() as s:
        generated = await questions_of(s, entity_id, status=QuestionStatus.generated)
        row = (await s.execute(select(Question).where(Question.slot == "venue"))).scalar_one()
    assert [q.slot for q in generated] == ["venue", "date"]  # oldest first
    venue = generated[0]
    assert isinstance(venue, QuestionRecord)
    assert (venue.entity_id, venue.lang, venue.options, venue.answer_index, venue.evidence, venue.status) == (
        entity_id, "en", tuple(OPTIONS), 1, "in Lyon", QuestionStatus.generated,
    )
    assert (row.generator, row.prompt_version, row.created_at) == ("g", "v1", NOW)

    async with store.transaction() as s:
        await move_question(s, venue.id, from_status=QuestionStatus.generated, to_status=QuestionStatus.verified,
                            reason=None)
        await move_question(s, generated[1].id, from_status=QuestionStatus.generated,
                            to_status=QuestionStatus.rejected, reason="bad")
        # a stale move (the question is no longer `generated`) changes nothing
        await move_question(s, venue.id, from_status=QuestionStatus.generated, to_status=QuestionStatus.rejected,
                            reason="stale")
        assert await count_questions(s, entity_id, statuses=[QuestionStatus.verified]) == 1
        assert await count_questions(s, entity_id, statuses=[QuestionStatus.verified, QuestionStatus.rejected]) == 2
        assert await count_questions(s, entity_id, statuses=[QuestionStatus.translated]) == 0
    async with store.session() as s:
        [verified] = await questions_of(s, entity_id, status=QuestionStatus.verified)
        [rejected] = await questions_of(s, entity_id, status=QuestionStatus.rejected)
    assert verified.id == venue.id and verified.status_reason is None
    assert rejected.status_reason == "bad"


async def test_verifications_and_translations(store: Store) -> None:
    entity_id = await _entity(store)
    async with store.transaction() as s:
        await add_questions(s, entity_id=entity_id, questions=[_mcq("venue")], lang="en", generator="g",
                            prompt_version="v", created_at=NOW)
    async with store.session() as s:
        [q] = await questions_of(s, entity_id, status=QuestionStatus.generated)
        assert await translated_langs(s, [q.id]) == set()
        assert await translated_langs(s, []) == set()
    verdict = VerificationRecord(question_id=q.id, verifier="m", prompt_version="v", criteria={"grounded": True},
                                 reasons={"grounded": "ok"}, passed=True)
    fr = TranslatedMCQ(lang="fr", question="Où ?", options=OPTIONS, answer_index=1)
    en = TranslatedMCQ(lang="en", question=q.question, options=OPTIONS, answer_index=1)
    async with store.transaction() as s:
        assert await add_verifications(s, [verdict], created_at=NOW) == 1
        assert await add_verifications(s, [verdict], created_at=NOW) == 0  # unique per (question, verifier)
        n = await add_translations(s, [
            TranslationRecord(question_id=q.id, translation=en, translator="source", prompt_version="source",
                              checks={"source": True}),
            TranslationRecord(question_id=q.id, translation=fr, translator="m", prompt_version="v",
                              checks={"passed": True}),
        ], created_at=NOW)
        assert n == 2
        assert await add_translations(s, [TranslationRecord(question_id=q.id, translation=fr, translator="m2",
                                                            prompt_version="v2", checks={})], created_at=NOW) == 0
    async with store.session() as s:
        assert await translated_langs(s, [q.id]) == {(q.id, "en"), (q.id, "fr")}
        v = (await s.execute(select(Verification))).scalar_one()
        t = (await s.execute(select(Translation).where(Translation.lang == "fr"))).scalar_one()
        assert (await s.execute(select(Probe))).first() is None
    assert (v.verifier, v.criteria, v.reasons, v.passed, v.created_at) == ("m", {"grounded": True}, {"grounded": "ok"},
                                                                           True, NOW)
    assert (t.question, t.options, t.answer_index, t.translator, t.prompt_version, t.checks) == (
        "Où ?", OPTIONS, 1, "m", "v", {"passed": True},
    )

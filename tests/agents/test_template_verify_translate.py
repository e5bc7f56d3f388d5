"""Verifier checks catch broken MCQs; translations are exact by construction; foreign MCQs are refused."""

from __future__ import annotations

import asyncio

import pytest

from agents.template import TemplateBackend
from agents.template.plans import question_text
from clkt.documents import render_document
from clkt.errors import AgentError, UserError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import MCQ, VerifierReport
from tests.documents.samples import ALL

ENGINE = TemplateBackend()
FILM = ALL["film"]
EN = render_document(FILM, "en")


def _mcqs(facts: EntityFacts = FILM, doc: RenderedDocument = EN) -> dict[str, MCQ]:
    out = asyncio.run(ENGINE.generate(entity_name="Fight Club", document=doc, facts=facts, n=20))
    return {m.slot: m for m in out}


def _verify(mcq: MCQ, doc: RenderedDocument = EN, facts: EntityFacts = FILM) -> VerifierReport:
    return asyncio.run(ENGINE.verify(document=doc, facts=facts, mcq=mcq))


def test_verify_passes_engine_questions_with_reasons() -> None:
    report = _verify(_mcqs()["director"])
    assert report.passed
    assert set(report.reasons) == {"grounded", "specific", "verifiable", "answer_correct", "distractors_plausible_wrong"}


def test_verify_catches_each_criterion() -> None:
    m = _mcqs()["lead_actor"]
    wrong_answer = m.model_copy(update={"answer_index": 1})
    r = _verify(wrong_answer)
    assert not r.answer_correct and not r.verifiable and r.grounded
    true_distractor = m.model_copy(update={"options": [m.options[0], "Brad Pitt", *m.options[2:]]})
    r = _verify(true_distractor)
    assert not r.distractors_plausible_wrong and "Brad Pitt" in r.reasons["distractors_plausible_wrong"]
    vague = m.model_copy(update={"question": "Which actor is top-billed in this film?"})
    assert not _verify(vague).specific
    ungrounded = m.model_copy(update={"evidence": "Edward Norton is the lead of a different film."})
    assert not _verify(ungrounded).grounded
    runtime = _mcqs()["runtime"]
    mistyped = runtime.model_copy(update={"options": [runtime.options[0], "Drama", *runtime.options[2:]]})
    assert not _verify(mistyped).distractors_plausible_wrong


def test_verify_in_another_language_document() -> None:
    ja = render_document(FILM, "ja")
    for m in _mcqs(doc=ja).values():
        assert _verify(m, doc=ja).passed, m.slot


@pytest.mark.parametrize("lang", ["ja", "zh", "fr", "es"])
def test_translation_keeps_a_shuffled_order(lang: str) -> None:
    m = _mcqs()["runtime"]
    shuffled = m.model_copy(update={"options": [m.options[2], m.options[0], m.options[3], m.options[1]], "answer_index": 1})
    t = asyncio.run(ENGINE.translate_mcq(mcq=shuffled, document=EN, facts=FILM, target_lang=lang))
    target = render_document(FILM, lang)
    assert t.answer_index == 1 and t.options[1] in target.sentences["runtime"]
    assert t.question == question_text(FILM, "runtime", lang)
    assert [o.split("分")[0].split(" ")[0] for o in t.options] == [o.split(" ")[0] for o in shuffled.options]


def test_translation_refuses_foreign_options_and_languages() -> None:
    m = _mcqs()["director"]
    foreign = m.model_copy(update={"options": ["David Fincher", "A", "B", "C"]})
    with pytest.raises(AgentError, match="only translate its own questions"):
        asyncio.run(ENGINE.translate_mcq(mcq=foreign, document=EN, facts=FILM, target_lang="ja"))
    with pytest.raises(UserError, match="unsupported"):
        asyncio.run(ENGINE.translate_mcq(mcq=m, document=EN, facts=FILM, target_lang="de"))


def test_translate_document_is_the_rendered_document() -> None:
    for lang in ("en", "ja", "zh", "fr", "es"):
        t = asyncio.run(ENGINE.translate_document(document=EN, facts=FILM, target_lang=lang))
        assert t.lang == lang and t.text == render_document(FILM, lang).text

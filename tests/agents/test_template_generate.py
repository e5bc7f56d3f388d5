"""Template engine properties for all domains x 5 languages (hypothesis) and the fixture entities."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from agents.backend import AgentBackend
from agents.template import TemplateBackend
from agents.template.parsing import digits, find_dates
from clkt.documents import LANGUAGES, render_document
from clkt.facts import SLOTS
from clkt.outputs import MCQ, check_against_document, normalize
from tests.documents.samples import ALL, ENTITY_NAMES
from tests.documents.strategies import disaster_facts, film_facts, match_facts, quake_facts, release_facts

ENGINE = TemplateBackend()
_backend_check: AgentBackend = ENGINE  # the engine satisfies the protocol (checked by the type checker)


def _generate(facts: Any, n: int = 20) -> list[MCQ]:
    doc = render_document(facts, "en")
    return asyncio.run(ENGINE.generate(entity_name="x", document=doc, facts=facts, n=n))


def assert_engine_properties(facts: Any) -> list[MCQ]:
    """Everything the engine promises, for one entity, in every language."""
    en = render_document(facts, "en")
    mcqs = _generate(facts)
    assert [m.slot for m in mcqs] == [s for s in SLOTS[facts.kind] if s in {m.slot for m in mcqs}]
    assert _generate(facts) == mcqs  # deterministic
    for m in mcqs:
        assert check_against_document(m, en.text) == []
        assert m.evidence == en.sentences[m.slot]
        assert m.answer in m.evidence
        assert len({normalize(o) for o in m.options}) == 4
        for i, opt in enumerate(m.options):
            if i != m.answer_index:
                assert normalize(opt) not in normalize(m.evidence), (m.slot, opt)
        report = asyncio.run(ENGINE.verify(document=en, facts=facts, mcq=m))
        assert report.passed, (m.slot, report.reasons)
        for lang in LANGUAGES:
            doc = render_document(facts, lang)
            t = asyncio.run(ENGINE.translate_mcq(mcq=m, document=en, facts=facts, target_lang=lang))
            assert t.lang == lang and t.answer_index == m.answer_index
            answer = t.options[t.answer_index]
            evidence = doc.sentences[m.slot]
            assert answer in evidence and answer in doc.text, (lang, m.slot, answer)
            for i, opt in enumerate(t.options):
                if i != t.answer_index:
                    assert normalize(opt) not in normalize(evidence), (lang, m.slot, opt)
            # numbers agree: same digits option by option (dates: the same calendar day)
            for src, dst in zip(m.options, t.options, strict=True):
                if find_dates(src):
                    assert find_dates(src) == find_dates(dst), (lang, src, dst)
                else:
                    assert digits(src) == digits(dst), (lang, src, dst)
            if lang == "en":
                assert t.options == m.options and t.question == m.question
    return mcqs


COMMON = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(facts=match_facts())
def test_match_properties(facts: Any) -> None:
    assert_engine_properties(facts)


@COMMON
@given(facts=film_facts())
def test_film_properties(facts: Any) -> None:
    assert_engine_properties(facts)


@COMMON
@given(facts=release_facts())
def test_release_properties(facts: Any) -> None:
    assert_engine_properties(facts)


@COMMON
@given(facts=quake_facts())
def test_quake_properties(facts: Any) -> None:
    assert_engine_properties(facts)


@COMMON
@given(facts=disaster_facts())
def test_disaster_properties(facts: Any) -> None:
    assert_engine_properties(facts)


EXPECTED_SLOTS = {
    "match": list(SLOTS["match"]),
    "film": list(SLOTS["film"]),
    "release": list(SLOTS["release"]),
    # no alert/fatalities known; tsunami is yes/no
    "quake": ["time", "place", "magnitude", "depth", "felt", "intensity", "latitude"],
    "disaster": ["date", "disaster_type", "country", "status", "affected", "glide"],
}


@pytest.mark.parametrize("kind", list(ALL))
def test_fixture_entities(kind: str) -> None:
    mcqs = assert_engine_properties(ALL[kind])
    assert [m.slot for m in mcqs] == EXPECTED_SLOTS[kind]
    assert all(m.answer_index == 0 for m in mcqs)
    assert len(_generate(ALL[kind], n=3)) == 3


def test_fixture_answers_and_never_true_distractors() -> None:
    by_slot = {m.slot: m for m in _generate(ALL["match"])}
    score = by_slot["final_score"]
    assert score.answer == "4–1"
    assert "1–4" not in score.options  # the reversed score is never a distractor
    assert by_slot["winner"].answer == "Liverpool" and "Swansea" in by_slot["winner"].options
    film = {m.slot: m for m in _generate(ALL["film"])}
    cast = {"Edward Norton", "Brad Pitt", "Helena Bonham Carter", "Meat Loaf", "Jared Leto"}
    assert film["lead_actor"].answer == "Edward Norton"
    assert not cast & set(film["lead_actor"].options[1:])
    assert film["director"].answer == "David Fincher" and not cast & set(film["director"].options)
    assert film["runtime"].answer == "139 minutes"
    release = {m.slot: m for m in _generate(ALL["release"])}
    assert release["track_count"].answer == "12" and release["label"].answer == "Asylum Records"
    assert release["first_track"].answer == "The A Team"
    quake = {m.slot: m for m in _generate(ALL["quake"])}
    assert quake["magnitude"].answer == "6.7" and quake["depth"].answer == "18.2 km"
    assert quake["intensity"].answer == "8.8" and quake["latitude"].answer == "34.213° N"


def test_n_limits_and_draws() -> None:
    assert _generate(ALL["match"], n=0) == []
    draw = ALL["match"].model_copy(update={"home_score": 1, "away_score": 1})
    assert "winner" not in {m.slot for m in _generate(draw)}


def test_protocol_identity() -> None:
    assert ENGINE.name == "template-engine"
    for role in ("judge", "generate", "verify", "translate"):
        assert ENGINE.producer(role) == "template-engine"
        assert ENGINE.prompt_version(role) == "tmpl-2"
    assert ENTITY_NAMES["film"] == "Fight Club"

"""Short-answer questions from the typed facts of every domain: one per filled slot in each language, golds written
as the language's document writes them, each right by the normaliser, none giving its answer away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clkt.facts import FilmFacts
from clkt.openqa.from_facts import QUESTIONS, asks, short_answer_questions
from clkt.openqa.question import AnswerKind
from clkt.openqa.score import Verdict, score
from clkt.openqa.text import normalise
from tests.documents.samples import ALL, FIGHT_CLUB, LIVERPOOL_SWANSEA


def test_every_slot_is_asked_in_the_five_languages() -> None:
    assert all(set(by_lang) == {"en", "ja", "zh", "fr", "es"} for by_lang in QUESTIONS.values())


@pytest.mark.parametrize("kind", sorted(ALL))
def test_each_domains_golds_are_right_and_not_given_away(kind: str) -> None:
    qs = short_answer_questions(ALL[kind], entity_id=kind)
    assert len(qs) >= 2 and len({q.qid for q in qs}) == len(qs)
    for q in qs:
        for lang in q.langs:
            gold = q.gold(lang).answer
            assert score(q, lang, gold).verdict is Verdict.CORRECT, (q.qid, lang)
            assert normalise(gold, lang) not in normalise(q.questions[lang], lang)
            assert score(q, lang, "").verdict is Verdict.NOT_ATTEMPTED


def test_golds_follow_each_languages_conventions() -> None:
    by_fact = {q.fact: q for q in short_answer_questions(FIGHT_CLUB, entity_id="f")}
    released = by_fact["film.release_date"]
    assert released.kind is AnswerKind.date
    assert released.gold("fr").answer == "15 octobre 1999" and released.gold("ja").answer == "1999年10月15日"
    assert released.gold("es").aliases == ("1999-10-15",)
    assert score(released, "en", "October 15, 1999").verdict is Verdict.CORRECT
    assert score(released, "zh", "1999年10月").verdict is Verdict.INCORRECT
    assert by_fact["film.runtime"].gold("ja").answer == "139分"
    assert score(by_fact["film.runtime"], "fr", "cent trente-neuf").verdict is Verdict.CORRECT
    assert score(by_fact["film.director"], "ja", "David Fincher").verdict is Verdict.CORRECT  # names kept verbatim


def test_missing_facts_and_chosen_slots() -> None:
    bare = FilmFacts(title="Untitled", release_date=FIGHT_CLUB.release_date)
    assert [q.fact for q in short_answer_questions(bare, entity_id="u")] == ["film.release_date"]
    picked = short_answer_questions(LIVERPOOL_SWANSEA, entity_id="m", slots=["match.venue"], langs=("en", "fr"))
    assert [q.fact for q in picked] == ["match.venue"] and picked[0].langs == ("en", "fr")
    named = LIVERPOOL_SWANSEA.model_copy(update={"venue": "Liverpool Stadium"})
    facts = [q.fact for q in short_answer_questions(named, entity_id="m")]
    assert "match.venue" in facts  # "liverpool stadium" is not in "Liverpool vs Swansea"
    given = LIVERPOOL_SWANSEA.model_copy(update={"venue": "Liverpool"})
    assert "match.venue" not in [q.fact for q in short_answer_questions(given, entity_id="m")]



def test_the_registered_domains_have_no_short_answer_questions_yet() -> None:
    """science and spaceflight are counted as giving no question at a freeze (`asks`), never failed."""
    from clkt.domains.science.facts import PaperFacts

    paper = PaperFacts(arxiv_id="2511.18882", title="Sparse Adapters", authors=["Ana Ruiz"], primary_category="cs.CL",
                       submitted=datetime(2025, 11, 24, 9, 30, tzinfo=UTC))
    assert not asks(paper)
    with pytest.raises(TypeError, match="no short-answer questions"):
        short_answer_questions(paper, entity_id="p")

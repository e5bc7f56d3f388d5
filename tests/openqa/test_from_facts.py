"""Short-answer questions from the typed facts of every domain: one per filled slot in each language, golds written
as the language's document writes them, each right by the normaliser, none giving its answer away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clkt.documents import render_document
from clkt.domains import DOMAINS
from clkt.domains.science.facts import PaperFacts
from clkt.domains.spaceflight.facts import LaunchFacts
from clkt.facts import FilmFacts
from clkt.openqa.from_facts import asks, questions, short_answer_questions
from clkt.openqa.question import AnswerKind
from clkt.openqa.score import Verdict, score
from clkt.openqa.text import normalise
from tests.documents.samples import ALL, FIGHT_CLUB, LIVERPOOL_SWANSEA


def test_every_slot_is_asked_in_the_five_languages() -> None:
    assert all(set(by_lang) == {"en", "ja", "zh", "fr", "es"} for by_lang in questions().values())


def test_every_built_in_domain_declares_its_open_questions() -> None:
    """Each kind of facts of the six domains has its slots in its own folder (`openqa.py`), none in the shared one."""
    kinds = {model.model_fields["kind"].default for spec in DOMAINS.values() if spec.package.startswith("clkt.")
             for model, _ in spec.kinds}
    assert kinds == {"film", "release", "match", "quake", "disaster", "paper", "launch"}
    assert {slot.split(".")[0] for slot in questions()} == kinds


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



def _paper() -> PaperFacts:
    return PaperFacts(arxiv_id="2511.18882", title="Sparse Adapters for Low-Resource Translation",
                      authors=["Ana Ruiz", "Kenji Mori", "Lea Brun"], primary_category="cs.CL",
                      categories=["cs.CL", "cs.LG"], submitted=datetime(2025, 11, 23, 23, 30, tzinfo=UTC))


def _launch() -> LaunchFacts:
    return LaunchFacts(name="Falcon 9 Block 5 | Starlink Group 10-40", net=datetime(2026, 1, 5, 2, 10, tzinfo=UTC),
                       outcome="success", provider="SpaceX", rocket="Falcon 9 Block 5", mission="Starlink Group 10-40",
                       pad="Space Launch Complex 40", location="Cape Canaveral SFS, FL, USA")


@pytest.mark.parametrize("facts", [_paper(), _launch()], ids=["paper", "launch"])
def test_science_and_spaceflight_golds_are_what_their_documents_state(facts: PaperFacts | LaunchFacts) -> None:
    qs = short_answer_questions(facts, entity_id="x")
    assert asks(facts) and len(qs) >= 3
    for q in qs:
        for lang in q.langs:
            gold = q.gold(lang).answer
            assert gold in render_document(facts, lang).text, (q.fact, lang)  # the document states the answer
            assert score(q, lang, gold).verdict is Verdict.CORRECT, (q.fact, lang)


def test_science_and_spaceflight_slots() -> None:
    paper = {q.fact: q for q in short_answer_questions(_paper(), entity_id="p")}
    assert list(paper) == ["paper.first_author", "paper.date", "paper.authors", "paper.category"]
    assert paper["paper.date"].gold("fr").answer == "23 novembre 2025" and paper["paper.authors"].gold("en").answer == "3"
    assert paper["paper.date"].gold("ja").aliases == ("2025-11-23",)
    launch = {q.fact: q for q in short_answer_questions(_launch(), entity_id="l")}
    # the rocket is in the launch's name: that question would give its answer away, and is dropped
    assert list(launch) == ["launch.provider", "launch.date", "launch.pad"]
    assert launch["launch.date"].gold("es").answer == "5 de enero de 2026"
    bare = _launch().model_copy(update={"provider": None, "pad": None})
    assert [q.fact for q in short_answer_questions(bare, entity_id="b")] == ["launch.date"]


def test_a_kind_without_open_questions_gives_none() -> None:
    """A domain folder without `openqa.py` is counted as giving no question at a freeze (`asks`), never failed."""

    class Other(PaperFacts):
        pass

    other = Other(**_paper().model_dump())
    assert not asks(other)
    with pytest.raises(TypeError, match="no short-answer questions"):
        short_answer_questions(other, entity_id="o")

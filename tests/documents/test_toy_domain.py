"""A kind of facts declared in this test module only (bridges) flows through the product: its documents, the
template engine's questions (generate, translate, verify), the translation checks, the judge's facts and the
control split. Nothing of the product names it: each side's registry is asked by the facts' kind, so a
hard-coded chain over the product's kinds (an `isinstance` ladder, a table keyed by kind) fails here."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from agents.checks import check_translated_mcq, proper_names
from agents.template import TemplateBackend, build_mcqs, judge_response
from agents.template.distractors import near_ints, pool_names, shifted_dates
from agents.template.domains import AGENT_KINDS, AgentKind
from agents.template.matchers import FactList
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import DateValue, IntValue, NameValue
from clkt.documents import LANGUAGES, Formatter, render_document
from clkt.documents._builder import DocBuilder
from clkt.documents.registry import DOCUMENT_KINDS, DocumentKind, kinds_of_domain, slots_of
from clkt.errors import UserError
from clkt.facts import RenderedDocument
from clkt.outputs import TranslatedMCQ, check_against_document
from clkt.snapshots.control import build_control
from clkt.snapshots.fiction import FICTIONAL_KINDS, FictionalKind, Made, Namer

KIND, DOMAIN = "bridge", "bridges"
SLOTS = ("opened", "length", "engineer")


class BridgeFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["bridge"] = "bridge"
    name: str
    opened: date
    length_m: int
    engineer: str


# --- the kernel's part: the document ---------------------------------------------------------------------

TEXT = {
    "en": ("{name} opened on {date}.", "It is {n} metres long.", "It was designed by {who}."),
    "ja": ("{name}は{date}に開通した。", "全長は{n}メートルである。", "設計者は{who}である。"),
    "zh": ("{name}于{date}通车。", "全长{n}米。", "设计者是{who}。"),
    "fr": ("{name} a été inauguré le {date}.", "Il mesure {n} mètres de long.", "Il a été conçu par {who}."),
    "es": ("{name} se inauguró el {date}.", "Mide {n} metros de largo.", "Fue diseñado por {who}."),
}


def render_bridge(f: BridgeFacts, fmt: Formatter) -> RenderedDocument:
    opened, length, engineer = TEXT[fmt.lang]
    doc = DocBuilder(lang=fmt.lang, title=f.name)
    doc.add(opened.format(name=f.name, date=fmt.date(f.opened)), slot="opened")
    doc.add(length.format(n=fmt.integer(f.length_m)), slot="length")
    doc.add(engineer.format(who=f.engineer), slot="engineer")
    return doc.build()


# --- the agents' part: questions, proper names, judge facts ----------------------------------------------

QUESTIONS = {
    "opened": {"en": "On what date did {name} open?", "ja": "{name}が開通したのはいつですか？",
               "zh": "{name}是哪一天通车的？", "fr": "À quelle date {name} a-t-il été inauguré ?",
               "es": "¿En qué fecha se inauguró {name}?"},
    "length": {"en": "How many metres long is {name}?", "ja": "{name}の全長は何メートルですか？",
               "zh": "{name}全长多少米？", "fr": "Combien de mètres mesure {name} ?", "es": "¿Cuántos metros mide {name}?"},
    "engineer": {"en": "Who designed {name}?", "ja": "{name}を設計したのは誰ですか？", "zh": "{name}是谁设计的？",
                 "fr": "Qui a conçu {name} ?", "es": "¿Quién diseñó {name}?"},
}
ENGINEERS = ("Grace Pontwright", "Isolde Trussell", "Marek Cantilever", "Odile Spanneau", "Tomas Girderson")

TEMPLATES = DomainTemplates(
    kind=KIND,
    context=lambda f, fmt: {"name": f.name},
    anchors=lambda f, fmt: [f.name],
    slots={
        "opened": SlotTemplate(slot="opened", question=QUESTIONS["opened"], answer=lambda f: DateValue(f.opened),
                               candidates=lambda f, rng: shifted_dates(f.opened, rng)),
        "length": SlotTemplate(slot="length", question=QUESTIONS["length"], answer=lambda f: IntValue(f.length_m),
                               candidates=lambda f, rng: near_ints(f.length_m, rng, minimum=1)),
        "engineer": SlotTemplate(slot="engineer", question=QUESTIONS["engineer"], answer=lambda f: NameValue(f.engineer),
                                 candidates=lambda f, rng: pool_names(ENGINEERS, rng, exclude=(f.engineer,))),
    },
)


def bridge_judge_facts(f: BridgeFacts, found: FactList) -> None:
    found.day("opened", f.opened)
    found.num("length", f.length_m, ("metre", "meter", "long", "メートル", "米", "mètre", "metro"))
    found.person("engineer", f.engineer)


# --- the control split's part: fictional bridges ---------------------------------------------------------

def make_bridge(rng: random.Random, nm: Namer, start: date, end: date) -> Made[BridgeFacts]:
    facts = BridgeFacts(
        name=f"{nm.place()} Bridge", opened=start + timedelta(days=rng.randrange(max((end - start).days, 1))),
        length_m=rng.randint(120, 2400), engineer=nm.person(),
    )
    return facts.name, facts, {"engineer": nm.pool(nm.person)}


@pytest.fixture
def bridges() -> Iterator[None]:
    """The bridge kind registered on every side for one test, and gone after it."""
    DOCUMENT_KINDS.register(DocumentKind(kind=KIND, facts=BridgeFacts, domain=DOMAIN, slots=SLOTS, render=render_bridge))
    AGENT_KINDS.register(AgentKind(kind=KIND, templates=TEMPLATES, judge_facts=bridge_judge_facts,
                                   proper_names=lambda f: [f.engineer]))
    FICTIONAL_KINDS.register(FictionalKind(kind=KIND, make=make_bridge))
    try:
        yield
    finally:
        DOCUMENT_KINDS.unregister(KIND)
        AGENT_KINDS.unregister(KIND)
        FICTIONAL_KINDS.unregister(KIND)


GOLDEN_GATE: Any = BridgeFacts(name="Golden Gate Bridge", opened=date(1937, 5, 27), length_m=2737,
                               engineer="Joseph Strauss")
ENGINE = TemplateBackend()


def test_a_bridge_is_rendered_in_every_language(bridges: None) -> None:
    for lang in LANGUAGES:
        doc = render_document(GOLDEN_GATE, lang)
        assert set(doc.sentences) == set(SLOTS) and all(s in doc.text for s in doc.sentences.values())
    assert render_document(GOLDEN_GATE, "en").text == (
        "Golden Gate Bridge\n\nGolden Gate Bridge opened on 27 May 1937. It is 2,737 metres long. "
        "It was designed by Joseph Strauss."
    )
    assert slots_of(KIND) == SLOTS and kinds_of_domain(DOMAIN) == (KIND,)


def test_the_template_engine_asks_verifies_and_translates_a_bridge(bridges: None) -> None:
    en = render_document(GOLDEN_GATE, "en")
    mcqs = build_mcqs(GOLDEN_GATE, en, 10)
    assert [m.slot for m in mcqs] == list(SLOTS)
    assert mcqs[0].question == "On what date did Golden Gate Bridge open?" and mcqs[0].answer == "27 May 1937"
    for m in mcqs:
        assert check_against_document(m, en.text) == [] and len(set(m.options)) == 4
        report = asyncio.run(ENGINE.verify(mcq=m, document=en, facts=GOLDEN_GATE))
        assert report.passed, (m.slot, report.reasons)
        fr = asyncio.run(ENGINE.translate_mcq(mcq=m, document=en, facts=GOLDEN_GATE, target_lang="fr"))
        assert fr.answer_index == m.answer_index
        assert check_translated_mcq(m, fr, lang="fr", facts=GOLDEN_GATE, langs=LANGUAGES) == []


def test_the_translation_checks_keep_a_bridge_s_proper_names(bridges: None) -> None:
    assert proper_names(GOLDEN_GATE) == {"Joseph Strauss"}
    m = build_mcqs(GOLDEN_GATE, render_document(GOLDEN_GATE, "en"), 10)[2]
    renamed = TranslatedMCQ(lang="en", question=m.question, options=[o.replace("Joseph Strauss", "J. S.") for o in m.options],
                            answer_index=m.answer_index)
    assert "proper names not preserved: ['Joseph Strauss']" in check_translated_mcq(
        m, renamed, lang="en", facts=GOLDEN_GATE, langs=LANGUAGES)


def test_the_judge_matches_a_bridge_s_facts(bridges: None) -> None:
    known = judge_response(entity_name="Golden Gate Bridge", facts=GOLDEN_GATE, lang="en",
                           response="It was designed by Joseph Strauss and opened on 27 May 1937; it is 2,737 m long.")
    assert known.known and set(known.matched_facts) == {"engineer: Joseph Strauss", "opened: 1937-05-27", "length: 2737"}
    vague = judge_response(entity_name="Golden Gate Bridge", facts=GOLDEN_GATE, lang="en",
                           response="The Golden Gate Bridge is a famous bridge in California.")
    assert not vague.known


def test_the_control_split_invents_bridges(bridges: None) -> None:
    ctl = build_control(spec="toy", period="2026-01", seed=7, start=date(2026, 1, 1), end=date(2026, 2, 1),
                        languages=LANGUAGES, domains=(DOMAIN,), per_domain=2)
    assert len(ctl.entities) == 2 and all(isinstance(e.facts, BridgeFacts) for e in ctl.entities)
    assert len(ctl.docs) == 2 * len(LANGUAGES)
    asked = {q.slot for q in ctl.questions_in("en")}
    assert asked == set(SLOTS), asked


def test_a_kind_is_registered_once_and_is_gone_after_its_test() -> None:
    assert KIND not in DOCUMENT_KINDS and KIND not in AGENT_KINDS and KIND not in FICTIONAL_KINDS
    with pytest.raises(TypeError, match="no document renderer"):
        render_document(GOLDEN_GATE, "en")
    match = DOCUMENT_KINDS.find("match")
    assert match is not None
    with pytest.raises(UserError, match="registered twice"):
        DOCUMENT_KINDS.register(match)
    with pytest.raises(UserError, match="no document renderer of kind 'bridge'"):
        DOCUMENT_KINDS.unregister(KIND)
    # every product kind has its part on every side
    assert set(DOCUMENT_KINDS.kinds()) == set(AGENT_KINDS.kinds()) == set(FICTIONAL_KINDS.kinds())

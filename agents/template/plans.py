"""The template engine's core: plan a slot's answer + distractors once, render it in any language.

A plan is a pure function of (facts, slot): its random choices are seeded from a hash of both, so the
English question generated today and the Japanese translation made next week carry the same options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.template.distractors import choose, seeded_rng
from agents.template.domains import agent_kind
from agents.template.slots import DomainTemplates, SlotTemplate
from agents.template.values import Value
from clkt.documents import LANGUAGES, formatter, render_document
from clkt.documents.registry import slots_of
from clkt.errors import UserError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import MCQ, check_against_document

__all__ = ["Plan", "build_mcqs", "domain_spec", "entity_naming", "plan", "question_text", "render_options", "slot_spec"]

@dataclass(frozen=True, slots=True)
class Plan:
    slot: str
    values: tuple[Value, ...]  # the four options in generation order
    answer_index: int

    @property
    def answer(self) -> Value:
        return self.values[self.answer_index]


def domain_spec(facts: EntityFacts) -> DomainTemplates:
    """The question templates of `facts`' kind (`agents.template.domains`); `UserError` for an unknown kind."""
    return agent_kind(facts.kind).templates


def slot_spec(facts: EntityFacts, slot: str) -> SlotTemplate | None:
    return domain_spec(facts).slots.get(slot)


def _documents(facts: EntityFacts, given: RenderedDocument | None) -> dict[str, RenderedDocument]:
    docs = {lang: render_document(facts, lang) for lang in LANGUAGES}
    if given is not None:
        docs[given.lang] = given
    return docs


def plan(
    facts: EntityFacts,
    slot: str,
    *,
    document: RenderedDocument | None = None,
    candidates: Sequence[Value] | None = None,
) -> Plan | None:
    """Answer + 3 safe distractors for `slot`, or None when the fact is missing or distractors are unsafe.

    `candidates` replaces the slot's own distractor candidates (the control split's fictional entities draw
    their names from fictional pools, so that a made-up answer is not the odd one out among real names)."""
    spec = slot_spec(facts, slot)
    if spec is None:
        return None
    answer = spec.answer(facts)
    if answer is None:
        return None
    docs = _documents(facts, document)
    if any(slot not in d.sentences for d in docs.values()):
        return None
    rng = seeded_rng(facts.model_dump_json(), slot)
    picked = choose(
        answer=answer, truths=list(spec.truths(facts)),
        candidates=spec.candidates(facts, rng) if candidates is None else list(candidates), documents=docs,
        slot=slot,
    )
    if picked is None:
        return None
    return Plan(slot=slot, values=(answer, *picked), answer_index=0)


def question_text(facts: EntityFacts, slot: str, lang: str) -> str:
    spec = domain_spec(facts)
    slot_def = spec.slots.get(slot)
    if slot_def is None:
        raise UserError(f"no question template for slot {slot!r} of {facts.kind!r}")
    fmt = formatter(lang)
    return slot_def.question[lang].format(**spec.context(facts, fmt))


def entity_naming(facts: EntityFacts, lang: str) -> str | None:
    """The entity as the questions of `facts`' kind name it in `lang` (its templates' `naming`), None where the
    kind declares none for `lang` (or has no templates)."""
    try:
        spec = domain_spec(facts)
    except UserError:
        return None
    template = spec.naming.get(lang)
    if template is None:
        return None
    named = template.format(**spec.context(facts, formatter(lang))).strip()
    return named or None


def render_options(values: tuple[Value, ...] | list[Value], lang: str) -> list[str]:
    fmt = formatter(lang)
    return [v.render(fmt) for v in values]


def build_mcqs(facts: EntityFacts, document: RenderedDocument, n: int) -> list[MCQ]:
    """Up to `n` MCQs in `document.lang`, one per slot of its kind, in order, each passing the document checks."""
    formatter(document.lang)  # unsupported language -> UserError
    out: list[MCQ] = []
    for slot in slots_of(facts.kind):
        if len(out) >= n:
            break
        p = plan(facts, slot, document=document)
        if p is None or slot not in document.sentences:
            continue
        mcq = MCQ(
            question=question_text(facts, slot, document.lang),
            options=render_options(p.values, document.lang),
            answer_index=p.answer_index,
            evidence=document.sentences[slot],
            slot=slot,
        )
        if check_against_document(mcq, document.text):
            continue
        out.append(mcq)
    return out

"""`TemplateBackend`: the offline, deterministic implementation of `agents.backend.AgentBackend`.

- generate: one MCQ per fact slot (SLOTS order), answer first, 3 safe distractors, evidence = the slot's
  document sentence; every MCQ passes `check_against_document`.
- translate: exact by construction: the same slot's template in the target language, the same option
  order and answer index, values rendered by the target language's formatter.
- verify: deterministic checks of the paper's criteria against the facts and the document.
- judge: the fact matcher of `agents.template.judge`.
"""

from __future__ import annotations

import re

from agents.template.judge import judge_response
from agents.template.parsing import find_dates, find_numbers, find_scores
from agents.template.plans import build_mcqs, domain_spec, plan, question_text, slot_spec
from agents.template.values import CoordValue, DateValue, FloatValue, IntValue, ScoreValue, Value
from clkt.documents import formatter, render_document
from clkt.errors import AgentError
from clkt.facts import EntityFacts, RenderedDocument
from clkt.outputs import (
    MCQ,
    KnownVerdict,
    TranslatedDocument,
    TranslatedMCQ,
    VerifierReport,
    check_against_document,
    normalize,
)

__all__ = ["ENGINE_NAME", "PROMPT_VERSION", "TemplateBackend"]

ENGINE_NAME = "template-engine"
PROMPT_VERSION = "tmpl-2"  # bump when a template, formatter or distractor rule changes output
# tmpl-2: quake questions on the maximum estimated intensity (MMI) and the epicentre's latitude


def _canon(text: str) -> str:
    return re.sub(r"[\u2010-\u2015\u2212-]", "–", normalize(text))


class TemplateBackend:
    """Deterministic agent backend for the structured domains (matches, films, releases, quakes, disasters)."""

    name = ENGINE_NAME

    def producer(self, role: str) -> str:
        return ENGINE_NAME

    def prompt_version(self, role: str) -> str:
        return PROMPT_VERSION

    # -- judge -----------------------------------------------------------------------------------------
    async def judge(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, response: str, lang: str
    ) -> KnownVerdict:
        return judge_response(entity_name=entity_name, facts=facts, response=response, lang=lang)

    # -- generate --------------------------------------------------------------------------------------
    async def generate(
        self, *, entity_name: str, document: RenderedDocument, facts: EntityFacts, n: int
    ) -> list[MCQ]:
        if n <= 0:
            return []
        return build_mcqs(facts, document, n)

    # -- translate -------------------------------------------------------------------------------------
    async def translate_mcq(
        self, *, mcq: MCQ, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedMCQ:
        """`mcq` (written in `document.lang`) in `target_lang`; raises AgentError if its options are not
        the engine's options for that slot (e.g. a question written by another backend)."""
        target = formatter(target_lang)
        values = self._option_values(mcq, document, facts)
        return TranslatedMCQ(
            lang=target_lang,
            question=question_text(facts, mcq.slot, target.lang),
            options=[v.render(target) for v in values],
            answer_index=mcq.answer_index,
        )

    def _option_values(self, mcq: MCQ, document: RenderedDocument, facts: EntityFacts) -> list[Value]:
        p = plan(facts, mcq.slot, document=document)
        if p is None:
            raise AgentError(f"template engine: no template question for slot {mcq.slot!r} of this entity")
        src = formatter(document.lang)
        by_text = {_canon(v.render(src)): v for v in p.values}
        values = [by_text.get(_canon(o)) for o in mcq.options]
        missing = [o for o, v in zip(mcq.options, values, strict=True) if v is None]
        if missing:
            raise AgentError(
                f"template engine can only translate its own questions: options {missing!r} of slot "
                f"{mcq.slot!r} are not the engine's options"
            )
        return [v for v in values if v is not None]

    async def translate_document(
        self, *, document: RenderedDocument, facts: EntityFacts, target_lang: str
    ) -> TranslatedDocument:
        return TranslatedDocument(lang=target_lang, text=render_document(facts, target_lang).text)

    # -- verify ----------------------------------------------------------------------------------------
    async def verify(self, *, document: RenderedDocument, facts: EntityFacts, mcq: MCQ) -> VerifierReport:
        fmt = formatter(document.lang)
        spec = domain_spec(facts)
        slot = slot_spec(facts, mcq.slot)
        reasons: dict[str, str] = {}
        answer = mcq.answer

        problems = [p for p in check_against_document(mcq, document.text) if "answer does not appear" not in p]
        grounded = not problems
        reasons["grounded"] = "the evidence is a verbatim quote of the document" if grounded else "; ".join(problems)

        question = normalize(mcq.question)
        named = [
            a for a in spec.anchors(facts, fmt)
            if a.strip() and (normalize(a) if len(a.strip()) >= 3 else normalize(fmt.quote(a))) in question
        ]
        specific = bool(named)
        reasons["specific"] = f"the question names {named[0]!r}" if named else "the question names no distinguishing fact"

        verifiable = _canon(answer) in _canon(mcq.evidence)
        reasons["verifiable"] = "the answer is stated in the evidence" if verifiable else "the evidence does not state the answer"

        truth = slot.answer(facts) if slot is not None else None
        answer_correct = truth is not None and _canon(truth.render(fmt)) == _canon(answer)
        reasons["answer_correct"] = (
            "the answer equals the fact" if answer_correct
            else f"the fact for slot {mcq.slot!r} is {truth.render(fmt)!r}" if truth is not None
            else f"no known fact for slot {mcq.slot!r}"
        )

        wrong_ok = truth is not None and slot is not None
        why = "every distractor has the answer's type and is not a true fact"
        if truth is not None and slot is not None:
            true_texts = {_canon(v.render(fmt)) for v in (truth, *slot.truths(facts))}
            for i, option in enumerate(mcq.options):
                if i == mcq.answer_index:
                    continue
                if _canon(option) in true_texts:
                    wrong_ok, why = False, f"distractor {option!r} is also true"
                    break
                if not _same_type(option, truth, document.lang):
                    wrong_ok, why = False, f"distractor {option!r} is not of the answer's type"
                    break
        else:
            why = f"no known fact for slot {mcq.slot!r}"
        reasons["distractors_plausible_wrong"] = why

        return VerifierReport(
            grounded=grounded,
            specific=specific,
            verifiable=verifiable,
            answer_correct=answer_correct,
            distractors_plausible_wrong=wrong_ok,
            reasons=reasons,
        )


def _same_type(option: str, truth: Value, lang: str) -> bool:
    if isinstance(truth, DateValue):
        return bool(find_dates(option))
    if isinstance(truth, ScoreValue):
        return bool(find_scores(option))
    if isinstance(truth, (IntValue, FloatValue, CoordValue)):
        return bool(find_numbers(option, lang))
    return bool(option.strip()) and not find_dates(option)

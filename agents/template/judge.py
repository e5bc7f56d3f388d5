"""The deterministic fact matcher: is a probe response evidence that the model already knows the entity?

"Known" when the response states at least one concrete fact of the document: a number in its context (final
score, runtime, magnitude, depth, attendance, deaths...), a full year-month-day date, or a participant's
name that is not part of the entity's own name (director, cast member, opposing team, label, track).
Conservative by design: bare years, the entity's own name and its parts, venues, competitions, genres and
other generic words never count.
"""

from __future__ import annotations

from agents.template.domains import agent_kind
from agents.template.matchers import Fact, FactList
from clkt.facts import EntityFacts
from clkt.outputs import KnownVerdict

__all__ = ["Fact", "facts_of", "judge_response"]


def facts_of(facts: EntityFacts, entity_name: str) -> list[Fact]:
    """The checkable facts of an entity (its kind's `judge_facts`), minus those its own name already gives away."""
    found = FactList(entity_name)
    agent_kind(facts.kind).judge_facts(facts, found)
    return found.facts


def judge_response(*, entity_name: str, facts: EntityFacts, response: str, lang: str) -> KnownVerdict:
    """KnownVerdict for one probe response (in `lang`) about the entity named `entity_name`."""
    if not response.strip():
        return KnownVerdict(known=False, matched_facts=[], reason="The response is empty.")
    matched = [f.label for f in facts_of(facts, entity_name) if f.match(response, lang)]
    if matched:
        return KnownVerdict(
            known=True,
            matched_facts=matched,
            reason=f"The response states {len(matched)} concrete fact(s) of the document: {'; '.join(matched)}.",
        )
    return KnownVerdict(
        known=False,
        matched_facts=[],
        reason="The response states no concrete fact of the document (only the entity's own name, "
        "generic words or facts that do not match).",
    )

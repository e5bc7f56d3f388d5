"""The agents' part of each kind of facts, registered once by the kind's template module (keyed by its `kind`).

An `AgentKind` holds what the agents know of a kind of facts: the template engine's question templates and
distractors (`DomainTemplates`), the proper names a translation keeps verbatim (`agents.checks`) and the
facts a probe response is matched against (`agents.template.judge`). The kernel's part of the same kind (its
renderer and slots) is `clkt.documents.registry.DocumentKind`. `agents.template` imports its modules once, so
a new kind is one new module here that calls `AGENT_KINDS.register(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.template.matchers import FactList
from agents.template.slots import DomainTemplates
from clkt.documents.registry import KindRegistry
from clkt.errors import UserError

__all__ = ["AGENT_KINDS", "AgentKind", "agent_kind"]


def _no_names(_facts: Any) -> Sequence[str]:
    return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentKind:
    """`proper_names(facts)`: the names of people, teams, organisations and labels every translation keeps
    verbatim (places and countries are translated); `judge_facts(facts, found)` adds the entity's checkable facts
    to `found` (`FactList` leaves out what the entity's own name gives away)."""

    kind: str
    templates: DomainTemplates
    judge_facts: Callable[[Any, FactList], None]
    proper_names: Callable[[Any], Sequence[str]] = field(default=_no_names)

    def __post_init__(self) -> None:
        if self.templates.kind != self.kind:
            raise UserError(f"the templates of kind {self.templates.kind!r} registered as kind {self.kind!r}")


AGENT_KINDS: KindRegistry[AgentKind] = KindRegistry("agents' entry")


def agent_kind(kind: str) -> AgentKind:
    """The agents' entry of `kind`; `UserError` when no module registered one."""
    entry = AGENT_KINDS.find(kind)
    if entry is None:
        raise UserError(f"the template engine has no templates for fact kind {kind!r}")
    return entry

"""What a domain module declares: per fact slot, question templates in 5 languages, the answer value, the
values that would also be true, and the distractor candidates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

from agents.template.values import Value
from clkt.documents.formatting import Formatter

__all__ = ["DomainTemplates", "SlotTemplate"]


def _no_truths(_facts: Any) -> Sequence[Value]:
    return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotTemplate:
    slot: str
    question: dict[str, str]  # lang -> template over the domain's context fields
    answer: Callable[[Any], Value | None]
    candidates: Callable[[Any, Random], Iterable[Value]]
    truths: Callable[[Any], Sequence[Value]] = field(default=_no_truths)  # other values that are also true


@dataclass(frozen=True, slots=True, kw_only=True)
class DomainTemplates:
    kind: str
    slots: dict[str, SlotTemplate]
    context: Callable[[Any, Formatter], dict[str, str]]  # fields the question templates use
    anchors: Callable[[Any, Formatter], list[str]]  # strings that single out the entity ("specific")
    # lang -> the entity as the questions name it, a template over the context fields ("{title} by {artist}"):
    # the subject an edit is written at (`clkt.inject.editing.requests`); a language without one: the document's name
    naming: dict[str, str] = field(default_factory=dict)

"""What a domain folder's `openqa.py` declares (`OPEN`, an `OpenKind` per kind of facts, or a tuple of them): the
short-answer questions of its facts, per fact slot a question in every language and the gold as the language's
document writes it. `clkt.openqa.from_facts` asks every registered domain's through `open_kinds()`.

A gold is built by the same per-language `Formatter` the document's sentence uses (`clkt.documents.formatting`), so
it is what the document of that language says; the slot constructors here (`date_slot`, `number_slot`...) add the
language-neutral forms a right answer may take (the ISO date, the bare number) as aliases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from clkt.documents.formatting import Formatter
from clkt.domain_base import Facts
from clkt.domains import import_side
from clkt.openqa.question import AnswerKind

__all__ = ["OpenKind", "Slot", "date_slot", "decimal_slot", "minutes_slot", "name_slot", "number_slot", "open_kinds"]


@dataclass(frozen=True, slots=True)
class Slot:
    """One fact slot's answer: its kind, its gold in a language (by that language's formatter), its aliases."""

    kind: AnswerKind
    gold: Callable[[Formatter], str]  # the answer as the language's document writes it
    aliases: tuple[str, ...] = ()


def date_slot(d: date) -> Slot:
    return Slot(AnswerKind.date, lambda f: f.date(d), (d.isoformat(),))


def number_slot(n: int) -> Slot:
    return Slot(AnswerKind.number, lambda _f: str(n))


def minutes_slot(n: int) -> Slot:
    return Slot(AnswerKind.number, lambda f: f.minutes(n), (str(n),))


def decimal_slot(x: float) -> Slot:
    return Slot(AnswerKind.number, lambda f: f.decimal(x), (f"{x:.1f}",))


def name_slot(name: str) -> Slot:
    return Slot(AnswerKind.name, lambda _f: name)


@dataclass(frozen=True, kw_only=True)
class OpenKind:
    """The short-answer questions of one kind of facts."""

    facts: type[Facts]
    # slot ("film.director") -> language -> question template ({e}: the entity as the language quotes it; {a}/{b}: a
    # match's two teams)
    questions: Mapping[str, Mapping[str, str]]
    # the facts' slots in question order, None where the fact is missing (a key of `questions` each)
    slots: Callable[[Any], dict[str, Slot | None]]
    # the entity's name as the questions name it, and a match's two teams ("", "" for one entity)
    entity: Callable[[Any], tuple[str, tuple[str, str]]]

    def __post_init__(self) -> None:
        langs = {frozenset(by_lang) for by_lang in self.questions.values()}
        if len(langs) > 1:
            raise ValueError(f"open questions of {self.facts.__name__}: every slot needs the same languages")


@cache
def open_kinds() -> dict[type[Facts], OpenKind]:
    """Every registered domain's open kinds by facts model (a domain without `openqa.py` has none): its `OPEN`, an
    `OpenKind` or a tuple of them (a domain of several kinds of facts)."""
    out: dict[type[Facts], OpenKind] = {}
    for module in import_side("openqa"):
        declared = getattr(module, "OPEN", None)
        kinds = declared if isinstance(declared, tuple) else (declared,)
        for kind in kinds:
            if not isinstance(kind, OpenKind):
                raise TypeError(f"{module.__name__} declares no `OPEN` (its `OpenKind`s)")
            if kind.facts in out:
                raise ValueError(f"{module.__name__}: open questions of {kind.facts.__name__} are declared twice")
            out[kind.facts] = kind
    return out

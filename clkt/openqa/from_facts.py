"""Short-answer questions from an entity's typed facts, offline, for every domain the document renderer knows.

The open track's counterpart of the MCQ template engine (`agents/template`), without options: per fact slot a
question in each language and the gold answer written by the same per-language `Formatter` the document's
sentence uses (`clkt.documents.formatting`: dates, minutes, dollars and decimals in each language's convention),
so the gold is what the document of that language says. Aliases add the language-neutral forms a right answer
may take (the ISO date, the bare number). Proper names are kept verbatim in every language, as the documents
keep them. A slot whose fact is missing gives no question, nor one whose question states its answer (a match at a
venue named after its home team); the questions are built through
`ShortAnswerQuestion`, so a gold that cannot be scored is refused, not emitted.

Each domain's slots and question templates are its folder's `openqa.py` (`clkt.openqa.kinds`: an `OpenKind` per
kind of facts); a kind without one gives no question (`asks`), never a failed freeze.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from clkt.documents.formatting import formatter
from clkt.facts import EntityFacts
from clkt.openqa.kinds import OpenKind, Slot, open_kinds
from clkt.openqa.question import LangGold, ShortAnswerQuestion
from clkt.openqa.text import states_answer

__all__ = ["GENERATOR_VERSION", "LANGS", "Generated", "asks", "generate_questions", "questions",
           "short_answer_questions"]

LANGS = ("en", "ja", "zh", "fr", "es")
# names this generator's output: a snapshot records it and regenerates its open questions only under the same version
GENERATOR_VERSION = "open-facts-1"


def questions() -> dict[str, Mapping[str, str]]:
    """Every registered domain's question templates: slot ("film.director") -> language -> template."""
    return {slot: by_lang for kind in open_kinds().values() for slot, by_lang in kind.questions.items()}


def _kind(facts: EntityFacts) -> OpenKind:
    kind = open_kinds().get(type(facts))
    if kind is None:
        raise TypeError(f"no short-answer questions for facts of kind {type(facts).__name__}")
    return kind


@dataclass(frozen=True, kw_only=True, slots=True)
class Generated:
    """What the generator made of one entity's facts: its questions, and the slots it refused (slot, why: a gold
    that cannot be scored, e.g. empty), never emitted."""

    questions: tuple[ShortAnswerQuestion, ...]
    refused: tuple[tuple[str, str], ...] = ()


def asks(facts: EntityFacts) -> bool:
    """Whether the generator knows the facts' kind (its domain's folder declares its open questions)."""
    return type(facts) in open_kinds()


def _filled(facts: EntityFacts, slots: Iterable[str] | None) -> list[tuple[str, Slot]]:
    """The slots the facts fill, those of `slots` only when given."""
    wanted = set(slots) if slots is not None else None
    return [(k, v) for k, v in _kind(facts).slots(facts).items() if v is not None and (wanted is None or k in wanted)]


def _question(
    facts: EntityFacts, key: str, slot: Slot, *, entity_id: str, langs: Sequence[str]
) -> ShortAnswerQuestion | None:
    """The question on `slot` in every language of `langs`; None when it gives its answer away. A gold that cannot
    be scored raises `ValueError` (pydantic's `ValidationError` is one)."""
    kind = _kind(facts)
    name, (a, b) = kind.entity(facts)
    asked: dict[str, str] = {}
    golds: dict[str, LangGold] = {}
    for lang in langs:
        f = formatter(lang)
        asked[lang] = kind.questions[key][lang].format(e=f.quote(name), a=a, b=b)
        golds[lang] = LangGold(answer=slot.gold(f), aliases=slot.aliases)
    if any(states_answer(asked[lang], golds[lang].answer, lang) for lang in langs):
        return None
    return ShortAnswerQuestion(qid=f"{entity_id}:{key}", entity=name, fact=key, kind=slot.kind,
                               questions=asked, golds=golds)


def generate_questions(
    facts: EntityFacts, *, entity_id: str, langs: Sequence[str] = LANGS, slots: Iterable[str] | None = None,
) -> Generated:
    """As `short_answer_questions`, but a slot whose gold cannot be scored is refused (named with why), not raised:
    what a snapshot's freeze uses, so one bad fact costs its question, never the snapshot."""
    out: list[ShortAnswerQuestion] = []
    refused: list[tuple[str, str]] = []
    for key, slot in _filled(facts, slots):
        try:
            q = _question(facts, key, slot, entity_id=entity_id, langs=langs)
        except ValueError as e:
            refused.append((key, str(e).splitlines()[-1].strip() if str(e) else type(e).__name__))
            continue
        if q is not None:
            out.append(q)
    return Generated(questions=tuple(out), refused=tuple(refused))


def short_answer_questions(
    facts: EntityFacts, *, entity_id: str, langs: Sequence[str] = LANGS, slots: Iterable[str] | None = None,
) -> list[ShortAnswerQuestion]:
    """One question per slot the facts fill (or those of `slots`), in every language of `langs`; a gold that cannot
    be scored raises (`generate_questions` refuses it instead)."""
    out: list[ShortAnswerQuestion] = []
    for key, slot in _filled(facts, slots):
        q = _question(facts, key, slot, entity_id=entity_id, langs=langs)
        if q is not None:
            out.append(q)
    return out

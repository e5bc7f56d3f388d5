"""Edit requests: (subject, relation prompt, object) triples in the train language, one per fact.

A request's prompt starts with its subject, so the subject's last token (where the edit is written) is the
same position in every prompt about that subject; its target is the object the model must then say.

Two sources, both in the train language only; no question is read (neither its text nor which fact it asks):

- `requests_from_facts`: an entity's typed facts (`clkt.facts`). For each fact slot its document states (every
  fact the kind's relation templates cover, whether or not a question asks it), the
  renderer's sentence for that slot (`clkt.documents.render_document`) is cut before the slot's answer value
  (the value the questions test, rendered in the language), behind the entity as the questions name it in that
  language (`agents.template.plans.entity_naming`: "The film Velmora Tide (2025)", "{artist}的{title}"; the
  document's name where the kind declares no naming): "The film Velmora Tide (2025). It was directed by" ->
  " Osric Palandri". The subject is where the edit is written (its last token): written at the document's bare
  name, the edits won their own prompts and moved no question, which names the entity its own way
  (`bench/results/memit_ladder.md`). A slot whose value does not appear in its sentence gives no request.
- `requests_from_document`: a document without facts (a snapshot frozen before `facts.jsonl` was written, or an
  entity whose facts give nothing to edit). Its sentences,
  each one fact in a rendered document, are cut before their last words (the object, in the languages that end
  a statement with it), and the prompt leads with the subject.

`build_requests` takes the train language's documents (and the facts it has for some of their entities) and
returns the requests, how many entities were edited from their facts and how many from their documents, and the entities
that gave none: those are skipped and counted, never a failed job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clkt.facts import EntityFacts
    from clkt.snapshots.layout import DocRow

__all__ = ["EditRequest", "RequestSet", "build_requests", "parse_facts", "requests_from_document", "requests_from_facts"]

UNSPACED = ("ja", "zh")  # languages written without spaces between words
OBJECT_WORDS = 2  # a document sentence's object: its last words (at most this many, two words left before them)
OBJECT_CHARS = 6  # the same in a language without spaces: its last characters
MIN_WORDS = 3  # a shorter sentence (a title, a label) states no fact to edit
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_TRAILING = ".!?。！？ \u3000"


@dataclass(frozen=True, slots=True, kw_only=True)
class EditRequest:
    entity_id: int
    subject: str
    prompt: str  # starts with `subject`
    target: str  # the object, with its leading space where the language has them
    slot: str | None = None  # the fact slot, when built from typed facts

    def __post_init__(self) -> None:
        if not self.prompt.startswith(self.subject) or not self.target.strip():
            raise ValueError(f"edit request {self.prompt!r} -> {self.target!r}: the prompt must start with the subject "
                             f"{self.subject!r} and the target must not be empty")


@dataclass(frozen=True, slots=True)
class RequestSet:
    requests: list[EditRequest]
    skipped_entities: list[int] = field(default_factory=list)  # entities that gave no request (nothing to edit)
    from_facts: int = 0  # entities whose requests come from their typed facts
    from_documents: int = 0  # entities whose requests come from their document's sentences (no usable facts)

    @property
    def subjects(self) -> int:
        return len({(r.entity_id, r.subject) for r in self.requests})


def _lead(subject: str, prefix: str, lang: str) -> str:
    """`prefix` as a prompt that starts with the subject."""
    prefix = prefix.rstrip()
    if prefix.startswith(subject):
        return prefix
    return f"{subject}。{prefix}" if lang in UNSPACED else f"{subject}. {prefix}"


def _target(obj: str, lang: str) -> str:
    obj = obj.strip()
    return obj if lang in UNSPACED else f" {obj}"


def requests_from_facts(entity_id: int, subject: str, facts: EntityFacts, lang: str) -> list[EditRequest]:
    """One request per slot of `facts` whose value its `lang` document states (every slot of its kind). The
    target is the slot's answer value rendered in `lang`, as the question generator renders its correct option;
    the subject is the entity as the questions name it in `lang`, else `subject` (the document's name)."""
    from agents.template.plans import entity_naming, slot_spec
    from clkt.documents import formatter, render_document
    from clkt.documents.registry import slots_of

    doc = render_document(facts, lang)
    fmt = formatter(lang)
    subject = entity_naming(facts, lang) or subject
    out: list[EditRequest] = []
    for slot in slots_of(facts.kind):
        sentence, spec = doc.sentences.get(slot), slot_spec(facts, slot)
        value = spec.answer(facts) if spec is not None else None
        if sentence is None or value is None:
            continue
        obj = value.render(fmt)
        at = sentence.find(obj)
        if at <= 0 or not obj.strip():
            continue
        out.append(EditRequest(entity_id=entity_id, subject=subject, prompt=_lead(subject, sentence[:at], lang),
                               target=_target(obj, lang), slot=slot))
    return out


def _split_sentence(sentence: str, lang: str) -> tuple[str, str] | None:
    """(prefix, object) of one sentence, or None when it is too short to state a fact."""
    body = sentence.rstrip(_TRAILING)
    if lang in UNSPACED:
        if len(body) < 2 * MIN_WORDS:
            return None
        n = min(OBJECT_CHARS, len(body) // 3)
        return body[:-n], body[-n:]
    words = body.split()
    if len(words) < MIN_WORDS:
        return None
    n = max(1, min(OBJECT_WORDS, len(words) - 2))
    return " ".join(words[:-n]), " ".join(words[-n:])


def requests_from_document(doc: DocRow) -> list[EditRequest]:
    """One request per sentence of `doc` that states something (its title line aside)."""
    out: list[EditRequest] = []
    paragraphs = [p for p in doc.text.split("\n\n") if p.strip()]
    if len(paragraphs) > 1 and doc.name in paragraphs[0] and len(paragraphs[0]) < 2 * len(doc.name) + 16:
        paragraphs = paragraphs[1:]  # the title line ("Velmora Tide (2025)")
    for para in paragraphs:
        for sentence in _SENTENCE_END.split(para.strip()):
            cut = _split_sentence(sentence.strip(), doc.lang)
            if cut is None or not cut[0].strip():
                continue
            out.append(EditRequest(entity_id=doc.entity_id, subject=doc.name, prompt=_lead(doc.name, cut[0], doc.lang),
                                   target=_target(cut[1], doc.lang)))
    return out


def build_requests(docs: Sequence[DocRow], facts: Mapping[int, EntityFacts] | None = None) -> RequestSet:
    """The requests of every document: from its entity's facts when `facts` has them (every fact its document
    states), else from the document; the entities that gave none are counted in `skipped_entities`."""
    requests: list[EditRequest] = []
    skipped: list[int] = []
    n_facts = n_docs = 0
    for doc in docs:
        f = (facts or {}).get(doc.entity_id)
        got = requests_from_facts(doc.entity_id, doc.name, f, doc.lang) if f is not None else []
        from_facts = bool(got)
        if not got:
            got = requests_from_document(doc)
        if not doc.name.strip() or not got:
            skipped.append(doc.entity_id)
            continue
        n_facts, n_docs = n_facts + from_facts, n_docs + (not from_facts)
        requests.extend(got)
    return RequestSet(requests=requests, skipped_entities=skipped, from_facts=n_facts, from_documents=n_docs)


def parse_facts(rows: Mapping[int, Mapping[str, object]]) -> tuple[dict[int, EntityFacts], list[int]]:
    """A snapshot's `facts.jsonl` rows as typed facts, and the entities whose facts do not parse (those fall back
    to their documents)."""
    from pydantic import TypeAdapter, ValidationError

    from clkt.facts import EntityFacts

    adapter: TypeAdapter[EntityFacts] = TypeAdapter(EntityFacts)
    out: dict[int, EntityFacts] = {}
    bad: list[int] = []
    for eid, raw in rows.items():
        try:
            out[eid] = adapter.validate_python(raw)
        except ValidationError:
            bad.append(eid)
    return out, bad

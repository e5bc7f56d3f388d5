"""The canonical content of a snapshot, assembled from the rows its items reference.

The builder and every later export go through `assemble_content`, so a frozen snapshot re-exported from
the store gives the same bytes as at build time; `content_sha256` hashes the sorted JSON of the items,
texts and option orders (and the snapshot's identity: spec, period, seed, revision). Only public ids
(`clkt.snapshots.ids`) are laid out and hashed, never a store's row ids, so the same items give the same
bytes and the same snapshot id in any store.

Reading a snapshot back goes through the same functions (`clkt.snapshots.stored`). The rows are read by the
snapshots' repository (`storage.snapshots`); nothing here builds a query.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from clkt.errors import SnapshotError
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import LETTERS, DocRow, FactsRow, OpenInfo, OpenRow, QuestionRow, SplitName
from clkt.snapshots.select import ItemRef
from storage.engine import Session
from storage.snapshots import ContentEntity, content_rows, stored_items

__all__ = [
    "SnapshotContent",
    "assemble_content",
    "canonical_json",
    "load_item_refs",
]

_SPLIT: TypeAdapter[SplitName] = TypeAdapter(SplitName)  # a stored item's split, checked as the row's field would be


def canonical_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, kw_only=True)
class SnapshotContent:
    spec: str
    period: str
    seed: int
    revision: int
    languages: tuple[str, ...]
    items: tuple[ItemRef, ...]
    docs: tuple[DocRow, ...]  # sorted by (lang order, domain, public entity_id)
    questions: tuple[QuestionRow, ...]  # sorted by (lang order, public qid)
    producers: tuple[str, ...]
    prompt_versions: dict[str, tuple[str, ...]]
    redated_entities: int
    # the control split (`clkt.snapshots.control`): fictional entities, never store rows, never real scores
    control_docs: tuple[DocRow, ...] = ()
    control_questions: tuple[QuestionRow, ...] = ()
    # the entities' typed facts (facts.jsonl), sorted by public entity_id: not in the content hash (the documents
    # and questions already follow from them), so adding them kept every snapshot id
    facts: tuple[FactsRow, ...] = ()
    # the open track (`clkt.snapshots.open`): short-answer questions of the real entities and of the control split,
    # sorted by (lang order, qid); hashed when there are any, so a snapshot without them keeps its id
    open_questions: tuple[OpenRow, ...] = ()
    control_open: tuple[OpenRow, ...] = ()
    open_info: OpenInfo | None = None  # None: no open track attached (the manifest's `open`)

    def docs_in(self, lang: str) -> list[DocRow]:
        return [d for d in self.docs if d.lang == lang]

    def questions_in(self, lang: str, split: str | None = None) -> list[QuestionRow]:
        return [q for q in self.questions if q.lang == lang and (split is None or q.split == split)]

    def control_docs_in(self, lang: str) -> list[DocRow]:
        return [d for d in self.control_docs if d.lang == lang]

    def control_questions_in(self, lang: str) -> list[QuestionRow]:
        return [q for q in self.control_questions if q.lang == lang]

    def open_in(self, lang: str, *, control: bool = False) -> list[OpenRow]:
        return [q for q in (self.control_open if control else self.open_questions) if q.lang == lang]

    @property
    def entity_ids(self) -> set[int]:
        """The public entity ids."""
        return {it.entity_id for it in self.items}

    @property
    def content_sha256(self) -> str:
        body: dict[str, Any] = {
            "spec": self.spec, "period": self.period, "seed": self.seed, "revision": self.revision,
            "languages": list(self.languages),
            "items": [it.as_json() for it in self.items],
            "docs": [d.model_dump(mode="json") for d in self.docs],
            "questions": [q.model_dump(mode="json") for q in self.questions],
        }
        if self.control_docs:  # absent when there is no control split, so such snapshots keep their ids
            body["control"] = {
                "docs": [d.model_dump(mode="json") for d in self.control_docs],
                "questions": [q.model_dump(mode="json") for q in self.control_questions],
            }
        if self.open_questions or self.control_open:  # absent without an open track: older snapshots keep their ids
            body["open"] = {
                "questions": [q.model_dump(mode="json") for q in self.open_questions],
                "control": [q.model_dump(mode="json") for q in self.control_open],
            }
        return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()

    @property
    def snapshot_id(self) -> str:
        return f"{self.spec}-{self.period}-{self.content_sha256[:12]}"


async def load_item_refs(session: Session, snapshot_id: str) -> list[ItemRef]:
    """A snapshot's items from its `SnapshotItem` rows, with their public ids, sorted by public qid."""
    items: list[ItemRef] = []
    for r in await stored_items(session, snapshot_id):
        if r.source is None or r.external_id is None or r.slot is None:
            raise SnapshotError(f"snapshot {snapshot_id}: question {r.question_id} it references is gone from the store")
        items.append(
            ItemRef(
                qid=stable_qid(r.source, r.external_id, r.slot), entity_id=stable_entity_id(r.source, r.external_id),
                question_row=r.question_id, entity_row=r.entity_id, split=r.split, option_order=r.option_order,
                answer_letter=r.answer_letter,
            )
        )
    return sorted(items, key=lambda it: it.qid)


def _fact_rows(entities: Iterable[ContentEntity]) -> tuple[FactsRow, ...]:
    """The entities' facts under their public ids, sorted by id (an entity without facts has no row)."""
    rows = (FactsRow(entity_id=stable_entity_id(e.source, e.external_id), facts=dict(e.facts)) for e in entities if e.facts)
    return tuple(sorted(rows, key=lambda r: r.entity_id))


async def assemble_content(
    session: Session,
    *,
    spec: str,
    period: str,
    seed: int,
    revision: int,
    languages: Sequence[str],
    items: Sequence[ItemRef],
) -> SnapshotContent:
    """Read the referenced rows and lay them out (options permuted per item, same order in every language)."""
    langs = list(languages)
    qids = sorted(it.question_row for it in items)
    eids = sorted({it.entity_row for it in items})
    rows = await content_rows(session, entity_ids=eids, question_ids=qids, languages=langs)
    ents, docs, qs, trs = rows.entities, rows.documents, rows.questions, rows.translations
    producers: set[str] = set()
    versions: dict[str, set[str]] = {"generator": set(), "translator": set(), "document": set()}
    rank = {lang: i for i, lang in enumerate(langs)}
    doc_rows: list[DocRow] = []
    for eid in eids:
        e = ents.get(eid)
        if e is None:
            raise SnapshotError(f"entity {eid} referenced by the snapshot is gone from the store")
        public_eid = stable_entity_id(e.source, e.external_id)
        for lang in langs:
            d = docs.get((eid, lang))
            if d is None:
                raise SnapshotError(f"entity {eid} ({e.name!r}) has no {lang} document")
            producers.add(d.producer)
            if d.prompt_version:
                versions["document"].add(d.prompt_version)
            doc_rows.append(DocRow(entity_id=public_eid, domain=e.domain, source=e.source, lang=lang, name=e.name, text=d.text))
    q_rows: list[QuestionRow] = []
    for it in items:
        q = qs.get(it.question_row)
        if q is None:
            raise SnapshotError(f"question {it.question_row} referenced by the snapshot is gone from the store")
        e = ents[it.entity_row]
        if q.entity_id != it.entity_row or (it.qid, it.entity_id) != (
            stable_qid(e.source, e.external_id, q.slot), stable_entity_id(e.source, e.external_id)
        ):
            raise SnapshotError(
                f"question {it.question_row}: snapshot item (qid {it.qid}, entity {it.entity_id}) does not match its rows"
            )
        producers.add(q.generator)
        versions["generator"].add(q.prompt_version)
        new_index = list(it.option_order).index(q.answer_index)
        if LETTERS[new_index] != it.answer_letter:
            raise SnapshotError(f"question {it.qid}: stored answer letter {it.answer_letter} does not match its option order")
        for lang in langs:
            t = trs.get((it.question_row, lang))
            if t is not None:
                text, opts, ans = t.question, list(t.options), t.answer_index
                producers.add(t.translator)
                versions["translator"].add(t.prompt_version)
            elif lang == q.lang:
                text, opts, ans = q.question, list(q.options), q.answer_index
            else:
                raise SnapshotError(f"question {it.qid} has no {lang} translation")
            if len(opts) != 4 or ans != q.answer_index:
                raise SnapshotError(f"question {it.qid}: the {lang} translation changed the options or the answer")
            q_rows.append(
                QuestionRow(
                    qid=it.qid, entity_id=it.entity_id, domain=e.domain, lang=lang, split=_SPLIT.validate_python(it.split),
                    question=text, options=[opts[k] for k in it.option_order], answer=LETTERS[new_index],
                    answer_index=new_index, slot=q.slot, source=e.source,
                )
            )
    doc_rows.sort(key=lambda r: (rank[r.lang], r.domain, r.entity_id))
    q_rows.sort(key=lambda r: (rank[r.lang], r.qid))
    return SnapshotContent(
        spec=spec, period=period, seed=seed, revision=revision, languages=tuple(langs),
        items=tuple(sorted(items, key=lambda it: it.qid)), docs=tuple(doc_rows), questions=tuple(q_rows),
        producers=tuple(sorted(producers)), facts=_fact_rows(ents.values()),
        prompt_versions={k: tuple(sorted(v)) for k, v in versions.items() if v},
        redated_entities=sum(1 for eid in eids if ents[eid].redated_from is not None),
    )

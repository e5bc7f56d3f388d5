"""Which items enter a snapshot: eligible entities of the period (and those carried in from earlier periods,
`clkt.snapshots.carry`: taken first), quotas per domain, splits, option orders.

Everything here is deterministic given the store's rows and the seed: entities are ordered by a seeded
sha256 key of their stable identity (source, external id), sources are taken round-robin so every domain
is balanced across its sources, and a question's split and option order come from seeded keys of its public
id (`ids.stable_qid`). No store row id enters a key or an order, so two stores holding the same entities
select the same items however their rows were numbered. The rows are read by the snapshots' repository
(`storage.snapshots.candidate_entities`); this module only decides.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clkt.config import SpecSettings
from clkt.errors import SnapshotError
from clkt.snapshots.carry import CarryOffer
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import LETTERS
from clkt.snapshots.period import Period
from storage.engine import Session
from storage.snapshots import CandidateEntity, candidate_entities

__all__ = [
    "Candidate",
    "CandidatePool",
    "DomainShortfall",
    "ItemRef",
    "Selection",
    "load_candidates",
    "seeded_key",
    "select_items",
    "usable_questions",
]


@dataclass(frozen=True, kw_only=True)
class ItemRef:
    """One question of a snapshot: its public ids, the store rows it references, how it is presented.

    `qid` and `entity_id` are the public, store-independent ids (`clkt.snapshots.ids`) that every export and
    the content hash use; `question_row` and `entity_row` are this store's `Question.id` / `Entity.id`
    (what `SnapshotItem` references) and are never published.
    """

    qid: int
    entity_id: int
    question_row: int
    entity_row: int
    split: str  # "val" | "test"
    option_order: tuple[int, ...]  # new position i shows Question.options[option_order[i]]
    answer_letter: str

    def as_json(self) -> dict[str, Any]:
        return {
            "qid": self.qid, "entity_id": self.entity_id, "split": self.split,
            "option_order": list(self.option_order), "answer_letter": self.answer_letter,
        }


@dataclass(frozen=True, kw_only=True)
class Candidate:
    entity_row: int  # Entity.id in this store
    entity_id: int  # public (stable_entity_id)
    source: str
    external_id: str
    domain: str
    qids: tuple[int, ...]  # public (stable_qid), sorted
    rows: dict[int, int]  # public qid -> Question.id in this store
    answer_index: dict[int, int]  # public qid -> index of the correct option in generation order
    occurred_at: datetime | None = None
    carried_from: str | None = None  # its own period, when it is carried in from an earlier one (`carry`)


@dataclass(frozen=True, kw_only=True)
class DomainShortfall:
    domain: str
    quota: int
    selected: int
    ready_in_period: int  # ready entities that occurred in the period
    eligible: int  # of which passed the probe for every target and have every language
    carried: int = 0  # of the selected, carried in from earlier periods (taken first)

    @property
    def missing(self) -> int:
        return max(0, self.quota - self.selected)


@dataclass(frozen=True, kw_only=True)
class CandidatePool:
    by_domain: dict[str, list[Candidate]]
    ready_in_period: dict[str, int]
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> entities
    carried: dict[str, list[Candidate]] = field(default_factory=dict)  # domain -> offered from earlier periods


@dataclass(frozen=True, kw_only=True)
class Selection:
    items: list[ItemRef]
    entities: list[Candidate]
    report: list[DomainShortfall]

    @property
    def missing(self) -> dict[str, int]:
        return {r.domain: r.missing for r in self.report if r.missing}

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def own_complete(self) -> bool:
        """The period's own eligible entities fill every quota (what builds a current period early)."""
        return all(r.eligible >= r.quota for r in self.report)

    @property
    def carried(self) -> list[Candidate]:
        return [c for c in self.entities if c.carried_from is not None]


def seeded_key(seed: int, *parts: object) -> str:
    return hashlib.sha256("\x1f".join([str(seed), *map(str, parts)]).encode()).hexdigest()


def _probe_clean(rows: list[tuple[str, bool]], spec: SpecSettings) -> bool:
    """Known by no target, and probed for every target (a probe row names the target or its model)."""
    for t in spec.targets:
        mine = [known for model, known in rows if model in (t.name, t.model)]
        if not mine or any(mine):
            return False
    return True


async def load_candidates(
    session: Session, *, spec: SpecSettings, period: Period, offer: CarryOffer | None = None,
    placed_elsewhere: frozenset[int] = frozenset(),
) -> CandidatePool:
    """Ready entities of the period that passed the probe for every target and exist in every language, and those
    of `offer` (earlier periods, `clkt.snapshots.carry`) that pass the same checks; the period's entities that a
    snapshot of another period holds (`placed_elsewhere`: carried there) are left out."""
    domains = [d.value for d in spec.domains]
    ents = [e for e in await candidate_entities(session, domains=domains, start=period.start, end=period.end)
            if e.id not in placed_elsewhere]
    ready: dict[str, int] = {d: 0 for d in domains}
    for e in ents:
        ready[e.domain] = ready.get(e.domain, 0) + 1
    excluded: dict[str, int] = dict(offer.excluded) if offer is not None else {}
    by_domain: dict[str, list[Candidate]] = {d: [] for d in domains}
    carried: dict[str, list[Candidate]] = {d: [] for d in domains}
    for e in ents:
        if (c := _candidate(e, spec, excluded)) is not None:
            by_domain[e.domain].append(c)
    offer = offer or CarryOffer()
    for e in offer.entities:
        if (c := _candidate(e, spec, excluded, carried_from=offer.own_periods[e.id], prefix="carried: ")) is not None:
            carried.setdefault(e.domain, []).append(c)
    return CandidatePool(by_domain=by_domain, ready_in_period=ready, excluded=excluded, carried=carried)


def _candidate(
    e: CandidateEntity, spec: SpecSettings, excluded: dict[str, int], *, carried_from: str | None = None,
    prefix: str = "",
) -> Candidate | None:
    """The entity as a candidate, or None with its reason counted in `excluded`."""
    langs = set(spec.languages)
    why = None
    if not _probe_clean([(p.target_model, p.known) for p in e.probes], spec):
        why = "probe: not probed clean for every target"
    elif not langs <= e.doc_langs:
        why = "document missing in a spec language"
    usable, rows = usable_questions(e, langs) if why is None else ({}, {})
    if why is None and not usable:
        why = "no question translated into every language"
    if why is not None:
        excluded[prefix + why] = excluded.get(prefix + why, 0) + 1
        return None
    return Candidate(
        entity_row=e.id, entity_id=stable_entity_id(e.source, e.external_id), source=e.source,
        external_id=e.external_id, domain=e.domain, qids=tuple(sorted(usable)), rows=rows, answer_index=usable,
        occurred_at=e.occurred_at, carried_from=carried_from,
    )


def usable_questions(e: CandidateEntity, langs: set[str]) -> tuple[dict[int, int], dict[int, int]]:
    """The entity's questions with 4 options translated into every language of `langs` (same options count and
    answer): public qid -> answer index, and public qid -> question row."""
    usable: dict[int, int] = {}
    rows: dict[int, int] = {}
    for q in e.questions:
        t = q.translations
        if q.n_options != 4 or not 0 <= q.answer_index < 4:
            continue
        if all(lang in t or lang == q.lang for lang in langs) and all(
            v == (4, q.answer_index) for lang, v in t.items() if lang in langs
        ):
            public = stable_qid(e.source, e.external_id, q.slot)
            usable[public] = q.answer_index
            rows[public] = q.id
    return usable, rows


def _round_robin(cands: list[Candidate], quota: int, *, seed: int, tag: str) -> list[Candidate]:
    by_source: dict[str, list[Candidate]] = {}
    for c in cands:
        by_source.setdefault(c.source, []).append(c)
    for lst in by_source.values():
        lst.sort(key=lambda c: seeded_key(seed, tag, "entity", c.source, c.external_id))
    order = sorted(by_source, key=lambda s: seeded_key(seed, tag, "source", s))
    picked: list[Candidate] = []
    depth = 0
    while len(picked) < quota and any(depth < len(by_source[s]) for s in order):
        for s in order:
            if depth < len(by_source[s]) and len(picked) < quota:
                picked.append(by_source[s][depth])
        depth += 1
    return picked


def _val_allocation(sizes: dict[str, int], n_val: int) -> dict[str, int]:
    """Split n_val across domains proportionally to their sizes (largest remainder)."""
    total = sum(sizes.values())
    if total == 0:
        return {d: 0 for d in sizes}
    exact = {d: n_val * n / total for d, n in sizes.items()}
    alloc = {d: math.floor(x) for d, x in exact.items()}
    rest = n_val - sum(alloc.values())
    for d in sorted(sizes, key=lambda d: (-(exact[d] - alloc[d]), d))[:rest]:
        alloc[d] += 1
    return alloc


def select_items(
    pool: CandidatePool, *, spec: SpecSettings, quotas: dict[str, int], period: Period, seed: int, val_ratio: float
) -> Selection:
    tag = f"{spec.name}/{period.label}"
    chosen: list[Candidate] = []
    report: list[DomainShortfall] = []
    for d in [x.value for x in spec.domains]:
        quota = int(quotas.get(d, 0))
        cands = pool.by_domain.get(d, [])
        # carried entities first (they waited), by the same seeded order; the period's own fill what is left
        early = _round_robin(pool.carried.get(d, []), quota, seed=seed, tag=tag) if quota else []
        picked = early + (_round_robin(cands, quota - len(early), seed=seed, tag=tag) if quota > len(early) else [])
        chosen.extend(picked)
        report.append(
            DomainShortfall(
                domain=d, quota=quota, selected=len(picked), ready_in_period=pool.ready_in_period.get(d, 0),
                eligible=len(cands), carried=len(early),
            )
        )
    # split by (public) question id: val_ratio of all questions, spread over domains, seeded per qid
    per_domain: dict[str, list[tuple[int, Candidate]]] = {}
    seen: dict[int, Candidate] = {}
    for c in chosen:
        for qid in c.qids:
            if qid in seen:
                raise SnapshotError(
                    f"public id collision: qid {qid} of {c.source}/{c.external_id} and {seen[qid].source}/"
                    f"{seen[qid].external_id}"
                )
            seen[qid] = c
            per_domain.setdefault(c.domain, []).append((qid, c))
    total = sum(len(v) for v in per_domain.values())
    n_val = round(total * val_ratio)
    if total >= 2:
        n_val = min(max(n_val, 1), total - 1)
    alloc = _val_allocation({d: len(v) for d, v in per_domain.items()}, n_val)
    split_of: dict[int, str] = {}
    for d, lst in per_domain.items():
        lst.sort(key=lambda qc: seeded_key(seed, tag, "split", qc[0]))
        for i, (qid, _) in enumerate(lst):
            split_of[qid] = "val" if i < alloc[d] else "test"
    # the correct letter is uniform within each split: letters are dealt round-robin in a seeded order
    owner = {qid: c for lst in per_domain.values() for qid, c in lst}
    items: list[ItemRef] = []
    for split in ("val", "test"):
        qids = sorted((q for q, s in split_of.items() if s == split), key=lambda q: seeded_key(seed, tag, "letter", q))
        for i, qid in enumerate(qids):
            c = owner[qid]
            target = i % 4
            ans = c.answer_index[qid]
            others = [k for k in range(4) if k != ans]
            random.Random(seeded_key(seed, tag, "options", qid)).shuffle(others)
            order = [*others[:target], ans, *others[target:]]
            items.append(
                ItemRef(
                    qid=qid, entity_id=c.entity_id, question_row=c.rows[qid], entity_row=c.entity_row, split=split,
                    option_order=tuple(order), answer_letter=LETTERS[target],
                )
            )
    items.sort(key=lambda it: it.qid)
    return Selection(items=items, entities=chosen, report=report)

"""A pack's probe answers (`probe.jsonl`, `clkt evaluate --probe`) checked and judged by the taker, never trusted.

The lab's model answered the daemon's own probe (`clkt.targets.summary`: the same prompt, languages and greedy
decoding) about every real entity of the snapshot; the pack carries only what it said. On intake the answers must
cover every real entity of the snapshot (this store's items: their public entity ids) in every language of the
snapshot exactly once, and name nothing else (`probe_error`): a pack that left out the entities its model knew
would otherwise escape their exclusion. Each answer is then judged here by the offline template-engine judge
(`agents.template.judge.judge_response`, the default judge of the probe stage: deterministic, local, no LLM call,
so it runs inside the intake's limited child) against the entity's facts as this store holds them; an entity known
in any language is excluded, as a local target's known entities are (`ProbeVerdicts.excluded`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import TypeAdapter, ValidationError

from agents.template.judge import judge_response
from clkt.errors import UserError
from clkt.facts import EntityFacts
from clkt.packs.format import PROBE_FILE, ProbeRow
from clkt.packs.metrics import ProbeVerdicts
from clkt.snapshots.select import ItemRef
from storage.engine import Store
from storage.entities import get_entity

__all__ = ["PROBE_JUDGE", "Probed", "judge_probe", "probe_error", "probed_entities"]

PROBE_JUDGE = "template"  # the judge the taker applies (`ProbeVerdicts.judge`)
_FACTS: TypeAdapter[EntityFacts] = TypeAdapter(EntityFacts)

Probed = tuple[str, EntityFacts]  # an entity's name and facts, as this store holds them


def probe_error(rows: Sequence[ProbeRow], *, entities: Mapping[int, object], languages: Sequence[str],
                snapshot_id: str) -> str | None:
    """Why `rows` do not answer the probe exactly once per (real entity of the snapshot, language), or None."""
    seen: set[tuple[int, str]] = set()
    for r in rows:
        if r.entity_id not in entities:
            return f"{PROBE_FILE}: entity {r.entity_id} is not a real entity of snapshot {snapshot_id}"
        if r.lang not in languages:
            return f"{PROBE_FILE}: entity {r.entity_id} is probed in language {r.lang!r}, not one of {list(languages)}"
        if (r.entity_id, r.lang) in seen:
            return f"{PROBE_FILE}: entity {r.entity_id} is probed twice in {r.lang}"
        seen.add((r.entity_id, r.lang))
    for entity in sorted(entities):
        for lang in languages:
            if (entity, lang) not in seen:
                missing = len(entities) * len(languages) - len(seen)
                return f"{PROBE_FILE}: entity {entity} is not probed in {lang}; {missing} answers are missing in all"
    return None


async def probed_entities(store: Store, items: Sequence[ItemRef]) -> dict[int, Probed]:
    """Public entity id -> (name, facts) of the snapshot's real entities (its items'), read from this store."""
    rows = {it.entity_id: it.entity_row for it in items}
    out: dict[int, Probed] = {}
    async with store.session() as s:
        for public, row in sorted(rows.items()):
            entity = await get_entity(s, row)
            if entity is None:
                raise UserError(f"entity {public} of the snapshot is gone from this store: its probe cannot be judged")
            try:
                out[public] = (entity.name, _FACTS.validate_python(entity.facts))
            except ValidationError:
                raise UserError(f"entity {public} of the snapshot has no readable facts here: its probe cannot be "
                                "judged") from None
    return out


def judge_probe(rows: Sequence[ProbeRow], entities: Mapping[int, Probed], languages: Sequence[str]) -> ProbeVerdicts:
    """The verdicts on `rows` (checked by `probe_error`): the entities known in any language are excluded."""
    known: set[int] = set()
    for r in rows:
        if r.entity_id in known:
            continue
        name, facts = entities[r.entity_id]
        if judge_response(entity_name=name, facts=facts, response=r.summary, lang=r.lang).known:
            known.add(r.entity_id)
    return ProbeVerdicts(judge=PROBE_JUDGE, entities=len(entities), languages=list(languages), excluded=sorted(known))

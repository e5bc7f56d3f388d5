"""The locality split of a snapshot: questions about entities a target already knew, to measure what an
injection keeps of what the model knew before ("kept %", `clkt.report.locality`).

`locality/questions/<lang>.jsonl` holds `QuestionRow`s (split `test`, the same qids in every language, none
shared with the real or the control questions) and the manifest's `locality` (`LocalityInfo`) says which target
knew which entity (`known_by`): a GPU job answers only its target's entities, with the base and the injected
model, and keeps the paired counts in its summary. There are no documents: these entities are never trained on,
never in the real question files or the reference / hf / lm_eval exports, never scored as transfer.

How a build fills it (`plan_locality`, called by `clkt.snapshots.builder`): the store's `known` entities of the
period (the probe sent up to `snapshot.locality_entities` of each month on through generate, verify and
translate, `clkt.pipeline.probe`) with questions translated into every spec language and a "known" verdict
of a spec target, in a seeded order of their public ids, at most `snapshot.locality_entities` of them; each
question's options shuffled by a seeded key of its qid; the entities' short-answer questions (the open track's, from
their facts: `clkt.snapshots.open.locality_open`) beside them in `locality/open/<lang>.jsonl`. `write_locality` writes the files into the snapshot
folder being built (before its manifest hashes them) and returns what the manifest records.

The split is not part of the content hash (a snapshot's id says what it tests and trains on; the locality
questions are read from the store at build time): `load_snapshot` re-assembles a snapshot without it, so a
re-export from the store has no `locality/` folder; the built folder (what the GPU jobs read) has it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clkt.config import SpecSettings
from clkt.errors import SnapshotError
from clkt.snapshots.content import assemble_content
from clkt.snapshots.ids import stable_entity_id
from clkt.snapshots.layout import LETTERS, LOCALITY_DIR, LocalityInfo, OpenRow, QuestionRow, dumps_row
from clkt.snapshots.open import locality_open, open_path
from clkt.snapshots.period import Period
from clkt.snapshots.select import ItemRef, seeded_key, usable_questions
from storage.engine import Session
from storage.enums import EntityStatus
from storage.snapshots import CandidateEntity, candidate_entities

__all__ = ["LOCALITY_DIR", "LocalitySplit", "locality_path", "plan_locality", "write_locality"]

_TAG = "locality"  # the seeded keys' tag: the locality split's orders never coincide with the real selection's


@dataclass(frozen=True, kw_only=True)
class LocalitySplit:
    """The locality questions of a build, per language, and which target knew which (public) entity."""

    questions: dict[str, list[QuestionRow]] = field(default_factory=dict)
    known_by: dict[str, list[int]] = field(default_factory=dict)
    # the open track's questions about the same entities, every language (none: no open locality)
    open: list[OpenRow] = field(default_factory=list)


async def plan_locality(
    session: Session, *, spec: SpecSettings, period: Period, seed: int, limit: int,
) -> LocalitySplit | None:
    """The period's locality split from the store (see the module docstring); None when there is none."""
    if limit <= 0:
        return None
    langs = list(spec.languages)
    ents = await candidate_entities(session, domains=[d.value for d in spec.domains], start=period.start,
                                    end=period.end, status=EntityStatus.known)
    picked: list[tuple[CandidateEntity, dict[int, int], dict[int, int], list[str]]] = []
    for e in sorted(ents, key=lambda e: seeded_key(seed, _TAG, "entity", e.source, e.external_id)):
        knew = sorted(t.name for t in spec.targets if any(p.known and p.target_model in (t.name, t.model) for p in e.probes))
        usable, rows = usable_questions(e, set(langs))
        if knew and usable and set(langs) <= e.doc_langs:
            picked.append((e, usable, rows, knew))
        if len(picked) == limit:
            break
    if not picked:
        return None
    items: list[ItemRef] = []
    known_by: dict[str, list[int]] = {}
    for ent, usable, rows, knew in picked:
        public = stable_entity_id(ent.source, ent.external_id)
        for t in knew:
            known_by.setdefault(t, []).append(public)
        for qid, ans in sorted(usable.items()):
            target = int(seeded_key(seed, _TAG, "letter", qid), 16) % 4
            others = [k for k in range(4) if k != ans]
            random.Random(seeded_key(seed, _TAG, "options", qid)).shuffle(others)
            items.append(ItemRef(qid=qid, entity_id=public, question_row=rows[qid], entity_row=ent.id, split="test",
                                 option_order=tuple([*others[:target], ans, *others[target:]]), answer_letter=LETTERS[target]))
    content = await assemble_content(session, spec=spec.name, period=period.label, seed=seed, revision=0,
                                     languages=langs, items=items)
    return LocalitySplit(questions={lang: content.questions_in(lang) for lang in langs},
                         known_by={t: sorted(es) for t, es in sorted(known_by.items())}, open=locality_open(content))


def locality_path(root: Path, lang: str) -> Path:
    return root / LOCALITY_DIR / "questions" / f"{lang}.jsonl"


def write_locality(
    root: Path, questions: Mapping[str, Sequence[QuestionRow]], *, known_by: Mapping[str, Sequence[int]],
    open_rows: Sequence[OpenRow] = (),
) -> tuple[list[str], LocalityInfo | None]:
    """Write `locality/questions/<lang>.jsonl` (rows sorted by qid) for every language of `questions`, and
    `locality/open/<lang>.jsonl` where `open_rows` has any; return the files' relative paths and the manifest's
    `LocalityInfo` (None, and no file, when there is no question). Every language must hold the same qids (the
    open rows too); every entity must be known by a target of `known_by`, every open row's be one of the split's."""
    langs = sorted(questions)
    if not langs or not any(questions.values()):
        return [], None
    ref = sorted(r.qid for r in questions[langs[0]])
    for lang in langs:
        if sorted(r.qid for r in questions[lang]) != ref:
            raise SnapshotError(f"locality split: {lang} does not hold the same questions as {langs[0]}")
    entities = {r.entity_id for r in questions[langs[0]]}
    known = {e for es in known_by.values() for e in es}
    if entities - known:
        raise SnapshotError(f"locality split: {len(entities - known)} entity(ies) known by no target in known_by")
    open_by_lang = _open_by_lang(langs, open_rows, entities)  # checked before any file is written
    files: list[str] = []
    for lang in langs:
        path = locality_path(root, lang)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(questions[lang], key=lambda r: r.qid)
        path.write_text("".join(dumps_row(r.model_copy(update={"split": "test"})) + "\n" for r in rows), encoding="utf-8")
        files.append(path.relative_to(root).as_posix())
    for lang, open_in in open_by_lang.items():
        path = open_path(root, lang, locality=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(dumps_row(r) + "\n" for r in open_in), encoding="utf-8")
        files.append(path.relative_to(root).as_posix())
    info = LocalityInfo(
        entities=len(entities), questions=len(ref),
        known_by={t: sorted(set(es) & entities) for t, es in sorted(known_by.items()) if set(es) & entities},
        open_questions=len(open_by_lang[langs[0]]) if open_by_lang else 0,
    )
    return files, info


def _open_by_lang(langs: Sequence[str], rows: Sequence[OpenRow], entities: set[int]) -> dict[str, list[OpenRow]]:
    """The open rows per language, sorted by qid ({} without any), checked: every row in one of `langs`, the same
    qids once each in every language, every entity one of the split's (`SnapshotError` otherwise)."""
    if not rows:
        return {}
    by_lang: dict[str, list[OpenRow]] = {lang: [] for lang in langs}
    for r in rows:
        if r.lang not in by_lang:
            raise SnapshotError(f"locality split: an open question is in {r.lang!r}, not one of {', '.join(langs)}")
        by_lang[r.lang].append(r)
    ref = sorted(r.qid for r in by_lang[langs[0]])
    if any(sorted(r.qid for r in rs) != ref for rs in by_lang.values()) or len(set(ref)) != len(ref):
        raise SnapshotError("locality split: the open questions are not the same qids, once each, in every language")
    if {r.entity_id for r in rows} - entities:
        raise SnapshotError("locality split: an open question is about an entity outside the split")
    return {lang: sorted(rs, key=lambda r: r.qid) for lang, rs in by_lang.items()}

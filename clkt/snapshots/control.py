"""The control split: fictional entities no model can know, the positive control of injection.

Every snapshot carries `snapshot.control_entities` made-up entities per domain of its spec, generated
deterministically from the snapshot's identity (spec, period, seed): invented names (people, teams,
venues, leagues, studios, labels, towns), dates inside the period, plausible numbers, scores and labels.
They are rendered into documents and questioned by the same template engine as the real entities, in
every language of the spec, and their distractors are drawn from fictional pools of the same kind, so that
a made-up answer is never the odd one out among real names.

They live apart from the real content: `control/docs/<lang>.jsonl` and `control/questions/<lang>.jsonl`
in the snapshot folder (the same `DocRow` / `QuestionRow` models, `source = "control"`, every question in
the `test` split), never in the store, the real files or the hf / lm-eval / reference exports. The GPU job
injects them together with the real documents and scores them on their own; they never enter the real
scores. Because they are a pure function of (spec, period, seed, languages, domains, size), a snapshot
re-assembled from the store gets byte-identical control files, and they are part of the content hash.

The entities come from each kind's maker (`clkt.snapshots.fiction`, one module per domain, registered by the
facts' kind). Invented names are syllable compounds checked against the engine's pools of real names; nothing can
prove that a compound names nothing anywhere, but it names nothing a model could have read about the
event: the event itself (its date inside a period that has not been published) is fiction.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from agents.template import PROMPT_VERSION, plans
from agents.template.values import Value
from clkt.documents import render_document
from clkt.documents.registry import slots_of
from clkt.errors import SnapshotError
from clkt.facts import EntityFacts
from clkt.outputs import MCQ, check_against_document
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.fiction import Namer, fictional_entity, makers_of
from clkt.snapshots.ids import stable_entity_id, stable_qid
from clkt.snapshots.layout import (
    CONTROL_DIR,
    LETTERS,
    ControlInfo,
    DocRow,
    QuestionRow,
    SnapshotManifest,
    dumps_row,
)
from clkt.snapshots.select import seeded_key

__all__ = [
    "CONTROL_DIR",
    "CONTROL_SOURCE",
    "ControlContent",
    "ControlEntity",
    "attach_control",
    "build_control",
    "check_control_engine",
    "control_docs_path",
    "control_entities",
    "control_facts",
    "control_info",
    "control_questions_path",
    "fictional_entity",
    "write_control",
]

CONTROL_SOURCE = "control"

_ENGINE_BEFORE_RECORDED = "tmpl-1"  # the engine of manifests written before ControlInfo.engine existed


@dataclass(frozen=True, kw_only=True)
class ControlEntity:
    """One fictional entity: its identity, facts and the fictional distractor pools of its name slots."""

    external_id: str
    domain: str
    name: str
    facts: EntityFacts
    candidates: dict[str, tuple[Value, ...]]  # slot -> distractor candidates replacing the engine's pools

    @property
    def entity_id(self) -> int:
        return stable_entity_id(CONTROL_SOURCE, self.external_id)


@dataclass(frozen=True, kw_only=True)
class ControlContent:
    entities: tuple[ControlEntity, ...]
    docs: tuple[DocRow, ...]  # sorted by (lang order, domain, entity_id)
    questions: tuple[QuestionRow, ...]  # sorted by (lang order, qid)

    def docs_in(self, lang: str) -> list[DocRow]:
        return [d for d in self.docs if d.lang == lang]

    def questions_in(self, lang: str) -> list[QuestionRow]:
        return [q for q in self.questions if q.lang == lang]


def _seeded(seed: int, *parts: object) -> random.Random:
    return random.Random(seeded_key(seed, *parts))


def control_entities(*, spec: str, period: str, seed: int, start: date, end: date, domains: Sequence[str], per_domain: int) -> list[ControlEntity]:
    """`per_domain` fictional entities for every domain of `domains`, dated in [start, end)."""
    tag = f"{spec}/{period}"
    nm = Namer(_seeded(seed, tag, "control", "names"))
    out: list[ControlEntity] = []
    for domain in domains:
        makers = makers_of(domain)
        for i in range(per_domain):
            rng = _seeded(seed, tag, "control", domain, i)
            nm.rng = rng
            name, facts, pools = makers[i % len(makers)].make(rng, nm, start, end)
            out.append(
                ControlEntity(external_id=f"{tag}/s{seed}/{domain}/{i}", domain=domain, name=name, facts=facts, candidates=pools)
            )
    return out


def build_control(
    *, spec: str, period: str, seed: int, start: date, end: date, languages: Sequence[str], domains: Sequence[str],
    per_domain: int,
) -> ControlContent:
    """The control split's documents and questions (every question the engine can ask, in every language)."""
    langs = list(languages)
    ents = control_entities(spec=spec, period=period, seed=seed, start=start, end=end, domains=domains, per_domain=per_domain)
    tag = f"{spec}/{period}"
    docs: list[DocRow] = []
    planned: list[tuple[ControlEntity, int, plans.Plan]] = []
    for e in ents:
        rendered = {lang: render_document(e.facts, lang) for lang in langs}
        for lang in langs:
            docs.append(DocRow(entity_id=e.entity_id, domain=e.domain, source=CONTROL_SOURCE, lang=lang, name=e.name, text=rendered[lang].text))
        for slot in slots_of(e.facts.kind):
            pools = e.candidates.get(slot)
            p = plans.plan(e.facts, slot, candidates=pools)
            if p is None or any(slot not in d.sentences for d in rendered.values()):
                continue
            ok = True
            for lang, d in rendered.items():
                mcq = MCQ(
                    question=plans.question_text(e.facts, slot, lang), options=plans.render_options(p.values, lang),
                    answer_index=p.answer_index, evidence=d.sentences[slot], slot=slot,
                )
                if check_against_document(mcq, d.text):
                    ok = False
                    break
            if ok:
                planned.append((e, stable_qid(CONTROL_SOURCE, e.external_id, slot), p))
    # the correct letter is uniform over the split: dealt round-robin in a seeded order, as for real items
    planned.sort(key=lambda t: seeded_key(seed, tag, "control", "letter", t[1]))
    questions: list[QuestionRow] = []
    for i, (e, qid, p) in enumerate(planned):
        target = i % 4
        others = [k for k in range(4) if k != p.answer_index]
        random.Random(seeded_key(seed, tag, "control", "options", qid)).shuffle(others)
        order = [*others[:target], p.answer_index, *others[target:]]
        for lang in langs:
            opts = plans.render_options(p.values, lang)
            questions.append(
                QuestionRow(
                    qid=qid, entity_id=e.entity_id, domain=e.domain, lang=lang, split="test",
                    question=plans.question_text(e.facts, p.slot, lang), options=[opts[k] for k in order],
                    answer=LETTERS[target], answer_index=target, slot=p.slot, source=CONTROL_SOURCE,
                )
            )
    rank = {lang: i for i, lang in enumerate(langs)}
    docs.sort(key=lambda r: (rank[r.lang], r.domain, r.entity_id))
    questions.sort(key=lambda r: (rank[r.lang], r.qid))
    return ControlContent(entities=tuple(ents), docs=tuple(docs), questions=tuple(questions))


def control_docs_path(root: Path, lang: str) -> Path:
    return root / CONTROL_DIR / "docs" / f"{lang}.jsonl"


def control_questions_path(root: Path, lang: str) -> Path:
    return root / CONTROL_DIR / "questions" / f"{lang}.jsonl"


def write_control(content: SnapshotContent, root: Path) -> list[str]:
    """Write the control files (nothing without a control split); return their paths relative to `root`."""
    if not content.control_docs:
        return []
    out: list[str] = []
    for lang in content.languages:
        for path, rows in (
            (control_docs_path(root, lang), content.control_docs_in(lang)),
            (control_questions_path(root, lang), content.control_questions_in(lang)),
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(dumps_row(r) + "\n" for r in rows))
            out.append(path.relative_to(root).as_posix())
    return out


def attach_control(content: SnapshotContent, *, start: date, end: date, domains: Sequence[str], per_domain: int) -> SnapshotContent:
    """`content` with its control split (unchanged when `per_domain` is 0)."""
    if per_domain <= 0:
        return content
    ctl = build_control(
        spec=content.spec, period=content.period, seed=content.seed, start=start, end=end,
        languages=content.languages, domains=domains, per_domain=per_domain,
    )
    return dataclasses.replace(content, control_docs=ctl.docs, control_questions=ctl.questions)


def control_info(content: SnapshotContent, *, domains: Sequence[str], per_domain: int) -> ControlInfo | None:
    """The manifest's record of the control split (None when there is none)."""
    if per_domain <= 0:
        return None
    first = content.languages[0]
    return ControlInfo(
        per_domain=per_domain, domains=list(domains),
        entities=len({d.entity_id for d in content.control_docs}), questions=len(content.control_questions_in(first)),
        engine=PROMPT_VERSION,
    )


def control_facts(manifest: SnapshotManifest, docs: Sequence[DocRow]) -> dict[int, EntityFacts]:
    """The typed facts of the control split's fictional entities, regenerated from the seed as the split was built
    (public entity id -> facts), for those whose facts render exactly the frozen documents `docs` (the split's, in
    any of its languages); {} without a control split or for one another template engine wrote."""
    info = manifest.control
    if info is None or info.per_domain <= 0 or (info.engine or _ENGINE_BEFORE_RECORDED) != PROMPT_VERSION:
        return {}
    ents = control_entities(spec=manifest.spec, period=manifest.period, seed=manifest.seed,
                            start=date.fromisoformat(manifest.period_start), end=date.fromisoformat(manifest.period_end),
                            domains=info.domains, per_domain=info.per_domain)
    frozen: dict[int, list[DocRow]] = {}
    for d in docs:
        frozen.setdefault(d.entity_id, []).append(d)
    return {e.entity_id: e.facts for e in ents if e.entity_id in frozen
            and all(render_document(e.facts, d.lang).text == d.text for d in frozen[e.entity_id])}


def check_control_engine(info: ControlInfo, snapshot_id: str) -> None:
    """Refuse to regenerate a control split that an other template engine version wrote: its questions would
    differ (and the snapshot would no longer hash to its id) for a reason the hash cannot tell."""
    written = info.engine or _ENGINE_BEFORE_RECORDED
    if written != PROMPT_VERSION:
        raise SnapshotError(
            f"snapshot {snapshot_id}: its control split was written by template engine {written}, this code writes "
            f"{PROMPT_VERSION}, so it cannot be regenerated; use its exported folder, or rebuild the snapshot"
        )
